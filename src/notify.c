/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  How a dlsm worker listens: LISTEN without a client connection.
 *
 * SQL LISTEN is refused in background workers, so the worker calls
 * Async_Listen itself, as LISTEN does, and drains the notification queue
 * itself (ProcessNotifyInterrupt), as a client backend does between
 * queries.  It must always drain: a listener that does not holds back the
 * cleanup of the cluster's notification queue.
 *
 * ProcessNotifyInterrupt hands each notification to NotifyMyFrontEnd,
 * which sends a protocol 'A' message when output goes to a client.  While
 * draining, the worker points PqCommMethods at methods of its own that keep
 * the 'A' messages (sender pid, channel, payload) and drop everything else,
 * and restores the real ones afterwards, whatever happens (PG_FINALLY);
 * core swaps PqCommMethods the same way for parallel workers (pqmq.c).
 *
 * The other way round, dlsm's own NOTIFYs (a queue's channel, at the
 * commit of an enqueue or a reap, wake.c) take a cluster-wide lock at
 * commit; they are sent only while some client backend of the database
 * listens.  Backends are counted as listeners (shmem.c) as a LISTEN they
 * ran commits, and uncounted when an UNLISTEN * committed or they exit: a
 * LISTEN or UNLISTEN rolled back changes nothing.  dlsm's workers do not
 * need the NOTIFYs: enqueues set their latch directly.
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
#include "libpq/libpq.h"
#include "tcop/dest.h"
#include "tcop/tcopprot.h"

#include "notify.h"
#include "shmem.h"

/* Where the notifications of the current drain go. */
static DlsmNotifySink current_sink = NULL;
static void *current_arg = NULL;

static void
capture_comm_reset(void)
{
}

static int
capture_flush(void)
{
	return 0;
}

static int
capture_flush_if_writable(void)
{
	return 0;
}

static bool
capture_is_send_pending(void)
{
	return false;
}

/* Keep 'A' messages: int32 sender pid, channel\0, payload\0. */
static int
capture_putmessage(char msgtype, const char *s, size_t len)
{
	const char *channel;
	const char *payload;
	size_t		channel_len;

	if (msgtype != 'A' || len < 6 || current_sink == NULL)
		return 0;
	channel = s + 4;
	channel_len = strnlen(channel, len - 4);
	if (4 + channel_len + 1 >= len)
		return 0;
	payload = channel + channel_len + 1;
	if (strnlen(payload, len - 4 - channel_len - 1) == len - 4 - channel_len - 1)
		return 0;				/* not terminated: not a message of ours */
	current_sink(current_arg, channel, payload);
	return 0;
}

static void
capture_putmessage_noblock(char msgtype, const char *s, size_t len)
{
	(void) capture_putmessage(msgtype, s, len);
}

static const PQcommMethods capture_methods = {
	capture_comm_reset,
	capture_flush,
	capture_flush_if_writable,
	capture_is_send_pending,
	capture_putmessage,
	capture_putmessage_noblock
};

/* Listen on channel from the end of the current transaction on. */
void
dlsm_notify_listen(const char *channel)
{
	Assert(IsTransactionState());
	Async_Listen(channel);
}

/* Stop listening on every channel when the current transaction commits. */
void
dlsm_notify_unlisten_all(void)
{
	Assert(IsTransactionState());
	Async_UnlistenAll();
}

/*
 * Read every notification waiting for this process and hand each to sink.
 * Call outside any transaction, when notifyInterruptPending is set.
 */
void
dlsm_notify_drain(DlsmNotifySink sink, void *arg)
{
	const PQcommMethods *save_methods = PqCommMethods;
	CommandDest save_dest = whereToSendOutput;

	if (!notifyInterruptPending)
		return;
	current_sink = sink;
	current_arg = arg;
	PG_TRY();
	{
		PqCommMethods = &capture_methods;
		whereToSendOutput = DestRemote;
		ProcessNotifyInterrupt(false);
	}
	PG_FINALLY();
	{
		PqCommMethods = save_methods;
		whereToSendOutput = save_dest;
		current_sink = NULL;
		current_arg = NULL;
	}
	PG_END_TRY();
}

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
