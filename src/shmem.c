/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  Shared state of dlsm: wake-ups of waiting claims and the workers' slots.
 *
 * Present only when the library is preloaded.  A transaction that made
 * work claimable broadcasts work_cv when it ends (state.c); waiting claims
 * sleep on it with a timeout.  Without preloading there is no shared state
 * and a waiting claim looks again every POLL_MS instead.
 *
 * The launcher and the per-database workers (worker.c) keep their state in
 * slots here, one per database served, read by the dlsm_worker_status view.
 * Transactions waiting for or holding a named lock (namedlock.c) have an
 * entry in named[], read by the dlsm_locks view; when it is full they are
 * not shown, and work as well.
 *
 * Locking: dlsm_shared->lock (the tranche "dlsm") guards the launcher
 * fields and every slot; it is held for a few field reads or writes only,
 * never across SPI or a wait.  work_cv guards itself.  AddinShmemInitLock
 * is held only while the struct is created.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "dlsm.h"

/* How often a waiting claim looks again when dlsm is not preloaded. */
#define POLL_MS 50

DlsmSharedState *dlsm_shared = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
dlsm_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(DlsmSharedState)));
	RequestNamedLWLockTranche("dlsm", 1);
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
	{
		memset(dlsm_shared, 0, sizeof(DlsmSharedState));
		dlsm_shared->lock = &(GetNamedLWLockTranche("dlsm"))->lock;
		ConditionVariableInit(&dlsm_shared->work_cv);
	}
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

/* Set the latch of the worker serving database dboid, if it runs. */
void
dlsm_shmem_wake_worker(Oid dboid)
{
	if (dlsm_shared == NULL)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		DlsmWorkerSlot *slot = &dlsm_shared->slots[i];

		if (slot->dboid == dboid && slot->latch != NULL)
			SetLatch(slot->latch);
	}
	LWLockRelease(dlsm_shared->lock);
}

/* Ask the launcher to look at every database again, now. */
void
dlsm_shmem_wake_launcher(void)
{
	if (dlsm_shared == NULL)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	dlsm_shared->rescan = true;
	dlsm_shared->pokes++;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		DlsmWorkerSlot *slot = &dlsm_shared->slots[i];

		if (slot->no_extension)
			slot->paused_until = 0;
		slot->no_extension = false;
	}
	if (dlsm_shared->launcher_latch != NULL)
		SetLatch(dlsm_shared->launcher_latch);
	LWLockRelease(dlsm_shared->lock);
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

/*
 * Copy the slots in use into out (DLSM_MAX_DATABASES entries); returns how
 * many.  Without shared state, none.
 */
int
dlsm_shmem_copy_slots(DlsmWorkerSlot *out)
{
	int			n = 0;

	if (dlsm_shared == NULL)
		return 0;
	LWLockAcquire(dlsm_shared->lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (dlsm_shared->slots[i].dboid != InvalidOid &&
			!dlsm_shared->slots[i].no_extension)
			out[n++] = dlsm_shared->slots[i];
	}
	LWLockRelease(dlsm_shared->lock);
	return n;
}

/*
 * A lock name as the shared entries keep it: at most DLSM_NAMED_LEN - 1
 * bytes, cut at a character boundary.
 */
void
dlsm_shmem_clip_name(const char *name, char *out)
{
	int			len = pg_mbcliplen(name, strlen(name), DLSM_NAMED_LEN - 1);

	memcpy(out, name, len);
	out[len] = '\0';
}

/*
 * A transaction starts waiting for the named lock name: take an entry.
 * Returns its index, or -1 when there is no shared state or no free entry.
 */
int
dlsm_shmem_named_enter(const char *name, bool lease)
{
	int			found = -1;

	if (dlsm_shared == NULL)
		return -1;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_NAMED; i++)
	{
		DlsmNamedEntry *e = &dlsm_shared->named[i];

		if (e->pid != 0)
			continue;
		e->pid = MyProcPid;
		e->waiting = true;
		e->lease = lease;
		e->fence = 0;
		e->since = GetCurrentTimestamp();
		dlsm_shmem_clip_name(name, e->name);
		dlsm_shared->named_db[i] = MyDatabaseId;
		found = i;
		break;
	}
	LWLockRelease(dlsm_shared->lock);
	return found;
}

/* The waiting transaction of entry got its lock, with fence. */
void
dlsm_shmem_named_granted(int entry, int64 fence)
{
	if (entry < 0)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	dlsm_shared->named[entry].waiting = false;
	dlsm_shared->named[entry].fence = fence;
	dlsm_shared->named[entry].since = GetCurrentTimestamp();
	LWLockRelease(dlsm_shared->lock);
}

/* Free an entry: the transaction stopped waiting, or ended. */
void
dlsm_shmem_named_leave(int entry)
{
	if (entry < 0)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	dlsm_shared->named[entry].pid = 0;
	LWLockRelease(dlsm_shared->lock);
}

/* Copy this database's named-lock entries into out; returns how many. */
int
dlsm_shmem_copy_named(DlsmNamedEntry *out)
{
	int			n = 0;

	if (dlsm_shared == NULL)
		return 0;
	LWLockAcquire(dlsm_shared->lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_NAMED; i++)
	{
		if (dlsm_shared->named[i].pid != 0 &&
			dlsm_shared->named_db[i] == MyDatabaseId)
			out[n++] = dlsm_shared->named[i];
	}
	LWLockRelease(dlsm_shared->lock);
	return n;
}

/*
 * A client backend of database dboid started (delta 1) or stopped (-1)
 * listening.  The counts only let dlsm skip a NOTIFY nobody would read.
 */
void
dlsm_shmem_count_listener(Oid dboid, int delta)
{
	int			entry = -1;

	if (dlsm_shared == NULL)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (dlsm_shared->listen_db[i] == dboid)
		{
			entry = i;
			break;
		}
		if (entry < 0 && dlsm_shared->listeners[i] == 0)
			entry = i;			/* free: take it unless dboid has one */
	}
	if (entry < 0)
		dlsm_shared->listeners_lost = true; /* full: from now on, unsure */
	else
	{
		dlsm_shared->listen_db[entry] = dboid;
		dlsm_shared->listeners[entry] = Max(dlsm_shared->listeners[entry] + delta, 0);
	}
	LWLockRelease(dlsm_shared->lock);
}

/*
 * May a client backend of dboid be listening?  True when unsure (dlsm not
 * preloaded, or a listener that found no free entry).
 */
bool
dlsm_shmem_anyone_listens(Oid dboid)
{
	bool		listens = false;

	if (dlsm_shared == NULL)
		return true;
	LWLockAcquire(dlsm_shared->lock, LW_SHARED);
	listens = dlsm_shared->listeners_lost;
	for (int i = 0; i < DLSM_MAX_DATABASES && !listens; i++)
		listens = dlsm_shared->listen_db[i] == dboid &&
			dlsm_shared->listeners[i] > 0;
	LWLockRelease(dlsm_shared->lock);
	return listens;
}
