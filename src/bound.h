/*-------------------------------------------------------------------------
 *
 * bound.h
 *	  The time bound on each step of the worker (bound.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bound.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_BOUND_H
#define DLSM_BOUND_H

/*
 * The steps of the worker: worker.c's transactions and the parts of a
 * handler's that handler.c names.  Each has a name (bound.c), shown as the
 * worker's activity and in dlsm_worker_status, and messages of its own.
 */
typedef enum DlsmWorkerStep
{
	DLSM_STEP_NONE,				/* no step yet */
	DLSM_STEP_READ_REGISTRY,	/* no queue's */
	DLSM_STEP_REAP,
	DLSM_STEP_PURGE,
	DLSM_STEP_PURGE_LEASES,		/* no queue's */
	DLSM_STEP_HANDLE,
	DLSM_STEP_CLAIM_UNIT,
	DLSM_STEP_CALL_HANDLER,
	DLSM_STEP_SETTLE_UNIT
} DlsmWorkerStep;

extern void dlsm_bound_init(void);
extern void dlsm_bound_begin(Oid relid, const char *queue,
							 DlsmWorkerStep step);
#define DLSM_BOUND_STEP 0		/* own_ms: bounded by dlsm.step_timeout */

extern void dlsm_bound_enter(DlsmWorkerStep step, int own_ms);
extern void dlsm_bound_check(void);
extern void dlsm_bound_failed(void);
extern void dlsm_bound_end(void);
extern void dlsm_bound_aborted(void);
extern void dlsm_bound_idle(void);
extern bool dlsm_bound_current(Oid *relid, const char **queue,
							   DlsmWorkerStep *step);
extern bool dlsm_bound_abandoned(Oid *relid, const char **queue,
								 DlsmWorkerStep *step);
extern const char *dlsm_bound_step_name(DlsmWorkerStep step);
extern DlsmWorkerStep dlsm_bound_step(void);
extern void dlsm_bound_context(void *arg);

#endif							/* DLSM_BOUND_H */
