/*-------------------------------------------------------------------------
 *
 * deadletter.c
 *	  Dead letters: failed requests back to new (dlsm_requeue), waiting
 *	  requests to error (dlsm_cancel).
 *
 * Two more moves of the state machine (state.c lists the others):
 *
 *	error		-> new			dlsm_requeue: attempts start again from 0
 *	new			-> error		dlsm_cancel: settled, never handed out
 *
 * Each is one compare-and-set statement naming the rows and the state it
 * expects them in, after locking the rows in id order (two calls naming
 * the same rows queue up instead of deadlocking).  Rows in any other state,
 * and ids the queue does not hold, are passed over and not counted.  A
 * cancel never changes a request in progress: it locks the open rows it
 * names first, waiting for a claim that holds one in another transaction
 * to end, and raises 55000 if any is in progress then; so a row goes to
 * the claim or to the cancel, never both.  This transaction's own claims,
 * which still read 'new' until they are written (pending.c), are in
 * progress as well.
 *
 * A requeue keeps at most one live (new or in-progress) request per dedup
 * key, as dlsm_enqueue does: it locks the error rows it names that hold a
 * key, takes each key's lock-manager lock (locks.c), in key order, for the
 * rest of the transaction, as a producer of the key does, and then looks
 * for a live request holding one of the keys, with the latest snapshot.
 * When there is one, or when two of the rows hold one key, it raises 55000
 * and requeues nothing: a request whose key is live again would run the
 * work twice, and a later enqueue of the key would be told "deduplicated"
 * by either.
 *
 * Neither touches the rules of an entity: a requeued row keeps its id, so
 * it is claimed again in id order, a requeued create before its entity's
 * updates, and those wait again for it; a cancelled create makes its
 * waiting updates fail at their next claim, as a create in error does.
 * When the transaction commits, a requeue makes its rows ready as an
 * enqueue does (the floor of the queue is lowered to the lowest one,
 * waiting claims are woken, the channel notified, the worker woken for a
 * handler queue); a cancel tells the floor of the entities it changed and
 * wakes waiting claims, as a settle does (and the worker of a handler
 * queue: a cancelled request may have held its entity's next ones back).
 *
 * Statements run as the current user, who is named in each row's detail;
 * the caller holds an SPI connection and a pin on the queue.
 *
 * Calls plans.c, locks.c, queue.c, pending.c, names.c and wake.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/deadletter.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "deadletter.h"
#include "locks.h"
#include "names.h"
#include "pending.h"
#include "wake.h"

/*
 * The parameters and result columns of the statements this file runs (their
 * text is in querytext.c): P_<STATEMENT>_<NAME> indexes the values and nulls
 * arrays, N_<STATEMENT>_PARAMS counts them; A_<STATEMENT>_<NAME> is a result
 * column's attribute number, from 1.
 */

/* An error row that a requeue names, and its dedup key. */
typedef struct KeyedRow
{
	int64		id;
	char	   *key;
} KeyedRow;

/*
 * Note the rows the last statement returned (A_DEAD_*) for the commit:
 * their entities changed, and when ready, rows from the lowest id up may
 * be ready.  Returns how many.
 */
static int64
note_moved(DlsmQueue *queue, bool ready)
{
	int64		lowest = PG_INT64_MAX;
	int64		n = (int64) SPI_processed;

	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;

		lowest = Min(lowest, DatumGetInt64(dlsm_plan_value(r, A_DEAD_ID,
														   &isnull)));
		dlsm_wake_entity_changed_at_commit(queue->relid,
										   dlsm_plan_text(r, A_DEAD_ENTITY));
	}
	SPI_freetuptable(SPI_tuptable);
	if (n == 0)
		return 0;
	if (ready)
		dlsm_wake_rows_ready_at_commit(queue->relid, lowest);
	dlsm_wake_queue_claimers_at_commit(queue->relid);
	if (queue->handler != NULL)
		dlsm_wake_worker_at_commit();
	return n;
}

/* The current user's name, for a row's detail. */
static Datum
current_role_name(void)
{
	return CStringGetTextDatum(GetUserNameFromId(GetUserId(), false));
}

/* Order keyed rows by key, then by id. */
static int
keyed_row_cmp(const void *a, const void *b)
{
	const KeyedRow *x = a;
	const KeyedRow *y = b;
	int			c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return (x->id > y->id) - (x->id < y->id);
}

/*
 * The error rows of ids that hold a dedup key, locked, sorted by key; sets
 * *n.  Raises 55000 when two of them hold one key.
 */
static KeyedRow *
keyed_rows(DlsmQueue *queue, ArrayType *ids, int *n)
{
	Datum		values[N_REQUEUE_KEYS_PARAMS];
	KeyedRow   *rows;
	bool		isnull;

	values[P_REQUEUE_KEYS_IDS] = PointerGetDatum(ids);
	dlsm_plan_run(&queue->plans, DLSM_Q_REQUEUE_KEYS, values, NULL, 0);
	*n = (int) SPI_processed;
	rows = palloc(sizeof(KeyedRow) * Max(*n, 1));
	for (int r = 0; r < *n; r++)
	{
		rows[r].id = DatumGetInt64(dlsm_plan_value(r, A_REQUEUE_KEY_ID,
												   &isnull));
		rows[r].key = dlsm_plan_text(r, A_REQUEUE_KEY_KEY);
	}
	SPI_freetuptable(SPI_tuptable);
	qsort(rows, *n, sizeof(KeyedRow), keyed_row_cmp);
	for (int i = 1; i < *n; i++)
	{
		if (strcmp(rows[i].key, rows[i - 1].key) == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot requeue requests %lld and %lld of queue \"%s\" together",
							(long long) rows[i - 1].id, (long long) rows[i].id,
							dlsm_rel_label(queue->relid)),
					 errdetail("Both hold dedup key \"%s\", and at most one new or in-progress request holds a dedup key; nothing was requeued.",
							   rows[i].key),
					 errhint("Requeue one of them.")));
	}
	return rows;
}

/*
 * Keep one live request per dedup key through a requeue of ids: lock the
 * keyed error rows, then their keys (in key order, for the rest of the
 * transaction: the rows will hold them, uncommitted, as an enqueue's row
 * does), then look for a live request holding one of the keys, with the
 * latest snapshot, as dlsm_enqueue does.  Raises 55000 when there is one.
 * Returns the ids of the rows whose keys were checked, an int8[]: the
 * requeue moves no other keyed row (one that reached error meanwhile).
 */
static Datum
check_dedup_keys(DlsmQueue *queue, ArrayType *ids)
{
	Datum		values[N_REQUEUE_HOLDERS_PARAMS];
	Datum	   *keys;
	Datum	   *checked;
	KeyedRow   *rows;
	int			n;
	int64		holder;
	char	   *key;
	bool		isnull;

	rows = keyed_rows(queue, ids, &n);
	keys = palloc(sizeof(Datum) * Max(n, 1));
	checked = palloc(sizeof(Datum) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		(void) dlsm_lock_dedup_key(queue->relid, rows[i].key);
		keys[i] = CStringGetTextDatum(rows[i].key);
		checked[i] = Int64GetDatum(rows[i].id);
	}
	values[P_REQUEUE_HOLDERS_KEYS] =
		PointerGetDatum(construct_array(keys, n, TEXTOID, -1, false,
										TYPALIGN_INT));
	if (n == 0 ||
		dlsm_plan_run_latest(&queue->plans, DLSM_Q_REQUEUE_HOLDERS, values,
							 NULL, 1) == 0)
	{
		if (n > 0)
			SPI_freetuptable(SPI_tuptable);
		return PointerGetDatum(construct_array(checked, n, INT8OID,
											   sizeof(int64),
											   FLOAT8PASSBYVAL,
											   TYPALIGN_DOUBLE));
	}
	holder = DatumGetInt64(dlsm_plan_value(0, A_REQUEUE_KEY_ID, &isnull));
	key = dlsm_plan_text(0, A_REQUEUE_KEY_KEY);
	SPI_freetuptable(SPI_tuptable);
	/* the requeued row of that key (by the column's equality: the first) */
	while (n > 1 && strcmp(rows[n - 1].key, key) != 0)
		n--;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot requeue request %lld of queue \"%s\"",
					(long long) rows[n - 1].id, dlsm_rel_label(queue->relid)),
			 errdetail("Its dedup key \"%s\" is held by request %lld, and at most one new or in-progress request holds a dedup key; nothing was requeued.",
					   rows[n - 1].key, (long long) holder),
			 errhint("Requeue it once request %lld is settled, or cancel request %lld first.",
					 (long long) holder, (long long) holder)));
}

/*
 * dlsm_requeue: the rows of ids that are in error back to new, with their
 * attempts reset and their last detail kept behind a note of the requeue;
 * returns how many.  Raises 55000, requeuing nothing, when a row's dedup
 * key is held by a live request, or by another row requeued with it.  A
 * keyed row that reached error only while the requeue ran (its key never
 * checked) stays in error.
 */
int64
dlsm_deadletter_requeue(DlsmQueue *queue, ArrayType *ids)
{
	Datum		values[N_DEAD_PARAMS];
	int64		n;

	values[P_DEAD_IDS] = PointerGetDatum(ids);
	values[P_DEAD_ROLE] = current_role_name();
	if (queue->plans.names.dedup == NULL)
		dlsm_plan_run(&queue->plans, DLSM_Q_REQUEUE, values, NULL, 0);
	else
	{
		values[P_DEAD_CHECKED] = check_dedup_keys(queue, ids);
		dlsm_plan_run(&queue->plans, DLSM_Q_REQUEUE_KEYED, values, NULL, 0);
	}
	n = note_moved(queue, true);
	if (n > 0)
		dlsm_wake_channel_at_commit(queue->channel);
	return n;
}

/*
 * The new rows among those CANCEL_LOCK returned, as an int8[]; raises
 * 55000 when one is in progress, or claimed by this transaction.
 */
static Datum
cancellable_ids(DlsmQueue *queue)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(SPI_processed, 1));
	int			k = 0;

	for (uint64 r = 0; r < SPI_processed; r++)
	{
		bool		isnull;
		int64		id = DatumGetInt64(dlsm_plan_value(r, A_DEAD_ID, &isnull));

		if (!dlsm_plan_text_is(r, A_DEAD_STATUS, "new") ||
			dlsm_pending_holds_row(queue->relid, id))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot cancel request %lld of queue \"%s\"",
							(long long) id, dlsm_rel_label(queue->relid)),
					 errdetail("It is in progress, and only new requests can be cancelled; nothing was cancelled."),
					 errhint("Let its claimant settle it, or wait for its lease to expire and the request to be reaped.")));
		d[k++] = Int64GetDatum(id);
	}
	SPI_freetuptable(SPI_tuptable);
	return PointerGetDatum(construct_array(d, k, INT8OID, sizeof(int64),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * dlsm_cancel: the rows of ids that are new to error, naming the current
 * user; raises 55000, changing nothing, when one of them is in progress.
 * Returns how many.
 */
int64
dlsm_deadletter_cancel(DlsmQueue *queue, ArrayType *ids)
{
	Datum		values[N_DEAD_PARAMS];

	values[P_DEAD_IDS] = PointerGetDatum(ids);
	dlsm_plan_run(&queue->plans, DLSM_Q_CANCEL_LOCK, values, NULL, 0);
	values[P_DEAD_IDS] = cancellable_ids(queue);
	values[P_DEAD_ROLE] = current_role_name();
	dlsm_plan_run(&queue->plans, DLSM_Q_CANCEL, values, NULL, 0);
	return note_moved(queue, false);
}
