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
 * Locking: DlsmRateShared.rate_lock, the one lock of the LWLock tranche
 * "dlsm_rate" (given by shmem.c), guards every field.  It is a leaf lock:
 * taken after any heavyweight lock, never held across SPI or a wait.  A
 * claiming backend takes it exclusively for a few field reads and writes
 * when it asks for a group's turn or gives one back (dlsm_rate_*); a
 * claim that must take an entry at its share, and a dropped queue's
 * forgetting, read or write the whole table under it.  It is taken
 * shared to read a group's next turn (dlsm_rate_next) and to count the
 * table for dlsm_shared_tables.  An entry counts against its queue owner's
 * and its database's shares (the counters rate_holders[]) from the claim
 * that takes it until it is freed: taken again when spent, swept, or
 * forgotten with its queue.
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

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "rate.h"

/*
 * How many entries of the rate table (DLSM_MAX_RATES, rate.h) a group's
 * key may be found in (from its hash on).  The owners and databases
 * holding entries are counted in DLSM_MAX_RATE_HOLDERS counters; one at its
 * share looks for spent entries in the whole table, at most every
 * DLSM_RATE_SWEEP_US.
 */
#define DLSM_RATE_PROBES 64
#define DLSM_MAX_RATE_HOLDERS 128
#define DLSM_RATE_SWEEP_US USECS_PER_SEC

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
 * The entries of rates[] one database (owner InvalidOid) or one role
 * (dboid InvalidOid) holds; held 0: the counter is free.
 */
typedef struct DlsmRateHolder
{
	Oid			dboid;
	Oid			owner;
	int			held;
} DlsmRateHolder;

/* The groups held back by their rate limits. */
typedef struct DlsmRateShared
{
	LWLock	   *rate_lock;		/* guards the fields below */
	DlsmRate	rates[DLSM_MAX_RATES];
	DlsmRateHolder rate_holders[DLSM_MAX_RATE_HOLDERS]; /* in no order */
	TimestampTz rates_swept_at; /* spent entries last freed */
	uint64		rates_not_kept; /* claims admitted without an entry */
	uint64		holders_full;	/* of them, for want of a counter */
} DlsmRateShared;

static DlsmRateShared *shared = NULL;

/* Shared memory for the rates. */
Size
dlsm_rate_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmRateShared));
}

/* Are the rates there (was the library preloaded)? */
bool
dlsm_rate_available(void)
{
	return shared != NULL;
}

/* Create or attach to the rates, guarded by lock; AddinShmemInitLock held. */
void
dlsm_rate_shmem_init(LWLock *lock)
{
	bool		found;

	shared = ShmemInitStruct("dlsm rates", sizeof(DlsmRateShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmRateShared));
		shared->rate_lock = lock;
	}
}

/* ---------------------------------------------------------------------
 * Rate limits of groups
 * ---------------------------------------------------------------------
 */

/*
 * The counter of database dboid (owner InvalidOid) or role owner (dboid
 * InvalidOid); when it has none and create, a free one (NULL when none is
 * free), which stays free until the caller counts an entry in it.
 * rate_lock held, exclusively to create.
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

/* The entries database dboid or role owner holds.  rate_lock held. */
static int
rate_held(Oid dboid, Oid owner)
{
	DlsmRateHolder *h = rate_holder(dboid, owner, false);

	return h == NULL ? 0 : h->held;
}

/* Entry r is free again, counted nowhere.  rate_lock held exclusively. */
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
 * Free every spent entry, unless that was done less than
 * DLSM_RATE_SWEEP_US ago.  rate_lock held exclusively.
 */
static void
rates_sweep(TimestampTz now)
{
	if (now - shared->rates_swept_at < DLSM_RATE_SWEEP_US)
		return;
	shared->rates_swept_at = now;
	for (int i = 0; i < DLSM_MAX_RATES; i++)
	{
		if (shared->rates[i].next_at <= now)
			rate_free(&shared->rates[i]);
	}
}

/*
 * The entry of (relid, group) in this database, or NULL; *free_entry is
 * then the first entry it may take (spent, or free), or NULL when every
 * entry it may use holds another group back.  rate_lock held.
 */
static DlsmRate *
find_rate(Oid relid, uint64 group, TimestampTz now, DlsmRate **free_entry)
{
	uint64		key = group ^ relid ^ ((uint64) MyDatabaseId << 32);
	uint64		start = key % DLSM_MAX_RATES;

	*free_entry = NULL;
	for (int i = 0; i < DLSM_RATE_PROBES; i++)
	{
		DlsmRate   *r = &shared->rates[(start + i) % DLSM_MAX_RATES];

		if (r->group == group && r->relid == relid &&
			r->dboid == MyDatabaseId)
			return r;
		if (*free_entry == NULL && r->next_at <= now)
			*free_entry = r;
	}
	return NULL;
}

/*
 * Take entry r (spent or free, from find_rate) for group of queue relid,
 * whose owner is owner, if the shares of owner and of this database leave
 * room: DLSM_RATE_TAKEN, else which share (or the table) is full.
 * rate_lock held exclusively.
 */
static DlsmRateAnswer
new_rate(Oid relid, Oid owner, uint64 group, TimestampTz now, DlsmRate *r)
{
	DlsmRateHolder *db;
	DlsmRateHolder *role;

	if (r != NULL)
		rate_free(r);

	/*
	 * a share full, or a database or owner that holds nothing yet and needs a
	 * counter: spent entries free their counters (at most once a second)
	 */
	if (rate_held(InvalidOid, owner) >= DLSM_RATES_PER_OWNER ||
		rate_held(MyDatabaseId, InvalidOid) >= DLSM_RATES_PER_DATABASE ||
		rate_holder(MyDatabaseId, InvalidOid, false) == NULL ||
		rate_holder(InvalidOid, owner, false) == NULL)
		rates_sweep(now);
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
	r->dboid = MyDatabaseId;
	r->relid = relid;
	r->group = group;
	r->owner = owner;
	r->next_at = 0;
	return DLSM_RATE_TAKEN;
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
 * taken->not_kept counts such claims since the server started.
 */
DlsmRateAnswer
dlsm_rate_take(Oid relid, Oid owner, uint64 group, int64 spacing_us,
			   DlsmRateTaken *taken)
{
	TimestampTz now = GetCurrentTimestamp();
	DlsmRate   *r;
	DlsmRate   *free_entry;
	DlsmRateAnswer answer = DLSM_RATE_HELD;

	taken->not_kept = 0;
	if (shared == NULL)
		return DLSM_RATE_HELD;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	r = find_rate(relid, group, now, &free_entry);
	if (r == NULL)
	{
		answer = new_rate(relid, owner, group, now, free_entry);
		if (answer == DLSM_RATE_TAKEN)
			r = free_entry;
		else
			taken->not_kept = (int64) ++shared->rates_not_kept;
	}
	if (r != NULL && r->next_at <= now)
	{
		taken->before = r->next_at;
		taken->after = now + spacing_us;
		r->next_at = taken->after;
		answer = DLSM_RATE_TAKEN;
	}
	else if (r != NULL)
		answer = DLSM_RATE_HELD;
	LWLockRelease(shared->rate_lock);
	return answer;
}

/* Give back what dlsm_rate_take took, unless another claim came. */
void
dlsm_rate_give_back(Oid relid, uint64 group, const DlsmRateTaken *taken)
{
	DlsmRate   *r;
	DlsmRate   *free_entry;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	r = find_rate(relid, group, GetCurrentTimestamp(), &free_entry);
	if (r != NULL && r->next_at == taken->after)
		r->next_at = taken->before;
	LWLockRelease(shared->rate_lock);
}

/* When the next claim of group of relid may be made (0: now, or unknown). */
TimestampTz
dlsm_rate_next(Oid relid, uint64 group)
{
	DlsmRate   *r;
	DlsmRate   *free_entry;
	TimestampTz next_at = 0;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->rate_lock, LW_SHARED);
	r = find_rate(relid, group, GetCurrentTimestamp(), &free_entry);
	if (r != NULL)
		next_at = r->next_at;
	LWLockRelease(shared->rate_lock);
	return next_at;
}

/*
 * Queue relid of this database was dropped: its groups' entries are free,
 * and count no more against its owner's and the database's shares.
 */
void
dlsm_rate_forget(Oid relid)
{
	if (shared == NULL)
		return;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_RATES; i++)
	{
		DlsmRate   *r = &shared->rates[i];

		if (r->dboid == MyDatabaseId && r->relid == relid)
			rate_free(r);
	}
	LWLockRelease(shared->rate_lock);
}

/*
 * How full the rates' tables are: out (DLSM_MAX_OWNER_TABLES entries) gets
 * one entry for each; returns how many.  A claim of a group that finds no
 * entry it may take is admitted (rates_not_kept, and a WARNING by
 * grouplimit.c): a full table never holds a group back.
 */
int
dlsm_rate_usage(DlsmTableUsage *out)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		rates = 0;
	int64		holders = 0;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->rate_lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_RATES; i++)
		if (OidIsValid(shared->rates[i].dboid) &&
			shared->rates[i].next_at > now)
			rates++;
	for (int i = 0; i < DLSM_MAX_RATE_HOLDERS; i++)
		if (shared->rate_holders[i].held > 0)
			holders++;
	out[0] = (DlsmTableUsage)
	{
		"rates", DLSM_MAX_RATES, rates, (int64) shared->rates_not_kept
	};
	out[1] = (DlsmTableUsage)
	{
		"rate holders", DLSM_MAX_RATE_HOLDERS, holders,
			(int64) shared->holders_full
	};
	LWLockRelease(shared->rate_lock);
	return 2;
}
