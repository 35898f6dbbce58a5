/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared state of dlsm: the condition variable waiting claims sleep on.
 *
 * Present only when the library is preloaded.  A transaction that made
 * work claimable broadcasts work_cv when it ends (state.c); waiting claims
 * sleep on it with a timeout.  Without preloading there is no shared state
 * and a waiting claim looks again every POLL_MS instead.
 *
 * Locking: work_cv is a condition variable and guards itself; nothing else
 * is shared yet.  AddinShmemInitLock is held only while the struct is
 * created.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "dlsm.h"

/* How often a waiting claim looks again when dlsm is not preloaded. */
#define POLL_MS 50

typedef struct DlsmSharedState
{
	ConditionVariable work_cv;	/* broadcast when work became claimable */
} DlsmSharedState;

static DlsmSharedState *dlsm_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
dlsm_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(DlsmSharedState)));
}

static void
dlsm_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	dlsm_shared = ShmemInitStruct("dlsm", sizeof(DlsmSharedState), &found);
	if (!found)
		ConditionVariableInit(&dlsm_shared->work_cv);
	LWLockRelease(AddinShmemInitLock);
}

/* Install the shared-memory hooks when preloading; called from _PG_init. */
void
dlsm_shmem_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = dlsm_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = dlsm_shmem_startup;
}

/* Is the shared state there (was the library preloaded)? */
bool
dlsm_shmem_available(void)
{
	return dlsm_shared != NULL;
}

/* Wake every waiting claim, in every database. */
void
dlsm_shmem_wake_all(void)
{
	if (dlsm_shared != NULL)
		ConditionVariableBroadcast(&dlsm_shared->work_cv);
}

/*
 * Start listening for wake-ups; call before looking for work, so that a
 * broadcast between the look and the sleep is not missed.
 */
void
dlsm_shmem_prepare_wait(void)
{
	if (dlsm_shared != NULL)
		ConditionVariablePrepareToSleep(&dlsm_shared->work_cv);
}

/*
 * Sleep until woken or timeout_ms passed; true when woken.  Interrupts
 * (cancel, statement_timeout, termination) are served while asleep.
 */
bool
dlsm_shmem_wait(long timeout_ms)
{
	int			rc;

	if (dlsm_shared != NULL)
		return !ConditionVariableTimedSleep(&dlsm_shared->work_cv, timeout_ms,
											PG_WAIT_EXTENSION);

	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   Min(timeout_ms, POLL_MS), PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return (rc & WL_LATCH_SET) != 0;
}

/* Stop listening for wake-ups. */
void
dlsm_shmem_cancel_wait(void)
{
	if (dlsm_shared != NULL)
		ConditionVariableCancelSleep();
}
