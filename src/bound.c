/*-------------------------------------------------------------------------
 *
 * bound.c
 *	  The time bound on each step of the worker, and the step's name.
 *
 * Every step the worker takes (a transaction of worker.c, and each part of
 * a handler's transaction that handler.c names) runs under
 * dlsm.step_timeout: a timeout of its own, registered once per worker as a
 * USER_TIMEOUT, that cancels what runs as a statement timeout does, queue
 * owner's triggers and all.  SPI in a background worker arms no
 * statement_timeout by itself, so without it nothing would end a step
 * that a trigger keeps waiting.  A handler's call is the one part that this
 * file does not cancel: it has its own statement timeout (handler.c).
 *
 * A cancel is an error that code may catch (EXCEPTION WHEN query_canceled)
 * and go on.  So a second timeout, one dlsm.step_timeout after the cancel
 * (the step's, or the handler's statement timeout), ends the worker
 * itself, as a terminate signal would (FATAL, which nothing catches); the
 * worker then records the queue as abandoned (worker.c), and the worker
 * the launcher starts next leaves that queue alone for a while.
 *
 * The timeouts' handlers run in the SIGALRM handler: they write only
 * volatile sig_atomic_t flags (core's pending flags, and abandoned) and set
 * the latch.  The queue and step that the end of the worker abandons are
 * noted by arm(), before it arms that timeout, while no timeout of a step
 * is armed, and never once abandoned is set.
 *
 * The step's name and queue name every error raised in it (an error
 * context callback the caller pushes), so that the server log shows which
 * queue and which step an error or a cancel came from.
 *
 * State is per worker process: the current step, its queue, whether its
 * bound fired, and whether the worker ends because the step went on.
 * Outside a worker nothing is registered and every function here but
 * dlsm_bound_context does nothing.
 *
 * Calls guc.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bound.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timeout.h"

#include "bound.h"
#include "guc.h"

static TimeoutId bound_timeout = MAX_TIMEOUTS;	/* not registered */
static TimeoutId last_timeout = MAX_TIMEOUTS;	/* ends the worker */
static Oid	bound_relid = InvalidOid;	/* the step's queue, or none */
static const char *bound_queue = NULL;	/* its name, or NULL */
static DlsmWorkerStep bound_step = DLSM_STEP_NONE;	/* the current step */
static volatile sig_atomic_t abandoned = false; /* the worker ends (set in the
												 * SIGALRM handler) */

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

/* The step ran out of time: cancel it, as StatementCancelHandler would. */
static void
bound_expired(void)
{
	InterruptPending = true;
	QueryCancelPending = true;
	SetLatch(MyLatch);
}

/* The step ignored its cancel for another bound: end the worker. */
static void
bound_ignored(void)
{
	abandoned = true;
	InterruptPending = true;
	ProcDiePending = true;
	SetLatch(MyLatch);
}

/* Register the bound; once, in the worker, after InitPostgres. */
void
dlsm_bound_init(void)
{
	bound_timeout = RegisterTimeout(USER_TIMEOUT, bound_expired);
	last_timeout = RegisterTimeout(USER_TIMEOUT, bound_ignored);
}

/*
 * Arm the timeouts of a part: the cancel after dlsm.step_timeout (or none,
 * when own_ms > 0: the part cancels itself after own_ms), the end of the
 * worker one dlsm.step_timeout after that; own_ms < 0 disarms both.  What
 * that end would abandon is noted first, while it is disarmed (kept apart
 * from the current step: a next step may begin before the end is served),
 * unless an end is on its way already.
 */
static void
arm(int own_ms)
{
	int64		cancel_ms = own_ms > 0 ? own_ms : dlsm_step_timeout;

	disable_timeout(bound_timeout, true);
	disable_timeout(last_timeout, false);
	if (own_ms < 0)
		return;
	if (!abandoned)
	{
		abandoned_relid = bound_relid;
		abandoned_queue = bound_queue;
		abandoned_step = bound_step;
	}
	if (own_ms == 0)
		enable_timeout_after(bound_timeout, dlsm_step_timeout);
	enable_timeout_after(last_timeout,
						 (int) Min(cancel_ms + dlsm_step_timeout, INT_MAX));
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
	if (bound_timeout == MAX_TIMEOUTS)
		return;
	arm(-1);
	bound_relid = relid;
	bound_queue = queue;
	dlsm_bound_enter(step, DLSM_BOUND_STEP);
}

/*
 * Go on to the next part of the current step, step: bounded afresh by
 * dlsm.step_timeout (own_ms DLSM_BOUND_STEP), or by a cancel of its own
 * after own_ms (a handler's statement timeout); either way the worker ends
 * if the part goes on one dlsm.step_timeout past its cancel.  When the
 * part that ends ran out of time, its cancel is raised here, before the
 * next part starts, even if code run in it caught it.
 */
void
dlsm_bound_enter(DlsmWorkerStep step, int own_ms)
{
	if (bound_timeout == MAX_TIMEOUTS)
		return;
	arm(-1);
	if (get_timeout_indicator(bound_timeout, false))
	{
		/* even when the owner's code caught the cancel and went on */
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling statement due to dlsm.step_timeout")));
	}
	bound_step = step;
	arm(own_ms);
}

/*
 * End the current step (its name stays for the error report); true if it
 * ran out of time.  A cancel the bound sent and nothing raised yet is
 * withdrawn: it must not end the next step.
 */
bool
dlsm_bound_end(void)
{
	bool		expired;

	if (bound_timeout == MAX_TIMEOUTS)
		return false;
	arm(-1);
	expired = get_timeout_indicator(bound_timeout, true);
	if (expired)
		QueryCancelPending = false;
	return expired;
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
 * step for its translator.
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
}
