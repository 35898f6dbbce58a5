/*-------------------------------------------------------------------------
 *
 * waits.h
 *	  The wait events dlsm's processes show while they sleep (waits.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/waits.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_WAITS_H
#define DLSM_WAITS_H

typedef enum DlsmWait
{
	DLSM_WAIT_CLAIM,			/* a claim waiting for work */
	DLSM_WAIT_NAMED_LOCK,		/* dlsm_try_lock waiting in line */
	DLSM_WAIT_WORKER,			/* a worker between its passes */
	DLSM_WAIT_LAUNCHER,			/* the launcher between its looks */
	DLSM_WAIT_WORKER_STOP,		/* a DROP DATABASE waiting for the worker */
	DLSM_WAIT_RELAY,			/* a relay waiting for channels to notify */
	DLSM_NUM_WAITS
} DlsmWait;

extern uint32 dlsm_wait_event(DlsmWait wait);

/* shared memory (shmem.c) */
extern Size dlsm_waits_shmem_size(void);
extern void dlsm_waits_shmem_init(void);

/* waiting claims */
extern void dlsm_wait_wake_all(void);
extern void dlsm_wait_wake_queue(Oid relid);
extern void dlsm_wait_prepare(Oid relid);
extern bool dlsm_wait_sleep(long timeout_ms, uint32 wait_event);
extern void dlsm_wait_cancel(void);

#endif							/* DLSM_WAITS_H */
