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
 * RELAY_RETRY_MS later.
 *
 * It is a process that a LISTEN or an enqueue may start, so it goes away
 * with its reason (notify.c has the bounds on where and how many run):
 * it exits once it had nothing to notify for dlsm.relay_idle_timeout, or
 * is past the cluster's bound for relays after a reload, as soon as no
 * producer is about to mark a channel for it; on SIGTERM
 * (pg_terminate_backend, a shutdown, DROP DATABASE), it stops being the
 * database's relay, sends the marks left (unless its database is being
 * dropped) and exits; and when its database turns out to be a template or
 * not to allow connections (checked as it starts and at least every
 * RELAY_NAP_MS), likewise.  The postmaster never restarts it: the next
 * producer that needs one starts it.
 *
 * Calls notify.c, subxact.c, bound.c and waits.c; reads dlsm.relay_idle_timeout (guc.c).
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
#include "utils/timestamp.h"

#include "bound.h"
#include "guc.h"
#include "notify.h"
#include "relay.h"
#include "subxact.h"
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
		FreeErrorData(dlsm_error_recover(loop_context));
		dlsm_notify_relay_untake(pass_marks, n);
		n = -1;
	}
	PG_END_TRY();
	return n;
}

/* May the relay's database have one (no template, connections allowed)? */
static bool
database_allowed(Oid dboid)
{
	bool		ok;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	ok = dlsm_notify_relay_allowed(dboid);
	CommitTransactionCommand();
	return ok;
}

/*
 * Stop: the database's relay no more, send the marks left (but in a
 * database being dropped) and exit.
 */
static void
relay_stop(MemoryContext loop_context)
{
	if (dlsm_notify_relay_stop())
	{
		MemoryContextSwitchTo(loop_context);
		while (relay_pass(loop_context) == RELAY_MAX_CHANNELS)
			MemoryContextReset(loop_context);
	}
	proc_exit(0);
}

void
dlsm_relay_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext loop_context;
	TimestampTz last_work;
	TimestampTz last_check;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	BackgroundWorkerUnblockSignals();
	if (!dlsm_notify_relay_attach(dboid))
		proc_exit(0);			/* not needed: the postmaster forgets it */
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", RELAY_LOCK_TIMEOUT, PGC_SUSET,
					PGC_S_OVERRIDE);

	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm relay loop",
										 ALLOCSET_DEFAULT_SIZES);
	if (!database_allowed(dboid))
		relay_stop(loop_context);
	last_work = last_check = GetCurrentTimestamp();
	for (;;)
	{
		int			sent;
		long		wait = RELAY_NAP_MS;
		int			events = WL_LATCH_SET;
		TimestampTz now;

		MemoryContextSwitchTo(loop_context);
		sent = relay_pass(loop_context);
		MemoryContextReset(loop_context);
		now = GetCurrentTimestamp();
		if (ShutdownRequestPending)
			relay_stop(loop_context);
		if (TimestampDifferenceExceeds(last_check, now, RELAY_NAP_MS))
		{
			last_check = now;
			if (!database_allowed(dboid))
				relay_stop(loop_context);
		}

		if (sent != 0)
		{
			/* after a pass that notified, an interval before the next */
			last_work = now;
			events = 0;
			wait = sent < 0 ? RELAY_RETRY_MS :
				sent == RELAY_MAX_CHANNELS ? 0 : RELAY_INTERVAL_MS;
		}
		else
		{
			long		idle = TimestampDifferenceMilliseconds(last_work, now);
			long		idle_left = dlsm_relay_idle_timeout - idle;

			/* nothing to do for its idle time, or one relay too many */
			if (idle_left <= 0 || !dlsm_notify_relay_within_cap())
			{
				if (dlsm_notify_relay_leave())
					proc_exit(0);
				/* a producer is about to mark: its mark sets the latch */
				idle_left = RELAY_NAP_MS;
			}
			wait = Min(wait, idle_left);
		}
		(void) WaitLatch(MyLatch, events | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 wait, dlsm_wait_event(DLSM_WAIT_RELAY));
		/* before the next pass takes the marks: a later one sets it again */
		ResetLatch(MyLatch);
		dlsm_bound_idle();		/* a cancel sent now ends nothing */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
