/*-------------------------------------------------------------------------
 *
 * bound.c
 *	  The time bound on each step of the worker, and the step's name.
 *
 * Every step the worker takes (a transaction of worker.c, and each part of
 * a handler's transaction that handler.c names) runs under a statement
 * timeout that this file arms and disarms: dlsm.step_timeout, or the
 * handler's own timeout for its call.  SPI in a background worker arms no
 * statement_timeout by itself, so without it nothing would end a step that
 * a queue owner's trigger keeps waiting.  It is PostgreSQL's own
 * STATEMENT_TIMEOUT: its cancel is core's ("canceling statement due to
 * statement timeout", SQLSTATE 57014), and the error context callback
 * below adds the step, its queue and, for a step's cancel, its bound.
 *
 * A part that ran out of time fails even when its code caught the cancel
 * (EXCEPTION WHEN query_canceled) and went on, or returned before the
 * cancel was served: the cancel is raised as the part ends, core's if it
 * is still pending, else the same error of ours.  For the handler's call
 * that is as the call returns, inside its subtransaction
 * (dlsm_bound_check), so that the unit is settled with it; for other parts
 * it is at the next part (dlsm_bound_enter).  "Ran out" is its deadline
 * passed: the timeout fires no earlier.  A cancel of a part's bound still
 * pending when the call fails with an error of its own (dlsm_bound_failed),
 * or when the step ends (dlsm_bound_end), must not fall on what comes next:
 * it is served where dlsm may catch it, as the next part begins, as the
 * step ends, or after its transaction is aborted (dlsm_bound_aborted, once
 * interrupts are no longer held), and forgotten there
 * (serve_stale_cancel).  So is one of lock_timeout (dlsm.lock_timeout),
 * which may come after the step's own: both bounds are 1 s by default, and
 * the step's, armed first, breaks a lock wait first.  Core reads which
 * timeouts fired, then disarms the wait's (ProcessInterrupts,
 * LockErrorCleanup); a lock_timeout that fires in between stays pending,
 * and was served after the step, outside any, ending the worker (on a
 * loaded machine).  A cancel is a bound's when the statement timeout's or
 * lock_timeout's indicator says it fired; any other is some role's
 * pg_cancel_backend(), which nothing here forgets: it ends the part it
 * falls on, and between steps (dlsm_bound_idle) it ends nothing, as a
 * cancel sent to an idle backend.  No flag of core's is written here: core
 * raises each cancel, and dlsm catches the errors it raises.
 *
 * A cancel is an error that code may catch and go on.  So a second timeout,
 * one dlsm.step_timeout after the cancel, ends the worker itself: it sends
 * the worker the terminate signal (core's die() then ends it FATAL at its
 * next interrupt check, which nothing catches; the error context below says
 * why); the worker then records the queue as abandoned (worker.c), and the
 * worker the launcher starts next leaves that queue alone for a while.
 * That timeout's handler runs in the SIGALRM handler: it writes only a
 * volatile sig_atomic_t flag and sends the signal.  The queue and step it
 * abandons are noted by arm(), before it arms the timeout, while no
 * timeout of a step is armed, and never once the flag is set.
 *
 * State is per worker process: the current step, its queue, the current
 * part's deadline, and whether the worker ends because a step went on.
 * Outside a worker nothing is registered and every function here but
 * dlsm_bound_context does nothing.
 *
 * Calls guc.c and subxact.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bound.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "bound.h"
#include "guc.h"
#include "subxact.h"

static TimeoutId last_timeout = MAX_TIMEOUTS;	/* ends the worker; none
												 * outside a worker */
static Oid	bound_relid = InvalidOid;	/* the step's queue, or none */
static const char *bound_queue = NULL;	/* its name, or NULL */
static DlsmWorkerStep bound_step = DLSM_STEP_NONE;	/* the current step */
static bool under_way = false;	/* begun, not ended */

/* The current part of the step */
static TimestampTz part_due = 0;	/* its cancel's deadline; 0: none armed */
static int	part_step_ms = 0;	/* its dlsm.step_timeout, or 0: a bound of its
								 * own (a handler's call) */
static bool part_ended = false; /* it ended, or its cancel was raised */

/* Written in the SIGALRM handler */
static volatile sig_atomic_t abandoned = false; /* the worker ends */

/* What the end of the worker abandons: noted by arm(), before it is armed */
static Oid	abandoned_relid = InvalidOid;
static const char *abandoned_queue = NULL;
static DlsmWorkerStep abandoned_step = DLSM_STEP_NONE;

/* The name of each step, for the worker's activity and dlsm_worker_status. */
static const char *const step_names[] = {
	[DLSM_STEP_NONE] = "none",
	[DLSM_STEP_READ_REGISTRY] = "read the dlsm registry",
	[DLSM_STEP_REAP] = "reap a queue",
	[DLSM_STEP_PURGE] = "delete settled rows",
	[DLSM_STEP_PURGE_LEASES] = "delete expired leases",
	[DLSM_STEP_HANDLE] = "run a queue's handler",
	[DLSM_STEP_CLAIM_UNIT] = "claim a handler's unit",
	[DLSM_STEP_CALL_HANDLER] = "call a handler",
	[DLSM_STEP_SETTLE_UNIT] = "settle a handler's unit",
};

/*
 * The step ignored its cancel for another bound: end the worker, by the
 * terminate signal whose handler (die) the worker set.  A timeout handler,
 * run in the SIGALRM handler.
 */
static void
bound_ignored(void)
{
	abandoned = true;
	kill(MyProcPid, SIGTERM);
}

/* Register the bound; once, in the worker, after InitPostgres. */
void
dlsm_bound_init(void)
{
	last_timeout = RegisterTimeout(USER_TIMEOUT, bound_ignored);
}

/* Disarm the current part's timeouts; the statement timeout's indicator stays. */
static void
disarm(void)
{
	DisableTimeoutParams timeouts[2];

	timeouts[0].id = STATEMENT_TIMEOUT;
	timeouts[0].keep_indicator = true;
	timeouts[1].id = last_timeout;
	timeouts[1].keep_indicator = false;
	disable_timeouts(timeouts, lengthof(timeouts));
}

/*
 * Arm the timeouts of the current part, which the caller disarmed: its
 * cancel (the statement timeout) after own_ms, or after dlsm.step_timeout
 * when own_ms is DLSM_BOUND_STEP; the end of the worker one
 * dlsm.step_timeout after the cancel.  What that end would abandon is noted
 * first, unless an end is on its way already.
 */
static void
arm(int own_ms)
{
	EnableTimeoutParams timeouts[2];

	if (!abandoned)
	{
		abandoned_relid = bound_relid;
		abandoned_queue = bound_queue;
		abandoned_step = bound_step;
	}
	part_step_ms = own_ms > 0 ? 0 : dlsm_step_timeout;
	part_ended = false;
	part_due = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   own_ms > 0 ? own_ms : dlsm_step_timeout);
	timeouts[0].id = STATEMENT_TIMEOUT;
	timeouts[0].type = TMPARAM_AT;
	timeouts[0].fin_time = part_due;
	timeouts[1].id = last_timeout;
	timeouts[1].type = TMPARAM_AT;
	timeouts[1].fin_time = TimestampTzPlusMilliseconds(part_due,
													   dlsm_step_timeout);
	enable_timeouts(timeouts, lengthof(timeouts));
}

/* Serve pending interrupts (run by dlsm_subxact_run, or outside any transaction). */
static void
serve_interrupts(void *arg)
{
	CHECK_FOR_INTERRUPTS();
}

/*
 * Serve pending interrupts where the error a cancel raises can be caught:
 * in a subtransaction of its own inside a transaction, else (between
 * transactions) as is.  The error, or NULL.
 */
static ErrorData *
serve_caught(void)
{
	MemoryContext context = CurrentMemoryContext;
	ErrorData  *volatile edata = NULL;

	if (IsTransactionState())
		return dlsm_subxact_run(serve_interrupts, NULL);
	PG_TRY();
	{
		serve_interrupts(NULL);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
	}
	PG_END_TRY();
	return edata;
}

/*
 * Forget the error edata when it is a cancel (57014, or lock_timeout's
 * 55P03), else raise it again.
 */
static void
forget_cancel(ErrorData *edata)
{
	if (edata == NULL)
		return;
	if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED &&
		edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	FreeErrorData(edata);
}

/*
 * Serve a cancel that the statement timeout or lock_timeout sent and
 * nothing served, and forget it: it must not end what comes next.  Only
 * after the part's timeouts are disarmed (no bound's can fire meanwhile);
 * while interrupts are held nothing is served, and the caller's next call
 * serves it.  A cancel no indicator names is some role's: it stays.
 */
static void
serve_stale_cancel(void)
{
	if (!INTERRUPTS_CAN_BE_PROCESSED() ||
		!(get_timeout_indicator(STATEMENT_TIMEOUT, false) ||
		  get_timeout_indicator(LOCK_TIMEOUT, false)))
		return;
	if (QueryCancelPending)
		forget_cancel(serve_caught());
	/* served, by core or here: the indicators say nothing any more */
	(void) get_timeout_indicator(STATEMENT_TIMEOUT, true);
	(void) get_timeout_indicator(LOCK_TIMEOUT, true);
}

/*
 * Begin step on queue relid, named queue (a name that outlives the step;
 * InvalidOid and NULL when the step is not a queue's), under
 * dlsm.step_timeout.  The previous step's timeouts (dlsm_bound_end
 * disarmed them) are disarmed before its queue is forgotten.
 */
void
dlsm_bound_begin(Oid relid, const char *queue, DlsmWorkerStep step)
{
	if (last_timeout == MAX_TIMEOUTS)
		return;
	disarm();
	bound_relid = relid;
	bound_queue = queue;
	bound_step = step;
	under_way = true;
	arm(DLSM_BOUND_STEP);
}

/*
 * End the current part of the step (once: a later call does nothing):
 * disarm its timeouts and, when it ran out of time, raise its cancel:
 * core's when it is still pending, else the same error (the part's code
 * caught the cancel and went on, or returned before it was served).  The
 * handler calls it as its call returns, inside the call's subtransaction.
 */
void
dlsm_bound_check(void)
{
	if (last_timeout == MAX_TIMEOUTS || part_due == 0 || part_ended)
		return;
	disarm();
	part_ended = true;
	if (!get_timeout_indicator(STATEMENT_TIMEOUT, false) &&
		GetCurrentTimestamp() < part_due)
		return;
	CHECK_FOR_INTERRUPTS();		/* core's, with its message */
	/* (interrupts are held: it stays, for the next part to serve) */
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("canceling statement due to statement timeout")));
}

/*
 * End the current part, which failed with an error of its own: disarm its
 * timeouts, so that the error says why the part failed (a cancel of its
 * bound still pending is served as the next part begins).  For the
 * handler's call, before its error leaves the call's subtransaction.
 */
void
dlsm_bound_failed(void)
{
	if (last_timeout == MAX_TIMEOUTS || part_due == 0 || part_ended)
		return;
	disarm();
	part_ended = true;
}

/*
 * Go on to the next part of the current step, step: bounded afresh by
 * dlsm.step_timeout (own_ms DLSM_BOUND_STEP), or by a cancel of its own
 * after own_ms (a handler's call); either way the worker ends if the part
 * goes on one dlsm.step_timeout past its cancel.  The part that ends is
 * ended first (dlsm_bound_check): when it ran out of time, its cancel is
 * raised here, before the next part starts, even if code run in it caught
 * it.  A cancel of its bound that the part's own error left pending is
 * served and forgotten here.  In the step's transaction.
 */
void
dlsm_bound_enter(DlsmWorkerStep step, int own_ms)
{
	if (last_timeout == MAX_TIMEOUTS)
		return;
	dlsm_bound_check();
	serve_stale_cancel();
	bound_step = step;
	arm(own_ms);
}

/*
 * End the current step (its name stays for the error report).  A cancel
 * its timeout sent and nothing raised is served and forgotten: it must not
 * end the next step (when interrupts are held, by dlsm_bound_aborted).
 */
void
dlsm_bound_end(void)
{
	if (last_timeout == MAX_TIMEOUTS)
		return;
	disarm();
	serve_stale_cancel();
	part_due = 0;
	under_way = false;
}

/*
 * The step's transaction, which failed, is aborted, so that no lock wait's
 * lock_timeout is armed any more: serve and forget a cancel it sent since
 * dlsm_bound_end (an error of a lock wait other than its cancel leaves the
 * wait's timeout armed until the abort).  The caller holds interrupts from
 * before dlsm_bound_end until the abort, and calls this once it no longer
 * holds them.
 */
void
dlsm_bound_aborted(void)
{
	if (last_timeout == MAX_TIMEOUTS)
		return;
	serve_stale_cancel();
}

/*
 * Between steps or passes, outside any transaction: serve pending
 * interrupts, where a cancel (some role's pg_cancel_backend(), or a
 * bound's that nothing served) ends nothing, as one sent to an idle
 * backend; any other error is raised.  For every process of dlsm's: the
 * workers, the reaper, the launcher and the relay.
 */
void
dlsm_bound_idle(void)
{
	if (!INTERRUPTS_PENDING_CONDITION())
		return;
	forget_cancel(serve_caught());
	(void) get_timeout_indicator(STATEMENT_TIMEOUT, true);
	(void) get_timeout_indicator(LOCK_TIMEOUT, true);
}

/*
 * The step under way and its queue, for the worker's exit callback: false
 * between steps, or in a step of no queue.
 */
bool
dlsm_bound_current(Oid *relid, const char **queue, DlsmWorkerStep *step)
{
	*relid = bound_relid;
	*queue = bound_queue;
	*step = bound_step;
	return under_way && OidIsValid(bound_relid);
}

/*
 * Did the worker end because a step ignored its cancel?  Then *relid,
 * *queue and *step say which; for the worker's exit callback.
 */
bool
dlsm_bound_abandoned(Oid *relid, const char **queue, DlsmWorkerStep *step)
{
	*relid = abandoned_relid;
	*queue = abandoned_queue;
	*step = abandoned_step;
	return abandoned && OidIsValid(abandoned_relid);
}

/* The name of step. */
const char *
dlsm_bound_step_name(DlsmWorkerStep step)
{
	return step_names[step];
}

/* The current step, or DLSM_STEP_NONE. */
DlsmWorkerStep
dlsm_bound_step(void)
{
	return bound_step;
}

/*
 * Error context callback: the step and its queue, one whole message per
 * step for its translator; for the cancel of a step that ran out of time,
 * its bound.
 */
void
dlsm_bound_context(void *arg)
{
	const char *queue = bound_queue;

	switch (bound_step)
	{
		case DLSM_STEP_NONE:
			break;
		case DLSM_STEP_READ_REGISTRY:
			errcontext("dlsm worker: read the dlsm registry");
			break;
		case DLSM_STEP_REAP:
			errcontext("dlsm worker: reap a queue, queue \"%s\"", queue);
			break;
		case DLSM_STEP_PURGE:
			errcontext("dlsm worker: delete settled rows, queue \"%s\"", queue);
			break;
		case DLSM_STEP_PURGE_LEASES:
			errcontext("dlsm worker: delete expired leases");
			break;
		case DLSM_STEP_HANDLE:
			errcontext("dlsm worker: run a queue's handler, queue \"%s\"", queue);
			break;
		case DLSM_STEP_CLAIM_UNIT:
			errcontext("dlsm worker: claim a handler's unit, queue \"%s\"", queue);
			break;
		case DLSM_STEP_CALL_HANDLER:
			errcontext("dlsm worker: call a handler, queue \"%s\"", queue);
			break;
		case DLSM_STEP_SETTLE_UNIT:
			errcontext("dlsm worker: settle a handler's unit, queue \"%s\"", queue);
			break;
	}
	/* the end of a worker whose step went on past its cancel */
	if (abandoned && geterrcode() == ERRCODE_ADMIN_SHUTDOWN)
		errcontext("dlsm worker: the step went on for another \"dlsm.step_timeout\" (%d ms) after its cancel, so the worker ends",
				   dlsm_step_timeout);
	/* the cancel of a step past its dlsm.step_timeout */
	if (part_due != 0 && part_step_ms > 0 &&
		geterrcode() == ERRCODE_QUERY_CANCELED &&
		GetCurrentTimestamp() >= part_due)
		errcontext("dlsm worker: the step ran for longer than \"dlsm.step_timeout\" (%d ms)",
				   part_step_ms);
}
