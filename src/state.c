/*-------------------------------------------------------------------------
 *
 * state.c
 *	  The claim/settle state machine of a queue's requests.
 *
 * States and the moves allowed out of each (every move is one
 * compare-and-set statement in plans.c naming the rows and the state it
 * expects them in):
 *
 *	new			-> in-progress	claim (dlsm_claim, dlsm_group_updates)
 *				-> error		its entity's create failed (updates only)
 *	in-progress	-> complete		settle 'complete' by the claimant
 *				-> error		settle 'error', or retries spent
 *				-> new			settle 'retry', lease expired (reap),
 *								or the claiming transaction rolled back
 *	complete, error				terminal: nothing moves them
 *
 * Only the current claimant, named by its process id, settles or extends
 * a claim; a claim that was reaped or re-claimed is lost and its settle
 * raises 55000.
 *
 * A claim walks the ready rows in id order from the caller's line in the
 * sand, passing over, within the call, the entities it cannot take: one
 * held by another claim (the entity lock of locks.c is busy), one with a
 * request in progress or an older open request, and an update whose create
 * is not complete.  At most one unit per entity is in progress at any time.
 *
 * Waiting claims sleep on the condition variable of shmem.c and are woken,
 * after the locks are released, by the end of any transaction that made
 * work claimable: an enqueue, a settle, a reap, or a claim rolled back.
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
#include "commands/async.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "miscadmin.h"

#include "dlsm.h"

/*
 * Candidates read per scan; must match the LIMITs of DLSM_Q_SCAN and
 * DLSM_Q_SCAN_WIDE.  A pass scans wide when it claims many units, or once
 * a scan claimed nothing (rows waiting behind a busy entity).
 */
#define SCAN_BATCH 16
#define SCAN_WIDE 128

/* A waiting claim looks again at least this often, for delayed rows. */
#define WAIT_RECHECK_MS 1000

/* What the transaction did that may make work claimable when it ends. */
static bool wake_at_commit = false; /* enqueued, settled or reaped */
static bool wake_at_abort = false;	/* claimed: rollback frees rows */
static bool wake_worker = false;	/* enqueued into a queue with a handler */
static bool wake_launcher = false;	/* the extension was created */

typedef struct Candidate
{
	int64		id;
	char	   *kind;
	char	   *entity;
} Candidate;

typedef enum CandidateResult
{
	CANDIDATE_CLAIMED,			/* a unit was claimed and emitted */
	CANDIDATE_SKIPPED			/* its entity cannot be claimed now */
} CandidateResult;

/*
 * Wake waiting claimers once a transaction that changed claimable work has
 * ended, after its locks are gone (a commit callback would run before the
 * entity locks are released, and the woken claimer would find them busy).
 */
static void
release_callback(ResourceReleasePhase phase, bool isCommit, bool isTopLevel,
				 void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	if (isCommit ? wake_at_commit : (wake_at_commit || wake_at_abort))
		dlsm_shmem_wake_all();
	if (isCommit && wake_worker)
		dlsm_shmem_wake_worker(MyDatabaseId);
	if (isCommit && wake_launcher)
		dlsm_shmem_wake_launcher();
	wake_at_commit = false;
	wake_at_abort = false;
	wake_worker = false;
	wake_launcher = false;
}

/* Register the transaction-end hook; called once from _PG_init. */
void
dlsm_state_init(void)
{
	RegisterResourceReleaseCallback(release_callback, NULL);
}

/* Wake waiting claimers when this transaction commits. */
void
dlsm_state_wake_at_commit(void)
{
	wake_at_commit = true;
}

/* Wake the launcher when this transaction commits (CREATE EXTENSION). */
void
dlsm_state_wake_launcher_at_commit(void)
{
	wake_launcher = true;
}

/* Wake this database's worker (to run handlers) when this transaction commits. */
void
dlsm_state_wake_worker_at_commit(void)
{
	wake_worker = true;
}

const char *
dlsm_outcome_name(DlsmOutcome outcome)
{
	switch (outcome)
	{
		case DLSM_OUTCOME_COMPLETE:
			return "complete";
		case DLSM_OUTCOME_ERROR:
			return "error";
		case DLSM_OUTCOME_RETRY:
			return "retry";
	}
	return NULL;				/* keep compiler quiet */
}

static bool
get_bool(int row, int col, bool *isnull)
{
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[row],
									  SPI_tuptable->tupdesc, col, isnull));
}

typedef struct ClaimedRow
{
	int64		id;
	HeapTuple	tuple;
} ClaimedRow;

static int
claimed_row_cmp(const void *a, const void *b)
{
	int64		x = ((const ClaimedRow *) a)->id;
	int64		y = ((const ClaimedRow *) b)->id;

	return (x > y) - (x < y);
}

/* Hand the rows of the last claim statement to the caller, oldest first. */
static void
emit_rows_in_order(DlsmClaimEmit emit, void *arg)
{
	ClaimedRow *rows = palloc(sizeof(ClaimedRow) * SPI_processed);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		rows[i].tuple = SPI_tuptable->vals[i];
		rows[i].id = DatumGetInt64(SPI_getbinval(rows[i].tuple,
												 SPI_tuptable->tupdesc, 1,
												 &isnull));
	}
	qsort(rows, SPI_processed, sizeof(ClaimedRow), claimed_row_cmp);
	for (uint64 i = 0; i < SPI_processed; i++)
		emit(arg, rows[i].tuple, SPI_tuptable->tupdesc);
	pfree(rows);
}

/*
 * A candidate update was not claimable: if that is because its entity's
 * create ended in error, settle the entity's pending updates as error.
 */
static void
fail_updates_of_failed_create(DlsmQueue *queue, Candidate *c)
{
	Datum		values[2];
	bool		isnull;
	bool		failed;
	char	   *create_status;
	char	   *detail = NULL;

	values[0] = CStringGetTextDatum(c->entity);
	values[1] = Int64GetDatum(c->id);
	if (dlsm_plan_execute(queue, DLSM_Q_ENTITY_STATE, values, NULL, 1) !=
		SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "unexpected result from the entity state query");
	create_status = SPI_getvalue(SPI_tuptable->vals[0],
								 SPI_tuptable->tupdesc, 1);
	failed = !get_bool(0, 3, &isnull) && create_status != NULL &&
		strcmp(create_status, "error") == 0;
	if (failed)
		detail = psprintf("create request %s of entity \"%s\" ended in error",
						  SPI_getvalue(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 2),
						  c->entity);
	SPI_freetuptable(SPI_tuptable);
	if (!failed)
		return;

	values[1] = CStringGetTextDatum(detail);
	if (dlsm_plan_execute(queue, DLSM_Q_FAIL_UPDATES, values, NULL, 0) !=
		SPI_OK_UPDATE)
		elog(ERROR, "unexpected result from failing updates");
	SPI_freetuptable(SPI_tuptable);
}

/*
 * Try to claim the group of updates that starts at candidate c.  The claim
 * statement
 * runs after the entity lock is granted, with a fresh snapshot, so it sees
 * every claim of the entity that committed before.  On success the lock
 * stays held until the transaction ends; otherwise it is released.
 */
static CandidateResult
try_candidate(DlsmClaimArgs *args, Candidate *c, Datum lease,
			  DlsmClaimEmit emit, void *arg)
{
	DlsmQueue  *queue = args->queue;
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int			rc;

	if (!dlsm_lock_entity_try(queue->relid, c->entity))
		return CANDIDATE_SKIPPED;

	values[0] = Int64GetDatum(c->id);
	values[1] = args->process_id ? UUIDPGetDatum(args->process_id) : (Datum) 0;
	nulls[1] = args->process_id ? ' ' : 'n';
	values[2] = lease;
	values[3] = CStringGetTextDatum(c->entity);
	rc = dlsm_plan_execute(queue, DLSM_Q_CLAIM_GROUP, values, nulls, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from a claim: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed > 0)
	{
		wake_at_abort = true;
		emit_rows_in_order(emit, arg);
		SPI_freetuptable(SPI_tuptable);
		return CANDIDATE_CLAIMED;
	}
	SPI_freetuptable(SPI_tuptable);

	/* busy, waiting for its create, or taken by a client locking by hand */
	fail_updates_of_failed_create(queue, c);
	dlsm_lock_entity_release(queue->relid, c->entity);
	return CANDIDATE_SKIPPED;
}

/* A set of entities already passed over in this call, by 64-bit hash. */
static bool
seen_entity(HTAB *seen, const char *entity, bool add)
{
	uint64		key = hash_bytes_extended((const unsigned char *) entity,
										  strlen(entity), 0);

	return hash_search(seen, &key, add ? HASH_ENTER : HASH_FIND, NULL) != NULL;
}

/*
 * Claim, in one statement, the single-request units starting at the n
 * candidates whose entity locks are held; release the locks of those that
 * turned out not claimable.  Returns the units claimed.
 */
static int
claim_singles(DlsmClaimArgs *args, Candidate **cands, int n, Datum lease,
			  DlsmClaimEmit emit, void *arg)
{
	DlsmQueue  *queue = args->queue;
	Datum	   *ids;
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	int			rc;
	uint64		claimed;

	if (n == 0)
		return 0;
	ids = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
		ids[i] = Int64GetDatum(cands[i]->id);
	values[0] = PointerGetDatum(construct_array(ids, n, INT8OID, 8,
												FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	values[1] = args->process_id ? UUIDPGetDatum(args->process_id) : (Datum) 0;
	nulls[1] = args->process_id ? ' ' : 'n';
	values[2] = lease;
	rc = dlsm_plan_execute(queue, DLSM_Q_CLAIM_MANY, values, nulls, 0);
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from a claim: %s",
			 SPI_result_code_string(rc));
	claimed = SPI_processed;
	if (claimed > 0)
	{
		wake_at_abort = true;
		emit_rows_in_order(emit, arg);
	}

	/* busy, or taken by a client locking by hand: give the entity back */
	for (int i = 0; i < n; i++)
	{
		bool		found = false;

		for (uint64 r = 0; r < claimed && !found; r++)
		{
			bool		isnull;

			found = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[r],
												SPI_tuptable->tupdesc, 1,
												&isnull)) == cands[i]->id;
		}
		if (!found)
			dlsm_lock_entity_release(queue->relid, cands[i]->entity);
	}
	SPI_freetuptable(SPI_tuptable);
	return (int) claimed;
}

/*
 * One walk over the ready rows from the line in the sand; returns the
 * number of units claimed.  Single-request units are claimed together, one
 * statement for the candidates of each scan; an update and its group are
 * claimed on their own.
 */
static int
claim_pass(DlsmClaimArgs *args, Datum lease, DlsmClaimEmit emit, void *arg,
		   MemoryContext pass_context)
{
	int64		line = args->after;
	int			units = 0;
	bool		wide = args->units > SCAN_BATCH;
	HTAB	   *seen;
	HASHCTL		ctl;
	MemoryContext oldcontext;

	oldcontext = MemoryContextSwitchTo(pass_context);
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(uint64);
	ctl.hcxt = pass_context;
	seen = hash_create("dlsm claim entities", 64, &ctl,
					   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);

	for (;;)
	{
		Datum		values[1] = {Int64GetDatum(line)};
		Candidate	batch[SCAN_WIDE];
		Candidate  *singles[SCAN_WIDE];
		int			nsingles = 0;
		int			limit = wide ? SCAN_WIDE : SCAN_BATCH;
		int			before = units;
		int			n;

		if (dlsm_plan_execute(args->queue,
							  wide ? DLSM_Q_SCAN_WIDE : DLSM_Q_SCAN,
							  values, NULL, 0) != SPI_OK_SELECT)
			elog(ERROR, "unexpected result from the candidate scan");
		n = (int) SPI_processed;
		for (int i = 0; i < n; i++)
		{
			bool		isnull;

			batch[i].id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
													  SPI_tuptable->tupdesc,
													  1, &isnull));
			batch[i].kind = SPI_getvalue(SPI_tuptable->vals[i],
										 SPI_tuptable->tupdesc, 2);
			batch[i].entity = SPI_getvalue(SPI_tuptable->vals[i],
										   SPI_tuptable->tupdesc, 3);
		}
		SPI_freetuptable(SPI_tuptable);

		for (int i = 0; i < n && units + nsingles < args->units; i++)
		{
			line = batch[i].id;
			if (seen_entity(seen, batch[i].entity, false))
				continue;
			/* claimed or not, an entity is looked at once per pass */
			seen_entity(seen, batch[i].entity, true);
			if (strcmp(batch[i].kind, "update") != 0)
			{
				if (dlsm_lock_entity_try(args->queue->relid, batch[i].entity))
					singles[nsingles++] = &batch[i];
				continue;
			}
			/* an older single goes first: claim those gathered so far */
			units += claim_singles(args, singles, nsingles, lease, emit, arg);
			nsingles = 0;
			if (units < args->units &&
				try_candidate(args, &batch[i], lease, emit, arg) ==
				CANDIDATE_CLAIMED)
				units++;
		}
		units += claim_singles(args, singles, nsingles, lease, emit, arg);
		if (units >= args->units || n < limit)
			break;
		if (units == before)
			wide = true;
	}
	MemoryContextSwitchTo(oldcontext);
	MemoryContextReset(pass_context);
	return units;
}

/*
 * dlsm_claim: claim up to args->units units, waiting up to args->wait_us
 * for work when there is none.  Each claimed row is passed to emit.
 * Returns the number of units.  The caller holds an SPI connection.
 */
int
dlsm_state_claim(DlsmClaimArgs *args, DlsmClaimEmit emit, void *arg)
{
	Interval   *lease = palloc0(sizeof(Interval));
	MemoryContext pass_context;
	TimestampTz deadline = 0;
	bool		waiting = args->wait_us != 0;
	int			units;

	lease->time = args->lease_us;
	pass_context = AllocSetContextCreate(CurrentMemoryContext,
										 "dlsm claim pass",
										 ALLOCSET_DEFAULT_SIZES);
	if (waiting)
	{
		if (args->wait_us > 0)
			deadline = GetCurrentTimestamp() + args->wait_us;
		dlsm_shmem_prepare_wait();
	}

	for (;;)
	{
		long		timeout = WAIT_RECHECK_MS;

		units = claim_pass(args, IntervalPGetDatum(lease), emit, arg,
						   pass_context);
		if (units > 0 || !waiting)
			break;
		if (args->wait_us > 0)
		{
			long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
															   deadline);

			if (left <= 0)
				break;
			timeout = Min(timeout, left);
		}
		dlsm_shmem_wait(timeout);
	}

	if (waiting)
		dlsm_shmem_cancel_wait();
	MemoryContextDelete(pass_context);
	return units;
}

/*
 * dlsm_group_updates: move the entity's open updates to in-progress under
 * process_id.  Raises 55P03 and changes nothing when another transaction
 * or process holds the entity or one of the rows.
 */
int64
dlsm_state_group(DlsmQueue *queue, const char *entity, pg_uuid_t *process_id,
				 int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[3];
	char	   *busy;

	if (!dlsm_lock_entity_try(queue->relid, entity))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("entity \"%s\" of queue \"%s\" is busy",
						entity, get_rel_name(queue->relid)),
				 errdetail("Another transaction is claiming requests of this entity.")));

	values[0] = CStringGetTextDatum(entity);
	values[1] = UUIDPGetDatum(process_id);
	if (dlsm_plan_execute(queue, DLSM_Q_GROUP_BUSY, values, NULL, 1) !=
		SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "unexpected result from the group check");
	busy = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (busy != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("entity \"%s\" of queue \"%s\" is busy",
						entity, get_rel_name(queue->relid)),
				 errdetail_internal("%s", busy)));

	lease->time = lease_us;
	values[2] = IntervalPGetDatum(lease);
	if (dlsm_plan_execute(queue, DLSM_Q_GROUP, values, NULL, 0) !=
		SPI_OK_UPDATE)
		elog(ERROR, "unexpected result from grouping updates");
	wake_at_abort = true;
	return (int64) SPI_processed;
}

/*
 * Settle the in-progress rows of the given process ids (a uuid[]); rows
 * of the last statement are left in SPI_tuptable, one per settled row,
 * with the process id in column 1.
 */
static uint64
settle_rows(DlsmQueue *queue, Datum process_ids, DlsmOutcome outcome,
			const char *detail, Interval *retry_after)
{
	Datum		values[4];
	char		nulls[4] = {' ', ' ', ' ', ' '};
	int			rc;

	values[0] = process_ids;
	if (outcome == DLSM_OUTCOME_RETRY)
	{
		values[1] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
		nulls[1] = detail ? ' ' : 'n';
		values[2] = retry_after ? IntervalPGetDatum(retry_after) : (Datum) 0;
		nulls[2] = retry_after ? ' ' : 'n';
		values[3] = Int32GetDatum(queue->max_attempts);
		rc = dlsm_plan_execute(queue, DLSM_Q_SETTLE_RETRY, values, nulls, 0);
	}
	else
	{
		values[1] = CStringGetTextDatum(dlsm_outcome_name(outcome));
		values[2] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
		nulls[2] = detail ? ' ' : 'n';
		rc = dlsm_plan_execute(queue, DLSM_Q_SETTLE_FINAL, values, nulls, 0);
	}
	if (rc != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from a settle: %s",
			 SPI_result_code_string(rc));
	if (SPI_processed > 0)
		wake_at_commit = true;
	return SPI_processed;
}

static ArrayType *
one_uuid_array(pg_uuid_t *process_id)
{
	Datum		d = UUIDPGetDatum(process_id);

	return construct_array(&d, 1, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
}

static void
report_lost(DlsmQueue *queue, pg_uuid_t *process_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("process id %s holds no request in progress in queue \"%s\"",
					DatumGetCString(DirectFunctionCall1(uuid_out,
														UUIDPGetDatum(process_id))),
					get_rel_name(queue->relid)),
			 errhint("The claim was settled already, or it was lost: its lease expired and its requests were reaped or claimed again.")));
}

/*
 * dlsm_settle: settle every in-progress row of process_id; raises 55000
 * when it holds none (never claimed, settled already, or lost).
 */
int64
dlsm_state_settle(DlsmQueue *queue, pg_uuid_t *process_id,
				  DlsmOutcome outcome, const char *detail,
				  Interval *retry_after)
{
	uint64		n;

	n = settle_rows(queue, PointerGetDatum(one_uuid_array(process_id)),
					outcome, detail, retry_after);
	if (n == 0)
		report_lost(queue, process_id);
	return (int64) n;
}

/*
 * dlsm_settle_many: settle a batch; emit one (process id, settled) row per
 * given process id, in the given order, 0 for one that was lost.
 */
void
dlsm_state_settle_many(DlsmQueue *queue, ArrayType *process_ids,
					   DlsmOutcome outcome, const char *detail,
					   Interval *retry_after, DlsmSettledEmit emit, void *arg)
{
	Datum	   *pids;
	int			npids;
	int64	   *counts;
	uint64		n;

	deconstruct_array(process_ids, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR,
					  &pids, NULL, &npids);
	counts = palloc0(sizeof(int64) * Max(npids, 1));

	n = settle_rows(queue, PointerGetDatum(process_ids), outcome, detail,
					retry_after);
	for (uint64 r = 0; r < n; r++)
	{
		bool		isnull;
		pg_uuid_t  *pid = DatumGetUUIDP(SPI_getbinval(SPI_tuptable->vals[r],
													  SPI_tuptable->tupdesc,
													  1, &isnull));

		/* a process id given twice gets its count twice */
		for (int i = 0; i < npids; i++)
		{
			if (memcmp(DatumGetUUIDP(pids[i]), pid, UUID_LEN) == 0)
				counts[i]++;
		}
	}
	for (int i = 0; i < npids; i++)
		emit(arg, DatumGetUUIDP(pids[i]), counts[i]);
}

/* dlsm_heartbeat: extend the lease of process_id; 55000 when lost. */
TimestampTz
dlsm_state_heartbeat(DlsmQueue *queue, pg_uuid_t *process_id, int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[2];
	bool		isnull;

	lease->time = lease_us;
	values[0] = UUIDPGetDatum(process_id);
	values[1] = IntervalPGetDatum(lease);
	if (dlsm_plan_execute(queue, DLSM_Q_HEARTBEAT, values, NULL, 0) !=
		SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from a heartbeat");
	if (SPI_processed == 0)
		report_lost(queue, process_id);
	return DatumGetTimestampTz(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1,
											 &isnull));
}

/*
 * dlsm_reap: expired leases back to new, or to error when attempts are
 * spent; rows a live transaction holds are left alone.  Notifies the
 * queue's channel when work was released.  Returns the rows moved.
 */
int64
dlsm_state_reap(DlsmQueue *queue)
{
	Datum		values[1] = {Int32GetDatum(queue->max_attempts)};
	int64		released = 0;

	if (dlsm_plan_execute(queue, DLSM_Q_REAP, values, NULL, 0) !=
		SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "unexpected result from the reaper");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *status = SPI_getvalue(SPI_tuptable->vals[i],
										  SPI_tuptable->tupdesc, 1);

		if (strcmp(status, "new") == 0)
			released++;
	}
	if (released > 0)
	{
		dlsm_notify_queue(queue->channel);
		wake_at_commit = true;
	}
	return (int64) SPI_processed;
}

/*
 * The worker's retention pass: delete up to batch settled rows older than
 * the queue's retention; returns how many.
 */
int64
dlsm_state_purge(DlsmQueue *queue, int batch)
{
	Datum		values[2];

	Assert(queue->has_retention);
	values[0] = IntervalPGetDatum(&queue->retention);
	values[1] = Int32GetDatum(batch);
	if (dlsm_plan_execute(queue, DLSM_Q_PURGE, values, NULL, 0) !=
		SPI_OK_DELETE)
		elog(ERROR, "unexpected result from the retention pass");
	return (int64) SPI_processed;
}

/*
 * The queue's row of dlsm_queue_stats, after its first column: twelve
 * values (DLSM_STATS_COLUMNS less one), copied into the caller's memory.
 */
void
dlsm_state_stats(DlsmQueue *queue, Datum *values, bool *nulls)
{
	Datum		arg = ObjectIdGetDatum(queue->relid);
	HeapTuple	tuple;

	if (dlsm_plan_execute(queue, DLSM_Q_STATS, &arg, NULL, 1) !=
		SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "unexpected result from the queue statistics");
	tuple = SPI_copytuple(SPI_tuptable->vals[0]);
	heap_deform_tuple(tuple, SPI_tuptable->tupdesc, values, nulls);
	SPI_freetuptable(SPI_tuptable);
}

/* dlsm_enqueue: insert one request; returns its id. */
int64
dlsm_state_enqueue(DlsmQueue *queue, Datum entity, Datum kind,
				   Datum payload, bool payload_null,
				   Datum run_at, bool run_at_null)
{
	Datum		values[4] = {entity, kind, payload, run_at};
	char		nulls[4] = {' ', ' ', payload_null ? 'n' : ' ',
	run_at_null ? 'n' : ' '};
	bool		isnull;

	if (dlsm_plan_execute(queue, DLSM_Q_ENQUEUE, values, nulls, 0) !=
		SPI_OK_INSERT_RETURNING || SPI_processed != 1)
		elog(ERROR, "unexpected result from an enqueue");
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
									   SPI_tuptable->tupdesc, 1, &isnull));
}
