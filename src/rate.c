/*-------------------------------------------------------------------------
 *
 * rate.c
 *	  The rate limits of groups in shared memory: when a group's next claim
 *	  may be made.
 *
 * This file owns the rates' shared state: no other file sees its layout.
 * grouplimit.c asks it for a claim's turn; wake.c forgets a dropped
 * queue's entries.
 *
 * The table of entries is split, as PostgreSQL's lock manager splits its
 * lock table, into DLSM_RATE_PARTITIONS partitions of DLSM_RATE_PART_SIZE
 * entries: a group's key, hashed, picks its partition and where in it the
 * group is looked for, so that claims of groups in different partitions
 * take different locks.  An entry counts against its queue owner's and its
 * database's shares (the counters rate_holders[], for the whole table) from
 * the claim that takes it until it is freed: taken again when spent, swept,
 * or forgotten with its queue.
 *
 * Locking: the LWLock tranche "dlsm_rate" (given by shmem.c) has one lock
 * per partition, the holders' lock and the sweep's lock.
 *	partition lock	guards its partition's entries.  Taken exclusively to
 *					ask for a group's turn or give one back (dlsm_rate_take,
 *					dlsm_rate_give_back: the answer, known only under the
 *					lock, mostly writes), to sweep or forget the partition's
 *					entries; shared to read a group's next turn
 *					(dlsm_rate_next) and to count the entries in use
 *					(dlsm_rate_usage).
 *	holders_lock	guards rate_holders[] and holders_full.  Taken
 *					exclusively by whoever takes or frees an entry (the
 *					counters move with it); shared to count the holders.
 *	sweep_lock		guards rates_swept_at, and is held exclusively through
 *					a whole sweep: a claim that needs room while another
 *					sweeps waits for that sweep to end, then finds the
 *					entries it freed in every partition.
 *	rates_not_kept	an atomic counter, under no lock.
 * Order: the sweep's lock, then a partition lock, then the holders' lock;
 * never two partition locks at once.  The sweep of spent entries, which a
 * claim needing room in a share runs, goes partition by partition, its
 * claim's partition lock released first: under the sweep's lock it takes
 * each partition's lock in turn, and the holders' lock inside it.  All are leaf locks: taken after any heavyweight lock,
 * never held across SPI or a wait.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/rate.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "rate.h"

/*
 * The partitions of the rate table (DLSM_MAX_RATES entries in all, rate.h)
 * and how many entries of its partition a group's key may be found in
 * (from its hash on, wrapping round in the partition).  The owners and
 * databases holding entries are counted in DLSM_MAX_RATE_HOLDERS counters;
 * one at its share looks for spent entries in the whole table, partition
 * by partition, at most every DLSM_RATE_SWEEP_US.
 */
#define DLSM_RATE_PARTITIONS 16
#define DLSM_RATE_PART_SIZE (DLSM_MAX_RATES / DLSM_RATE_PARTITIONS)
#define DLSM_RATE_PROBES 64
#define DLSM_MAX_RATE_HOLDERS 128
#define DLSM_RATE_SWEEP_US USECS_PER_SEC

StaticAssertDecl(DLSM_MAX_RATES % DLSM_RATE_PARTITIONS == 0,
				 "the rate table must split into whole partitions");
StaticAssertDecl(DLSM_RATE_PROBES <= DLSM_RATE_PART_SIZE,
				 "a group's probes must fit in its partition");

/* The locks of the tranche "dlsm_rate": the partitions', then these. */
#define DLSM_RATE_HOLDERS_LOCK DLSM_RATE_PARTITIONS
#define DLSM_RATE_SWEEP_LOCK (DLSM_RATE_PARTITIONS + 1)

/*
 * A group whose rate limit spaces its claims: none may be made before
 * next_at.  An entry whose next_at has passed says nothing and may be
 * taken for another group; until then it counts against its database's
 * and its queue owner's shares.
 */
typedef struct DlsmRate
{
	Oid			dboid;			/* with relid and group, the key; InvalidOid:
								 * free and counted nowhere */
	Oid			relid;
	uint64		group;			/* dlsm_floor_entity_key of the group */
	Oid			owner;			/* the queue's owner, whose share it uses */
	TimestampTz next_at;
} DlsmRate;

/*
 * The entries of the table one database (owner InvalidOid) or one role
 * (dboid InvalidOid) holds; held 0: the counter is free.
 */
typedef struct DlsmRateHolder
{
	Oid			dboid;
	Oid			owner;
	int			held;
} DlsmRateHolder;

/* One partition of the table: the groups whose keys hash to it. */
typedef struct DlsmRatePartition
{
	LWLock	   *lock;			/* guards rates[] */
	DlsmRate	rates[DLSM_RATE_PART_SIZE];
} DlsmRatePartition;

/* The groups held back by their rate limits. */
typedef struct DlsmRateShared
{
	DlsmRatePartition parts[DLSM_RATE_PARTITIONS];
	LWLock	   *holders_lock;	/* guards the two fields below */
	DlsmRateHolder rate_holders[DLSM_MAX_RATE_HOLDERS]; /* in no order */
	uint64		holders_full;	/* claims not kept for want of a counter */
	LWLock	   *sweep_lock;		/* guards rates_swept_at; held to sweep */
	TimestampTz rates_swept_at; /* the last sweep of spent entries began */
	pg_atomic_uint64 rates_not_kept;	/* claims admitted without an entry */
} DlsmRateShared;

static DlsmRateShared *shared = NULL;

/* Shared memory for the rates. */
Size
dlsm_rate_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmRateShared));
}

/* The locks of the tranche "dlsm_rate" (shmem.c asks for them). */
int
dlsm_rate_num_locks(void)
{
	return DLSM_RATE_PARTITIONS + 2;
}

/* Are the rates there (was the library preloaded)? */
bool
dlsm_rate_available(void)
{
	return shared != NULL;
}

/*
 * Create or attach to the rates, guarded by locks (dlsm_rate_num_locks of
 * them); AddinShmemInitLock held.
 */
void
dlsm_rate_shmem_init(LWLockPadded *locks)
{
	bool		found;

	shared = ShmemInitStruct("dlsm rates", sizeof(DlsmRateShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmRateShared));
		for (int p = 0; p < DLSM_RATE_PARTITIONS; p++)
			shared->parts[p].lock = &locks[p].lock;
		shared->holders_lock = &locks[DLSM_RATE_HOLDERS_LOCK].lock;
		shared->sweep_lock = &locks[DLSM_RATE_SWEEP_LOCK].lock;
		pg_atomic_init_u64(&shared->rates_not_kept, 0);
	}
}

/* ---------------------------------------------------------------------
 * Rate limits of groups
 * ---------------------------------------------------------------------
 */

/*
 * The partition of (relid, group) in this database; *start is where in it
 * the group is looked for first.
 */
static DlsmRatePartition *
rate_partition(Oid relid, uint64 group, int *start)
{
	uint64		key = group ^ relid ^ ((uint64) MyDatabaseId << 32);
	uint64		hash = hash_bytes_extended((const unsigned char *) &key,
										   sizeof(key), 0);

	*start = (int) ((hash / DLSM_RATE_PARTITIONS) % DLSM_RATE_PART_SIZE);
	return &shared->parts[hash % DLSM_RATE_PARTITIONS];
}

/*
 * The counter of database dboid (owner InvalidOid) or role owner (dboid
 * InvalidOid); when it has none and create, a free one (NULL when none is
 * free), which stays free until the caller counts an entry in it.
 * holders_lock held, exclusively to create.
 */
static DlsmRateHolder *
rate_holder(Oid dboid, Oid owner, bool create)
{
	DlsmRateHolder *free_holder = NULL;

	for (int i = 0; i < DLSM_MAX_RATE_HOLDERS; i++)
	{
		DlsmRateHolder *h = &shared->rate_holders[i];

		if (h->held > 0 && h->dboid == dboid && h->owner == owner)
			return h;
		if (h->held == 0 && free_holder == NULL)
			free_holder = h;
	}
	if (free_holder == NULL && create)
		shared->holders_full++;
	if (free_holder == NULL || !create)
		return NULL;
	free_holder->dboid = dboid;
	free_holder->owner = owner;
	return free_holder;
}

/* The entries database dboid or role owner holds.  holders_lock held. */
static int
rate_held(Oid dboid, Oid owner)
{
	DlsmRateHolder *h = rate_holder(dboid, owner, false);

	return h == NULL ? 0 : h->held;
}

/*
 * Entry r is free again, counted nowhere.  Its partition's lock and
 * holders_lock held exclusively.
 */
static void
rate_free(DlsmRate *r)
{
	DlsmRateHolder *h;

	if (!OidIsValid(r->dboid))
		return;
	if ((h = rate_holder(r->dboid, InvalidOid, false)) != NULL)
		h->held--;
	if ((h = rate_holder(InvalidOid, r->owner, false)) != NULL)
		h->held--;
	memset(r, 0, sizeof(DlsmRate));
}

/*
 * Free every spent entry of the table, partition by partition, unless a
 * sweep began less than DLSM_RATE_SWEEP_US ago.  No lock of the rates
 * held.  A sweep under way is waited for (the sweep's lock), so that a
 * claim that finds a share full while another backend sweeps finds, when
 * it asks again, every entry that sweep freed.
 */
static void
rates_sweep(TimestampTz now)
{
	LWLockAcquire(shared->sweep_lock, LW_EXCLUSIVE);
	if (now - shared->rates_swept_at < DLSM_RATE_SWEEP_US)
	{
		LWLockRelease(shared->sweep_lock);
		return;
	}
	shared->rates_swept_at = now;

	for (int p = 0; p < DLSM_RATE_PARTITIONS; p++)
	{
		DlsmRatePartition *part = &shared->parts[p];
		bool		counting = false;

		LWLockAcquire(part->lock, LW_EXCLUSIVE);
		for (int i = 0; i < DLSM_RATE_PART_SIZE; i++)
		{
			DlsmRate   *r = &part->rates[i];

			if (!OidIsValid(r->dboid) || r->next_at > now)
				continue;
			if (!counting)
				LWLockAcquire(shared->holders_lock, LW_EXCLUSIVE);
			counting = true;
			rate_free(r);
		}
		if (counting)
			LWLockRelease(shared->holders_lock);
		LWLockRelease(part->lock);
	}
	LWLockRelease(shared->sweep_lock);
}

/*
 * The entry of (relid, group) in this database, looked for in part from
 * start on, or NULL; *free_entry is then the first entry it may take
 * (spent, or free), or NULL when every entry it may use holds another
 * group back.  part's lock held.
 */
static DlsmRate *
find_rate(DlsmRatePartition *part, int start, Oid relid, uint64 group,
		  TimestampTz now, DlsmRate **free_entry)
{
	*free_entry = NULL;
	for (int i = 0; i < DLSM_RATE_PROBES; i++)
	{
		DlsmRate   *r = &part->rates[(start + i) % DLSM_RATE_PART_SIZE];

		if (r->group == group && r->relid == relid &&
			r->dboid == MyDatabaseId)
			return r;
		if (*free_entry == NULL && r->next_at <= now)
			*free_entry = r;
	}
	return NULL;
}

/*
 * Count an entry against the shares of owner and of this database, if they
 * leave room and r (spent or free, from find_rate) is there to take:
 * DLSM_RATE_TAKEN, else which share (or the table) is full.  holders_lock
 * held exclusively.
 */
static DlsmRateAnswer
count_rate(Oid owner, DlsmRate *r)
{
	DlsmRateHolder *db;
	DlsmRateHolder *role;

	if (rate_held(InvalidOid, owner) >= DLSM_RATES_PER_OWNER)
		return DLSM_RATE_OWNER_FULL;
	if (rate_held(MyDatabaseId, InvalidOid) >= DLSM_RATES_PER_DATABASE)
		return DLSM_RATE_DATABASE_FULL;
	if (r == NULL || (db = rate_holder(MyDatabaseId, InvalidOid, true)) == NULL)
		return DLSM_RATE_TABLE_FULL;
	db->held++;
	if ((role = rate_holder(InvalidOid, owner, true)) == NULL)
	{
		db->held--;
		return DLSM_RATE_TABLE_FULL;
	}
	role->held++;
	return DLSM_RATE_TAKEN;
}

/*
 * Take entry r (spent or free, from find_rate) for group of queue relid,
 * whose owner is owner, if the shares of owner and of this database leave
 * room: DLSM_RATE_TAKEN, else which share (or the table) is full.  When
 * may_sweep, a share full, or a database or owner that holds nothing yet
 * and needs a counter, sets *sweep instead, nothing taken: spent entries
 * free their counters, and the caller sweeps them (rates_sweep) and asks
 * again.  r's partition lock held exclusively; takes holders_lock.
 */
static DlsmRateAnswer
new_rate(Oid relid, Oid owner, uint64 group, DlsmRate *r, bool may_sweep,
		 bool *sweep)
{
	DlsmRateAnswer answer = DLSM_RATE_TABLE_FULL;

	LWLockAcquire(shared->holders_lock, LW_EXCLUSIVE);
	if (r != NULL)
		rate_free(r);
	*sweep = may_sweep &&
		(rate_held(InvalidOid, owner) >= DLSM_RATES_PER_OWNER ||
		 rate_held(MyDatabaseId, InvalidOid) >= DLSM_RATES_PER_DATABASE ||
		 rate_holder(MyDatabaseId, InvalidOid, false) == NULL ||
		 rate_holder(InvalidOid, owner, false) == NULL);
	if (!*sweep && (answer = count_rate(owner, r)) == DLSM_RATE_TAKEN)
	{
		r->dboid = MyDatabaseId;
		r->relid = relid;
		r->group = group;
		r->owner = owner;
		r->next_at = 0;
	}
	LWLockRelease(shared->holders_lock);
	return answer;
}

/*
 * May a claim of group (a dlsm_floor_entity_key) of queue relid, owned by
 * owner, be made now, spacing_us after the group's last one?  If so
 * (DLSM_RATE_TAKEN), the group's next claim is put off by spacing_us and
 * taken says what to give back if the claim is not made after all.
 * DLSM_RATE_HELD when it may not, or without shared state: a limit that
 * cannot be kept holds the group back.  When the group has no entry and
 * none can be taken for it, which share is full (nothing taken; the
 * caller admits the claim: a full table never holds a group back), and
 * taken->not_kept counts such claims since the server started.  Takes the
 * group's partition lock, and the holders' lock for a new entry; a claim
 * that needs room in a share sweeps the table between two tries.
 */
DlsmRateAnswer
dlsm_rate_take(Oid relid, Oid owner, uint64 group, int64 spacing_us,
			   DlsmRateTaken *taken)
{
	TimestampTz now = GetCurrentTimestamp();
	DlsmRatePartition *part;
	int			start;
	DlsmRate   *r;
	DlsmRate   *free_entry;
	DlsmRateAnswer answer = DLSM_RATE_HELD;
	bool		sweep = false;

	taken->not_kept = 0;
	if (shared == NULL)
		return DLSM_RATE_HELD;
	part = rate_partition(relid, group, &start);
	for (bool may_sweep = true;; may_sweep = false)
	{
		LWLockAcquire(part->lock, LW_EXCLUSIVE);
		r = find_rate(part, start, relid, group, now, &free_entry);
		if (r != NULL)
			break;
		answer = new_rate(relid, owner, group, free_entry, may_sweep, &sweep);
		if (!sweep)
			break;
		/* the sweep takes every partition's lock in turn: not with ours */
		LWLockRelease(part->lock);
		rates_sweep(now);
	}
	if (r == NULL && answer == DLSM_RATE_TAKEN)
		r = free_entry;
	else if (r == NULL)
		taken->not_kept =
			(int64) pg_atomic_add_fetch_u64(&shared->rates_not_kept, 1);
	if (r != NULL && r->next_at <= now)
	{
		taken->before = r->next_at;
		taken->after = now + spacing_us;
		r->next_at = taken->after;
		answer = DLSM_RATE_TAKEN;
	}
	else if (r != NULL)
		answer = DLSM_RATE_HELD;
	LWLockRelease(part->lock);
	return answer;
}

/* Give back what dlsm_rate_take took, unless another claim came. */
void
dlsm_rate_give_back(Oid relid, uint64 group, const DlsmRateTaken *taken)
{
	DlsmRatePartition *part;
	int			start;
	DlsmRate   *r;
	DlsmRate   *free_entry;

	if (shared == NULL)
		return;
	part = rate_partition(relid, group, &start);
	LWLockAcquire(part->lock, LW_EXCLUSIVE);
	r = find_rate(part, start, relid, group, GetCurrentTimestamp(),
				  &free_entry);
	if (r != NULL && r->next_at == taken->after)
		r->next_at = taken->before;
	LWLockRelease(part->lock);
}

/* When the next claim of group of relid may be made (0: now, or unknown). */
TimestampTz
dlsm_rate_next(Oid relid, uint64 group)
{
	DlsmRatePartition *part;
	int			start;
	DlsmRate   *r;
	DlsmRate   *free_entry;
	TimestampTz next_at = 0;

	if (shared == NULL)
		return 0;
	part = rate_partition(relid, group, &start);
	LWLockAcquire(part->lock, LW_SHARED);
	r = find_rate(part, start, relid, group, GetCurrentTimestamp(),
				  &free_entry);
	if (r != NULL)
		next_at = r->next_at;
	LWLockRelease(part->lock);
	return next_at;
}

/*
 * Queue relid of this database was dropped: its groups' entries are free,
 * and count no more against its owner's and the database's shares.  Goes
 * partition by partition.
 */
void
dlsm_rate_forget(Oid relid)
{
	if (shared == NULL)
		return;
	for (int p = 0; p < DLSM_RATE_PARTITIONS; p++)
	{
		DlsmRatePartition *part = &shared->parts[p];

		LWLockAcquire(part->lock, LW_EXCLUSIVE);
		LWLockAcquire(shared->holders_lock, LW_EXCLUSIVE);
		for (int i = 0; i < DLSM_RATE_PART_SIZE; i++)
		{
			DlsmRate   *r = &part->rates[i];

			if (r->dboid == MyDatabaseId && r->relid == relid)
				rate_free(r);
		}
		LWLockRelease(shared->holders_lock);
		LWLockRelease(part->lock);
	}
}

/*
 * How full the rates' tables are: out (DLSM_MAX_OWNER_TABLES entries) gets
 * one entry for each; returns how many.  A claim of a group that finds no
 * entry it may take is admitted (rates_not_kept, and a WARNING by
 * grouplimit.c): a full table never holds a group back.  The partitions
 * are counted one after the other, not at one instant.
 */
int
dlsm_rate_usage(DlsmTableUsage *out)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		rates = 0;
	int64		holders = 0;
	int64		holders_full;

	if (shared == NULL)
		return 0;
	for (int p = 0; p < DLSM_RATE_PARTITIONS; p++)
	{
		DlsmRatePartition *part = &shared->parts[p];

		LWLockAcquire(part->lock, LW_SHARED);
		for (int i = 0; i < DLSM_RATE_PART_SIZE; i++)
			if (OidIsValid(part->rates[i].dboid) &&
				part->rates[i].next_at > now)
				rates++;
		LWLockRelease(part->lock);
	}
	LWLockAcquire(shared->holders_lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_RATE_HOLDERS; i++)
		if (shared->rate_holders[i].held > 0)
			holders++;
	holders_full = (int64) shared->holders_full;
	LWLockRelease(shared->holders_lock);
	out[0] = (DlsmTableUsage)
	{
		"rates", DLSM_MAX_RATES, rates,
			(int64) pg_atomic_read_u64(&shared->rates_not_kept)
	};
	out[1] = (DlsmTableUsage)
	{
		"rate holders", DLSM_MAX_RATE_HOLDERS, holders, holders_full
	};
	return 2;
}
