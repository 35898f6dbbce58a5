/*-------------------------------------------------------------------------
 *
 * floor.h
 *	  Where the ready rows of a queue begin: the floors (floor.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/floor.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_FLOOR_H
#define DLSM_FLOOR_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

#include "usage.h"

/*
 * A queue's floor: an id below which no row of the queue is ready to be
 * claimed, so that claims start their walk there instead of at the oldest
 * open row.  Rows of a "parked" entity (one whose rows wait for its create
 * in progress, or for a create still to come) may lie below the floor:
 * the floor passes over them, and keeps the entities so passed over, at
 * most DLSM_MAX_PARKED of them (claim.c moves the floor, wake.c lowers it).
 * A group at its concurrency limit is parked too, under its group key
 * (dlsm_floor_group_key): its rows wait for a unit of it to end.  A floor
 * parks any number of groups (all floors together, up to a fixed number),
 * and every claim asks (through grouplimit.c) whether a group it meets is
 * parked, so that a group found at its limit is counted once, not by every
 * claim.
 * Rows claimed by transactions still in flight lie below it too: the floor
 * knows them (at most DLSM_MAX_IN_FLIGHT), and their claim lowers it again
 * if it rolls back (pending.c), so that a claim does not walk over the
 * claims of every other consumer of the moment.
 */

/* The most rows claimed by transactions in flight a floor knows. */
#define DLSM_MAX_IN_FLIGHT 256

/* The most entities whose waiting rows a queue's floor passes over. */
#define DLSM_MAX_PARKED 8

/* Entities fall into this many buckets, each with its own generation. */
#define DLSM_ENTITY_BUCKETS 32

/* An entity or group whose rows wait, passed over by a floor, from lowest up. */
typedef struct DlsmParked
{
	uint64		key;			/* dlsm_floor_entity_key, or group_key */
	int64		lowest;
	bool		solid;			/* a group whose units in progress, as
								 * committed, filled it */
} DlsmParked;

/* What a claim read of its queue's floor before its scan (floor.c). */
typedef struct DlsmFloorSeen
{
	int64		line;			/* scan the rows above it */
	bool		publish;		/* may publish what the scan finds */
	bool		check;			/* the scan starts at the line in the sand */
	bool		may_park;		/* may pass over waiting entities' rows */
	int			nparked;		/* the entities the floor passes over */
	DlsmParked	parked[DLSM_MAX_PARKED];
	int			nin_flight;		/* rows claimed by transactions in flight */
	int64		in_flight[DLSM_MAX_IN_FLIGHT];
	/* private to floor.c */
	int64		base;
	uint64		gen;
	uint64		clock;			/* floor_clock when it was read */
	TimestampTz checked_at;		/* when it was read */
	uint64		bucket_gen[DLSM_ENTITY_BUCKETS];
} DlsmFloorSeen;

/* shared memory (shmem.c) */
extern Size dlsm_floor_shmem_size(void);
extern int	dlsm_floor_num_locks(void);
extern void dlsm_floor_shmem_init(LWLockPadded *locks);

extern uint64 dlsm_floor_entity_key(const char *entity);
extern uint64 dlsm_floor_group_key(const char *group);

/* where the ready rows of a queue begin */
extern void dlsm_floor_read(Oid relid, int64 after, int check_ms,
							DlsmFloorSeen *seen);
extern void dlsm_floor_publish(Oid relid, const DlsmFloorSeen *seen,
							   int64 line, const DlsmParked *parked,
							   int nparked, const DlsmParked *groups,
							   int ngroups);
extern void dlsm_floor_lower(Oid relid, int64 below);
extern void dlsm_floor_reset(Oid relid);
extern void dlsm_floor_forget(Oid relid);
extern void dlsm_floor_entities(Oid relid, const uint64 *entities,
								int n);

/* the groups at their limit: called by grouplimit.c alone (test/arch.pl) */
extern bool dlsm_floor_group_parked(Oid relid, uint64 group);
extern void dlsm_floor_groups(Oid relid, const uint64 *groups, int n);
extern void dlsm_floor_group_probed(Oid relid, uint64 group, uint64 since);
extern bool dlsm_floor_group_park(Oid relid, uint64 group, int64 lowest,
								  uint64 since);
extern uint64 dlsm_floor_clock(void);
extern void dlsm_floor_prepared_ended(Oid dboid);
extern bool dlsm_floor_in_flight(const DlsmFloorSeen *seen, int64 id);
extern void dlsm_floor_claimed(Oid relid, const int64 *ids, int n,
							   bool *taken);
extern int	dlsm_floor_usage(DlsmTableUsage *out);
extern void dlsm_floor_unclaimed(Oid relid, const int64 *ids, int n,
								 bool ready);

#endif							/* DLSM_FLOOR_H */
