/*-------------------------------------------------------------------------
 *
 * rate.h
 *	  The rate limits of groups in shared memory (rate.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/rate.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_RATE_H
#define DLSM_RATE_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

#include "usage.h"

/*
 * The most groups whose rate limit holds back their next claim at once,
 * in all, of the queues of one owner and of one database, so that no
 * tenant fills the table.
 */
#define DLSM_MAX_RATES 16384
#define DLSM_RATES_PER_OWNER 4096
#define DLSM_RATES_PER_DATABASE 8192

/* What a claim took of its group's rate limit, to give it back. */
typedef struct DlsmRateTaken
{
	TimestampTz before;			/* the group's next claim time before */
	TimestampTz after;			/* and after it */
	int64		not_kept;		/* claims admitted without an entry so far */
} DlsmRateTaken;

/* dlsm_rate_take's answer */
typedef enum DlsmRateAnswer
{
	DLSM_RATE_TAKEN,			/* the claim may go: its turn is taken */
	DLSM_RATE_HELD,				/* not before the group's next turn */
	DLSM_RATE_OWNER_FULL,		/* no entry: the queue owner's share is full */
	DLSM_RATE_DATABASE_FULL,	/* no entry: the database's share is full */
	DLSM_RATE_TABLE_FULL		/* no entry free where the group may go */
} DlsmRateAnswer;

/* shared memory (shmem.c) */
extern Size dlsm_rate_shmem_size(void);
extern int	dlsm_rate_num_locks(void);
extern void dlsm_rate_shmem_init(LWLockPadded *locks);

extern bool dlsm_rate_available(void);
extern DlsmRateAnswer dlsm_rate_take(Oid relid, Oid owner, uint64 group,
									 int64 spacing_us,
									 DlsmRateTaken *taken);
extern void dlsm_rate_give_back(Oid relid, uint64 group,
								const DlsmRateTaken *taken);
extern TimestampTz dlsm_rate_next(Oid relid, uint64 group);
extern void dlsm_rate_forget(Oid relid);
extern int	dlsm_rate_usage(DlsmTableUsage *out);

#endif							/* DLSM_RATE_H */
