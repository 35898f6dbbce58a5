/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  dlsm and NOTIFY: the notifications dlsm sends, and NOTIFY dlsm,
 *	  'reap'.
 *
 * dlsm's workers do not listen: they are woken through shared memory, by
 * the commit of an enqueue into a handler queue, of a change of the
 * registry, or of NOTIFY dlsm, 'reap' (wake.c, shmem.c), as autoprewarm and
 * the logical replication launcher are.  NOTIFY dlsm, 'reap' is seen by
 * the utility hook (hooks.c), as the statement it is; it is a NOTIFY like
 * any other for the clients that listen.  (pg_notify('dlsm', 'reap'), a
 * function call, is not seen.)
 *
 * dlsm's own NOTIFYs (a queue's channel, at the commit of an enqueue or a
 * reap, wake.c) take a cluster-wide lock at commit; they are sent only
 * while some client backend of the database listens.  Backends are counted
 * as listeners (shmem.c) as a LISTEN they ran commits, and uncounted when
 * an UNLISTEN * committed or they exit: a LISTEN or UNLISTEN rolled back
 * changes nothing.
 *
 * Calls shmem.c.
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

#include "notify.h"
#include "shmem.h"

/* This backend's standing as a listener, and the change its transaction makes. */
static bool counted_as_listener = false;
static bool exit_callback_registered = false;
static enum
{
	LISTEN_UNCHANGED, LISTEN_START, LISTEN_STOP
}			pending = LISTEN_UNCHANGED;

static void
uncount_listener(int code, Datum arg)
{
	if (counted_as_listener)
		dlsm_shmem_count_listener(MyDatabaseId, -1);
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
		dlsm_shmem_count_listener(MyDatabaseId, 1);
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
	if (dlsm_shmem_anyone_listens(MyDatabaseId))
		Async_Notify(channel, "");
}
