/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  dlsm's per-database worker: listen, reap, purge, run handlers.
 *
 * A worker (started by launcher.c) loops: read the registry, reap (every
 * dlsm.reap_interval, or at once on NOTIFY dlsm, 'reap'; expired leases of
 * named locks are deleted in the same pass), run the handlers of handler
 * queues, sleep on its latch until the next deadline.  It does not listen:
 * the commit of an enqueue into a handler queue, of a change of the
 * registry or of NOTIFY dlsm, 'reap' sets its latch and says which
 * (pool.c).  Each queue is reaped, purged and handled in transactions of
 * its own, as the queue's owner; an error is logged and counted, and the
 * worker goes on with the next queue.
 *
 * One queue cannot stall the others: every step of the worker (one
 * transaction here, or a part of a handler's that handler.c names) is
 * bounded by dlsm.step_timeout (bound.c), whatever the owner's triggers on
 * it do, except the handler call, which is bounded by its own timeout
 * (handler.c chooses it); every wait for a lock is bounded by
 * dlsm.lock_timeout; and an owner's handlers run for at most one
 * dlsm.reap_interval of a pass before the worker turns to another owner's.  A step
 * that fails or runs out of time is rolled back, logged with the step and
 * the queue as its context (autovacuum's error path), counted, and named
 * in dlsm_worker_status; the next pass does its work again.  A step that
 * goes on after its cancel ends the worker (bound.c); at its exit the
 * queue's owner is shunned: the next worker leaves all its queues alone
 * for a while (a "shun", dlsm_pool_worker_shun), longer at each shun.
 * Neither can an owner with many queues
 * stall the others: a reaping pass gives each owner one dlsm.step_timeout
 * of step time, and defers its other queues to the next pass, where they
 * go first; after a slow owner's turn, handlers with work run at once.
 * Likewise a handler pass gives each owner's handlers one dlsm.reap_interval
 * (and the call under way when it runs out), and defers its other handler
 * queues to the next pass.  test/t/048_stall_matrix.pl holds every step of bound.h (DlsmWorkerStep).
 *
 * Reaping never waits behind a handler call, which runs as long as its
 * owner's handler_timeout: a worker with a handler queue starts its
 * database's reaper (dlsm_reaper_main, bgw_type "dlsm reaper"), a process
 * of its own that makes the registry and reaping passes above every
 * dlsm.reap_interval (or at once on NOTIFY dlsm, 'reap') and nothing else,
 * while the worker makes only the registry and handler passes.  The
 * reaper lives while its worker does: the worker's exit stops it, and it
 * leaves when it finds another worker in the slot (pool.c).  A worker
 * without handler queues, a visiting one (the workers take turns), one
 * for which no background worker process is free (said once), or one
 * whose reaper gives way to another database's worker (launcher.c) reaps
 * itself, between its handler calls, as before.
 *
 * When the workers take turns (fewer dlsm.max_workers than databases,
 * launcher.c), a worker visits (a "visit": a worker's turn in one
 * database, dlsm_pool_worker_visiting): it makes the passes above once, runs the
 * handlers for at most half a dlsm.reap_interval (the other half is for
 * the process start and the passes; a slow pass makes the visit longer,
 * never the handlers' time shorter), and exits; handler work left, or an
 * enqueue meanwhile, brings the next visit first.  While its handlers have
 * work left and no other database is due, the visit goes on for another
 * half dlsm.reap_interval, and so on: a database that comes due meanwhile
 * waits at most for the end of that stretch.
 *
 * Calls handler.c, state.c, queue.c, namedlock.c, identity.c,
 * extension.c, bound.c, pool.c, names.c, waits.c, subxact.c and bgw.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "bgw.h"
#include "bound.h"
#include "compat.h"
#include "extension.h"
#include "guc.h"
#include "handler.h"
#include "identity.h"
#include "namedlock.h"
#include "names.h"
#include "pool.h"
#include "queue.h"
#include "state.h"
#include "subxact.h"
#include "waits.h"
#include "worker.h"

#define PURGE_BATCHES			100 /* retention batches per pass */
#define SHUN_BOUNDS				10	/* dlsm.step_timeouts of a first shun */
#define SHUN_DOUBLINGS			6	/* a shun is at most 2^6 times as long */
#define SAY_AGAIN_MS			60000	/* a deferral or slow step, said again */
#define REAPER_YIELD_MS			60000	/* no reaper so long after a worker of
										 * a database could not start */

static char *my_dbname = NULL;

/* This process is its database's reaper, not its worker. */
static bool am_reaper = false;

/* The worker's reaper, once registered (TopMemoryContext), or NULL. */
static BackgroundWorkerHandle *reaper = NULL;

/* The worker said that its reaper could not start. */
static bool reaper_refused_said = false;

/*
 * When the workers take turns: the end of this worker's visit, half a
 * dlsm.reap_interval after its first handler pass began (0: none yet), so
 * that handlers get their time however long the reaping took.
 */
static TimestampTz visit_end = 0;

/* The configuration was read again since the main loop last looked. */
static bool reloaded = false;

/* What the worker said once and need not repeat at every pass. */
static List *refused_reported = NIL;	/* queues, in TopMemoryContext */
static List *shunned_reported = NIL;	/* queues, in TopMemoryContext */
static List *deferred_reported = NIL;	/* owners, in TopMemoryContext */
static List *handlers_deferred_reported = NIL;	/* owners, likewise */
static List *slow_reported = NIL;	/* queues, in TopMemoryContext */
static TimestampTz reported_since = 0;	/* the last three lists, since then */

/* Queues a reaping pass left for the next one, first there (TopMemoryContext) */
static List *deferred_queues = NIL;

/* Handler queues a handler pass left for the next one, first there */
static List *handlers_deferred = NIL;

/* The queues of the last look at the registry (for the exit's shun) */
static List *current_queues = NIL;

/* One queue as the worker's last look at the registry found it. */
typedef struct WorkerQueue
{
	Oid			relid;
	char	   *name;			/* for messages, outside transactions */
	Oid			owner;			/* the table's owner */
	char	   *owner_name;		/* for messages, outside transactions */
	int			order;			/* its place in the registry */
	int			deferred;		/* its place among the queues the last reaping
								 * pass left, or INT_MAX */
	Oid			shun_cause;		/* when shunned: the queue whose step did */
	bool		refused;		/* row-level security, or misfit: left alone */
	bool		misfit;			/* its table no longer fits dlsm (queue.h) */
	bool		stalled;		/* a step timed out: left until the next pass */
	TimestampTz shunned_until;	/* left alone until then (or 0): a step on a
								 * queue of its owner went on after its cancel */
	bool		has_handler;
	bool		has_retention;
} WorkerQueue;

/* One step of the worker's work on a queue, in a transaction of its own. */
typedef struct QueueWork
{
	Oid			relid;			/* the queue */
	int64		count;			/* rows or units done */
	bool		more;			/* a full batch: there may be more */
	char	   *failure;		/* the handler's error message, or NULL */
} QueueWork;

typedef void (*WorkFn) (void *arg);

/* How a step ended. */
typedef enum StepResult
{
	STEP_DONE,					/* committed */
	STEP_FAILED,				/* an error, counted */
	STEP_SKIPPED				/* a lock or time bound, counted as a skip */
} StepResult;

/*
 * Count the error of step on queue (a name, or NULL: not a queue's) in the
 * worker's status: a lock timeout or a cancel (dlsm.step_timeout) as a
 * skipped pass.
 */
static StepResult
record_error(const char *queue, const char *step, ErrorData *edata)
{
	DlsmWorkerCounts delta = {0};
	char	   *message;

	if (queue != NULL)
		message = psprintf("queue \"%s\": %s: %s", queue, step, edata->message);
	else
		message = psprintf("%s: %s", step, edata->message);
	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE ||
		edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		delta.skipped = 1;
	else
		delta.errors = 1;
	dlsm_pool_worker_count(&delta, message);
	pfree(message);
	return delta.skipped ? STEP_SKIPPED : STEP_FAILED;
}

/*
 * Run fn(arg) in a transaction of its own, with SPI and a snapshot, as
 * step on queue wq (or NULL), under dlsm.step_timeout; an
 * error is logged, with the step and the queue as its context, and
 * counted.  The error path is autovacuum's: interrupts are held until the
 * transaction is aborted and the error forgotten.
 */
static StepResult
run_transaction(WorkFn fn, void *arg, WorkerQueue *wq, DlsmWorkerStep step)
{
	const char *activity = dlsm_bound_step_name(step);
	const char *queue = wq != NULL ? wq->name : NULL;
	MemoryContext context = CurrentMemoryContext;
	ErrorContextCallback callback;
	volatile StepResult result = STEP_DONE;

	callback.callback = dlsm_bound_context;
	callback.arg = NULL;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	dlsm_bound_begin(wq != NULL ? wq->relid : InvalidOid, queue, step);
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, activity);
		fn(arg);
		if (SPI_finish() != SPI_OK_FINISH)
			elog(ERROR, "SPI_finish failed");
		PopActiveSnapshot();
		CommitTransactionCommand(); /* deferred triggers: still bounded */
		dlsm_bound_end();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		HOLD_INTERRUPTS();
		dlsm_bound_end();
		edata = dlsm_error_recover(context);
		result = record_error(queue, dlsm_bound_step_name(dlsm_bound_step()),
							  edata);
		FreeErrorData(edata);
		RESUME_INTERRUPTS();
		dlsm_bound_aborted();	/* a lock wait's late cancel goes too */
	}
	PG_END_TRY();
	error_context_stack = callback.previous;
	MemoryContextSwitchTo(context);
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return result;
}

/* ---------------------------------------------------------------------
 * Steps
 * ---------------------------------------------------------------------
 */

/* What a look at the registry found. */
typedef struct RegistryPass
{
	bool		extension;		/* is dlsm installed here? */
	bool		outdated;		/* at another version than the library's */
	List	   *queues;			/* of WorkerQueue, in context */
	MemoryContext context;
} RegistryPass;

/* List the queues. */
static void
read_registry(void *arg)
{
	RegistryPass *pass = (RegistryPass *) arg;
	ListCell   *lc;

	pass->extension = dlsm_extension_exists();
	pass->outdated = pass->extension && !dlsm_extension_current();
	if (!pass->extension || pass->outdated)
		return;
	foreach(lc, dlsm_queue_list())
	{
		DlsmQueue  *queue = dlsm_queue_open(lfirst_oid(lc),
											DLSM_QUEUE_MISSING_OK |
											DLSM_QUEUE_ANY_SECURITY |
											DLSM_QUEUE_ANY_SHAPE);
		WorkerQueue *wq;
		MemoryContext old;

		if (queue == NULL)
			continue;
		old = MemoryContextSwitchTo(pass->context);
		wq = palloc(sizeof(WorkerQueue));
		wq->relid = queue->relid;
		wq->name = dlsm_rel_label(queue->relid);
		wq->owner = queue->owner;
		wq->owner_name = GetUserNameFromId(queue->owner, true);
		if (wq->owner_name == NULL)
			wq->owner_name = psprintf("%u", queue->owner);
		wq->order = list_length(pass->queues);
		wq->deferred = INT_MAX;
		wq->shun_cause = InvalidOid;
		wq->refused = queue->row_security || queue->misfit;
		wq->misfit = queue->misfit;
		wq->shunned_until = dlsm_pool_worker_shunned(queue->owner,
													 &wq->shun_cause);
		wq->stalled = wq->shunned_until != 0;
		wq->has_handler = queue->handler != NULL;
		wq->has_retention = queue->has_retention;
		pass->queues = lappend(pass->queues, wq);
		MemoryContextSwitchTo(old);
		dlsm_queue_close(queue);
	}
}

/*
 * Open work's queue and act as its owner; the reaper and the retention
 * pass never act as the worker's superuser: triggers and expressions on
 * the table are the owner's code.
 */
static DlsmQueue *
begin_queue_work(QueueWork *work, DlsmIdentity *saved)
{
	DlsmQueue  *queue = dlsm_queue_open(work->relid, DLSM_QUEUE_WRITE);

	dlsm_identity_switch(queue->owner, saved);
	return queue;
}

static void
end_queue_work(DlsmQueue *queue, DlsmIdentity *saved)
{
	dlsm_identity_restore(saved);
	dlsm_queue_close(queue);
}

static void
reap_queue(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmIdentity saved;
	DlsmQueue  *queue = begin_queue_work(work, &saved);

	work->count = dlsm_state_reap(queue);
	end_queue_work(queue, &saved);
}

static void
purge_queue(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmIdentity saved;
	DlsmQueue  *queue = begin_queue_work(work, &saved);

	work->count = queue->has_retention ?
		dlsm_state_purge(queue, dlsm_retention_batch) : 0;
	work->more = work->count == dlsm_retention_batch;
	end_queue_work(queue, &saved);
}

static void
handle_unit(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmQueue  *queue = dlsm_queue_open(work->relid, DLSM_QUEUE_WRITE);

	work->failure = NULL;
	work->more = queue->handler != NULL &&
		dlsm_handler_run_one(queue, &work->failure);
	if (work->failure != NULL)	/* keep it past the transaction */
		work->failure = MemoryContextStrdup(TopMemoryContext, work->failure);
	dlsm_queue_close(queue);
}

static void
purge_leases(void *arg)
{
	*(int64 *) arg = dlsm_named_purge();
}

/* ---------------------------------------------------------------------
 * Passes
 * ---------------------------------------------------------------------
 */

/*
 * Keep in *said (TopMemoryContext) only the queues of queues that are
 * still refused (shunned when shunned): one that fits again, or is gone,
 * is forgotten, and is said again if it is refused again.
 */
static void
trim_said(List **said, List *queues, bool shunned)
{
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, queues)
	{
		WorkerQueue *wq = lfirst(lc);

		if ((shunned ? wq->shunned_until != 0 : wq->refused) &&
			list_member_oid(*said, wq->relid))
			kept = lappend_oid(kept, wq->relid);
	}
	list_free(*said);
	*said = kept;
	MemoryContextSwitchTo(old);
}

/*
 * Read the registry: the queues, and listen on their channels.  Exits
 * when the extension is gone from the database.
 */
static List *
registry_pass(MemoryContext context)
{
	RegistryPass pass = {false, false, NIL, context};
	uint64		pokes = dlsm_pool_pokes();

	if (run_transaction(read_registry, &pass, NULL,
						DLSM_STEP_READ_REGISTRY) != STEP_DONE)
		return NIL;
	if (!pass.extension && am_reaper)
		proc_exit(0);			/* its worker says so, and stops */
	if (!pass.extension)
	{
		dlsm_pool_worker_idle(pokes);
		ereport(LOG,
				(errmsg("dlsm worker for database \"%s\" stops", my_dbname),
				 errdetail("The extension dlsm is not installed in that database.")));
		proc_exit(0);
	}
	/* said once per worker of its own, or per stretch of visits */
	if (!am_reaper && dlsm_pool_worker_outdated(pass.outdated))
		ereport(LOG,
				(errmsg("dlsm worker for database \"%s\" waits", my_dbname),
				 errdetail("The SQL objects of the extension dlsm there are not at the version of its library."),
				 errhint("Run ALTER EXTENSION dlsm UPDATE in that database.")));
	trim_said(&refused_reported, pass.queues, false);
	trim_said(&shunned_reported, pass.queues, true);
	return pass.queues;
}

/*
 * Is this the first time oid (a queue or an owner) is said about, since
 * *said was last forgotten?  Notes it in *said (TopMemoryContext).
 */
static bool
first_said(List **said, Oid oid)
{
	MemoryContext old;

	if (list_member_oid(*said, oid))
		return false;
	old = MemoryContextSwitchTo(TopMemoryContext);
	*said = lappend_oid(*said, oid);
	MemoryContextSwitchTo(old);
	return true;
}

/* Replace *kept (TopMemoryContext) with a copy of list. */
static void
keep_list(List **kept, List *list)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	list_free(*kept);
	*kept = list_copy(list);
	MemoryContextSwitchTo(old);
}

/*
 * Count a pass skipped on queue relid; message is said once per queue (in
 * *reported) and worker, not at every pass, so that other errors stay
 * visible.
 */
static void
skip_queue(List **reported, Oid relid, char *message)
{
	DlsmWorkerCounts delta = {.skipped = 1};

	dlsm_pool_worker_count(&delta, first_said(reported, relid) ? message : NULL);
}

/*
 * Forget what was said about deferrals and slow steps once SAY_AGAIN_MS
 * passed, so that a lasting one is said again.
 */
static void
forget_said(void)
{
	TimestampTz now = GetCurrentTimestamp();

	if (TimestampDifferenceExceeds(reported_since, now, SAY_AGAIN_MS))
	{
		list_free(deferred_reported);
		list_free(handlers_deferred_reported);
		list_free(slow_reported);
		deferred_reported = NIL;
		handlers_deferred_reported = NIL;
		slow_reported = NIL;
		reported_since = now;
	}
}

/* The errmsg of timed_step: step on queue took took ms; one per step. */
static int
slow_step_message(DlsmWorkerStep step, const char *queue, long took)
{
	switch (step)
	{
		case DLSM_STEP_REAP:
			return errmsg("dlsm worker took %ld ms to reap queue \"%s\"",
						  took, queue);
		case DLSM_STEP_PURGE:
			return errmsg("dlsm worker took %ld ms to delete settled rows of queue \"%s\"",
						  took, queue);
		default:
			break;				/* timed_step times these two only */
	}
	return errmsg_internal("dlsm worker took %ld ms on queue \"%s\"",
						   took, queue);
}

/*
 * Run step fn on queue wq as run_transaction does, and add the time it
 * took to *spent_ms, its owner's in this pass; a step that took more than
 * half of dlsm.step_timeout, though not cancelled, is said in the server
 * log (once a minute per queue): its owner's code is close to the bound.
 */
static StepResult
timed_step(WorkFn fn, QueueWork *work, WorkerQueue *wq, DlsmWorkerStep step,
		   int64 *spent_ms)
{
	TimestampTz start = GetCurrentTimestamp();
	StepResult	result = run_transaction(fn, work, wq, step);
	long		took = TimestampDifferenceMilliseconds(start,
													   GetCurrentTimestamp());

	*spent_ms += took;
	if (result != STEP_DONE || took <= dlsm_step_timeout / 2 ||
		!first_said(&slow_reported, wq->relid))
		return result;
	ereport(LOG,
			(slow_step_message(step, wq->name, took),
			 errdetail("That is more than half of \"dlsm.step_timeout\" (%d ms).",
					   dlsm_step_timeout)));
	return result;
}

/*
 * Reap a queue and delete its settled rows past their retention, adding
 * the time its steps took to *spent_ms (its owner's in this pass; no more
 * retention batches once that is past dlsm.step_timeout).  A queue dlsm
 * refuses (row-level security) is skipped and named in the worker's status,
 * without a line in the server log at every pass.  A queue whose step ran
 * out of a bound (dlsm.step_timeout, dlsm.lock_timeout) is marked stalled:
 * nothing more is done on it until the next registry pass.  A queue
 * shunned (a step on a queue of its owner went on after its cancel and
 * ended an earlier worker) is skipped; the queue that caused it is named
 * once.
 */
static void
reap_one(WorkerQueue *wq, DlsmWorkerCounts *counts, int64 *spent_ms)
{
	QueueWork	work = {wq->relid, 0, false, NULL};
	StepResult	result;

	if (wq->refused)
	{
		skip_queue(&refused_reported, wq->relid, wq->misfit ?
				   psprintf("queue \"%s\" no longer fits dlsm since its table was altered: dlsm leaves it alone",
							wq->name) :
				   psprintf("queue \"%s\" has row-level security enabled: dlsm leaves it alone",
							wq->name));
		return;
	}
	if (wq->shunned_until != 0)
	{
		if (wq->shun_cause == wq->relid)
			skip_queue(&shunned_reported, wq->relid,
					   psprintf("queue \"%s\" is left alone until %s: a step on it went on after its cancel",
								wq->name, timestamptz_to_str(wq->shunned_until)));
		else
			counts->skipped++;	/* its owner's other queue is named */
		return;
	}

	/* a queue that ran out of a bound costs one bound per pass, not more */
	result = timed_step(reap_queue, &work, wq, DLSM_STEP_REAP, spent_ms);
	wq->stalled = result == STEP_SKIPPED;
	if (result == STEP_DONE)
		counts->reaped += work.count;
	for (int i = 0; wq->has_retention && !wq->stalled && i < PURGE_BATCHES &&
		 *spent_ms < dlsm_step_timeout; i++)
	{
		result = timed_step(purge_queue, &work, wq, DLSM_STEP_PURGE, spent_ms);
		wq->stalled = result == STEP_SKIPPED;
		if (result != STEP_DONE)
			break;
		counts->deleted += work.count;
		if (!work.more)
			break;
	}
}

/* One owner's turn in a reaping pass. */
typedef struct OwnerTurn
{
	Oid			owner;
	const char *name;			/* for messages */
	int64		spent_ms;		/* its steps' time in this pass */
	int			deferred;		/* its queues left for the next pass */
} OwnerTurn;

static bool handler_pass(List *queues);

/*
 * End an owner's turn: its deferred queues are counted as skipped, and said
 * in the server log (once a minute per owner).  When its steps took more
 * than half of dlsm.step_timeout and a handler queue got work meanwhile,
 * the handlers run now, before the next owner's turn: so a handler waits
 * for one owner's turn at most, not for the whole pass (when the worker
 * reaps itself; a reaper runs no handler).
 */
static void
end_turn(OwnerTurn *turn, List *queues)
{
	if (turn->owner == InvalidOid)
		return;
	if (turn->deferred > 0)
	{
		DlsmWorkerCounts delta = {.skipped = turn->deferred};

		dlsm_pool_worker_count(&delta, NULL);
		if (first_said(&deferred_reported, turn->owner))
			ereport(LOG,
					(errmsg_plural("dlsm worker defers %d queue of role \"%s\" to its next pass",
								   "dlsm worker defers %d queues of role \"%s\" to its next pass",
								   turn->deferred, turn->deferred, turn->name),
					 errdetail("That role's steps took %d ms of this pass, more than \"dlsm.step_timeout\" (%d ms).",
							   (int) turn->spent_ms, dlsm_step_timeout)));
	}
	if (!am_reaper && turn->spent_ms > dlsm_step_timeout / 2 &&
		dlsm_pool_worker_take_pending())
		(void) handler_pass(queues);	/* the main loop's pass runs too */
}

/* The place of queue relid in deferred (a pass's deferred queues), or INT_MAX. */
static int
deferred_place(List *deferred, Oid relid)
{
	ListCell   *lc;

	foreach(lc, deferred)
	{
		if (lfirst_oid(lc) == relid)
			return foreach_current_index(lc);
	}
	return INT_MAX;
}

/*
 * The order of a reaping pass: owner by owner; of an owner's queues, those
 * the last pass deferred first, in the order it met them (so an owner's
 * queues take turns), then the others in the registry's order.
 */
static int
compare_reap_order(const ListCell *a, const ListCell *b)
{
	WorkerQueue *qa = lfirst(a);
	WorkerQueue *qb = lfirst(b);

	if (qa->owner != qb->owner)
		return qa->owner < qb->owner ? -1 : 1;
	if (qa->deferred != qb->deferred)
		return qa->deferred < qb->deferred ? -1 : 1;
	return qa->order - qb->order;
}

/*
 * Reap every queue, delete settled rows past their retention and expired
 * leases.  Each owner's steps get one dlsm.step_timeout of the pass (a
 * step that begins within it runs to its own bound): the rest of its
 * queues wait for the next pass, where they go first.  So a pass takes at
 * most about 2 x dlsm.step_timeout per owner whose code is slow, however
 * many queues it owns.
 */
static void
reaping_pass(List *queues)
{
	DlsmWorkerCounts counts = {0};
	List	   *order = list_copy(queues);
	List	   *deferred = NIL;
	OwnerTurn	turn = {InvalidOid, NULL, 0, 0};
	ListCell   *lc;
	int64		leases = 0;

	forget_said();
	foreach(lc, order)
	{
		WorkerQueue *wq = lfirst(lc);

		wq->deferred = deferred_place(deferred_queues, wq->relid);
	}
	list_sort(order, compare_reap_order);
	foreach(lc, order)
	{
		WorkerQueue *wq = lfirst(lc);

		if (wq->owner != turn.owner)
		{
			end_turn(&turn, queues);
			turn.owner = wq->owner;
			turn.name = wq->owner_name;
			turn.spent_ms = 0;
			turn.deferred = 0;
		}
		if (turn.spent_ms < dlsm_step_timeout)
			reap_one(wq, &counts, &turn.spent_ms);
		else
		{
			turn.deferred++;
			deferred = lappend_oid(deferred, wq->relid);
		}
	}
	end_turn(&turn, queues);
	keep_list(&deferred_queues, deferred);
	if (run_transaction(purge_leases, &leases, NULL,
						DLSM_STEP_PURGE_LEASES) == STEP_DONE)
		counts.deleted += leases;
	dlsm_pool_worker_count(&counts, NULL);
	dlsm_pool_worker_passed();
}

/*
 * Every wait of the worker for a lock is bounded by dlsm.lock_timeout; no
 * default transaction_timeout (17 and up: FATAL when it fires) of the
 * database or the role ends the worker's long steps: set as an override,
 * which such defaults cannot change.  Owner's code that sets one for its
 * own transaction (SET LOCAL beats an override) does end the worker; its
 * owner is then shunned (shun_abandoned).
 */
static void
apply_settings(void)
{
	SetConfigOption("lock_timeout", psprintf("%d", dlsm_lock_timeout),
					PGC_SUSET, PGC_S_OVERRIDE);
	if (DLSM_HAS_TRANSACTION_TIMEOUT)
		SetConfigOption("transaction_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * Read the configuration again if a SIGHUP asked for it: between the
 * passes, and before each handler call, so that a bound lowered by a
 * reload holds from the next call on, not from the next pass.
 */
static bool
reload_if_pending(void)
{
	if (!ConfigReloadPending)
		return false;
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	apply_settings();
	reloaded = true;
	return true;
}

/*
 * Run one queue's handler until it finds no work, dlsm.handler_batch units
 * or budget_ms passed, or a step ran out of a bound (then the queue is
 * stalled until the next registry pass); true if it may have more work.
 */
static bool
handle_queue(WorkerQueue *wq, int64 budget_ms)
{
	QueueWork	work = {wq->relid, 0, false, NULL};
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													budget_ms);
	int			units = 0;

	if (visit_end != 0)
		until = Min(until, visit_end);

	while (units < dlsm_handler_batch && GetCurrentTimestamp() < until)
	{
		DlsmWorkerCounts delta = {0};
		StepResult	result;

		/* a bound reloaded meanwhile (dlsm.max_handler_timeout) holds now */
		(void) reload_if_pending();
		result = run_transaction(handle_unit, &work, wq, DLSM_STEP_HANDLE);

		wq->stalled = result == STEP_SKIPPED;
		if (result != STEP_DONE || !work.more)
		{
			/* a failed call whose commit failed: that error is counted */
			if (work.failure != NULL)
				pfree(work.failure);
			return false;
		}
		units++;
		delta.handled = work.failure ? 0 : 1;
		delta.errors = work.failure ? 1 : 0;
		dlsm_pool_worker_count(&delta, work.failure ?
							   psprintf("queue \"%s\": call a handler: %s",
										wq->name, work.failure) : NULL);
		if (work.failure != NULL)
			pfree(work.failure);
	}
	return true;
}

/*
 * Say once a minute per owner that a handler pass deferred turn->deferred
 * of its handler queues.
 */
static void
say_handlers_deferred(OwnerTurn *turn)
{
	if (turn->deferred == 0 ||
		!first_said(&handlers_deferred_reported, turn->owner))
		return;
	ereport(LOG,
			(errmsg_plural("dlsm worker defers the handler of %d queue of role \"%s\" to its next pass",
						   "dlsm worker defers the handlers of %d queues of role \"%s\" to its next pass",
						   turn->deferred, turn->deferred, turn->name),
			 errdetail("That role's handlers took %d ms of this pass, more than \"dlsm.reap_interval\" (%d ms).",
					   (int) turn->spent_ms, dlsm_reap_interval)));
}

/*
 * The order of a handler pass: the queues the last pass deferred first, in
 * the order it met them, then the others in the registry's order.
 */
static int
compare_handler_order(const ListCell *a, const ListCell *b)
{
	WorkerQueue *qa = lfirst(a);
	WorkerQueue *qb = lfirst(b);

	if (qa->deferred != qb->deferred)
		return qa->deferred < qb->deferred ? -1 : 1;
	return qa->order - qb->order;
}

/* The turn of wq's owner in this handler pass, among turns. */
static OwnerTurn *
turn_of(List **turns, WorkerQueue *wq)
{
	ListCell   *lc;
	OwnerTurn  *turn;

	foreach(lc, *turns)
	{
		turn = lfirst(lc);
		if (turn->owner == wq->owner)
			return turn;
	}
	turn = palloc0(sizeof(OwnerTurn));
	turn->owner = wq->owner;
	turn->name = wq->owner_name;
	*turns = lappend(*turns, turn);
	return turn;
}

/*
 * Run the handlers of queues not stalled; true if one may have more work.
 * Each owner's handlers get one dlsm.reap_interval of the pass (a call that
 * begins within it runs to its own bound): its other handler queues wait
 * for the next pass, where they go first.  So another owner's handler waits
 * for at most one dlsm.reap_interval and one call per owner ahead of it,
 * however many handler queues those own.
 */
static bool
handler_pass(List *queues)
{
	bool		more = false;
	List	   *order = NIL;
	List	   *deferred = NIL;
	List	   *turns = NIL;
	ListCell   *lc;

	(void) dlsm_pool_worker_take_pending(); /* this pass serves it */
	if (visit_end == 0 && dlsm_pool_worker_visiting())
		visit_end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												dlsm_reap_interval / 2);
	foreach(lc, queues)
	{
		WorkerQueue *wq = lfirst(lc);

		if (!wq->has_handler || wq->refused || wq->stalled)
			continue;
		wq->deferred = deferred_place(handlers_deferred, wq->relid);
		order = lappend(order, wq);
	}
	list_sort(order, compare_handler_order);
	foreach(lc, order)
	{
		WorkerQueue *wq = lfirst(lc);
		OwnerTurn  *turn = turn_of(&turns, wq);
		TimestampTz start;

		if (turn->spent_ms >= dlsm_reap_interval)
		{
			turn->deferred++;
			deferred = lappend_oid(deferred, wq->relid);
			more = true;
			continue;
		}
		start = GetCurrentTimestamp();
		more |= handle_queue(wq, dlsm_reap_interval - turn->spent_ms);
		turn->spent_ms += TimestampDifferenceMilliseconds(start,
														  GetCurrentTimestamp());
	}
	foreach(lc, turns)
		say_handlers_deferred(lfirst(lc));
	keep_list(&handlers_deferred, deferred);
	list_free(order);
	list_free_deep(turns);
	return more;
}

/* ---------------------------------------------------------------------
 * The loop
 * ---------------------------------------------------------------------
 */

/*
 * The errdetail of shun_abandoned: queue's step went on after its cancel
 * (or, when ended, raised a FATAL error), the count-th shun of its owner,
 * for ms; one whole message per step of a queue, saying in words what the
 * step was doing (its name, for the CONTEXT and the activity, is
 * bound.c's).
 */
static int
shun_detail(DlsmWorkerStep step, bool ended, const char *queue, int count,
			int64 ms)
{
	if (ended)
		return errdetail("A step on queue \"%s\" ended the worker with a FATAL error; this is shun %d of that role, for %lld ms.",
						 queue, count, (long long) ms);
	switch (step)
	{
		case DLSM_STEP_REAP:
			return errdetail("Reaping queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_PURGE:
			return errdetail("Deleting the settled rows of queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_HANDLE:
			return errdetail("Running the handler of queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_CLAIM_UNIT:
			return errdetail("Claiming a unit of queue \"%s\" for its handler went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_CALL_HANDLER:
			return errdetail("Calling the handler of queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_SETTLE_UNIT:
			return errdetail("Settling a handler's unit of queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							 queue, count, (long long) ms);
		case DLSM_STEP_NONE:
		case DLSM_STEP_READ_REGISTRY:
		case DLSM_STEP_PURGE_LEASES:
			break;				/* not a queue's: never shunned */
	}
	return errdetail_internal("A step on queue \"%s\" went on after its cancel; this is shun %d of that role, for %lld ms.",
							  queue, count, (long long) ms);
}

/* The queue relid of the last look at the registry, or NULL. */
static WorkerQueue *
find_queue(Oid relid)
{
	ListCell   *lc;

	foreach(lc, current_queues)
	{
		if (((WorkerQueue *) lfirst(lc))->relid == relid)
			return lfirst(lc);
	}
	return NULL;
}

/*
 * At the worker's exit: when it ends because a step on a queue went on
 * after its cancel (its code caught it), or because the step raised a
 * FATAL error (a transaction_timeout the owner's code set, from 17 on; not
 * a stop, SIGTERM, which pgstat counts as killed), this database's workers
 * leave all the queues of its owner alone: for SHUN_BOUNDS times
 * dlsm.step_timeout,
 * twice as long as the last shun of the same owner if that one ended
 * within SHUN_BOUNDS times dlsm.step_timeout (up to 2^SHUN_DOUBLINGS
 * times): an owner whose code does it again at once is left longer.
 */
static void
shun_abandoned(int code, Datum arg)
{
	Oid			relid;
	const char *queue;
	DlsmWorkerStep step;
	WorkerQueue *wq;
	TimestampTz now = GetCurrentTimestamp();
	int64		first = (int64) SHUN_BOUNDS * dlsm_step_timeout;
	int			count;
	int			owned = 0;
	int64		ms;
	ListCell   *lc;
	bool		ended = false;

	if (!dlsm_bound_abandoned(&relid, &queue, &step))
	{
		if (code == 0 || pgStatSessionEndCause != DISCONNECT_FATAL ||
			!dlsm_bound_current(&relid, &queue, &step))
			return;
		ended = true;
	}
	if ((wq = find_queue(relid)) == NULL)
		return;
	foreach(lc, current_queues)
		owned += ((WorkerQueue *) lfirst(lc))->owner == wq->owner;
	count = dlsm_pool_worker_shuns(wq->owner,
								   TimestampTzPlusMilliseconds(now, -first)) + 1;
	ms = first << Min(count - 1, SHUN_DOUBLINGS);
	dlsm_pool_worker_shun(wq->owner, relid,
						  TimestampTzPlusMilliseconds(now, ms), count);
	ereport(LOG,
			(errmsg_plural("dlsm worker leaves the %d queue of role \"%s\" alone until %s",
						   "dlsm worker leaves all %d queues of role \"%s\" alone until %s",
						   owned, owned, wq->owner_name,
						   timestamptz_to_str(TimestampTzPlusMilliseconds(now, ms))),
			 shun_detail(step, ended, queue, count, ms)));
}

/* At the worker's exit: its reaper stops too. */
static void
stop_reaper(int code, Datum arg)
{
	if (reaper != NULL)
		TerminateBackgroundWorker(reaper);
}

/*
 * Connect to database dboid, take its slot (as its worker, or as its
 * reaper beside worker parent), or exit.
 */
static void
worker_start(Oid dboid, pid_t parent)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	if (am_reaper ? !dlsm_pool_reaper_attach(dboid, parent, REAPER_YIELD_MS) :
		!dlsm_pool_worker_attach(dboid))
		proc_exit(0);			/* another worker, or the database goes */
	before_shmem_exit(shun_abandoned, 0);	/* runs before the slot's detach */
	if (!am_reaper)
		before_shmem_exit(stop_reaper, 0);
	pgstat_report_appname(am_reaper ? "dlsm reaper" : "dlsm worker");
	dlsm_bound_init();
	apply_settings();

	/* catalog lookups need a transaction, even for a name */
	StartTransactionCommand();
	my_dbname = MemoryContextStrdup(TopMemoryContext,
									get_database_name(dboid));
	CommitTransactionCommand();
}

/*
 * When the workers take turns, leave after a reaping pass once the
 * handlers found no more work or the visit's time (half a
 * dlsm.reap_interval) is up and another database is due; the launcher then
 * sends a worker to the next database, and back here first if the
 * handlers had more.  With none due, the visit goes on for another half
 * dlsm.reap_interval.
 */
static void
leave_if_visit_over(bool passed, bool more)
{
	if (!passed || !dlsm_pool_worker_visiting() ||
		(more && (visit_end == 0 || GetCurrentTimestamp() < visit_end)))
		return;
	if (more && !dlsm_pool_others_due(dlsm_reap_interval))
	{
		/*
		 * No other database waits for its turn: another half a
		 * dlsm.reap_interval here costs nobody anything, where leaving would
		 * cost a process start to come back.  One that comes due meanwhile
		 * waits for the end of this stretch, at most.
		 */
		visit_end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												dlsm_reap_interval / 2);
		return;
	}
	dlsm_pool_worker_leave(more);
	ereport(DEBUG1,
			(errmsg_internal("dlsm worker leaves database \"%s\" after its visit",
							 my_dbname)));
	proc_exit(0);
}

/* Sleep until the next reaping pass, or at once when there is more to do. */
static bool
worker_sleep(TimestampTz next_reap, bool more)
{
	long		timeout = 0;
	bool		woken;

	if (!more)
		timeout = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
												  next_reap);
	woken = (WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   timeout, dlsm_wait_event(DLSM_WAIT_WORKER)) &
			 WL_LATCH_SET) != 0;
	ResetLatch(MyLatch);
	dlsm_bound_idle();			/* a cancel sent now ends nothing */
	if (woken && !am_reaper)
	{
		DlsmWorkerCounts delta = {.wakeups = 1};

		dlsm_pool_worker_count(&delta, NULL);
	}
	return woken;				/* an enqueue into a handler queue, or a
								 * request */
}

/* Does any of queues have a handler? */
static bool
has_handler_queue(List *queues)
{
	ListCell   *lc;

	foreach(lc, queues)
	{
		if (((WorkerQueue *) lfirst(lc))->has_handler)
			return true;
	}
	return false;
}

/*
 * Register this worker's reaper (a process that reaps beside it); said
 * once per worker when no background worker process is free for it.
 */
static void
start_reaper(void)
{
	BackgroundWorker bgw;
	pid_t		parent = MyProcPid;
	MemoryContext old;
	bool		started;

	/*
	 * Never restarted by the postmaster: a restart pending reads as stopped
	 * to the handle, and worker_reaps would register a second reaper.  After
	 * a FATAL its worker reaps between handler calls until its next pass
	 * starts another.
	 */
	dlsm_bgw_fill(&bgw, "dlsm reaper", "dlsm_reaper_main", my_dbname,
				  ObjectIdGetDatum(MyDatabaseId), BGW_NEVER_RESTART, 0);
	memcpy(bgw.bgw_extra, &parent, sizeof(parent));
	if (reaper != NULL)
		pfree(reaper);
	reaper = NULL;
	old = MemoryContextSwitchTo(TopMemoryContext);
	started = RegisterDynamicBackgroundWorker(&bgw, &reaper);
	MemoryContextSwitchTo(old);
	if (started || reaper_refused_said)
		return;
	reaper_refused_said = true;
	ereport(LOG,
			(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
			 errmsg("could not start dlsm reaper for database \"%s\"",
					my_dbname),
			 errdetail("Its worker reaps between handler calls: a handler call delays the reaping of every queue there until it returns."),
			 errhint("You may need to increase \"max_worker_processes\".")));
}

/*
 * Does the worker make the reaping pass itself?  Not while its reaper
 * runs.  A worker with a handler queue starts one when it may (not when
 * the workers take turns, nor while reapers give way); until it is
 * attached, the worker reaps.
 */
static bool
worker_reaps(List *queues)
{
	bool		may_start;
	pid_t		pid;

	if (dlsm_pool_worker_has_reaper(REAPER_YIELD_MS, &may_start))
		return false;
	if (may_start && has_handler_queue(queues) &&
		(reaper == NULL ||
		 GetBackgroundWorkerPid(reaper, &pid) == BGWH_STOPPED))
		start_reaper();
	return true;
}

void
dlsm_worker_main(Datum main_arg)
{
	MemoryContext loop_context;
	MemoryContext queues_context;
	List	   *queues;
	TimestampTz next_reap = 0;
	bool		more = false;
	bool		passed = false;
	bool		self_reaping = true;

	worker_start(DatumGetObjectId(main_arg), 0);
	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm worker loop",
										 ALLOCSET_DEFAULT_SIZES);
	queues_context = AllocSetContextCreate(TopMemoryContext, "dlsm worker queues",
										   ALLOCSET_SMALL_SIZES);
	/* said once the database turns out to have dlsm */
	queues = registry_pass(queues_context);
	current_queues = queues;
	/* a visit, when the workers take turns, is not worth a line each */
	ereport(dlsm_pool_worker_visiting() ? DEBUG1 : LOG,
			(errmsg("dlsm worker started for database \"%s\"", my_dbname)));
	for (;;)
	{
		int			requests = dlsm_pool_worker_take_requests();
		bool		reap_now;

		reap_now = (requests & DLSM_REQUEST_REAP) != 0 ||
			GetCurrentTimestamp() >= next_reap;
		MemoryContextSwitchTo(loop_context);
		if (reap_now || (requests & DLSM_REQUEST_REGISTRY) != 0)
		{
			MemoryContextReset(queues_context);
			queues = registry_pass(queues_context);
			current_queues = queues;
			more = true;
			/* a new handler queue: its reaper starts before its handler */
			self_reaping = worker_reaps(queues);
		}
		if (reap_now)
		{
			if (self_reaping)
				reaping_pass(queues);
			passed = true;
			next_reap = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													dlsm_reap_interval);
		}
		if (more)
			more = handler_pass(queues);
		MemoryContextReset(loop_context);
		leave_if_visit_over(passed, more);
		more |= worker_sleep(next_reap, more);
		(void) reload_if_pending();
		if (reloaded)
		{
			/* a new dlsm.reap_interval counts from now */
			reloaded = false;
			next_reap = 0;
		}
	}
}

/*
 * The reaper of a database whose worker has handler queues: the registry
 * and reaping passes, every dlsm.reap_interval or at once on NOTIFY dlsm,
 * 'reap', until its worker is gone or it gives way to another database's
 * worker.  Its worker's pid is in bgw_extra.
 */
void
dlsm_reaper_main(Datum main_arg)
{
	MemoryContext loop_context;
	MemoryContext queues_context;
	TimestampTz next_reap = 0;
	pid_t		parent;

	memcpy(&parent, MyBgworkerEntry->bgw_extra, sizeof(parent));
	am_reaper = true;
	worker_start(DatumGetObjectId(main_arg), parent);
	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm reaper loop",
										 ALLOCSET_DEFAULT_SIZES);
	queues_context = AllocSetContextCreate(TopMemoryContext, "dlsm reaper queues",
										   ALLOCSET_SMALL_SIZES);
	ereport(DEBUG1,
			(errmsg_internal("dlsm reaper started for database \"%s\"",
							 my_dbname)));
	/* the worker's schedule goes on: its next pass is the reaper's first */
	if (dlsm_pool_worker_last_pass() != 0)
		next_reap = TimestampTzPlusMilliseconds(dlsm_pool_worker_last_pass(),
												dlsm_reap_interval);
	for (;;)
	{
		int			requests = dlsm_pool_worker_take_requests();

		if (!dlsm_pool_reaper_may_stay(REAPER_YIELD_MS))
			proc_exit(0);
		MemoryContextSwitchTo(loop_context);
		if ((requests & DLSM_REQUEST_REAP) != 0 ||
			GetCurrentTimestamp() >= next_reap)
		{
			MemoryContextReset(queues_context);
			current_queues = registry_pass(queues_context);
			reaping_pass(current_queues);
			next_reap = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													dlsm_reap_interval);
		}
		MemoryContextReset(loop_context);
		(void) worker_sleep(next_reap, false);
		(void) reload_if_pending();
		if (reloaded)
		{
			reloaded = false;
			next_reap = 0;
		}
	}
}
