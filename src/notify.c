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
 * commit of an enqueue or a reap) take a cluster-wide lock at commit; they
 * are sent only while some client backend of the database has run LISTEN
 * (counted by the utility hook, uncounted at UNLISTEN * or exit).  dlsm's
 * workers do not need them: enqueues set their latch directly.
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

#include "dlsm.h"

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

static bool counted_as_listener = false;

static void
uncount_listener(int code, Datum arg)
{
	if (counted_as_listener)
		dlsm_shmem_count_listener(MyDatabaseId, -1);
	counted_as_listener = false;
}

/*
 * The utility hook saw stmt: count this backend as a listener at its first
 * LISTEN, uncount it at UNLISTEN * (and when it exits).
 */
void
dlsm_notify_client_listens(Node *stmt)
{
	static bool callback_registered = false;

	if (IsA(stmt, ListenStmt) && !counted_as_listener)
	{
		if (!callback_registered)
			before_shmem_exit(uncount_listener, (Datum) 0);
		callback_registered = true;
		counted_as_listener = true;
		dlsm_shmem_count_listener(MyDatabaseId, 1);
	}
	else if (IsA(stmt, UnlistenStmt) &&
			 ((UnlistenStmt *) stmt)->conditionname == NULL)
		uncount_listener(0, (Datum) 0);
}

/* NOTIFY a queue's channel at commit, if anyone may be listening. */
void
dlsm_notify_queue(const char *channel)
{
	if (dlsm_shmem_anyone_listens(MyDatabaseId))
		Async_Notify(channel, "");
}
