/*-------------------------------------------------------------------------
 *
 * namedlock.c
 *	  Named locks: dlsm_try_lock, dlsm_unlock, dlsm_refresh_lock.
 *
 * Every grant of a name, in either scope, first takes the name's
 * lock-manager lock (locks.c) for the calling transaction, waiting in the
 * lock manager's queue: waiters are served in arrival order, and the
 * deadlock detector watches them.  The head of the line then looks at the
 * name's lease (dlsm_leases): while a live lease holds the name it keeps
 * its place and sleeps until the lease is released (a wake-up at the
 * unlocking commit) or expires.
 *
 *	transaction scope (lease NULL): the grant is the lock-manager lock
 *		itself, held until the transaction ends; nothing is written.
 *	lease scope: the grant is a row of dlsm_leases, written as the
 *		extension's owner; it outlives the transaction and the session.
 *		The lock-manager lock goes at the end of the granting transaction.
 *
 * A grant's fence comes from the sequence the claims use: fences rise
 * across every claim and lock grant, also across restarts.
 *
 * Holders and waiters of the current transaction have an entry in shared
 * memory (shmem.c) for the dlsm_locks view, freed when it ends.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/namedlock.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "dlsm.h"

/* A transaction-scope grant of this transaction, which dlsm_unlock ends. */
typedef struct NamedGrant
{
	char	   *name;
	int64		fence;
	int			entry;			/* shared entry, or -1 */
} NamedGrant;

static List *grants = NIL;		/* of NamedGrant, in TopTransactionContext */
static List *entries = NIL;		/* shared entries to free at the end */

static void
named_release_callback(ResourceReleasePhase phase, bool isCommit,
					   bool isTopLevel, void *arg)
{
	ListCell   *lc;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	foreach(lc, entries)
		dlsm_shmem_named_leave(lfirst_int(lc));
	/* both lists lived in TopTransactionContext, gone with it */
	entries = NIL;
	grants = NIL;
}

/* Register the transaction-end hook; called once from _PG_init. */
void
dlsm_named_init(void)
{
	RegisterResourceReleaseCallback(named_release_callback, NULL);
}

static void
remember_entry(int entry)
{
	MemoryContext old;

	if (entry < 0)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	entries = lappend_int(entries, entry);
	MemoryContextSwitchTo(old);
}

/*
 * The lease on name: *until when it holds, false when there is none or it
 * expired.
 */
static bool
lease_holds(const char *name, TimestampTz *until)
{
	Datum		value = CStringGetTextDatum(name);
	bool		holds = false;
	bool		isnull;

	if (dlsm_plan_read_catalog_latest(DLSM_C_LEASE_READ, &value, NULL, 1)
		!= SPI_OK_SELECT)
		elog(ERROR, "unexpected result from reading a lease");
	if (SPI_processed == 1 &&
		!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
									SPI_tuptable->tupdesc, 3, &isnull)))
	{
		holds = true;
		*until = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
												   SPI_tuptable->tupdesc, 2,
												   &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	return holds;
}

/* Free a shared entry this transaction stopped using. */
static void
forget_entry(int entry)
{
	if (entry < 0)
		return;
	dlsm_shmem_named_leave(entry);
	entries = list_delete_int(entries, entry);
}

static int64 single_int8(void);

/*
 * Write name's lease, unless a live lease holds it (refreshed after we saw
 * it expire): false then.
 */
static bool
take_lease(const char *name, int64 lease_us, int64 *fence)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[3];

	lease->time = lease_us;
	values[0] = CStringGetTextDatum(name);
	values[1] = CStringGetTextDatum(psprintf("%s (pid %d)",
											 GetUserNameFromId(GetUserId(), false),
											 MyProcPid));
	values[2] = IntervalPGetDatum(lease);
	if (dlsm_plan_execute_catalog_as_owner(DLSM_C_LEASE_TAKE, values, NULL)
		!= SPI_OK_INSERT_RETURNING)
		elog(ERROR, "unexpected result from taking the lease of lock \"%s\"",
			 name);
	if (SPI_processed == 0)
		return false;
	*fence = single_int8();
	return true;
}

static int64
single_int8(void)
{
	bool		isnull;
	int64		v = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
												SPI_tuptable->tupdesc, 1,
												&isnull));

	SPI_freetuptable(SPI_tuptable);
	return v;
}

/*
 * Wait, at the head of the line, until no live lease holds name or the
 * deadline passes (0: no wait, DT_NOEND: none); true when free.
 */
static bool
wait_for_lease(const char *name, TimestampTz deadline)
{
	TimestampTz until;
	bool		free = false;

	dlsm_shmem_prepare_wait();
	for (;;)
	{
		TimestampTz now;
		TimestampTz wake;

		if (!lease_holds(name, &until))
		{
			free = true;
			break;
		}
		now = GetCurrentTimestamp();
		if (deadline != DT_NOEND && now >= deadline)
			break;
		wake = (deadline == DT_NOEND || until < deadline) ? until : deadline;
		/* an expiry needs no wake-up: sleep until it, a release wakes us */
		dlsm_shmem_wait(Max(TimestampDifferenceMilliseconds(now, wake), 1));
	}
	dlsm_shmem_cancel_wait();
	return free;
}

/*
 * dlsm_try_lock: grant name to the caller, waiting up to wait_us (0: not
 * at all, -1: without end), for the transaction (lease_us 0) or with a
 * lease.  Returns the fence; *granted false when not granted in time.
 * The caller holds an SPI connection.
 */
Datum
dlsm_named_try(const char *name, int64 wait_us, int64 lease_us, bool *granted)
{
	TimestampTz deadline = wait_us < 0 ? DT_NOEND :
		GetCurrentTimestamp() + wait_us;
	int			entry = dlsm_shmem_named_enter(name, lease_us > 0);
	long		wait_ms = wait_us < 0 ? -1 : (wait_us + 999) / 1000;
	int64		fence;

	remember_entry(entry);
	*granted = false;
	if (!dlsm_lock_named_acquire(name, wait_ms))
	{
		forget_entry(entry);
		return (Datum) 0;
	}

	for (;;)
	{
		if (!wait_for_lease(name, wait_us == 0 ? 0 : deadline))
		{
			dlsm_lock_named_release(name);
			forget_entry(entry);
			return (Datum) 0;
		}
		if (lease_us == 0 || take_lease(name, lease_us, &fence))
			break;
		/* the lease we saw expire was refreshed meanwhile: still held */
	}

	if (lease_us == 0)
	{
		MemoryContext old;
		NamedGrant *grant;

		if (dlsm_plan_execute_catalog(DLSM_C_FENCE, NULL, NULL, false, 1) !=
			SPI_OK_SELECT || SPI_processed != 1)
			elog(ERROR, "unexpected result from the fence sequence");
		fence = single_int8();
		old = MemoryContextSwitchTo(TopTransactionContext);
		grant = palloc(sizeof(NamedGrant));
		grant->name = pstrdup(name);
		grant->fence = fence;
		grant->entry = entry;
		grants = lappend(grants, grant);
		MemoryContextSwitchTo(old);
	}
	dlsm_shmem_named_granted(entry, fence);
	*granted = true;
	return Int64GetDatum(fence);
}

/*
 * dlsm_unlock: give back the grant of name with fence: a transaction-scope
 * grant of this transaction, or a lease.  False, changing nothing, when no
 * such grant is held.
 */
bool
dlsm_named_unlock(const char *name, int64 fence)
{
	ListCell   *lc;
	Datum		values[2];

	foreach(lc, grants)
	{
		NamedGrant *grant = lfirst(lc);

		if (grant->fence == fence && strcmp(grant->name, name) == 0)
		{
			if (!dlsm_lock_named_release(name))
				return false;	/* taken at another savepoint level */
			forget_entry(grant->entry);
			grants = foreach_delete_current(grants, lc);
			return true;
		}
	}

	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum(fence);
	if (dlsm_plan_execute_catalog_as_owner(DLSM_C_LEASE_RELEASE, values, NULL)
		!= SPI_OK_DELETE)
		elog(ERROR, "unexpected result from releasing a lease");
	if (SPI_processed == 0)
		return false;
	dlsm_state_wake_at_commit();
	return true;
}

/* dlsm_refresh_lock: extend the lease of name with fence; 55000 if lost. */
TimestampTz
dlsm_named_refresh(const char *name, int64 fence, int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[3];
	bool		isnull;
	TimestampTz until;

	lease->time = lease_us;
	values[0] = CStringGetTextDatum(name);
	values[1] = Int64GetDatum(fence);
	values[2] = IntervalPGetDatum(lease);
	if (dlsm_plan_execute_catalog_as_owner(DLSM_C_LEASE_REFRESH, values, NULL)
		!= SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from refreshing a lease");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lock \"%s\" is not held with fence " INT64_FORMAT,
						name, fence),
				 errhint("Its lease was released, or it expired and the lock was granted again or cleaned up.")));
	until = DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
											  SPI_tuptable->tupdesc, 1,
											  &isnull));
	SPI_freetuptable(SPI_tuptable);
	return until;
}

/* The worker's pass: delete expired leases; returns how many. */
int64
dlsm_named_purge(void)
{
	if (dlsm_plan_execute_catalog_as_owner(DLSM_C_LEASE_PURGE, NULL, NULL) !=
		SPI_OK_DELETE)
		elog(ERROR, "unexpected result from deleting expired leases");
	return (int64) SPI_processed;
}
