/*-------------------------------------------------------------------------
 *
 * claim.h
 *	  Claiming units of work in one call (claim.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/claim.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_CLAIM_H
#define DLSM_CLAIM_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "utils/uuid.h"

#include "queue.h"

/* One claim request, as dlsm_claim was called. */
typedef struct DlsmClaimArgs
{
	DlsmQueue  *queue;
	int64		lease_us;		/* lease length, microseconds */
	pg_uuid_t  *process_id;		/* NULL: a fresh UUID per unit */
	int64		after;			/* line in the sand */
	int64		wait_us;		/* -1: forever */
	int			units;			/* most units to return */
} DlsmClaimArgs;

/*
 * Called for each claimed row, oldest first: values and nulls are its
 * columns A_CLAIM_* (below), at index A_CLAIM_* - 1.
 */
typedef void (*DlsmClaimEmit) (void *arg, Datum *values, bool *nulls);

extern int	dlsm_claim_units(DlsmClaimArgs *args, DlsmClaimEmit emit,
							 void *arg);
extern int64 dlsm_claim_group(DlsmQueue *queue, const char *entity,
							  pg_uuid_t *process_id, int64 lease_us);

/* The columns of a claimed row, as dlsm_claim returns it. */
enum
{
	A_CLAIM_ID = 1, A_CLAIM_KIND, A_CLAIM_ENTITY, A_CLAIM_PAYLOAD,
	A_CLAIM_PROCESS_ID, A_CLAIM_FENCE, A_CLAIM_LEASE_UNTIL, N_CLAIM
};

#endif							/* DLSM_CLAIM_H */
