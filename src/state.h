/*-------------------------------------------------------------------------
 *
 * state.h
 *	  The moves of claimed requests: settle, heartbeat, reap; and the rest
 *	  of a queue's life: enqueue, retention, statistics (state.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/state.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_STATE_H
#define DLSM_STATE_H

#include "utils/array.h"
#include "utils/uuid.h"

#include "queue.h"

/* Outcomes a claimant can settle with. */
typedef enum DlsmOutcome
{
	DLSM_OUTCOME_COMPLETE,		/* in-progress -> complete */
	DLSM_OUTCOME_ERROR,			/* in-progress -> error */
	DLSM_OUTCOME_RETRY			/* in-progress -> new, or error when spent */
} DlsmOutcome;

/* A settle: what becomes of the claims, and why. */
typedef struct DlsmSettle
{
	DlsmOutcome outcome;
	const char *detail;			/* or NULL */
	Interval   *retry_after;	/* or NULL: the backoff */
} DlsmSettle;

/* A request to enqueue; NULL payload or run_at: none, now. */
typedef struct DlsmRequest
{
	Datum		entity;			/* text */
	Datum		kind;			/* text */
	Datum		payload;		/* jsonb, or 0 */
	Datum		run_at;			/* timestamptz, or 0 */
	Datum		group_key;		/* text, or 0 */
	Datum		dedup_key;		/* text, or 0 */
	Datum		dedup_window;	/* interval, or 0 */
	bool		has_payload;
	bool		has_run_at;
	bool		has_group_key;
	bool		has_dedup_key;
	bool		has_dedup_window;
} DlsmRequest;

/* Called for each process id given to dlsm_settle_many. */
typedef void (*DlsmSettledEmit) (void *arg, pg_uuid_t *process_id,
								 int64 settled);

extern const char *dlsm_outcome_name(DlsmOutcome outcome);
extern bool dlsm_outcome_parse(const char *name, DlsmOutcome *outcome);
extern int64 dlsm_state_settle(DlsmQueue *queue, pg_uuid_t *process_id,
							   DlsmSettle *settle);
extern void dlsm_state_settle_many(DlsmQueue *queue, ArrayType *process_ids,
								   DlsmSettle *settle, DlsmSettledEmit emit,
								   void *arg);
extern TimestampTz dlsm_state_heartbeat(DlsmQueue *queue,
										pg_uuid_t *process_id,
										int64 lease_us);
extern int64 dlsm_state_reap(DlsmQueue *queue);
extern int64 dlsm_state_purge(DlsmQueue *queue, int batch);
extern void dlsm_state_stats(DlsmQueue *queue, Datum *values, bool *nulls);
extern int64 dlsm_state_enqueue(DlsmQueue *queue, DlsmRequest *request,
								bool *deduplicated);
extern void dlsm_state_enqueued(DlsmQueue *queue);

#endif							/* DLSM_STATE_H */
