/*-------------------------------------------------------------------------
 *
 * grouplimit.h
 *	  Concurrency and rate limits of groups of a queue's requests.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/grouplimit.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_GROUPLIMIT_H
#define DLSM_GROUPLIMIT_H

#include "datatype/timestamp.h"
#include "utils/uuid.h"

#include "rate.h"

/* One group's limits; 0: none of that kind. */
typedef struct DlsmLimit
{
	int32		concurrency;	/* units in progress at once */
	int32		rate;			/* claims ... */
	int64		per_us;			/* ... per this long */
} DlsmLimit;

/* A queue's limits, read with its descriptor. */
typedef struct DlsmLimits
{
	bool		has_default;	/* dflt applies to every other group */
	DlsmLimit	dflt;
	int			ngroups;		/* groups with limits of their own ... */
	char	  **groups;			/* ... sorted by strcmp */
	DlsmLimit  *limits;
	MemoryContext context;		/* holds all of the above */
} DlsmLimits;

/* What a claim took of its group's limits, to give back if it claims none. */
typedef struct DlsmAdmission
{
	const char *group;			/* NULL: nothing was taken */
	int			slot;			/* the slot taken, or -1 */
	bool		borrowed;		/* the slot of a unit settled in a live
								 * subtransaction of this transaction */
	bool		rate_taken;
	DlsmRateTaken rate;
} DlsmAdmission;

/* What dlsm_limits_admit says. */
typedef enum DlsmAdmit
{
	DLSM_ADMITTED,				/* the unit may be claimed */
	DLSM_AT_CONCURRENCY,		/* its group has as many units in progress or
								 * being claimed as its limit */
	DLSM_FULL_IN_PROGRESS,		/* its group's units in progress, as
								 * committed, alone fill its limit */
	DLSM_AT_RATE				/* its group's rate lets no claim go now */
} DlsmAdmit;

struct DlsmQueue;

extern void dlsm_limits_init(void);
extern DlsmLimits *dlsm_limits_get(struct DlsmQueue *queue);
extern const DlsmLimit *dlsm_limits_of(const DlsmLimits *limits,
									   const char *group);
extern DlsmAdmit dlsm_limits_admit(struct DlsmQueue *queue, const char *group,
								   bool may_park, int64 row,
								   DlsmAdmission *admission);
extern void dlsm_limits_give_back(struct DlsmQueue *queue,
								  DlsmAdmission *admission);
extern void dlsm_limits_claimed(struct DlsmQueue *queue,
								const DlsmAdmission *admission,
								const pg_uuid_t *process_id);
extern void dlsm_limits_settled(struct DlsmQueue *queue,
								const pg_uuid_t *process_id);
extern void dlsm_limits_set(struct DlsmQueue *queue, const char *group,
							const DlsmLimit *limit, Interval *per);
extern int64 dlsm_limits_in_progress(struct DlsmQueue *queue,
									 const char *group);
extern TimestampTz dlsm_limits_next_claim(struct DlsmQueue *queue,
										  const char *group);

/* the groups at the floors (floor.c), for claims and settles */
extern bool dlsm_limits_limited(struct DlsmQueue *queue, const char *group,
								uint64 *key);
extern uint64 dlsm_limits_group_key(const char *group);
extern bool dlsm_limits_parked(struct DlsmQueue *queue, uint64 key);
extern void dlsm_limits_found_room(Oid relid, const uint64 *groups, int n);
extern void dlsm_limits_group_changed(struct DlsmQueue *queue,
									  const char *group);

#endif							/* DLSM_GROUPLIMIT_H */
