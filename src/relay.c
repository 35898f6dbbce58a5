/*-------------------------------------------------------------------------
 *
 * relay.c
 *	  The relay: one background worker per database that sends the
 *	  NOTIFYs of queue channels for the producers.
 *
 * A NOTIFY holds PostgreSQL's notify lock across its transaction's commit
 * and WAL flush, so producers that each notified would commit one at a
 * time.  While preloaded they only mark their channels, once committed
 * (notify.c says how, and why no wake-up is lost); the relay of their
 * database, started by the first LISTEN or notifying commit that finds
 * none, takes the marks and sends one NOTIFY per marked channel, all in one
 * transaction of its own.  Its commit is asynchronous (a notification is
 * not durable anyway, and the producers' commits were flushed): it holds
 * the notify lock for no WAL flush.  After each pass that sent something
 * it waits RELAY_INTERVAL_MS, so that a stream of commits is notified at
 * most once per interval per channel; woken by a first mark, it notifies
 * within about that.
 *
 * It runs no code of queue owners and takes no lock but the notify lock
 * (bounded by RELAY_LOCK_TIMEOUT): nothing a handler does holds it back.
 * A pass that fails (the lock not granted in time, PostgreSQL's
 * notification queue full) gives its marks back for the next pass, one
 * RELAY_RETRY_MS later.  It stops on SIGTERM and is restarted by the
 * postmaster after any stop but one asked for by DROP DATABASE.
 *
 * Calls notify.c and waits.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/relay.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "notify.h"
#include "relay.h"
#include "waits.h"

#define RELAY_INTERVAL_MS		1	/* between passes that notified */
#define RELAY_NAP_MS			10000	/* a pass at least this often */
#define RELAY_RETRY_MS			1000	/* after a pass that failed */
#define RELAY_LOCK_TIMEOUT		"1s"	/* for the notify lock */
#define RELAY_MAX_CHANNELS		64	/* notified per pass */

/* The channels of this pass, and their marks (notify.c). */
static int	pass_marks[RELAY_MAX_CHANNELS];
static char pass_channels[RELAY_MAX_CHANNELS][NAMEDATALEN];

/*
 * One pass: notify the marked channels.  Returns how many it notified, -1
 * when it failed (the marks are given back).
 */
static int
relay_pass(MemoryContext loop_context)
{
	int			n = dlsm_notify_relay_take(pass_marks, pass_channels,
										   RELAY_MAX_CHANNELS);

	if (n == 0)
		return 0;
	PG_TRY();
	{
		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		for (int i = 0; i < n; i++)
			Async_Notify(pass_channels[i], "");
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(loop_context);
		EmitErrorReport();
		FlushErrorState();
		AbortCurrentTransaction();
		dlsm_notify_relay_untake(pass_marks, n);
		n = -1;
	}
	PG_END_TRY();
	return n;
}

void
dlsm_relay_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext loop_context;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (!dlsm_notify_relay_attach(dboid))
		proc_exit(0);			/* not needed: the postmaster forgets it */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", RELAY_LOCK_TIMEOUT, PGC_SUSET,
					PGC_S_OVERRIDE);

	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm relay loop",
										 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		int			sent;
		long		wait = RELAY_NAP_MS;
		int			events = WL_LATCH_SET;

		MemoryContextSwitchTo(loop_context);
		sent = relay_pass(loop_context);
		MemoryContextReset(loop_context);

		/* after a pass that notified, an interval before the next */
		if (sent != 0)
		{
			events = 0;
			wait = sent < 0 ? RELAY_RETRY_MS :
				sent == RELAY_MAX_CHANNELS ? 0 : RELAY_INTERVAL_MS;
		}
		(void) WaitLatch(MyLatch, events | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait, dlsm_wait_event(DLSM_WAIT_RELAY));
		/* before the next pass takes the marks: a later one sets it again */
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
