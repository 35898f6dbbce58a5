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
 *		itself, held until the transaction ends (or dlsm_unlock, at any
 *		savepoint level); nothing is written.
 *	lease scope: the grant is a row of dlsm_leases, written as the
 *		extension's owner, naming the role that took it; it outlives the
 *		transaction and the session.  Only that role, its members and
 *		superusers release or extend it.  The lock-manager lock goes at
 *		the end of the granting transaction.
 *
 * A grant's fence comes from the sequence the claims use (fence.c).
 * Holders and waiters of the current transaction have an entry in shared
 * memory (below, created by shmem.c's hooks) for the dlsm_locks view,
 * freed when it ends.
 *
 * Locking: DlsmNamedShared.lock (of the LWLock tranche "dlsm", given by
 * shmem.c) guards named[].  A backend that tries, is granted or leaves a
 * named lock takes it exclusively to enter, mark or free its entry; the
 * views (dlsm_locks, dlsm_shared_tables) take it shared to copy or count
 * the entries.  It is a leaf lock: taken after the heavyweight lock of the
 * name is asked for or held, for a few field reads or writes, never across
 * SPI or a wait.
 *
 * Calls plans.c, locks.c, fence.c, wake.c, names.c and waits.c.
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
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "fence.h"
#include "locks.h"
#include "namedlock.h"
#include "names.h"
#include "plans.h"
#include "waits.h"
#include "wake.h"

/* A transaction-scope grant of this transaction, which dlsm_unlock ends. */
typedef struct NamedGrant
{
	char	   *name;
	int64		fence;
	int			entry;			/* shared entry, or -1 */
	int			level;			/* nest level whose owner holds the lock */
} NamedGrant;

static List *grants = NIL;		/* of NamedGrant, in TopTransactionContext */
static List *entries = NIL;		/* shared entries to free at the end */

/* The entries, for dlsm_locks. */
typedef struct DlsmNamedShared
{
	LWLock	   *lock;			/* guards named[] */
	DlsmNamedEntry named[DLSM_MAX_NAMED];	/* in no order */
	uint64		unseen;			/* grants and waits given no entry */
} DlsmNamedShared;

static DlsmNamedShared *shared = NULL;

static int	named_enter(const char *name, bool lease);
static void named_granted(int entry, int64 fence);
static void named_leave(int entry);

static void
named_release_callback(ResourceReleasePhase phase, bool isCommit,
					   bool isTopLevel, void *arg)
{
	ListCell   *lc;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	foreach(lc, entries)
		named_leave(lfirst_int(lc));
	/* both lists lived in TopTransactionContext, gone with it */
	entries = NIL;
	grants = NIL;
}

/* Free a shared entry this transaction stopped using. */
static void
forget_entry(int entry)
{
	if (entry < 0)
		return;
	named_leave(entry);
	entries = list_delete_int(entries, entry);
}

/*
 * A subtransaction ended: its grants pass to its parent when it commits,
 * and end with its locks when it aborts.
 */
static void
named_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, grants)
	{
		NamedGrant *grant = lfirst(lc);

		if (grant->level < level)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			grant->level = level - 1;
		else
		{
			forget_entry(grant->entry);
			grants = foreach_delete_current(grants, lc);
		}
	}
}

/* Register the transaction-end hooks; called once from _PG_init. */
void
dlsm_named_init(void)
{
	RegisterResourceReleaseCallback(named_release_callback, NULL);
	RegisterSubXactCallback(named_subxact_callback, NULL);
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

/* The lease on name, as DLSM_C_LEASE_READ reads it; false if none. */
typedef struct Lease
{
	int64		fence;
	TimestampTz until;
	bool		expired;
	Oid			role;			/* who took it */
} Lease;

static bool
read_lease(const char *name, Lease *lease)
{
	Datum		values[N_LEASE_READ_PARAMS];
	bool		isnull;
	bool		found;

	values[P_LEASE_READ_NAME] = CStringGetTextDatum(name);
	dlsm_plan_read_catalog(DLSM_C_LEASE_READ, values, NULL, 1);
	found = SPI_processed == 1;
	if (found)
	{
		lease->fence = DatumGetInt64(dlsm_plan_value(0, A_LEASE_FENCE, &isnull));
		lease->until = DatumGetTimestampTz(dlsm_plan_value(0, A_LEASE_UNTIL,
														   &isnull));
		lease->expired = DatumGetBool(dlsm_plan_value(0, A_LEASE_EXPIRED,
													  &isnull));
		lease->role = DatumGetObjectId(dlsm_plan_value(0, A_LEASE_ROLE, &isnull));
		if (isnull)
			lease->role = InvalidOid;
	}
	SPI_freetuptable(SPI_tuptable);
	return found;
}

/* The single bigint a statement returned. */
static int64
single_int8(int attno)
{
	bool		isnull;

	return DatumGetInt64(dlsm_plan_one_value(attno, &isnull));
}

/*
 * Write name's lease for the calling role, unless a live lease holds it
 * (refreshed after we saw it expire): false then.
 */
static bool
take_lease(const char *name, int64 lease_us, int64 *fence)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[N_LEASE_TAKE_PARAMS];

	lease->time = lease_us;
	values[P_LEASE_TAKE_NAME] = CStringGetTextDatum(name);
	values[P_LEASE_TAKE_LEASE] = IntervalPGetDatum(lease);
	values[P_LEASE_TAKE_HOLDER] =
		CStringGetTextDatum(psprintf("%s (pid %d)",
									 GetUserNameFromId(GetUserId(), false),
									 MyProcPid));
	values[P_LEASE_TAKE_ROLE] = ObjectIdGetDatum(GetUserId());
	values[P_LEASE_TAKE_FENCE] = Int64GetDatum(dlsm_fence_next(true));
	dlsm_plan_run_catalog(DLSM_C_LEASE_TAKE, values, NULL, 0);
	if (SPI_processed == 0)
		return false;
	*fence = single_int8(A_FENCE_VALUE);
	return true;
}

/*
 * Wait, at the head of the line, until no live lease holds name or the
 * deadline passes (0: no wait, DT_NOEND: none); true when free.
 */
static bool
wait_for_lease(const char *name, TimestampTz deadline)
{
	Lease		lease;
	bool		free = false;

	dlsm_wait_prepare(InvalidOid);
	for (;;)
	{
		TimestampTz now;
		TimestampTz wake;

		if (!read_lease(name, &lease) || lease.expired)
		{
			free = true;
			break;
		}
		now = GetCurrentTimestamp();
		if (deadline != DT_NOEND && now >= deadline)
			break;
		wake = (deadline == DT_NOEND || lease.until < deadline) ?
			lease.until : deadline;
		/* an expiry needs no wake-up: sleep until it, a release wakes us */
		dlsm_wait_sleep(Max(TimestampDifferenceMilliseconds(now, wake), 1),
						dlsm_wait_event(DLSM_WAIT_NAMED_LOCK));
	}
	dlsm_wait_cancel();
	return free;
}

/* Remember a transaction-scope grant, for dlsm_unlock. */
static void
remember_grant(const char *name, int64 fence, int entry)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	NamedGrant *grant = palloc(sizeof(NamedGrant));

	grant->name = pstrdup(name);
	grant->fence = fence;
	grant->entry = entry;
	grant->level = GetCurrentTransactionNestLevel();
	grants = lappend(grants, grant);
	MemoryContextSwitchTo(old);
}

/*
 * dlsm_try_lock: grant name to the caller, waiting up to wait_us (0: not
 * at all, -1: without end), for the transaction (lease_us 0) or with a
 * lease.  True, with the fence, when granted in time.  The caller holds
 * an SPI connection.
 */
bool
dlsm_named_try(const char *name, int64 wait_us, int64 lease_us, int64 *fence)
{
	TimestampTz deadline = DT_NOEND;
	int			entry;
	long		wait_ms = wait_us < 0 ? -1 : (wait_us + 999) / 1000;

	/* the wait counts from the call, before the line is joined */
	if (wait_us >= 0)
		deadline = GetCurrentTimestamp() + wait_us;
	entry = named_enter(name, lease_us > 0);
	remember_entry(entry);
	dlsm_fence_prepare();
	if (!dlsm_lock_named_acquire(name, wait_ms))
	{
		forget_entry(entry);
		return false;
	}
	for (;;)
	{
		if (!wait_for_lease(name, wait_us == 0 ? 0 : deadline))
		{
			dlsm_lock_named_release(name, CurTransactionResourceOwner);
			forget_entry(entry);
			return false;
		}
		if (lease_us == 0 || take_lease(name, lease_us, fence))
			break;
		/* the lease we saw expire was refreshed meanwhile: still held */
	}
	if (lease_us == 0)
	{
		*fence = dlsm_fence_next(true);
		remember_grant(name, *fence, entry);
	}
	named_granted(entry, *fence);
	return true;
}

/* The resource owner of the transaction at nest level, an ancestor's. */
static ResourceOwner
owner_at_level(int level)
{
	ResourceOwner owner = CurTransactionResourceOwner;

	for (int l = GetCurrentTransactionNestLevel(); l > level; l--)
		owner = ResourceOwnerGetParent(owner);
	return owner;
}

/*
 * The caller may release (or refresh, when refreshing) a lease that role
 * took: the same role, a member of it, or a superuser.  Raises 42501
 * otherwise.
 */
static void
check_lease_role(const char *name, Oid role, bool refreshing)
{
	if (OidIsValid(role) && !has_privs_of_role(GetUserId(), role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 refreshing ?
				 errmsg("permission denied to refresh lock \"%s\"", name) :
				 errmsg("permission denied to release lock \"%s\"", name),
				 errdetail("Its lease is held by role \"%s\".",
						   GetUserNameFromId(role, false))));
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
	Datum		values[N_LEASE_RELEASE_PARAMS];
	Lease		lease;

	foreach(lc, grants)
	{
		NamedGrant *grant = lfirst(lc);

		if (grant->fence != fence || strcmp(grant->name, name) != 0)
			continue;
		if (!dlsm_lock_named_release(name, owner_at_level(grant->level)))
			return false;
		forget_entry(grant->entry);
		grants = foreach_delete_current(grants, lc);
		return true;
	}
	if (read_lease(name, &lease) && lease.fence == fence)
		check_lease_role(name, lease.role, false);
	values[P_LEASE_NAME] = CStringGetTextDatum(name);
	values[P_LEASE_FENCE] = Int64GetDatum(fence);
	dlsm_plan_run_catalog(DLSM_C_LEASE_RELEASE, values, NULL, 0);
	if (SPI_processed == 0)
		return false;
	dlsm_wake_claimers_at_commit();
	return true;
}

/* dlsm_refresh_lock: extend the lease of name with fence; 55000 if lost. */
TimestampTz
dlsm_named_refresh(const char *name, int64 fence, int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[N_LEASE_REFRESH_PARAMS];
	bool		isnull;
	TimestampTz until;
	Lease		held;

	if (read_lease(name, &held) && held.fence == fence)
		check_lease_role(name, held.role, true);
	lease->time = lease_us;
	values[P_REFRESH_NAME] = CStringGetTextDatum(name);
	values[P_REFRESH_FENCE] = Int64GetDatum(fence);
	values[P_REFRESH_LEASE] = IntervalPGetDatum(lease);
	dlsm_plan_run_catalog(DLSM_C_LEASE_REFRESH, values, NULL, 0);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("lock \"%s\" is not held with fence %lld",
						name, (long long) fence),
				 errhint("Its lease was released, or it expired and the lock was granted again or cleaned up.")));
	until = DatumGetTimestampTz(dlsm_plan_one_value(A_REFRESH_UNTIL, &isnull));
	return until;
}

/* The worker's pass: delete expired leases; returns how many. */
int64
dlsm_named_purge(void)
{
	dlsm_plan_run_catalog(DLSM_C_LEASE_PURGE, NULL, NULL, 0);
	return (int64) SPI_processed;
}

/* Shared memory for the entries. */
Size
dlsm_named_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmNamedShared));
}

/* Create or attach to the entries, guarded by lock; AddinShmemInitLock held. */
void
dlsm_named_shmem_init(LWLock *lock)
{
	bool		found;

	shared = ShmemInitStruct("dlsm named locks", sizeof(DlsmNamedShared),
							 &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmNamedShared));
		shared->lock = lock;
	}
}

/*
 * Take the lock in mode, if there is shared state; false when there is
 * none (the library was not preloaded).
 */
static bool
lock_named(LWLockMode mode)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(shared->lock, mode);
	return true;
}

/* ---------------------------------------------------------------------
 * Named locks
 * ---------------------------------------------------------------------
 */

/*
 * A transaction starts waiting for the named lock name: take an entry.
 * Returns its index, or -1 when there is no shared state or no free entry
 * (the lock works as well; dlsm_locks does not show it).
 */
static int
named_enter(const char *name, bool lease)
{
	int			found = -1;

	if (!lock_named(LW_EXCLUSIVE))
		return -1;
	for (int i = 0; i < DLSM_MAX_NAMED && found < 0; i++)
	{
		DlsmNamedEntry *e = &shared->named[i];

		if (e->pid != 0)
			continue;
		e->pid = MyProcPid;
		e->dboid = MyDatabaseId;
		e->waiting = true;
		e->lease = lease;
		e->fence = 0;
		e->since = GetCurrentTimestamp();
		dlsm_name_clip(name, e->name, DLSM_NAMED_LEN);
		found = i;
	}
	if (found < 0)
		shared->unseen++;
	LWLockRelease(shared->lock);
	return found;
}

/* The waiting transaction of entry got its lock, with fence. */
static void
named_granted(int entry, int64 fence)
{
	if (entry < 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->named[entry].waiting = false;
	shared->named[entry].fence = fence;
	shared->named[entry].since = GetCurrentTimestamp();
	LWLockRelease(shared->lock);
}

/* Free an entry: the transaction stopped waiting, or ended. */
static void
named_leave(int entry)
{
	if (entry < 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->named[entry].pid = 0;
	LWLockRelease(shared->lock);
}

/*
 * Copy this database's named-lock entries into out (DLSM_MAX_NAMED
 * entries); returns how many.
 */
int
dlsm_named_copy_entries(DlsmNamedEntry *out)
{
	DlsmNamedEntry *e = shared ? shared->named : NULL;
	int			n = 0;

	if (!lock_named(LW_SHARED))
		return 0;
	for (; e < shared->named + DLSM_MAX_NAMED; e++)
		if (e->pid != 0 && e->dboid == MyDatabaseId)
			out[n++] = *e;
	LWLockRelease(shared->lock);
	return n;
}

/*
 * How full the named-lock entries are: out (DLSM_MAX_OWNER_TABLES
 * entries) gets one entry; returns how many.  When full, a lock is granted
 * and waited for as well, and only dlsm_locks misses it.
 */
int
dlsm_named_usage(DlsmTableUsage *out)
{
	int64		used = 0;

	if (!lock_named(LW_SHARED))
		return 0;
	for (int i = 0; i < DLSM_MAX_NAMED; i++)
		used += shared->named[i].pid != 0;
	out[0] = (DlsmTableUsage)
	{
		"named-lock entries", DLSM_MAX_NAMED, used, (int64) shared->unseen
	};
	LWLockRelease(shared->lock);
	return 1;
}
