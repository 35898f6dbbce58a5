/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  Claiming units of work: the article's algorithm in one call.
 *
 * A claim walks the ready rows in id order from the caller's line in the
 * sand, passing over, within the call, the entities it cannot take: one
 * held by another claim (the entity lock of locks.c is busy), one with a
 * request in progress or an older open request, and an update whose create
 * is not complete.  At most one unit per entity is in progress at any time.
 * A create never waits behind its own entity's updates: an update enqueued
 * before its create waits for the create instead, so the walk passes over
 * such updates and still looks at the entity's create.
 *
 * Single-request units (every kind but update) found in one scan are
 * claimed together, in one statement; an update is claimed with the
 * entity's ready updates after it, up to its next request of another kind,
 * as one unit under one process id.  Every claim statement runs after the
 * entity locks were granted, with a fresh snapshot, so it sees every claim
 * of the entity that committed before; it is a compare-and-set naming the
 * rows and the state ('new') it expects.
 *
 * A claim with a wait sleeps on the condition variable of shmem.c and is
 * woken, after their locks are released, by the end of any transaction
 * that made work claimable (wake.c).
 *
 * Calls plans.c, queue.c, locks.c, fence.c, wake.c and shmem.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/claim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "claim.h"
#include "fence.h"
#include "guc.h"
#include "locks.h"
#include "shmem.h"
#include "wake.h"

/*
 * Candidates read per scan.  A pass reads SCAN_WIDE at a time when it
 * claims many units, or once a scan claimed nothing (rows waiting behind a
 * busy entity).
 */
#define SCAN_BATCH 16
#define SCAN_WIDE 128

/* A waiting claim looks again at least this often, for delayed rows. */
#define WAIT_RECHECK_MS 1000

typedef struct Candidate
{
	int64		id;
	char	   *kind;
	char	   *entity;
} Candidate;

/* What a pass knows of an entity it looked at. */
typedef enum EntityState
{
	ENTITY_UNSEEN,				/* not looked at yet */
	ENTITY_DONE,				/* claimed, or busy: pass over its requests */
	ENTITY_WAITS_FOR_CREATE		/* its updates wait: only its create may go */
} EntityState;

typedef struct SeenEntity
{
	uint64		key;			/* hash of the entity */
	EntityState state;
} SeenEntity;

/* One walk over the ready rows. */
typedef struct ClaimPass
{
	DlsmClaimArgs *args;
	Datum		lease;			/* the lease as an interval */
	DlsmClaimEmit emit;
	void	   *arg;
	HTAB	   *seen;			/* SeenEntity by hash of the entity */
	int			units;			/* claimed so far */
	Candidate  *singles[SCAN_WIDE]; /* entity locked, to claim together */
	int			nsingles;
} ClaimPass;

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
		rows[i].id = DatumGetInt64(dlsm_plan_value(i, A_CLAIM_ID, &isnull));
	}
	qsort(rows, SPI_processed, sizeof(ClaimedRow), claimed_row_cmp);
	for (uint64 i = 0; i < SPI_processed; i++)
		emit(arg, rows[i].tuple, SPI_tuptable->tupdesc);
	pfree(rows);
}

/* Fill the parameters the claim statements share. */
static void
claim_params(ClaimPass *pass, Datum *values, char *nulls)
{
	pg_uuid_t  *pid = pass->args->process_id;

	values[P_CLAIM_PROCESS_ID] = pid ? UUIDPGetDatum(pid) : (Datum) 0;
	nulls[P_CLAIM_PROCESS_ID] = pid ? ' ' : 'n';
	values[P_CLAIM_LEASE] = pass->lease;
	values[P_CLAIM_NODE] = Int32GetDatum(dlsm_node_id);
}

/* Run a claim statement and emit what it claimed; returns how many rows. */
static uint64
run_claim(ClaimPass *pass, DlsmQueryId query, Datum *values, char *nulls)
{
	if (dlsm_plan_run(&pass->args->queue->plans, query, values, nulls, 0) > 0)
	{
		dlsm_wake_claimers_at_end();	/* a rollback frees the rows */
		emit_rows_in_order(pass->emit, pass->arg);
	}
	return SPI_processed;
}

/*
 * An update of entity c was not claimable: when its entity's create ended
 * in error, settle the entity's pending updates as error.  Returns what
 * the rest of the pass may take of the entity: its create, when that is
 * still to come (new, not in progress); anything, when its updates were
 * just settled as error; nothing otherwise.
 */
static EntityState
check_create(DlsmQueue *queue, Candidate *c)
{
	Datum		values[N_ENTITY_STATE_PARAMS];
	bool		isnull;
	bool		blocked;
	char	   *status;
	char	   *detail = NULL;

	values[P_ENTITY_STATE_ENTITY] = CStringGetTextDatum(c->entity);
	values[P_ENTITY_STATE_ID] = Int64GetDatum(c->id);
	dlsm_plan_run(&queue->plans, DLSM_Q_ENTITY_STATE, values, NULL, 1);
	status = dlsm_plan_text(0, A_ENTITY_STATE_CREATE_STATUS);
	blocked = DatumGetBool(dlsm_plan_value(0, A_ENTITY_STATE_BLOCKED, &isnull));
	if (!blocked && status != NULL && strcmp(status, "error") == 0)
		detail = psprintf("create request %s of entity \"%s\" ended in error",
						  dlsm_plan_text(0, A_ENTITY_STATE_CREATE_ID),
						  c->entity);
	SPI_freetuptable(SPI_tuptable);
	if (detail != NULL)
	{
		values[P_FAIL_UPDATES_ENTITY] = CStringGetTextDatum(c->entity);
		values[P_FAIL_UPDATES_DETAIL] = CStringGetTextDatum(detail);
		dlsm_plan_run(&queue->plans, DLSM_Q_FAIL_UPDATES, values, NULL, 0);
		return ENTITY_UNSEEN;
	}
	return (status != NULL && strcmp(status, "new") == 0) ?
		ENTITY_WAITS_FOR_CREATE : ENTITY_DONE;
}

/*
 * Try to claim the group of updates that starts at candidate c.  On
 * success the entity lock stays held until the transaction ends; otherwise
 * it is released.  Returns the entity's state for the rest of the pass.
 */
static EntityState
try_group(ClaimPass *pass, Candidate *c)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_CLAIM_GROUP_PARAMS];
	char		nulls[N_CLAIM_GROUP_PARAMS];
	EntityState state;

	if (!dlsm_lock_entity_try(queue->relid, c->entity))
		return ENTITY_DONE;
	memset(nulls, ' ', sizeof(nulls));
	claim_params(pass, values, nulls);
	values[P_CLAIM_FIRST] = Int64GetDatum(c->id);
	values[P_CLAIM_ENTITY] = CStringGetTextDatum(c->entity);
	if (run_claim(pass, DLSM_Q_CLAIM_GROUP, values, nulls) > 0)
	{
		SPI_freetuptable(SPI_tuptable);
		pass->units++;
		return ENTITY_DONE;
	}
	SPI_freetuptable(SPI_tuptable);

	/* busy, waiting for its create, or taken by a client locking by hand */
	state = check_create(queue, c);
	dlsm_lock_entity_release(queue->relid, c->entity);
	return state;
}

/*
 * Claim, in one statement, the single-request units gathered so far, whose
 * entity locks are held; release the locks of those that turned out not
 * claimable.
 */
static void
claim_singles(ClaimPass *pass)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_CLAIM_SINGLES_PARAMS];
	char		nulls[N_CLAIM_SINGLES_PARAMS];
	Datum	   *ids;
	uint64		claimed;

	if (pass->nsingles == 0)
		return;
	ids = palloc(sizeof(Datum) * pass->nsingles);
	for (int i = 0; i < pass->nsingles; i++)
		ids[i] = Int64GetDatum(pass->singles[i]->id);
	memset(nulls, ' ', sizeof(nulls));
	claim_params(pass, values, nulls);
	values[P_CLAIM_FIRST] = PointerGetDatum(construct_array(ids, pass->nsingles,
															INT8OID, 8,
															FLOAT8PASSBYVAL,
															TYPALIGN_DOUBLE));
	claimed = run_claim(pass, DLSM_Q_CLAIM_SINGLES, values, nulls);

	/* busy, or taken by a client locking by hand: give the entity back */
	for (int i = 0; i < pass->nsingles; i++)
	{
		bool		found = false;

		for (uint64 r = 0; r < claimed && !found; r++)
		{
			bool		isnull;

			found = DatumGetInt64(dlsm_plan_value(r, A_CLAIM_ID, &isnull)) ==
				pass->singles[i]->id;
		}
		if (!found)
			dlsm_lock_entity_release(queue->relid, pass->singles[i]->entity);
	}
	SPI_freetuptable(SPI_tuptable);
	pass->units += (int) claimed;
	pass->nsingles = 0;
}

/* The pass's record of an entity. */
static SeenEntity *
seen_entity(ClaimPass *pass, const char *entity)
{
	uint64		key = hash_bytes_extended((const unsigned char *) entity,
										  strlen(entity), 0);
	bool		found;
	SeenEntity *seen = hash_search(pass->seen, &key, HASH_ENTER, &found);

	if (!found)
		seen->state = ENTITY_UNSEEN;
	return seen;
}

/* Look at one candidate of a scan. */
static void
look_at(ClaimPass *pass, Candidate *c)
{
	SeenEntity *seen = seen_entity(pass, c->entity);
	bool		is_update = strcmp(c->kind, "update") == 0;

	if (seen->state == ENTITY_DONE ||
		(seen->state == ENTITY_WAITS_FOR_CREATE &&
		 strcmp(c->kind, "create") != 0))
		return;
	if (!is_update)
	{
		/* claimed or not, an entity is looked at once per pass */
		seen->state = ENTITY_DONE;
		if (dlsm_lock_entity_try(pass->args->queue->relid, c->entity))
			pass->singles[pass->nsingles++] = c;
		return;
	}
	/* an older single goes first: claim those gathered so far */
	claim_singles(pass);
	if (pass->units < pass->args->units)
		seen->state = try_group(pass, c);
}

/* Read up to limit candidates after line into batch; returns how many. */
static int
scan(ClaimPass *pass, int64 line, int limit, Candidate *batch)
{
	Datum		values[N_SCAN_PARAMS];
	int			n;

	values[P_SCAN_AFTER] = Int64GetDatum(line);
	values[P_SCAN_LIMIT] = Int64GetDatum(limit);
	dlsm_plan_run(&pass->args->queue->plans, DLSM_Q_SCAN, values, NULL, 0);
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		batch[i].id = DatumGetInt64(dlsm_plan_value(i, A_SCAN_ID, &isnull));
		batch[i].kind = dlsm_plan_text(i, A_SCAN_KIND);
		batch[i].entity = dlsm_plan_text(i, A_SCAN_ENTITY);
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * One walk over the ready rows from the line in the sand, in pass_context;
 * returns the number of units claimed.
 */
static int
claim_pass(ClaimPass *pass, MemoryContext pass_context)
{
	DlsmClaimArgs *args = pass->args;
	int64		line = args->after;
	bool		wide = args->units > SCAN_BATCH;
	HASHCTL		ctl;
	MemoryContext oldcontext = MemoryContextSwitchTo(pass_context);

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(SeenEntity);
	ctl.hcxt = pass_context;
	pass->seen = hash_create("dlsm claim entities", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	pass->units = 0;
	pass->nsingles = 0;
	for (;;)
	{
		Candidate	batch[SCAN_WIDE];
		int			limit = wide ? SCAN_WIDE : SCAN_BATCH;
		int			before = pass->units;
		int			n = scan(pass, line, limit, batch);
		int			i;

		for (i = 0; i < n && pass->units + pass->nsingles < args->units; i++)
		{
			line = batch[i].id;
			look_at(pass, &batch[i]);
		}
		claim_singles(pass);
		/* done when enough, or every ready row was looked at */
		if (pass->units >= args->units || (n < limit && i == n))
			break;
		if (pass->units == before)
			wide = true;
	}
	MemoryContextSwitchTo(oldcontext);
	MemoryContextReset(pass_context);
	return pass->units;
}

/*
 * dlsm_claim: claim up to args->units units, waiting up to args->wait_us
 * for work when there is none.  Each claimed row is passed to emit.
 * Returns the number of units.  The caller holds an SPI connection and a
 * pin on args->queue.
 */
int
dlsm_claim_units(DlsmClaimArgs *args, DlsmClaimEmit emit, void *arg)
{
	Interval   *lease = palloc0(sizeof(Interval));
	ClaimPass	pass = {args, IntervalPGetDatum(lease), emit, arg};
	MemoryContext pass_context;
	TimestampTz deadline = 0;
	bool		waiting = args->wait_us != 0;
	int			units;

	lease->time = args->lease_us;
	dlsm_fence_prepare();
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

		units = claim_pass(&pass, pass_context);
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

/* Raise 55P03: entity of queue is busy, for the reason given. */
static void
report_busy(DlsmQueue *queue, const char *entity, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("entity \"%s\" of queue \"%s\" is busy",
					entity, get_rel_name(queue->relid)),
			 errdetail_internal("%s", why)));
}

/*
 * dlsm_group_updates: move the entity's open updates to in-progress under
 * process_id.  Raises 55P03 and changes nothing when another transaction
 * or process holds the entity or one of the rows.  The caller holds an
 * SPI connection and a pin on queue.
 */
int64
dlsm_claim_group(DlsmQueue *queue, const char *entity, pg_uuid_t *process_id,
				 int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[N_GROUP_PARAMS];
	char	   *busy;

	if (!dlsm_lock_entity_try(queue->relid, entity))
		report_busy(queue, entity,
					"Another transaction is claiming requests of this entity.");
	values[P_GROUP_ENTITY] = CStringGetTextDatum(entity);
	values[P_GROUP_PROCESS_ID] = UUIDPGetDatum(process_id);
	dlsm_plan_run(&queue->plans, DLSM_Q_GROUP_BUSY, values, NULL, 1);
	busy = dlsm_plan_text(0, A_GROUP_BUSY_WHY);
	if (busy != NULL)
		report_busy(queue, entity, busy);

	lease->time = lease_us;
	values[P_GROUP_LEASE] = IntervalPGetDatum(lease);
	dlsm_fence_prepare();
	dlsm_plan_run(&queue->plans, DLSM_Q_GROUP, values, NULL, 0);
	dlsm_wake_claimers_at_end();
	return (int64) SPI_processed;
}
