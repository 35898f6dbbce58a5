/*-------------------------------------------------------------------------
 *
 * floor_internals.h
 *	  The layout of the floors in shared memory, private to the floor
 *	  module (floor.c).
 *
 * Only the floor module may include this header (test/arch.pl):
 * everyone else calls the operations of floor.h.  The locks and what they
 * guard are described in floor.c's header.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/floor_internals.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_FLOOR_INTERNALS_H
#define DLSM_FLOOR_INTERNALS_H

#include "port/atomics.h"
#include "storage/lwlock.h"

#include "floor.h"

/* The most queues whose floor is kept; more share the slots in turn. */
#define DLSM_MAX_FLOORS 128

/*
 * The most groups at their concurrency limit that the floors pass over, in
 * all, and the buckets by which a floor records the groups that came free.
 */
#define DLSM_MAX_PARKED_GROUPS 16384
#define DLSM_GROUP_BUCKETS 1024

/* A full table of parked groups is swept when this many entries are stale. */
#define DLSM_GROUPS_SWEEP (DLSM_MAX_PARKED_GROUPS / 16)

/* The locks of the tranche "dlsm_floor": these two, then one per slot. */
#define DLSM_FLOOR_MAP_LOCK 0
#define DLSM_FLOOR_GROUPS_LOCK 1
#define DLSM_FLOOR_SLOT_LOCKS 2

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
	uint64		groups_epoch;	/* theirs; under groups_lock too */
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
	uint64		group;			/* dlsm_floor_group_key */
	uint64		epoch;			/* its floor's groups_epoch: unique to it */
} DlsmGroupKey;

typedef struct DlsmParkedGroup
{
	DlsmGroupKey key;			/* stale when epoch is not its floor's */
	int64		lowest;
	uint64		parked_at;		/* floor_clock when it was parked */
	int			slot;			/* its floor */
	bool		solid;			/* parked for units in progress, as committed:
								 * only a unit's end unparks it */
} DlsmParkedGroup;

/* The floors of the queues. */
typedef struct DlsmFloorShared
{
	LWLockPadded *locks;		/* the tranche "dlsm_floor": see floor.c */
	pg_atomic_uint64 floor_clock;	/* moved on by every lowering */
	int			floor_victim;	/* the next slot to take when all are used */
	uint64		groups_stale;	/* stale entries in parked_groups */
	/* each slot's queue: database << 32 | relid, or 0 when free */
	pg_atomic_uint64 owners[DLSM_MAX_FLOORS];
	DlsmFloor	floors[DLSM_MAX_FLOORS];	/* each under its slot's lock */
	uint64		entity_seed;	/* random, set at creation: see floor.c */
	/* times each table had no room (dlsm_floor_usage) */
	pg_atomic_uint64 floors_taken;	/* a floor taken from another queue */
	pg_atomic_uint64 groups_left;	/* a group not parked: the table full */
	pg_atomic_uint64 in_flight_left;	/* a claimed row the floor did not
										 * take */
	pg_atomic_uint64 entities_left; /* parked entities a floor did not take */
} DlsmFloorShared;

#endif							/* DLSM_FLOOR_INTERNALS_H */
