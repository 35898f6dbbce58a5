/*-------------------------------------------------------------------------
 *
 * floor.c
 *	  Where the ready rows of a queue begin: the floors of the queues in
 *	  shared memory, with the entities and groups they pass over and the
 *	  rows claimed by transactions in flight.
 *
 * In plain words: a claim takes the oldest rows it may take.  Were it to
 * look from the queue's start every time, it would step over the same
 * settled and waiting rows again and again.  So each queue has a floor:
 * the row id below which no row is ready.  A claim starts there, and moves
 * the floor up past what it found could not be taken; whatever makes a
 * row below it ready again (a create committed, a unit of a full group
 * ended, a claim rolled back) moves it back down.  The rows a floor steps
 * over while they wait are kept here too, so that the claim knows them as
 * waiting, not as gone.
 *
 * The floor module owns the floors' shared state: this file, with the
 * table of parked groups, and floor_internals.h (its layout, which no other
 * file includes).  Others call the named operations of floor.h, each of
 * which takes and releases its locks itself.  Without preloading there are
 * no floors: a claim scans from its line in the sand every time.
 *
 * The words of this file, and of those that call it:
 *	floor		a queue's row id up to which (from its base) no row is
 *				ready to be claimed, but rows passed over: those of parked
 *				entities and groups and those claimed by transactions in
 *				flight.  Claims start their walk there (DlsmFloor.line),
 *				move it up by publishing what they saw, and commits that
 *				make rows ready lower it.
 *	line in the sand	the row id a claim is given (dlsm_claim's after,
 *				DlsmClaimArgs.after): it claims only rows above it.  A claim
 *				without a floor, or checking one, scans from there.
 *	check		a claim that scans from its line in the sand although the
 *				floor is above, at most every check_ms, to find rows made
 *				ready behind dlsm's back (dlsm_floor_read).
 *	walk		a claim's pass over the rows from where it starts; it stops
 *				at the first row it cannot pass over (claim.c).
 *	park		a floor passes over the rows of an entity or group, from
 *				its lowest row up, because they wait: an entity's for its
 *				create, a group's for a unit of it to end.  Unpark: what
 *				they waited for came, and the floor goes below them again.
 *	solid		said of a parked group filled by its units in progress as
 *				committed (not by slots of claims in flight): parked as soon
 *				as a claim finds it so (dlsm_floor_group_park), unparked
 *				only by the end of one of its units.
 *	probe		a slot of a group taken by a claim to ask whether the group
 *				has room, and given back at once because it had none
 *				(grouplimit.c).  Other claims may have counted it, so a
 *				probe frees the group as a unit's end does, but for the
 *				prober's own claim (dlsm_floor_group_probed, unfreed).
 *	in flight	a row claimed by a transaction not yet ended, which the
 *				floor knows (dlsm_floor_claimed): other walks pass over it;
 *				a rollback lowers the floor below it again.
 *	epoch		a floor's groups_epoch: its parked groups carry it in their
 *				key, and a new one unparks them all at once.
 *
 * Locking: the LWLock tranche "dlsm_floor" (given by shmem.c) holds one
 * lock per floor slot, plus two cluster-wide ones.  All are leaf locks:
 * taken after any heavyweight lock, held for a few field reads or writes,
 * never across SPI, a wait or a signal that could block.  Any backend
 * takes them (dlsm_floor_*), in this order when it takes more than one:
 *
 *	the map lock (DLSM_FLOOR_MAP_LOCK), cluster-wide
 *				exclusive, to give a slot to a queue or take it back
 *				(add_floor, dlsm_floor_forget); guards floor_victim and,
 *				with the slot's own lock, owners[].  Lookups do not take
 *				it: they read owners[] (atomics) and check the owner again
 *				under the slot's lock.
 *	a slot's lock (DLSM_FLOOR_SLOT_LOCKS on), one per floor
 *				shared to read a floor, exclusive to change it: guards
 *				its DlsmFloor.  Each queue's claims, commits and claimed
 *				rows take only their own floor's lock; dlsm_shared_tables
 *				and a COMMIT PREPARED take the slots' locks one at a time.
 *	the groups lock (DLSM_FLOOR_GROUPS_LOCK), cluster-wide
 *				guards the table of parked groups and groups_stale, with each
 *				floor's groups_epoch (written under both it and the
 *				slot's lock); taken, after the slot's lock, only by queues
 *				that park groups: shared to ask, exclusive to park or
 *				unpark.
 *
 * floor_clock and the counters of full tables are atomics, moved without
 * a lock.
 *
 * A group at its concurrency limit is parked at a floor: its rows, from
 * its lowest up, wait for a unit of it to end, and the floor passes over
 * them.  All floors' parked groups are kept in one shared table, of at
 * most DLSM_MAX_PARKED_GROUPS entries, under the groups lock; a walk asks
 * it for each group it meets (dlsm_floor_group_parked).  When the table is
 * full a group is not parked, and each walk that meets it asks it again.
 *
 * A floor's parked groups are dropped (on eviction, reset, forget and
 * every COMMIT PREPARED) by giving the floor a new groups_epoch, which no
 * entry of the table carries: the old entries are stale, counted in
 * groups_stale, and swept out only when the table is full and a sixteenth
 * of it is stale.  That sweep is the one walk of the whole table under a
 * cluster-wide lock: it comes at most once per 1,024 stale entries, and
 * its cost is paid back by the entries it frees.
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
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "floor.h"
#include "floor_internals.h"

static DlsmFloorShared *shared = NULL;
static uint64 entity_seed = 0;	/* this backend's copy; 0: not read yet */
static HTAB *parked_groups = NULL;	/* DlsmParkedGroup, under groups_lock */

/* the table of parked groups, at the end of this file */
static void attach_parked_groups(void);
static int64 parked_groups_in_use(void);
static void drop_groups(DlsmFloor *f);
static void all_groups_freed(DlsmFloor *f);
static int64 park_groups(DlsmFloor *f, const DlsmFloorSeen *seen, int64 line,
						 const DlsmParked *groups, int n);

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

/* The locks the floors need, of the tranche "dlsm_floor" (shmem.c). */
int
dlsm_floor_num_locks(void)
{
	return DLSM_FLOOR_SLOT_LOCKS + DLSM_MAX_FLOORS;
}

/*
 * Create or attach to the floors, guarded by locks (dlsm_floor_num_locks
 * of them); AddinShmemInitLock held.
 */
void
dlsm_floor_shmem_init(LWLockPadded *locks)
{
	bool		found;

	shared = ShmemInitStruct("dlsm floors", sizeof(DlsmFloorShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmFloorShared));
		shared->locks = locks;
		pg_atomic_init_u64(&shared->floor_clock, 0);
		for (int i = 0; i < DLSM_MAX_FLOORS; i++)
			pg_atomic_init_u64(&shared->owners[i], 0);
		pg_atomic_init_u64(&shared->floors_taken, 0);
		pg_atomic_init_u64(&shared->groups_left, 0);
		pg_atomic_init_u64(&shared->in_flight_left, 0);
		pg_atomic_init_u64(&shared->entities_left, 0);
		shared->entity_seed = random_seed();
	}
	attach_parked_groups();
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
	/* a NULL entity (a row written by hand) is the empty one */
	if (entity == NULL)
		entity = "";
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

/* The clock's next value, for a lowering, a parking or a new epoch. */
static uint64
floor_tick(void)
{
	return pg_atomic_add_fetch_u64(&shared->floor_clock, 1);
}

/* A full table's count moves on. */
static void
count_left(pg_atomic_uint64 *counter)
{
	pg_atomic_fetch_add_u64(counter, 1);
}

/* The owner of relid of this database in owners[]. */
static uint64
floor_owner(Oid relid)
{
	return ((uint64) MyDatabaseId << 32) | relid;
}

/* The slot whose owner is owner, or -1; read without a lock. */
static int
find_slot(uint64 owner)
{
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
		if (pg_atomic_read_u64(&shared->owners[i]) == owner)
			return i;
	return -1;
}

/* The slot of floor f. */
static int
slot_of(const DlsmFloor *f)
{
	return (int) (f - shared->floors);
}

/* The lock of the floor in slot. */
static LWLock *
slot_lock(int slot)
{
	return &shared->locks[DLSM_FLOOR_SLOT_LOCKS + slot].lock;
}

/* The floor of relid in this database, its lock taken in mode; or NULL. */
static DlsmFloor *
lock_floor(Oid relid, LWLockMode mode)
{
	uint64		owner = floor_owner(relid);
	int			slot;

	/* a slot given to another queue meanwhile is looked for again */
	while ((slot = find_slot(owner)) >= 0)
	{
		LWLockAcquire(slot_lock(slot), mode);
		if (pg_atomic_read_u64(&shared->owners[slot]) == owner)
			return &shared->floors[slot];
		LWLockRelease(slot_lock(slot));
	}
	return NULL;
}

/* Release the lock of floor f, taken by lock_floor or add_floor. */
static void
unlock_floor(DlsmFloor *f)
{
	LWLockRelease(slot_lock(slot_of(f)));
}

/*
 * Make floor f empty, knowing nothing, with an epoch of its own: no entry
 * of parked_groups carries it.  Its lock held exclusively.
 */
static void
clear_floor(DlsmFloor *f)
{
	drop_groups(f);
	LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock, LW_EXCLUSIVE);
	memset(f, 0, sizeof(DlsmFloor));
	f->groups_epoch = floor_tick();
	LWLockRelease(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock);
}

/*
 * A new floor for relid, in a free slot or the next one in turn (or the
 * one another backend made meanwhile), its lock taken exclusively.
 */
static DlsmFloor *
add_floor(Oid relid)
{
	uint64		owner = floor_owner(relid);
	LWLock	   *map_lock = &shared->locks[DLSM_FLOOR_MAP_LOCK].lock;
	DlsmFloor  *f;
	int			slot;

	LWLockAcquire(map_lock, LW_EXCLUSIVE);
	slot = find_slot(owner);
	if (slot >= 0)
	{
		LWLockAcquire(slot_lock(slot), LW_EXCLUSIVE);
		LWLockRelease(map_lock);
		return &shared->floors[slot];
	}
	slot = find_slot(0);
	if (slot < 0)
	{
		slot = shared->floor_victim;
		shared->floor_victim = (shared->floor_victim + 1) % DLSM_MAX_FLOORS;
		count_left(&shared->floors_taken);
	}
	LWLockAcquire(slot_lock(slot), LW_EXCLUSIVE);
	f = &shared->floors[slot];
	clear_floor(f);
	f->gen = pg_atomic_read_u64(&shared->floor_clock);
	f->forgotten = f->gen;		/* what came before is not known */
	/* nor which groups came free: any may have, since any clock read */
	all_groups_freed(f);
	pg_atomic_write_u64(&shared->owners[slot], owner);
	LWLockRelease(map_lock);
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
	f = lock_floor(relid, LW_SHARED);

	/*
	 * The queue's first claim (since the floor was last taken for another
	 * queue) makes its floor, knowing nothing yet: from now on it keeps the
	 * lowerings, without which a claim could move it only in a moment without
	 * any commit of an insert
	 */
	if (f == NULL)
		f = add_floor(relid);
	seen->gen = f->gen;
	seen->clock = pg_atomic_read_u64(&shared->floor_clock);
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
		unlock_floor(f);
		f = lock_floor(relid, LW_EXCLUSIVE);
		if (f != NULL && TimestampDifferenceExceeds(f->checked_at, now,
													check_ms))
		{
			f->checked_at = now;
			seen->line = seen->base = after;
			seen->check = true;
			seen->nparked = 0;
		}
	}
	if (f != NULL)
		unlock_floor(f);
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
			count_left(&shared->entities_left);
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
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL && n == 0 && ngroups == 0 &&
		seen->gen == pg_atomic_read_u64(&shared->floor_clock))
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
	if (f != NULL)
		unlock_floor(f);
}

/*
 * Lower floor f below id below, after the commit of a change.  Its lock
 * held exclusively.
 */
static void
lower_locked(DlsmFloor *f, int64 below)
{
	DlsmLowering *kept = &f->recent[f->next_recent];

	f->line = Max(f->base, Min(f->line, below == PG_INT64_MIN ?
							   PG_INT64_MIN : below - 1));
	f->gen = floor_tick();
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
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f != NULL)
	{
		lower_locked(f, below);
		unlock_floor(f);
	}
	else
		floor_tick();
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
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f != NULL)
	{
		lower_locked(f, PG_INT64_MIN);
		f->nparked = 0;
		drop_groups(f);
		unlock_floor(f);
	}
	else
		floor_tick();
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
	LWLock	   *map_lock;
	int			slot;

	if (shared == NULL)
		return;
	map_lock = &shared->locks[DLSM_FLOOR_MAP_LOCK].lock;
	LWLockAcquire(map_lock, LW_EXCLUSIVE);
	slot = find_slot(floor_owner(relid));
	if (slot >= 0)
	{
		LWLockAcquire(slot_lock(slot), LW_EXCLUSIVE);
		clear_floor(&shared->floors[slot]);
		pg_atomic_write_u64(&shared->owners[slot], 0);
		LWLockRelease(slot_lock(slot));
	}
	LWLockRelease(map_lock);
	floor_tick();
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
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return;
	for (int i = 0; i < n; i++)
	{
		f->bucket_gen[entities[i] % DLSM_ENTITY_BUCKETS]++;
		for (int k = 0; k < f->nparked; k++)
		{
			if (f->parked[k].key != entities[i])
				continue;
			lower_locked(f, f->parked[k].lowest);
			f->parked[k--] = f->parked[--f->nparked];
		}
	}
	unlock_floor(f);
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
	/* one floor at a time: each is the database's from its lock on */
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];
		uint64		owner = pg_atomic_read_u64(&shared->owners[i]);

		if (owner == 0 || (Oid) (owner >> 32) != dboid)
			continue;
		LWLockAcquire(slot_lock(i), LW_EXCLUSIVE);
		owner = pg_atomic_read_u64(&shared->owners[i]);
		if (owner != 0 && (Oid) (owner >> 32) == dboid)
		{
			lower_locked(f, PG_INT64_MIN);
			f->nparked = 0;
			for (int b = 0; b < DLSM_ENTITY_BUCKETS; b++)
				f->bucket_gen[b]++;
			drop_groups(f);
			all_groups_freed(f);
		}
		LWLockRelease(slot_lock(i));
	}
}

/* The floors' clock, for dlsm_floor_group_probed. */
uint64
dlsm_floor_clock(void)
{
	if (shared == NULL)
		return 0;
	return pg_atomic_read_u64(&shared->floor_clock);
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
 * This transaction claimed rows of relid (n ids, by one statement): let
 * the floor know them, so that the walks of other claims pass over them
 * while they are in flight.  taken[i] is false for a row the floor does not
 * take (no floor, or full): walks then stop at it, as at any row they
 * cannot claim.  One lock for all the rows.
 */
void
dlsm_floor_claimed(Oid relid, const int64 *ids, int n, bool *taken)
{
	DlsmFloor  *f = NULL;

	if (shared != NULL && n > 0)
		f = lock_floor(relid, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		taken[i] = f != NULL && f->nin_flight < DLSM_MAX_IN_FLIGHT;
		if (taken[i])
			f->in_flight[f->nin_flight++] = ids[i];
		else if (f != NULL)
			count_left(&shared->in_flight_left);
	}
	if (f != NULL)
		unlock_floor(f);
}

/*
 * The claims of rows of relid that the floor knows (n ids,
 * dlsm_floor_claimed) ended; ready: they ended without changing the rows
 * (a rollback), which are ready again, so the floor goes below them.
 * Call before the claims' locks are released.
 */
void
dlsm_floor_unclaimed(Oid relid, const int64 *ids, int n, bool ready)
{
	DlsmFloor  *f;
	int64		lowest = PG_INT64_MAX;

	if (shared == NULL || n == 0)
		return;
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return;
	for (int k = 0; k < n; k++)
	{
		for (int i = 0; i < f->nin_flight; i++)
		{
			if (f->in_flight[i] != ids[k])
				continue;
			f->in_flight[i] = f->in_flight[--f->nin_flight];
			lowest = Min(lowest, ids[k]);
			break;
		}
	}
	/* one lowering below the lowest is one below each */
	if (ready && lowest != PG_INT64_MAX)
		lower_locked(f, lowest);
	unlock_floor(f);
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
	int64		groups;

	if (shared == NULL)
		return 0;
	/* one floor at a time: the figures are each a moment's */
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		LWLockAcquire(slot_lock(i), LW_SHARED);
		if (pg_atomic_read_u64(&shared->owners[i]) != 0)
		{
			floors++;
			in_flight = Max(in_flight, f->nin_flight);
			entities = Max(entities, f->nparked);
		}
		LWLockRelease(slot_lock(i));
	}
	groups = parked_groups_in_use();
	out[0] = (DlsmTableUsage)
	{
		"floors", DLSM_MAX_FLOORS, floors,
			(int64) pg_atomic_read_u64(&shared->floors_taken)
	};
	out[1] = (DlsmTableUsage)
	{
		"parked groups", DLSM_MAX_PARKED_GROUPS, groups,
			(int64) pg_atomic_read_u64(&shared->groups_left)
	};
	out[2] = (DlsmTableUsage)
	{
		"rows in flight, per queue", DLSM_MAX_IN_FLIGHT, in_flight,
			(int64) pg_atomic_read_u64(&shared->in_flight_left)
	};
	out[3] = (DlsmTableUsage)
	{
		"parked entities, per queue", DLSM_MAX_PARKED, entities,
			(int64) pg_atomic_read_u64(&shared->entities_left)
	};
	return 4;
}

/* ---------------------------------------------------------------------
 * The table of parked groups
 * ---------------------------------------------------------------------
 */

/*
 * Create or attach to the table of parked groups, for the floors
 * (dlsm_floor_shmem_init); AddinShmemInitLock held.
 */
static void
attach_parked_groups(void)
{
	HASHCTL		ctl;

	/* fixed: past it, groups are not parked (HASH_ENTER_NULL) */
	ctl.keysize = sizeof(DlsmGroupKey);
	ctl.entrysize = sizeof(DlsmParkedGroup);
	parked_groups = DLSM_SHMEM_INIT_HASH("dlsm parked groups",
										 DLSM_MAX_PARKED_GROUPS, &ctl,
										 HASH_ELEM | HASH_BLOBS |
										 HASH_FIXED_SIZE);
}

/* How many groups the floors park now, stale entries set aside. */
static int64
parked_groups_in_use(void)
{
	int64		groups;

	LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock, LW_SHARED);
	groups = (int64) hash_get_num_entries(parked_groups) -
		(int64) shared->groups_stale;
	LWLockRelease(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock);
	return groups;
}

/* The key of group of floor f in parked_groups. */
static DlsmGroupKey
parked_group_key(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	key.group = group;
	key.epoch = f->groups_epoch;
	return key;
}

/* The parked group of floor f, or NULL.  Its lock and groups_lock held. */
static DlsmParkedGroup *
find_parked_group(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	if (f->ngroups == 0)
		return NULL;
	key = parked_group_key(f, group);
	return hash_search(parked_groups, &key, HASH_FIND, NULL);
}

/* Is group parked at floor f?  Its lock held. */
static bool
group_is_parked(const DlsmFloor *f, uint64 group)
{
	bool		parked;

	if (f->ngroups == 0)
		return false;
	LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock, LW_SHARED);
	parked = find_parked_group(f, group) != NULL;
	LWLockRelease(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock);
	return parked;
}

/*
 * Unpark every group of floor f: its entries go stale, under a new epoch.
 * Its lock held exclusively.
 */
static void
drop_groups(DlsmFloor *f)
{
	if (f->ngroups == 0)
		return;
	LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock, LW_EXCLUSIVE);
	shared->groups_stale += f->ngroups;
	f->groups_epoch = floor_tick();
	LWLockRelease(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock);
	f->ngroups = 0;
}

/*
 * Remove the stale entries of parked_groups (see the header), if enough
 * are to make room; groups_lock held exclusively.
 */
static void
sweep_parked_groups(void)
{
	HASH_SEQ_STATUS status;
	DlsmParkedGroup *p;

	if (shared->groups_stale < DLSM_GROUPS_SWEEP)
		return;
	hash_seq_init(&status, parked_groups);
	while ((p = hash_seq_search(&status)) != NULL)
		if (p->key.epoch != shared->floors[p->slot].groups_epoch)
			hash_search(parked_groups, &p->key, HASH_REMOVE, NULL);
	shared->groups_stale = 0;
}

/*
 * The entry of group of floor f in parked_groups, made if need be (found
 * says whether it was there); NULL when the table is full.  Its lock and
 * groups_lock held exclusively.
 */
static DlsmParkedGroup *
enter_parked_group(DlsmFloor *f, uint64 group, bool *found)
{
	DlsmGroupKey key = parked_group_key(f, group);
	DlsmParkedGroup *p;

	p = hash_search(parked_groups, &key, HASH_ENTER_NULL, found);
	if (p == NULL && shared->groups_stale >= DLSM_GROUPS_SWEEP)
	{
		sweep_parked_groups();
		p = hash_search(parked_groups, &key, HASH_ENTER_NULL, found);
	}
	if (p != NULL)
		p->slot = slot_of(f);
	return p;
}

/*
 * Every group of floor f may have come free, now: no claim that read the
 * floors' clock before parks one.  Its lock held exclusively.
 */
static void
all_groups_freed(DlsmFloor *f)
{
	uint64		clock = floor_tick();

	for (int b = 0; b < DLSM_GROUP_BUCKETS; b++)
	{
		f->group_freed[b].freed_before = clock;
		f->group_freed[b].freed = clock;
		f->group_freed[b].ended = clock;
		f->group_freed[b].prober = -1;
	}
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
 * note it in its bucket.  Its lock held exclusively.
 */
static void
note_freed(DlsmFloor *f, uint64 group, int prober)
{
	DlsmGroupBucket *b = &f->group_freed[group % DLSM_GROUP_BUCKETS];

	if (b->prober < 0 || b->prober != prober)
		b->freed_before = b->freed;
	b->freed = floor_tick();
	b->prober = prober;
	if (prober < 0)
		b->ended = b->freed;
}

/*
 * Park at floor f the groups a claim found at their limit (n of them, by
 * their lowest row, ascending), whose rows it passed over up to line;
 * returns how far the floor may go: below the lowest row of the first
 * group that may have come free since the claim read the floor (seen), or
 * that does not fit.  Its lock held exclusively.
 */
static int64
park_groups(DlsmFloor *f, const DlsmFloorSeen *seen, int64 line,
			const DlsmParked *groups, int n)
{
	LWLock	   *groups_lock = &shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock;

	if (n == 0 || groups[0].lowest > line)
		return line;
	LWLockAcquire(groups_lock, LW_EXCLUSIVE);
	for (int i = 0; i < n && groups[i].lowest <= line; i++)
	{
		DlsmParkedGroup *p = find_parked_group(f, groups[i].key);
		bool		found = p != NULL;

		/*
		 * Parked already (by another claim): it waits still.  One filled by
		 * its units in progress was parked when found, and is gone only if
		 * one of them ended since.
		 */
		if (!found && (groups[i].solid ||
					   !unfreed(f, groups[i].key, seen->clock)))
			line = groups[i].lowest - 1;
		else if (!found)
			p = enter_parked_group(f, groups[i].key, &found);
		if (p == NULL && line >= groups[i].lowest)
		{
			count_left(&shared->groups_left);
			line = groups[i].lowest - 1;
		}
		if (p == NULL)
			break;
		if (!found)
		{
			p->lowest = groups[i].lowest;
			p->parked_at = floor_tick();
			p->solid = groups[i].solid;
			f->ngroups++;
		}
		else
			p->lowest = Min(p->lowest, groups[i].lowest);
	}
	LWLockRelease(groups_lock);
	return line;
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
	f = lock_floor(relid, LW_SHARED);
	if (f != NULL)
	{
		parked = group_is_parked(f, group);
		unlock_floor(f);
	}
	return parked;
}

/*
 * Unpark group p of floor f, lowering the floor below its lowest row.
 * Its lock and groups_lock held exclusively.
 */
static void
unpark_group(DlsmFloor *f, DlsmParkedGroup *p)
{
	lower_locked(f, p->lowest);
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
	LWLock	   *groups_lock;

	if (shared == NULL || n == 0)
		return;
	groups_lock = &shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock;
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return;
	if (f->ngroups > 0)
		LWLockAcquire(groups_lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		DlsmParkedGroup *p = find_parked_group(f, groups[i]);

		note_freed(f, groups[i], -1);
		if (p != NULL)
			unpark_group(f, p);
	}
	if (LWLockHeldByMe(groups_lock))
		LWLockRelease(groups_lock);
	unlock_floor(f);
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
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return;
	note_freed(f, group, DLSM_MY_PROC_NUMBER);
	if (f->ngroups > 0)
	{
		LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock,
					  LW_EXCLUSIVE);
		p = find_parked_group(f, group);
		if (p != NULL && !p->solid && p->parked_at > since)
			unpark_group(f, p);
		LWLockRelease(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock);
	}
	unlock_floor(f);
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
	DlsmParkedGroup *p;
	LWLock	   *groups_lock;
	bool		found;

	if (shared == NULL)
		return false;
	f = lock_floor(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return false;
	if (f->group_freed[group % DLSM_GROUP_BUCKETS].ended > since)
	{
		unlock_floor(f);
		return false;
	}
	groups_lock = &shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock;
	LWLockAcquire(groups_lock, LW_EXCLUSIVE);
	p = enter_parked_group(f, group, &found);
	if (p == NULL)
		count_left(&shared->groups_left);
	else if (!found)
	{
		p->lowest = lowest;
		p->parked_at = floor_tick();
		f->ngroups++;
	}
	else
		p->lowest = Min(p->lowest, lowest);
	if (p != NULL)
		p->solid = true;
	LWLockRelease(groups_lock);
	unlock_floor(f);
	return p != NULL;
}
