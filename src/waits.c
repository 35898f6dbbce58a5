/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  How dlsm's processes sleep: the wait events they show, and the
 *	  condition variable on which waiting claims sleep.
 *
 * From PostgreSQL 17 on an extension can name its wait events:
 * pg_stat_activity then shows wait_event_type 'Extension' with a name of
 * dlsm's own (DlsmClaimWait, DlsmNamedLockWait, DlsmWorkerMain,
 * DlsmLauncherMain, DlsmWorkerStop, DlsmRelayMain: wait_names below)
 * instead of the bare 'Extension'.  A name is registered in shared memory
 * at a process's first wait of its kind, and every process gets the same
 * number for it.  Before 17 every wait is
 * PG_WAIT_EXTENSION, shown as wait_event 'Extension'.
 *
 * A claim waiting for work sleeps on a condition variable in shared memory
 * (its own state, created by shmem.c's hooks), one of DLSM_WAIT_QUEUE_CVS
 * chosen by its queue's database and OID, broadcast by the end of a
 * transaction that made work of that queue claimable (wake.c), so that a
 * commit in one queue does not wake the waiters of every other.  A named
 * lock waiting for a lease sleeps on one more, and a wake-up that names
 * no queue (a lease released, a prepared transaction ended) broadcasts
 * them all.  A waiter never misses a wake-up: it prepares to sleep on its
 * variable before it looks for work, and a broadcast after that look
 * wakes it even before it sleeps.  Without preloading there are none: a
 * waiting claim polls every POLL_MS instead.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/waits.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "waits.h"

/* How often a waiting claim looks again when dlsm is not preloaded. */
#define POLL_MS 50

/* The condition variables of the queues; the last, the named locks'. */
#define DLSM_WAIT_QUEUE_CVS 16
#define DLSM_WAIT_CVS (DLSM_WAIT_QUEUE_CVS + 1)

/* What waiting claims sleep on. */
typedef struct DlsmWaitShared
{
	/* broadcast when work of their queues became claimable */
	ConditionVariable work_cv[DLSM_WAIT_CVS];
} DlsmWaitShared;

static DlsmWaitShared *shared = NULL;
static ConditionVariable *sleep_cv = NULL;	/* the one prepared for */

static const char *const wait_names[DLSM_NUM_WAITS] = {
	[DLSM_WAIT_CLAIM] = "DlsmClaimWait",
	[DLSM_WAIT_NAMED_LOCK] = "DlsmNamedLockWait",
	[DLSM_WAIT_WORKER] = "DlsmWorkerMain",
	[DLSM_WAIT_LAUNCHER] = "DlsmLauncherMain",
	[DLSM_WAIT_WORKER_STOP] = "DlsmWorkerStop",
	[DLSM_WAIT_RELAY] = "DlsmRelayMain",
};

/* The wait event of wait, registered at its first use in this process. */
uint32
dlsm_wait_event(DlsmWait wait)
{
	static uint32 events[DLSM_NUM_WAITS];

	Assert(wait >= 0 && wait < DLSM_NUM_WAITS);
	if (events[wait] == 0)
		events[wait] = DLSM_WAIT_EVENT_NEW(wait_names[wait]);
	return events[wait];
}

/* Shared memory for the waits. */
Size
dlsm_waits_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmWaitShared));
}

/* Create or attach to the waits' shared state; AddinShmemInitLock held. */
void
dlsm_waits_shmem_init(void)
{
	bool		found;

	shared = ShmemInitStruct("dlsm waits", sizeof(DlsmWaitShared), &found);
	if (!found)
		for (int i = 0; i < DLSM_WAIT_CVS; i++)
			ConditionVariableInit(&shared->work_cv[i]);
}

/* ---------------------------------------------------------------------
 * Waiting claims
 * ---------------------------------------------------------------------
 */

/* The condition variable of queue relid of this database. */
static ConditionVariable *
queue_cv(Oid relid)
{
	uint32		h = hash_combine(hash_uint32(MyDatabaseId),
								 hash_uint32(relid));

	return &shared->work_cv[h % DLSM_WAIT_QUEUE_CVS];
}

/* Wake every waiting claim and named lock, in every database. */
void
dlsm_wait_wake_all(void)
{
	if (shared == NULL)
		return;
	for (int i = 0; i < DLSM_WAIT_CVS; i++)
		ConditionVariableBroadcast(&shared->work_cv[i]);
}

/*
 * Wake the claims waiting for work of queue relid of this database (and
 * those of the queues that share its condition variable).
 */
void
dlsm_wait_wake_queue(Oid relid)
{
	if (shared != NULL)
		ConditionVariableBroadcast(queue_cv(relid));
}

/*
 * Start listening for wake-ups of queue relid (InvalidOid: a named lock's,
 * which only dlsm_wait_wake_all sends); call before looking for work, so
 * that a broadcast between the look and the sleep is not missed.
 */
void
dlsm_wait_prepare(Oid relid)
{
	if (shared == NULL)
		return;
	sleep_cv = OidIsValid(relid) ? queue_cv(relid) :
		&shared->work_cv[DLSM_WAIT_QUEUE_CVS];
	ConditionVariablePrepareToSleep(sleep_cv);
}

/*
 * Sleep until woken or timeout_ms passed, shown as wait_event (waits.c);
 * true when woken.  Interrupts (cancel, statement_timeout, termination) are
 * served while asleep.
 */
bool
dlsm_wait_sleep(long timeout_ms, uint32 wait_event)
{
	int			rc;

	if (shared != NULL)
		return !ConditionVariableTimedSleep(sleep_cv, timeout_ms, wait_event);

	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   Min(timeout_ms, POLL_MS), wait_event);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return (rc & WL_LATCH_SET) != 0;
}

/* Stop listening for wake-ups. */
void
dlsm_wait_cancel(void)
{
	if (shared != NULL)
		ConditionVariableCancelSleep();
}
