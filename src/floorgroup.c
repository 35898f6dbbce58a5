/*-------------------------------------------------------------------------
 *
 * floorgroup.c
 *	  The groups at their concurrency limit that the floors pass over: the
 *	  table of parked groups in shared memory.
 *
 * Part of the floor module: floor.c owns the floors and says, in its
 * header, which lock guards what and what the words used here mean; this
 * file keeps the table of parked groups and the buckets by which a floor
 * records the groups that came free.  The layout both files share is in
 * floor_internals.h.
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
 * Calls nothing of dlsm but floor.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/floorgroup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "compat.h"
#include "floor.h"
#include "floor_internals.h"

static DlsmFloorShared *shared = NULL;	/* floor.c's, given by it */
static HTAB *parked_groups = NULL;	/* DlsmParkedGroup, under groups_lock */

/*
 * Create or attach to the table of parked groups, for the floors shared
 * (dlsm_floor_shmem_init); AddinShmemInitLock held.
 */
void
dlsm_floor_groups_attach(DlsmFloorShared *floors)
{
	HASHCTL		ctl;

	shared = floors;
	/* fixed: past it, groups are not parked (HASH_ENTER_NULL) */
	ctl.keysize = sizeof(DlsmGroupKey);
	ctl.entrysize = sizeof(DlsmParkedGroup);
	parked_groups = DLSM_SHMEM_INIT_HASH("dlsm parked groups",
										 DLSM_MAX_PARKED_GROUPS, &ctl,
										 HASH_ELEM | HASH_BLOBS |
										 HASH_FIXED_SIZE);
}

/* How many groups the floors park now, stale entries set aside. */
int64
dlsm_floor_groups_in_use(void)
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
void
dlsm_floor_drop_groups(DlsmFloor *f)
{
	if (f->ngroups == 0)
		return;
	LWLockAcquire(&shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock, LW_EXCLUSIVE);
	shared->groups_stale += f->ngroups;
	f->groups_epoch = dlsm_floor_tick();
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
		p->slot = dlsm_floor_slot_of(f);
	return p;
}

/*
 * Every group of floor f may have come free, now: no claim that read the
 * floors' clock before parks one.  Its lock held exclusively.
 */
void
dlsm_floor_all_groups_freed(DlsmFloor *f)
{
	uint64		clock = dlsm_floor_tick();

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
	b->freed = dlsm_floor_tick();
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
int64
dlsm_floor_park_groups(DlsmFloor *f, const DlsmFloorSeen *seen, int64 line,
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
			dlsm_floor_count_left(&shared->groups_left);
			line = groups[i].lowest - 1;
		}
		if (p == NULL)
			break;
		if (!found)
		{
			p->lowest = groups[i].lowest;
			p->parked_at = dlsm_floor_tick();
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
	f = dlsm_floor_lock(relid, LW_SHARED);
	if (f != NULL)
	{
		parked = group_is_parked(f, group);
		dlsm_floor_unlock(f);
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
	dlsm_floor_lower_locked(f, p->lowest);
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
	f = dlsm_floor_lock(relid, LW_EXCLUSIVE);
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
	dlsm_floor_unlock(f);
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
	f = dlsm_floor_lock(relid, LW_EXCLUSIVE);
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
	dlsm_floor_unlock(f);
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
	f = dlsm_floor_lock(relid, LW_EXCLUSIVE);
	if (f == NULL)
		return false;
	if (f->group_freed[group % DLSM_GROUP_BUCKETS].ended > since)
	{
		dlsm_floor_unlock(f);
		return false;
	}
	groups_lock = &shared->locks[DLSM_FLOOR_GROUPS_LOCK].lock;
	LWLockAcquire(groups_lock, LW_EXCLUSIVE);
	p = enter_parked_group(f, group, &found);
	if (p == NULL)
		dlsm_floor_count_left(&shared->groups_left);
	else if (!found)
	{
		p->lowest = lowest;
		p->parked_at = dlsm_floor_tick();
		f->ngroups++;
	}
	else
		p->lowest = Min(p->lowest, lowest);
	if (p != NULL)
		p->solid = true;
	LWLockRelease(groups_lock);
	dlsm_floor_unlock(f);
	return p != NULL;
}
