/*-------------------------------------------------------------------------
 *
 * state.c
 *	  The state machine of a queue's requests, after the claim (claim.c):
 *	  settle, heartbeat, reap; and enqueue, retention and statistics.
 *
 * States and the moves allowed out of each (every move is one
 * compare-and-set statement in querytext.c naming the rows and the state it
 * expects them in):
 *
 *	new			-> in-progress	claim (dlsm_claim, dlsm_group_updates);
 *								dlsm_claim's is written when its
 *								transaction commits without settling it
 *				-> complete		claimed and settled in one transaction:
 *				-> error		one write from 'new' (pending.c)
 *				-> new			(a retry: attempts and run_at move on)
 *				-> error		its entity's create failed (updates only)
 *	in-progress	-> complete		settle 'complete' by the claimant
 *				-> error		settle 'error', or retries spent
 *				-> new			settle 'retry', lease expired (reap),
 *								or the claiming transaction rolled back
 *	complete, error				terminal: nothing here moves them
 *
 * Dead letters (deadletter.c) add two moves: new -> error (dlsm_cancel)
 * and error -> new (dlsm_requeue).
 *
 * Only the current claimant, named by its process id, settles or extends
 * a claim; a claim that was reaped or re-claimed is lost and its settle
 * raises 55000.
 *
 * Every function here runs its statements as the current user: the
 * caller of a dlsm function, or the queue's owner when the worker acts
 * (the caller switches, identity.c).  The caller holds an SPI connection
 * and a pin on the queue.
 *
 * Deduplication (dlsm_enqueue's dedup_key): the producers of one key take
 * its lock-manager lock (locks.c) for their transaction, one after the
 * other, and each looks the key up only once it holds the lock, with the
 * latest snapshot, so that it sees the row of the holder before it if that
 * one committed, in any isolation level; a holder that rolled back left no
 * row, and the next producer inserts.  A producer that inserts holds the
 * lock until its transaction ends, so no two producers' rows of one key
 * are ever both uncommitted: at most one request of a key is added while
 * another is new or in progress (or settled within the window), by
 * producers using dlsm_enqueue.  One that finds the key taken by a
 * committed row adds nothing and gives the lock back at once.
 *
 * The look-up is a direct scan of the key's index where the queue has one
 * fit for it (dedup.c), the statement DEDUP_LOOKUP otherwise.
 *
 * Calls plans.c, queue.c, pending.c, wake.c, grouplimit.c, locks.c,
 * names.c and dedup.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/state.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "dedup.h"
#include "grouplimit.h"
#include "locks.h"
#include "names.h"
#include "pending.h"
#include "state.h"
#include "wake.h"

static const char *const outcome_names[] = {
	[DLSM_OUTCOME_COMPLETE] = "complete",
	[DLSM_OUTCOME_ERROR] = "error",
	[DLSM_OUTCOME_RETRY] = "retry",
};

const char *
dlsm_outcome_name(DlsmOutcome outcome)
{
	return outcome_names[outcome];
}

/* The outcome named name; false when there is none. */
bool
dlsm_outcome_parse(const char *name, DlsmOutcome *outcome)
{
	for (int i = 0; i < lengthof(outcome_names); i++)
	{
		if (strcmp(name, outcome_names[i]) == 0)
		{
			*outcome = (DlsmOutcome) i;
			return true;
		}
	}
	return false;
}

/* A retry's parameters, at the given positions of values and nulls. */
static void
retry_values(DlsmQueue *queue, DlsmSettle *settle, Datum *values,
			 char *nulls, int detail, int after, int max_attempts)
{
	values[detail] = settle->detail ?
		CStringGetTextDatum(settle->detail) : (Datum) 0;
	nulls[detail] = settle->detail ? ' ' : 'n';
	values[after] = PointerGetDatum(settle->retry_after);
	nulls[after] = settle->retry_after ? ' ' : 'n';
	values[max_attempts] = Int32GetDatum(queue->max_attempts);
}

/* A final outcome's parameters, at the given positions. */
static void
final_values(DlsmSettle *settle, Datum *values, char *nulls, int status,
			 int detail)
{
	values[status] = CStringGetTextDatum(dlsm_outcome_name(settle->outcome));
	values[detail] = settle->detail ?
		CStringGetTextDatum(settle->detail) : (Datum) 0;
	nulls[detail] = settle->detail ? ' ' : 'n';
}

/*
 * The statement of a settle (of claimed rows, or by process ids) and its
 * outcome's parameters; the caller fills in the rows'.
 */
static DlsmQueryId
settle_params(DlsmQueue *queue, DlsmSettle *settle, bool claimed,
			  Datum *values, char *nulls)
{
	/* the widest of the four statements' parameters */
	memset(nulls, ' ', N_SETTLE_CLAIMED_RETRY_PARAMS);
	if (settle->outcome == DLSM_OUTCOME_RETRY && claimed)
	{
		retry_values(queue, settle, values, nulls, P_CLAIMED_RETRY_DETAIL,
					 P_CLAIMED_RETRY_AFTER, P_CLAIMED_RETRY_MAX_ATTEMPTS);
		return DLSM_Q_SETTLE_CLAIMED_RETRY;
	}
	if (settle->outcome == DLSM_OUTCOME_RETRY)
	{
		retry_values(queue, settle, values, nulls, P_RETRY_DETAIL,
					 P_RETRY_AFTER, P_RETRY_MAX_ATTEMPTS);
		return DLSM_Q_SETTLE_RETRY;
	}
	if (claimed)
	{
		final_values(settle, values, nulls, P_CLAIMED_STATUS, P_CLAIMED_DETAIL);
		return DLSM_Q_SETTLE_CLAIMED_FINAL;
	}
	final_values(settle, values, nulls, P_SETTLE_STATUS, P_SETTLE_DETAIL);
	return DLSM_Q_SETTLE_FINAL;
}

/*
 * Count the rows the last settle statement returned into counts, by
 * process id (pids, n of them, contiguous); a process id given twice gets
 * its count twice.  The floor of the queue learns, at commit, of the
 * entities settled and of the rows a retry made new again.
 */
static void
count_settled(DlsmQueue *queue, DlsmSettle *settle, const pg_uuid_t *pids,
			  int n, int64 *counts)
{
	int64		lowest = PG_INT64_MAX;

	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		Datum		d = dlsm_plan_value(r, A_SETTLE_PROCESS_ID, &isnull);
		pg_uuid_t  *pid = isnull ? NULL : DatumGetUUIDP(d);

		/* NULL: an owner's trigger wrote it so; no caller's claim counts it */
		for (int i = 0; i < n && pid != NULL; i++)
			if (memcmp(&pids[i], pid, UUID_LEN) == 0)
				counts[i]++;
		/* a unit this transaction claimed frees its group's slot */
		if (pid != NULL)
			dlsm_limits_settled(queue, pid);
		lowest = Min(lowest, DatumGetInt64(dlsm_plan_value(r, A_SETTLE_ID,
														   &isnull)));
		dlsm_wake_entity_changed_at_commit(queue->relid,
										   dlsm_plan_text(r, A_SETTLE_ENTITY));
		dlsm_limits_group_changed(queue,
								  dlsm_plan_text(r, A_SETTLE_GROUP));
	}
	/* a retry makes its rows ready again (or error: no harm) */
	if (settle->outcome == DLSM_OUTCOME_RETRY && SPI_processed > 0)
		dlsm_wake_rows_ready_at_commit(queue->relid, lowest);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Settle the rows held by the given process ids (n of them): those this
 * transaction claimed, still pending, in one statement from 'new' to the
 * outcome; those in progress, claimed before, in another (not run when
 * the pending rows are all the process ids hold).  Adds to counts[i] the
 * rows pids[i] held; returns the rows settled.
 */
static uint64
settle_rows(DlsmQueue *queue, const pg_uuid_t *pids, int n,
			DlsmSettle *settle, int64 *counts)
{
	Datum		values[N_SETTLE_CLAIMED_RETRY_PARAMS];
	char		nulls[N_SETTLE_CLAIMED_RETRY_PARAMS];
	DlsmPendingSet set;
	DlsmQueryId query;
	uint64		settled = 0;

	if (dlsm_pending_select(queue->relid, pids, n, &set))
	{
		query = settle_params(queue, settle, true, values, nulls);
		values[P_CLAIMED_IDS] = set.ids;
		values[P_CLAIMED_PROCESS_IDS] = set.process_ids;
		values[P_CLAIMED_FENCES] = set.fences;
		values[P_CLAIMED_AT] = set.claimed_at;
		values[P_CLAIMED_LEASE_UNTIL] = set.lease_until;
		if (set.n == 1 && query == DLSM_Q_SETTLE_CLAIMED_FINAL)
		{
			/* the common case, one row: its values as scalars */
			query = DLSM_Q_SETTLE_ONE_FINAL;
			values[P_CLAIMED_IDS] = Int64GetDatum(set.first.id);
			values[P_CLAIMED_PROCESS_IDS] = UUIDPGetDatum(&set.first.process_id);
			values[P_CLAIMED_FENCES] = Int64GetDatum(set.first.fence);
			values[P_CLAIMED_AT] = TimestampTzGetDatum(set.first.claimed_at);
			values[P_CLAIMED_LEASE_UNTIL] =
				TimestampTzGetDatum(set.first.lease_until);
		}
		settled += dlsm_plan_run(&queue->plans, query, values, nulls, 0);
		count_settled(queue, settle, pids, n, counts);
		dlsm_pending_written(&set);
	}
	if (!set.complete)
	{
		Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

		for (int i = 0; i < n; i++)
			d[i] = UUIDPGetDatum(&pids[i]);
		query = settle_params(queue, settle, false, values, nulls);
		values[P_SETTLE_PROCESS_IDS] =
			PointerGetDatum(construct_array(d, n, UUIDOID, UUID_LEN, false,
											TYPALIGN_CHAR));
		settled += dlsm_plan_run(&queue->plans, query, values, nulls, 0);
		count_settled(queue, settle, pids, n, counts);
	}
	if (settled > 0)
		dlsm_wake_queue_claimers_at_commit(queue->relid);
	return settled;
}

static void
report_lost(DlsmQueue *queue, pg_uuid_t *process_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("process id %s holds no request in progress in queue \"%s\"",
					DatumGetCString(DirectFunctionCall1(uuid_out,
														UUIDPGetDatum(process_id))),
					dlsm_rel_label(queue->relid)),
			 errhint("The claim was settled already, or it was lost: its lease expired and its requests were reaped or claimed again.")));
}

/*
 * dlsm_settle: settle every in-progress row of process_id; raises 55000
 * when it holds none (never claimed, settled already, or lost).
 */
int64
dlsm_state_settle(DlsmQueue *queue, pg_uuid_t *process_id, DlsmSettle *settle)
{
	int64		count = 0;

	if (settle_rows(queue, process_id, 1, settle, &count) == 0)
		report_lost(queue, process_id);
	return count;
}

/*
 * dlsm_settle_many: settle a batch; emit one (process id, settled) row per
 * given process id, in the given order, 0 for one that was lost.
 */
void
dlsm_state_settle_many(DlsmQueue *queue, ArrayType *process_ids,
					   DlsmSettle *settle, DlsmSettledEmit emit, void *arg)
{
	Datum	   *d;
	int			n;
	pg_uuid_t  *pids;
	int64	   *counts;

	deconstruct_array(process_ids, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR,
					  &d, NULL, &n);
	pids = palloc(sizeof(pg_uuid_t) * Max(n, 1));
	for (int i = 0; i < n; i++)
		pids[i] = *DatumGetUUIDP(d[i]);
	counts = palloc0(sizeof(int64) * Max(n, 1));
	(void) settle_rows(queue, pids, n, settle, counts);
	for (int i = 0; i < n; i++)
		emit(arg, &pids[i], counts[i]);
}

/* dlsm_heartbeat: extend the lease of process_id; 55000 when lost. */
TimestampTz
dlsm_state_heartbeat(DlsmQueue *queue, pg_uuid_t *process_id, int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[N_HEARTBEAT_PARAMS];
	bool		isnull;
	TimestampTz until;

	lease->time = lease_us;
	/* a claim of this transaction: write it, then extend it */
	dlsm_pending_write(queue, process_id, 1);
	values[P_HEARTBEAT_PROCESS_ID] = UUIDPGetDatum(process_id);
	values[P_HEARTBEAT_LEASE] = IntervalPGetDatum(lease);
	dlsm_plan_run(&queue->plans, DLSM_Q_HEARTBEAT, values, NULL, 0);
	if (SPI_processed == 0)
		report_lost(queue, process_id);
	until = DatumGetTimestampTz(dlsm_plan_one_value(A_HEARTBEAT_UNTIL, &isnull));
	return until;
}

/*
 * dlsm_reap: expired leases back to new, or to error when attempts are
 * spent; rows a live transaction holds are left alone.  Notifies the
 * queue's channel when work was released.  Returns the rows moved.
 */
int64
dlsm_state_reap(DlsmQueue *queue)
{
	Datum		values[N_REAP_PARAMS];
	int64		released = 0;
	int64		lowest = PG_INT64_MAX;
	int64		moved;

	values[P_REAP_MAX_ATTEMPTS] = Int32GetDatum(queue->max_attempts);
	dlsm_plan_run(&queue->plans, DLSM_Q_REAP, values, NULL, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		dlsm_wake_entity_changed_at_commit(queue->relid,
										   dlsm_plan_text(i, A_REAP_ENTITY));
		dlsm_limits_group_changed(queue, dlsm_plan_text(i, A_REAP_GROUP));
		if (!dlsm_plan_text_is(i, A_REAP_STATUS, "new"))
			continue;
		released++;
		lowest = Min(lowest, DatumGetInt64(dlsm_plan_value(i, A_REAP_ID,
														   &isnull)));
	}
	moved = (int64) SPI_processed;
	SPI_freetuptable(SPI_tuptable);
	if (released > 0)
	{
		dlsm_wake_rows_ready_at_commit(queue->relid, lowest);
		dlsm_wake_channel_at_commit(queue->channel);
		dlsm_wake_queue_claimers_at_commit(queue->relid);
	}
	return moved;
}

/*
 * The worker's retention pass: delete up to batch settled rows older than
 * the queue's retention; returns how many.
 */
int64
dlsm_state_purge(DlsmQueue *queue, int batch)
{
	Datum		values[N_PURGE_PARAMS];

	Assert(queue->has_retention);
	values[P_PURGE_RETENTION] = IntervalPGetDatum(&queue->retention);
	values[P_PURGE_BATCH] = Int32GetDatum(batch);
	dlsm_plan_run(&queue->plans, DLSM_Q_PURGE, values, NULL, 0);
	return (int64) SPI_processed;
}

/*
 * The queue's row of dlsm_queue_stats after its first column: values and
 * nulls indexed by A_STATS_* - 1, copied into the caller's memory.
 */
void
dlsm_state_stats(DlsmQueue *queue, Datum *values, bool *nulls)
{
	Datum		args[N_STATS_PARAMS];
	char		nulls_in[N_STATS_PARAMS];
	DlsmLimits *limits = dlsm_limits_get(queue);
	int			n = limits ? limits->ngroups : 0;
	Datum	   *groups = palloc(sizeof(Datum) * Max(n, 1));
	Datum	   *concurrency = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *no_concurrency = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	HeapTuple	tuple;

	/* limits of their own: a NULL concurrency is none for that group */
	for (int i = 0; i < n; i++)
	{
		groups[i] = CStringGetTextDatum(limits->groups[i]);
		concurrency[i] = Int32GetDatum(limits->limits[i].concurrency);
		no_concurrency[i] = limits->limits[i].concurrency == 0;
	}
	memset(nulls_in, ' ', sizeof(nulls_in));
	args[P_STATS_QUEUE] = ObjectIdGetDatum(queue->relid);
	args[P_STATS_CONCURRENCY] = Int32GetDatum(limits && limits->has_default ?
											  limits->dflt.concurrency : 0);
	nulls_in[P_STATS_CONCURRENCY] =
		limits && limits->has_default && limits->dflt.concurrency > 0 ? ' ' : 'n';
	args[P_STATS_GROUPS] = PointerGetDatum(construct_array(groups, n, TEXTOID,
														   -1, false,
														   TYPALIGN_INT));
	args[P_STATS_GROUP_CONCURRENCY] =
		PointerGetDatum(construct_md_array(concurrency, no_concurrency, 1,
										   dims, lbs, INT4OID, 4, true,
										   TYPALIGN_INT));
	args[P_STATS_WAIT_FOR_CREATE] =
		BoolGetDatum(queue->updates_wait_for_create);
	dlsm_plan_run(&queue->plans, DLSM_Q_STATS, args, nulls_in, 1);
	tuple = SPI_copytuple(SPI_tuptable->vals[0]);
	heap_deform_tuple(tuple, SPI_tuptable->tupdesc, values, nulls);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Run the insert of a create of entity into queue, whose unique index of
 * creates is creates_index: an entity's second create breaking it raises
 * dlsm's own 23505, not the index's, which shows dlsm's statement.  Only
 * strings are compared before the error is raised again: nothing runs in
 * the failed transaction.
 */
static void
insert_create(DlsmQueue *queue, DlsmQueryId query, const char *creates_index,
			  Datum *values, char *nulls)
{
	MemoryContext context = CurrentMemoryContext;
	char	   *entity = TextDatumGetCString(values[P_ENQUEUE_ENTITY]);
	char	   *relname = dlsm_rel_label(queue->relid);

	PG_TRY();
	{
		dlsm_plan_run(&queue->plans, query, values, nulls, 0);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION ||
			edata->constraint_name == NULL ||
			strcmp(edata->constraint_name, creates_index) != 0)
		{
			FreeErrorData(edata);
			PG_RE_THROW();
		}
		FreeErrorData(edata);
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("entity \"%s\" of queue \"%s\" has a create request already",
						entity, relname),
				 errdetail("An entity has one create request, whatever its state (unique index \"%s\").",
						   creates_index),
				 errhint("Enqueue an update of the entity, or another kind of request.")));
	}
	PG_END_TRY();
}

/*
 * Take the lock of request's dedup key, then look for the request of queue
 * that holds the key (new, in progress, or settled within the request's
 * window); true, with its id, when there is one.  When there is none, the
 * lock is kept until the transaction ends (the caller inserts); when there
 * is one, it is given back at once, unless the transaction held it before
 * (the row may be its own, not committed yet): a row found under a lock
 * taken now is committed, and the transaction adds nothing that a later
 * producer of the key would have to wait for.
 */
static bool
find_dedup(DlsmQueue *queue, DlsmRequest *request, int64 *id)
{
	Datum		values[N_DEDUP_LOOKUP_PARAMS];
	char		nulls[N_DEDUP_LOOKUP_PARAMS];
	char	   *key = TextDatumGetCString(request->dedup_key);
	bool		isnull;
	bool		found;
	bool		taken_now;
	DlsmDedupProbe probe;

	taken_now = dlsm_lock_dedup_key(queue->relid, key);
	memset(nulls, ' ', sizeof(nulls));
	values[P_DEDUP_LOOKUP_KEY] = request->dedup_key;
	values[P_DEDUP_LOOKUP_WINDOW] = request->dedup_window;
	nulls[P_DEDUP_LOOKUP_WINDOW] = request->has_dedup_window ? ' ' : 'n';
	/* the latest snapshot: REPEATABLE READ sees the lock's last holder too */
	probe = dlsm_dedup_probe(&queue->plans, request->dedup_key,
							 request->has_dedup_window,
							 request->dedup_window, id);
	if (probe != DLSM_DEDUP_UNUSABLE)
		found = probe == DLSM_DEDUP_HIT;
	else
	{
		found = dlsm_plan_run_latest(&queue->plans, DLSM_Q_DEDUP_LOOKUP,
									 values, nulls, 1) > 0;
		if (found)
			*id = DatumGetInt64(dlsm_plan_value(0, A_DEDUP_LOOKUP_ID,
												&isnull));
		SPI_freetuptable(SPI_tuptable);
	}
	if (found && taken_now)
		dlsm_lock_dedup_key_release(queue->relid, key);
	return found;
}

/*
 * Run the insert query of dlsm_state_enqueue, through insert_create when
 * creates_index is not NULL.  Its own function so that no local of the
 * caller changes between setjmp and longjmp.
 */
static void
run_enqueue(DlsmQueue *queue, DlsmQueryId query, const char *creates_index,
			Datum *values, char *nulls)
{
	/* its wake trigger leaves the floor to this call, which knows the id */
	dlsm_wake_enqueue_inserting(queue->relid, true);
	PG_TRY();
	{
		if (creates_index != NULL)
			insert_create(queue, query, creates_index, values, nulls);
		else
			dlsm_plan_run(&queue->plans, query, values, nulls, 0);
	}
	PG_FINALLY();
	{
		dlsm_wake_enqueue_inserting(queue->relid, false);
	}
	PG_END_TRY();
}

/*
 * dlsm_enqueue: insert one request; returns its id.  With a dedup key
 * (the queue has a dedup column: the caller checked), the key is looked
 * up first: when a request holds it, nothing is inserted, its id is
 * returned and *deduplicated is set.  So an entity's second create with
 * the key of its first returns the first's id, not 23505.
 */
int64
dlsm_state_enqueue(DlsmQueue *queue, DlsmRequest *request, bool *deduplicated)
{
	Datum		values[N_ENQUEUE_DEDUP_PARAMS];
	char		nulls[N_ENQUEUE_DEDUP_PARAMS];
	DlsmQueryId query = DLSM_Q_ENQUEUE;
	bool		isnull;
	int64		id;
	const char *creates_index = NULL;

	*deduplicated = false;
	if (request->has_dedup_key)
	{
		Assert(queue->plans.names.dedup != NULL);
		if (find_dedup(queue, request, &id))
		{
			*deduplicated = true;
			return id;
		}
		query = DLSM_Q_ENQUEUE_DEDUP;
		values[P_ENQUEUE_DEDUP_KEY] = request->dedup_key;
	}
	memset(nulls, ' ', sizeof(nulls));
	values[P_ENQUEUE_ENTITY] = request->entity;
	values[P_ENQUEUE_KIND] = request->kind;
	values[P_ENQUEUE_PAYLOAD] = request->payload;
	nulls[P_ENQUEUE_PAYLOAD] = request->has_payload ? ' ' : 'n';
	values[P_ENQUEUE_RUN_AT] = request->run_at;
	nulls[P_ENQUEUE_RUN_AT] = request->has_run_at ? ' ' : 'n';
	values[P_ENQUEUE_GROUP] = request->group_key;
	nulls[P_ENQUEUE_GROUP] = request->has_group_key ? ' ' : 'n';
	if (strcmp(TextDatumGetCString(request->kind), "create") == 0)
		creates_index = dlsm_queue_creates_index(queue);
	run_enqueue(queue, query, creates_index, values, nulls);
	id = DatumGetInt64(dlsm_plan_value(0, A_ENQUEUE_ID, &isnull));
	SPI_freetuptable(SPI_tuptable);
	/* rows from id up may be ready: not every row of the queue */
	dlsm_wake_rows_ready_at_commit(queue->relid, id);
	return id;
}

/*
 * Rows were inserted into queue (the wake trigger): notify its channel,
 * wake waiting claims and, for a handler queue, the worker, all when the
 * transaction commits.
 */
void
dlsm_state_enqueued(DlsmQueue *queue)
{
	/* rows a statement inserted, with ids unknown here, but dlsm_enqueue's */
	if (!dlsm_wake_is_enqueue_insert(queue->relid))
		dlsm_wake_rows_ready_at_commit(queue->relid, PG_INT64_MIN);
	dlsm_wake_channel_at_commit(queue->channel);
	dlsm_wake_queue_claimers_at_commit(queue->relid);
	if (queue->handler != NULL)
		dlsm_wake_worker_at_commit();
}
