/*-------------------------------------------------------------------------
 *
 * floor.c
 *	  Where the ready rows of a queue begin: the floors of the queues in
 *	  shared memory, with the entities and groups they pass over and the
 *	  rows claimed by transactions in flight.
 *
 * This file owns the floors' shared state: no other file sees its layout.
 * Others call the named operations below, each of which takes and
 * releases the lock itself.  Without preloading there are no floors: a
 * claim scans from its line in the sand every time.
 *
 * Locking: DlsmFloorShared.floor_lock (of the LWLock tranche "dlsm",
 * given by shmem.c) guards every field but entity_seed, and the table of
 * parked groups; it is held for a few field reads or writes, never across
 * SPI, a wait or a signal that could block.  Any backend reads and writes
 * the floors (dlsm_floor_*), as the rules below them say.
 *
 * entity_seed is written once, when the struct is created, and only read
 * afterwards, without a lock.  It seeds the hash of entity names in the
 * floors and in claim passes (dlsm_floor_entity_key): a secret chosen at
 * every start of the server, so that a producer cannot name an entity to
 * collide with another's and have its rows passed over.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/floor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "floor.h"

/* The most queues whose floor is kept; more share the slots in turn. */
#define DLSM_MAX_FLOORS 128

/*
 * The most groups at their concurrency limit that the floors pass over, in
 * all, and the buckets by which a floor records the groups that came free.
 */
#define DLSM_MAX_PARKED_GROUPS 16384
#define DLSM_GROUP_BUCKETS 1024

/*
 * A lowering of a floor: at gen, below the row id below (PG_INT64_MIN:
 * all).  A floor keeps its DLSM_FLOOR_RECENT latest.
 */
#define DLSM_FLOOR_RECENT 32

typedef struct DlsmLowering
{
	uint64		gen;
	int64		below;
} DlsmLowering;

/*
 * When groups of a bucket last came free at a floor (floor_clock values).
 * A slot taken to ask whether a group has room, and given back at once
 * because it had none, may have been counted by other claims meanwhile:
 * its group comes free as any other (dlsm_floor_group_probed), but the
 * backend that took it may still park the group.  So the bucket keeps who
 * made its latest change by such a probe, and the latest change before
 * that by anyone else.
 */
typedef struct DlsmGroupBucket
{
	uint64		freed;			/* the latest */
	uint64		freed_before;	/* the latest not by prober */
	int			prober;			/* process number of freed's prober, or -1 */
	uint64		ended;			/* the latest by a unit's end (not a probe) */
} DlsmGroupBucket;

/*
 * Where the ready rows of a queue begin.  Rules: every row with an id in
 * (base, line] was seen by a claim not new, or new but belonging to a
 * parked entity (from its lowest id up), whose rows wait for a change of
 * that entity.  The claim's snapshot was taken after it read gen, and
 * after it read the generation of the bucket of each entity it parked.  A
 * commit that may make such a row ready moves them on: one that makes a
 * row new again (an insert, a retry, a reap) lowers line below it and
 * moves gen on; one that changes rows of an entity moves its bucket's
 * generation on and, if the entity is parked, unparks it, lowering line
 * below its lowest id and moving gen on.  A claim publishes what it saw
 * only if no lowering since it read gen reached its line (the recent
 * lowerings are kept: an insert above the line, the common case while
 * producers run, does not stop the claims of the moment from moving the
 * floor), and the generations of the buckets of the entities it parks did
 * not move.  Groups at their limit are parked apart (DlsmParkedGroup): a
 * group filled by its units in progress, as committed, is parked as soon
 * as a claim finds it so, and unparked by the end of any unit of it; a
 * group filled by slots taken by claims in flight is parked when the claim
 * publishes, unless a group of its bucket came free meanwhile, and is
 * unparked by the end of any unit or slot of it.  Changes dlsm cannot see
 * (a row set back to 'new' by hand, a unit settled by hand) are found by a
 * claim that scans from its line in the sand again, asking every group it
 * meets, at most every check_ms (dlsm_floor_read).
 */
typedef struct DlsmFloor
{
	Oid			dboid;			/* with relid, the key; InvalidOid: free */
	Oid			relid;
	int64		base;			/* rows above base... */
	int64		line;			/* ...up to line are not ready */
	uint64		gen;			/* from floor_clock, when last lowered */
	uint64		forgotten;		/* lowerings up to this gen are not kept */
	int			next_recent;	/* where the next lowering is kept */
	DlsmLowering recent[DLSM_FLOOR_RECENT]; /* the latest lowerings */
	int			nin_flight;		/* rows claimed by transactions in flight */
	int64		in_flight[DLSM_MAX_IN_FLIGHT];	/* in no order */
	TimestampTz checked_at;		/* last scan from base */
	int64		check_us;		/* how long the last one took */
	int			nparked;
	DlsmParked	parked[DLSM_MAX_PARKED];
	uint64		bucket_gen[DLSM_ENTITY_BUCKETS];
	int			ngroups;		/* its groups in parked_groups */
	DlsmGroupBucket group_freed[DLSM_GROUP_BUCKETS];
} DlsmFloor;

/*
 * A group at its concurrency limit parked at a floor: its rows from lowest
 * up wait for a unit of it to end.  A floor may park any number of groups
 * (up to DLSM_MAX_PARKED_GROUPS in all), kept in one shared table; a walk
 * asks it for each group it meets (dlsm_floor_group_parked).  A group that
 * comes free is unparked, lowering its floor below its lowest row.
 */
typedef struct DlsmGroupKey
{
	Oid			dboid;
	Oid			relid;
	uint64		group;			/* dlsm_floor_group_key */
} DlsmGroupKey;

typedef struct DlsmParkedGroup
{
	DlsmGroupKey key;
	int64		lowest;
	uint64		parked_at;		/* floor_clock when it was parked */
	bool		solid;			/* parked for units in progress, as committed:
								 * only a unit's end unparks it */
} DlsmParkedGroup;

/* The floors of the queues. */
typedef struct DlsmFloorShared
{
	LWLock	   *floor_lock;		/* guards the fields below */
	uint64		floor_clock;	/* moved on by every lowering */
	int			floor_victim;	/* the next slot to take when all are used */
	DlsmFloor	floors[DLSM_MAX_FLOORS];
	uint64		entity_seed;	/* random, set at creation: see above */
	/* times each table had no room (dlsm_floor_usage) */
	uint64		floors_taken;	/* a floor taken from another queue */
	uint64		groups_left;	/* a group not parked: the table full */
	uint64		in_flight_left; /* a claimed row the floor did not take */
	uint64		entities_left;	/* parked entities a floor did not take */
} DlsmFloorShared;

static DlsmFloorShared *shared = NULL;
static HTAB *parked_groups = NULL;	/* DlsmParkedGroup, under floor_lock */
static uint64 entity_seed = 0;	/* this backend's copy; 0: not read yet */

/* A random non-zero seed. */
static uint64
random_seed(void)
{
	uint64		seed;

	if (!pg_strong_random(&seed, sizeof(seed)))
		elog(ERROR, "could not generate a random seed");
	return seed | 1;
}

/* Shared memory for the floors. */
Size
dlsm_floor_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(DlsmFloorShared)),
					hash_estimate_size(DLSM_MAX_PARKED_GROUPS,
									   sizeof(DlsmParkedGroup)));
}

/* Create or attach to the floors, guarded by lock; AddinShmemInitLock held. */
void
dlsm_floor_shmem_init(LWLock *lock)
{
	bool		found;
	HASHCTL		ctl;

	shared = ShmemInitStruct("dlsm floors", sizeof(DlsmFloorShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmFloorShared));
		shared->floor_lock = lock;
		shared->entity_seed = random_seed();
	}
	/* fixed: past it, groups are not parked (HASH_ENTER_NULL) */
	ctl.keysize = sizeof(DlsmGroupKey);
	ctl.entrysize = sizeof(DlsmParkedGroup);
	parked_groups = DLSM_SHMEM_INIT_HASH("dlsm parked groups",
										 DLSM_MAX_PARKED_GROUPS, &ctl,
										 HASH_ELEM | HASH_BLOBS |
										 HASH_FIXED_SIZE);
}

/* ---------------------------------------------------------------------
 * Floors: where the ready rows of a queue begin
 * ---------------------------------------------------------------------
 */

/*
 * The key of an entity in the floors and in a claim pass: a hash of its
 * name, seeded with the server's secret (a backend's own, when the library
 * is not preloaded: there are no floors then, and a pass and the claims a
 * transaction holds are the backend's).
 */
uint64
dlsm_floor_entity_key(const char *entity)
{
	if (entity_seed == 0)
		entity_seed = shared != NULL ? shared->entity_seed : random_seed();
	return hash_bytes_extended((const unsigned char *) entity,
							   strlen(entity), entity_seed);
}

/*
 * The key of a group (grouplimit.c) in the floors and claim passes: as an
 * entity's, with another seed, so that a group and an entity of one name
 * have different keys.
 */
uint64
dlsm_floor_group_key(const char *group)
{
	return dlsm_floor_entity_key(group) ^ UINT64CONST(0x9e3779b97f4a7c15);
}

/* The floor of relid in this database, or NULL.  floor_lock held. */
static DlsmFloor *
find_floor(Oid relid)
{
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		if (f->relid == relid && f->dboid == MyDatabaseId)
			return f;
	}
	return NULL;
}

/* The key of group of floor f in parked_groups. */
static DlsmGroupKey
parked_group_key(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	memset(&key, 0, sizeof(key));
	key.dboid = f->dboid;
	key.relid = f->relid;
	key.group = group;
	return key;
}

/* The parked group of floor f, or NULL.  floor_lock held. */
static DlsmParkedGroup *
find_parked_group(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	if (f->ngroups == 0)
		return NULL;
	key = parked_group_key(f, group);
	return hash_search(parked_groups, &key, HASH_FIND, NULL);
}

/* Unpark every group of floor f.  floor_lock held exclusively. */
static void
drop_parked_groups(DlsmFloor *f)
{
	HASH_SEQ_STATUS status;
	DlsmParkedGroup *p;

	if (f->ngroups == 0)
		return;
	hash_seq_init(&status, parked_groups);
	while ((p = hash_seq_search(&status)) != NULL)
		if (p->key.dboid == f->dboid && p->key.relid == f->relid)
			hash_search(parked_groups, &p->key, HASH_REMOVE, NULL);
	f->ngroups = 0;
}

/*
 * Every group of floor f may have come free, now: no claim that read the
 * floors' clock before parks one.  floor_lock held exclusively.
 */
static void
all_groups_freed(DlsmFloor *f)
{
	uint64		clock = ++shared->floor_clock;

	for (int b = 0; b < DLSM_GROUP_BUCKETS; b++)
	{
		f->group_freed[b].freed_before = clock;
		f->group_freed[b].freed = clock;
		f->group_freed[b].ended = clock;
		f->group_freed[b].prober = -1;
	}
}

/* A new floor for relid, in a free slot or the next one in turn. */
static DlsmFloor *
add_floor(Oid relid)
{
	DlsmFloor  *f = NULL;

	for (int i = 0; i < DLSM_MAX_FLOORS && f == NULL; i++)
		if (shared->floors[i].relid == InvalidOid)
			f = &shared->floors[i];
	if (f == NULL)
	{
		f = &shared->floors[shared->floor_victim];
		shared->floor_victim = (shared->floor_victim + 1) % DLSM_MAX_FLOORS;
		shared->floors_taken++;
		drop_parked_groups(f);
	}
	memset(f, 0, sizeof(DlsmFloor));
	f->dboid = MyDatabaseId;
	f->relid = relid;
	f->gen = shared->floor_clock;
	f->forgotten = f->gen;		/* what came before is not known */
	/* nor which groups came free: any may have, since any clock read */
	all_groups_freed(f);
	return f;
}

/*
 * Before a claim's first scan of relid with line in the sand after: where
 * to start (seen->line, above after) and whether the claim may publish
 * what the scan finds (seen->publish).  When the floor was last checked
 * from its base more than check_ms ago, this claim checks it: it starts at
 * after (seen->check).
 */
void
dlsm_floor_read(Oid relid, int64 after, int check_ms,
				DlsmFloorSeen *seen)
{
	DlsmFloor  *f;
	TimestampTz now;

	seen->line = after;
	seen->publish = false;
	seen->check = true;
	seen->nparked = 0;
	seen->may_park = false;
	seen->nin_flight = 0;
	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	f = find_floor(relid);
	if (f == NULL)
	{
		/*
		 * The queue's first claim (since the floor was last taken for another
		 * queue) makes its floor, knowing nothing yet: from now on it keeps
		 * the lowerings, without which a claim could move it only in a moment
		 * without any commit of an insert
		 */
		LWLockRelease(shared->floor_lock);
		LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
		f = find_floor(relid);
		if (f == NULL)
			f = add_floor(relid);
	}
	seen->gen = f->gen;
	seen->clock = shared->floor_clock;
	seen->nin_flight = f->nin_flight;
	memcpy(seen->in_flight, f->in_flight, sizeof(int64) * f->nin_flight);
	seen->base = after;
	seen->publish = after <= f->line;
	seen->may_park = true;
	memcpy(seen->bucket_gen, f->bucket_gen, sizeof(f->bucket_gen));
	if (f->base <= after && after <= f->line)
	{
		seen->base = f->base;
		seen->line = f->line;
		seen->check = false;
		seen->nparked = f->nparked;
		memcpy(seen->parked, f->parked, sizeof(DlsmParked) * f->nparked);
	}
	now = GetCurrentTimestamp();
	seen->checked_at = now;

	/*
	 * A check that took long (a backlog of rows held back) comes at most
	 * every ten times as long: the checks take a tenth of the claims' time
	 */
	check_ms = (int) Max(check_ms, Min(f->check_us / 100, INT_MAX));
	if (!seen->check && TimestampDifferenceExceeds(f->checked_at, now,
												   check_ms))
	{
		/* this claim checks the floor; the others go on */
		LWLockRelease(shared->floor_lock);
		LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
		f = find_floor(relid);
		if (f != NULL && TimestampDifferenceExceeds(f->checked_at, now,
													check_ms))
		{
			f->checked_at = now;
			seen->line = seen->base = after;
			seen->check = true;
			seen->nparked = 0;
		}
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * Did no lowering of floor f since gen (read by a claim before its scan)
 * reach line?  Those above it made ready only rows the claim's walk did
 * not pass over.  False when one of them is forgotten.
 */
static bool
unlowered(DlsmFloor *f, uint64 gen, int64 line)
{
	if (f->gen == gen)
		return true;
	if (gen < f->forgotten)
		return false;
	for (int i = 0; i < DLSM_FLOOR_RECENT; i++)
		if (f->recent[i].gen > gen && f->recent[i].below <= line)
			return false;
	return true;
}

/*
 * Add the parked entities of a claim to floor f (or, after a check, put
 * them in place of its own): false when they do not fit, or when one of
 * them changed since the claim read the floor.
 */
static bool
park(DlsmFloor *f, const DlsmFloorSeen *seen, const DlsmParked *parked,
	 int n)
{
	DlsmParked	all[DLSM_MAX_PARKED];
	int			count = seen->check ? 0 : f->nparked;

	memcpy(all, f->parked, sizeof(DlsmParked) * count);
	for (int i = 0; i < n; i++)
	{
		int			b = parked[i].key % DLSM_ENTITY_BUCKETS;
		int			k = 0;

		if (!seen->may_park || f->bucket_gen[b] != seen->bucket_gen[b])
			return false;
		while (k < count && all[k].key != parked[i].key)
			k++;
		if (k == count && count == DLSM_MAX_PARKED)
		{
			shared->entities_left++;
			return false;
		}
		if (k == count)
			all[count++] = parked[i];
		else
			all[k].lowest = Min(all[k].lowest, parked[i].lowest);
	}
	memcpy(f->parked, all, sizeof(DlsmParked) * count);
	f->nparked = count;
	return true;
}

/*
 * Did no group of the bucket of group of floor f come free since clock,
 * but by this backend's own probes?
 */
static bool
unfreed(const DlsmFloor *f, uint64 group, uint64 clock)
{
	const DlsmGroupBucket *b = &f->group_freed[group % DLSM_GROUP_BUCKETS];

	if (b->freed <= clock)
		return true;
	return b->prober == DLSM_MY_PROC_NUMBER && b->freed_before <= clock;
}

/*
 * A group of floor f came free (by a probe of backend prober, or -1):
 * note it in its bucket.  floor_lock held exclusively.
 */
static void
note_freed(DlsmFloor *f, uint64 group, int prober)
{
	DlsmGroupBucket *b = &f->group_freed[group % DLSM_GROUP_BUCKETS];

	if (b->prober < 0 || b->prober != prober)
		b->freed_before = b->freed;
	b->freed = ++shared->floor_clock;
	b->prober = prober;
	if (prober < 0)
		b->ended = b->freed;
}

/*
 * Park at floor f the groups a claim found at their limit (n of them, by
 * their lowest row, ascending), whose rows it passed over up to line;
 * returns how far the floor may go: below the lowest row of the first
 * group that may have come free since the claim read the floor (seen), or
 * that does not fit.
 */
static int64
park_groups(DlsmFloor *f, const DlsmFloorSeen *seen, int64 line,
			const DlsmParked *groups, int n)
{
	for (int i = 0; i < n && groups[i].lowest <= line; i++)
	{
		DlsmGroupKey key = parked_group_key(f, groups[i].key);
		DlsmParkedGroup *p = find_parked_group(f, groups[i].key);
		bool		found = p != NULL;

		/*
		 * Parked already (by another claim): it waits still.  One filled by
		 * its units in progress was parked when found, and is gone only if
		 * one of them ended since.
		 */
		if (!found && (groups[i].solid ||
					   !unfreed(f, groups[i].key, seen->clock)))
			return groups[i].lowest - 1;
		if (!found)
			p = hash_search(parked_groups, &key, HASH_ENTER_NULL, &found);
		if (p == NULL)
		{
			shared->groups_left++;
			return groups[i].lowest - 1;
		}
		if (!found)
		{
			p->lowest = groups[i].lowest;
			p->parked_at = ++shared->floor_clock;
			p->solid = groups[i].solid;
			f->ngroups++;
		}
		else
			p->lowest = Min(p->lowest, groups[i].lowest);
	}
	return line;
}

/*
 * A claim whose scan began at seen->line found no ready row up to line
 * but those of the parked entities (n of them) and groups (ngroups):
 * record it, unless a change since seen was read may have made such a row
 * ready.
 */
void
dlsm_floor_publish(Oid relid, const DlsmFloorSeen *seen, int64 line,
				   const DlsmParked *parked, int n,
				   const DlsmParked *groups, int ngroups)
{
	DlsmFloor  *f;

	if (shared == NULL || !seen->publish ||
		(line == seen->line && n == 0 && ngroups == 0 && !seen->check))
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f == NULL && seen->gen == shared->floor_clock && n == 0 &&
		ngroups == 0)
		f = add_floor(relid);
	/* what the check cost counts, whether its finding is kept or not */
	if (f != NULL && seen->check)
		f->check_us = GetCurrentTimestamp() - seen->checked_at;
	if (f != NULL && unlowered(f, seen->gen, line) && park(f, seen, parked, n))
	{
		if (seen->check)
			f->checked_at = GetCurrentTimestamp();
		f->base = seen->base;
		f->line = park_groups(f, seen, line, groups, ngroups);
	}
	LWLockRelease(shared->floor_lock);
}

/* Lower floor f below id below, after the commit of a change. */
static void
lower(DlsmFloor *f, int64 below)
{
	DlsmLowering *kept = &f->recent[f->next_recent];

	f->line = Max(f->base, Min(f->line, below == PG_INT64_MIN ?
							   PG_INT64_MIN : below - 1));
	f->gen = ++shared->floor_clock;
	/* the lowering it replaces is forgotten */
	f->forgotten = Max(f->forgotten, kept->gen);
	kept->gen = f->gen;
	kept->below = below;
	f->next_recent = (f->next_recent + 1) % DLSM_FLOOR_RECENT;
}

/*
 * Rows of relid with ids from below up may have become ready (this
 * transaction committed an insert, a retry, a reap): lower the floor under
 * them.  Call after the commit.
 */
void
dlsm_floor_lower(Oid relid, int64 below)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
		lower(f, below);
	else
		shared->floor_clock++;
	LWLockRelease(shared->floor_lock);
}

/*
 * The rules of relid changed (dlsm_alter_queue): lower its floor to its
 * base and unpark every entity.  Call after the commit.
 */
void
dlsm_floor_reset(Oid relid)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
	{
		lower(f, PG_INT64_MIN);
		f->nparked = 0;
		drop_parked_groups(f);
	}
	else
		shared->floor_clock++;
	LWLockRelease(shared->floor_lock);
}

/*
 * Queue relid is gone, or its rows are (dlsm_drop_queue, TRUNCATE), or
 * the table is a new queue (its OID may be an old one's): forget its
 * floor, its parked entities and groups and its rows in flight.  Its next
 * claim makes a floor again, knowing nothing; no claim that read the
 * floors' clock before publishes into it.  Call after the commit, or
 * when the queue is made.
 */
void
dlsm_floor_forget(Oid relid)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
	{
		drop_parked_groups(f);
		memset(f, 0, sizeof(DlsmFloor));
	}
	shared->floor_clock++;
	LWLockRelease(shared->floor_lock);
}

/*
 * This transaction changed rows of the given entities of relid (n keys):
 * unpark them.  Call after the commit.
 */
void
dlsm_floor_entities(Oid relid, const uint64 *entities, int n)
{
	DlsmFloor  *f;

	if (shared == NULL || n == 0)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < n; i++)
	{
		f->bucket_gen[entities[i] % DLSM_ENTITY_BUCKETS]++;
		for (int k = 0; k < f->nparked; k++)
		{
			if (f->parked[k].key != entities[i])
				continue;
			lower(f, f->parked[k].lowest);
			f->parked[k--] = f->parked[--f->nparked];
		}
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * Is group parked at relid's floor?  A walk passes over its rows: should
 * it come free before the walk's claim publishes, the floor goes below
 * them, and the claim's publish is refused (unlowered).
 */
bool
dlsm_floor_group_parked(Oid relid, uint64 group)
{
	DlsmFloor  *f;
	bool		parked = false;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	f = find_floor(relid);
	if (f != NULL)
		parked = find_parked_group(f, group) != NULL;
	LWLockRelease(shared->floor_lock);
	return parked;
}

/*
 * Unpark group p of floor f, lowering the floor below its lowest row.
 * floor_lock held exclusively.
 */
static void
unpark_group(DlsmFloor *f, DlsmParkedGroup *p)
{
	lower(f, p->lowest);
	hash_search(parked_groups, &p->key, HASH_REMOVE, NULL);
	f->ngroups--;
}

/*
 * Groups of relid may have room (n keys: a unit of each ended, or a slot
 * of each came free): unpark them.  Call once the change is visible.
 */
void
dlsm_floor_groups(Oid relid, const uint64 *groups, int n)
{
	DlsmFloor  *f;

	if (shared == NULL || n == 0)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < n; i++)
	{
		DlsmParkedGroup *p = find_parked_group(f, groups[i]);

		note_freed(f, groups[i], -1);
		if (p != NULL)
			unpark_group(f, p);
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * This backend took a slot of group of relid after the floor's clock read
 * since, found the group without room and gave the slot back: other
 * claims may have counted it, so the group comes free, and a parking of
 * it since then is undone; this backend's own claim may still park it.
 */
void
dlsm_floor_group_probed(Oid relid, uint64 group, uint64 since)
{
	DlsmFloor  *f;
	DlsmParkedGroup *p;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
	{
		note_freed(f, group, DLSM_MY_PROC_NUMBER);
		p = find_parked_group(f, group);
		if (p != NULL && !p->solid && p->parked_at > since)
			unpark_group(f, p);
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * A claim found group of relid filled by its units in progress, as
 * committed, counted after the floors' clock read since, at its row
 * lowest: park it now, unless a unit of a group of its bucket ended since
 * (false).  Only a unit's end unparks it.
 */
bool
dlsm_floor_group_park(Oid relid, uint64 group, int64 lowest, uint64 since)
{
	DlsmFloor  *f;
	DlsmParkedGroup *p = NULL;
	DlsmGroupKey key;
	bool		found;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL &&
		f->group_freed[group % DLSM_GROUP_BUCKETS].ended <= since)
	{
		key = parked_group_key(f, group);
		p = hash_search(parked_groups, &key, HASH_ENTER_NULL, &found);
	}
	if (p == NULL && f != NULL &&
		f->group_freed[group % DLSM_GROUP_BUCKETS].ended <= since)
		shared->groups_left++;
	if (p != NULL && !found)
	{
		p->lowest = lowest;
		p->parked_at = ++shared->floor_clock;
		f->ngroups++;
	}
	else if (p != NULL)
		p->lowest = Min(p->lowest, lowest);
	if (p != NULL)
		p->solid = true;
	LWLockRelease(shared->floor_lock);
	return p != NULL;
}

/*
 * A prepared transaction of database dboid was committed or rolled back:
 * its slots came free, and its inserts, settles and claims (told to the
 * floors at PREPARE, before anyone could see them) are visible now, or
 * undone.  Lower the database's floors to their base, unpark every entity
 * and group, and let no claim that read a floor before park one.
 */
void
dlsm_floor_prepared_ended(Oid dboid)
{
	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		if (f->relid == InvalidOid || f->dboid != dboid)
			continue;
		lower(f, PG_INT64_MIN);
		f->nparked = 0;
		for (int b = 0; b < DLSM_ENTITY_BUCKETS; b++)
			f->bucket_gen[b]++;
		drop_parked_groups(f);
		all_groups_freed(f);
	}
	LWLockRelease(shared->floor_lock);
}

/* The floors' clock, for dlsm_floor_group_probed. */
uint64
dlsm_floor_clock(void)
{
	uint64		clock;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	clock = shared->floor_clock;
	LWLockRelease(shared->floor_lock);
	return clock;
}

/*
 * Was row id claimed by a transaction in flight when the floor was read
 * (seen)?  Then a walk may pass over it: if that transaction rolls back,
 * it lowers the floor below the row again (dlsm_floor_unclaimed).
 */
bool
dlsm_floor_in_flight(const DlsmFloorSeen *seen, int64 id)
{
	for (int i = 0; i < seen->nin_flight; i++)
		if (seen->in_flight[i] == id)
			return true;
	return false;
}

/*
 * This transaction claimed row id of relid: let the floor know it, so that
 * the walks of other claims pass over it while it is in flight.  False
 * when the floor does not take it (no floor, or full): walks then stop at
 * the row, as at any they cannot claim.
 */
bool
dlsm_floor_claimed(Oid relid, int64 id)
{
	DlsmFloor  *f;
	bool		taken = false;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL && f->nin_flight < DLSM_MAX_IN_FLIGHT)
	{
		f->in_flight[f->nin_flight++] = id;
		taken = true;
	}
	else if (f != NULL)
		shared->in_flight_left++;
	LWLockRelease(shared->floor_lock);
	return taken;
}

/*
 * The claim of row id of relid that the floor knows
 * (dlsm_floor_claimed) ended; ready: it ended without changing the
 * row (a rollback), which is ready again, so the floor goes below it.  Call
 * before the claim's locks are released.
 */
void
dlsm_floor_unclaimed(Oid relid, int64 id, bool ready)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < f->nin_flight; i++)
	{
		if (f->in_flight[i] != id)
			continue;
		f->in_flight[i] = f->in_flight[--f->nin_flight];
		if (ready)
			lower(f, id);
		break;
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * How full the floors' tables are: out (DLSM_MAX_OWNER_TABLES entries)
 * gets one entry for each; returns how many.  When a table is full, a
 * claim falls back to the queue's truth, for its own queue only: a queue
 * whose floor was taken for another's scans from its line in the sand, a
 * group not parked is asked again by each walk that meets it, a row in
 * flight not kept stops other claims' walks there, parked entities not
 * kept leave the floor where it was.
 */
int
dlsm_floor_usage(DlsmTableUsage *out)
{
	int64		floors = 0;
	int64		in_flight = 0;
	int64		entities = 0;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		if (f->relid == InvalidOid)
			continue;
		floors++;
		in_flight = Max(in_flight, f->nin_flight);
		entities = Max(entities, f->nparked);
	}
	out[0] = (DlsmTableUsage)
	{
		"floors", DLSM_MAX_FLOORS, floors, (int64) shared->floors_taken
	};
	out[1] = (DlsmTableUsage)
	{
		"parked groups", DLSM_MAX_PARKED_GROUPS,
			(int64) hash_get_num_entries(parked_groups),
			(int64) shared->groups_left
	};
	out[2] = (DlsmTableUsage)
	{
		"rows in flight, per queue", DLSM_MAX_IN_FLIGHT, in_flight,
			(int64) shared->in_flight_left
	};
	out[3] = (DlsmTableUsage)
	{
		"parked entities, per queue", DLSM_MAX_PARKED, entities,
			(int64) shared->entities_left
	};
	LWLockRelease(shared->floor_lock);
	return 4;
}
