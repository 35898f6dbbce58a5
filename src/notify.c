/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  dlsm and NOTIFY: the notifications dlsm sends, and NOTIFY dlsm,
 *	  'reap'.
 *
 * dlsm's workers do not listen: they are woken through shared memory, by
 * the commit of an enqueue into a handler queue, of a change of the
 * registry, or of NOTIFY dlsm, 'reap' (wake.c, pool.c), as autoprewarm and
 * the logical replication launcher are.  NOTIFY dlsm, 'reap' is seen by
 * the utility hook (hooks.c), as the statement it is; it is a NOTIFY like
 * any other for the clients that listen.  (pg_notify('dlsm', 'reap'), a
 * function call, is not seen.)
 *
 * dlsm's own NOTIFYs (a queue's channel, at the commit of an enqueue or a
 * reap, wake.c) take a cluster-wide lock at commit; they are sent only
 * while some client backend of the database listens.  Backends are counted
 * as listeners (in shared memory, below) as a LISTEN they ran commits, and uncounted when
 * an UNLISTEN * committed or they exit: a LISTEN or UNLISTEN rolled back
 * changes nothing.
 *
 * Its shared state, the listener counts, is its own: created by shmem.c's
 * hooks (dlsm_notify_shmem_init), under a lock shmem.c gives it.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/notify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "notify.h"

/* This backend's standing as a listener, and the change its transaction makes. */
static bool counted_as_listener = false;
static bool exit_callback_registered = false;
static enum
{
	LISTEN_UNCHANGED, LISTEN_START, LISTEN_STOP
}			pending = LISTEN_UNCHANGED;

/*
 * The most databases whose clients that LISTEN are counted; the databases
 * the workers serve are dlsm.max_databases.
 */
#define DLSM_MAX_DATABASES 64

/* The databases whose client backends LISTEN. */
typedef struct DlsmListenShared
{
	LWLock	   *lock;			/* guards the fields below */
	Oid			listen_db[DLSM_MAX_DATABASES];	/* databases with... */
	int			listeners[DLSM_MAX_DATABASES];	/* ...clients that LISTEN */
	bool		listeners_lost; /* a listener found no free entry */
} DlsmListenShared;

static DlsmListenShared *shared = NULL;

static void count_listener(Oid dboid, int delta);
static bool anyone_listens(Oid dboid);

static void
uncount_listener(int code, Datum arg)
{
	if (counted_as_listener)
		count_listener(MyDatabaseId, -1);
	counted_as_listener = false;
}

/*
 * Apply a LISTEN of the transaction just before it commits (before
 * PostgreSQL registers the listener: a producer committing meanwhile then
 * counts it), an UNLISTEN * once it committed.  Counting too early or too
 * long only costs a NOTIFY nobody reads.
 */
static void
notify_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT && pending == LISTEN_START &&
		!counted_as_listener)
	{
		if (!exit_callback_registered)
			before_shmem_exit(uncount_listener, (Datum) 0);
		exit_callback_registered = true;
		counted_as_listener = true;
		count_listener(MyDatabaseId, 1);
	}
	else if (event == XACT_EVENT_COMMIT && pending == LISTEN_STOP)
		uncount_listener(0, (Datum) 0);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		pending = LISTEN_UNCHANGED;
}

/* Register the transaction-end hook; called once from _PG_init. */
void
dlsm_notify_init(void)
{
	RegisterXactCallback(notify_xact_callback, NULL);
}

/*
 * The utility hook saw stmt: a LISTEN counts this backend as a listener,
 * an UNLISTEN * uncounts it, both when the transaction commits.  (An
 * UNLISTEN of one channel keeps it counted: dlsm may notify once too
 * often, never too rarely.)
 */
void
dlsm_notify_client_listens(Node *stmt)
{
	if (IsA(stmt, ListenStmt))
		pending = LISTEN_START;
	else if (IsA(stmt, UnlistenStmt) &&
			 ((UnlistenStmt *) stmt)->conditionname == NULL)
		pending = LISTEN_STOP;
}

/* NOTIFY channel when the transaction commits, if anyone may listen. */
void
dlsm_notify_send(const char *channel)
{
	if (anyone_listens(MyDatabaseId))
		Async_Notify(channel, "");
}

/* Shared memory for the listener counts. */
Size
dlsm_notify_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmListenShared));
}

/* Create or attach to the counts, guarded by lock; AddinShmemInitLock held. */
void
dlsm_notify_shmem_init(LWLock *lock)
{
	bool		found;

	shared = ShmemInitStruct("dlsm listeners", sizeof(DlsmListenShared),
							 &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmListenShared));
		shared->lock = lock;
	}
}

/*
 * Take the lock in mode, if there is shared state; false when there is
 * none (the library was not preloaded).
 */
static bool
lock_listeners(LWLockMode mode)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(shared->lock, mode);
	return true;
}

/* ---------------------------------------------------------------------
 * Listeners
 * ---------------------------------------------------------------------
 */

/*
 * A client backend of database dboid started (delta 1) or stopped (-1)
 * listening.  The counts only let dlsm skip a NOTIFY nobody would read.
 */
static void
count_listener(Oid dboid, int delta)
{
	int			entry = -1;

	if (!lock_listeners(LW_EXCLUSIVE))
		return;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (shared->listen_db[i] == dboid)
		{
			entry = i;
			break;
		}
		if (entry < 0 && shared->listeners[i] == 0)
			entry = i;			/* free: take it unless dboid has one */
	}
	if (entry < 0)
		shared->listeners_lost = true;	/* full: from now on, unsure */
	else
	{
		shared->listen_db[entry] = dboid;
		shared->listeners[entry] = Max(shared->listeners[entry] + delta, 0);
	}
	LWLockRelease(shared->lock);
}

/*
 * May a client backend of dboid be listening?  True when unsure (dlsm not
 * preloaded, or a listener that found no free entry).
 */
static bool
anyone_listens(Oid dboid)
{
	bool		listens;

	if (!lock_listeners(LW_SHARED))
		return true;
	listens = shared->listeners_lost;
	for (int i = 0; i < DLSM_MAX_DATABASES && !listens; i++)
		listens = shared->listen_db[i] == dboid && shared->listeners[i] > 0;
	LWLockRelease(shared->lock);
	return listens;
}

/*
 * How full the listener counts are: out (DLSM_MAX_OWNER_TABLES entries)
 * gets one entry; returns how many.  Once a listener found no room, every
 * NOTIFY dlsm would skip is sent (full: 1).
 */
int
dlsm_notify_usage(DlsmTableUsage *out)
{
	int64		used = 0;

	if (!lock_listeners(LW_SHARED))
		return 0;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
		used += shared->listeners[i] > 0;
	out[0] = (DlsmTableUsage)
	{
		"listening databases", DLSM_MAX_DATABASES, used,
			shared->listeners_lost ? 1 : 0
	};
	LWLockRelease(shared->lock);
	return 1;
}
