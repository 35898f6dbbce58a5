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
 * Calls plans.c, queue.c, pending.c and wake.c.
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
#include "names.h"
#include "pending.h"
#include "wake.h"

/*
 * The parameters and result columns of the statements this file runs (their
 * text is in plans.c): P_<STATEMENT>_<NAME> indexes the values and nulls
 * arrays, N_<STATEMENT>_PARAMS counts them; A_<STATEMENT>_<NAME> is a result
 * column's attribute number, from 1.
 */
/* Dead letters: REQUEUE, CANCEL_LOCK and CANCEL take the ids, then a role. */
enum
{
	P_DEAD_IDS, P_DEAD_ROLE, N_DEAD_PARAMS
};
enum
{
	A_DEAD_ID = 1, A_DEAD_ENTITY, A_DEAD_STATUS, N_DEAD
};

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
	dlsm_wake_claimers_at_commit();
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

/*
 * dlsm_requeue: the rows of ids that are in error back to new, with their
 * attempts reset and their last detail kept behind a note of the requeue;
 * returns how many.
 */
int64
dlsm_deadletter_requeue(DlsmQueue *queue, ArrayType *ids)
{
	Datum		values[N_DEAD_PARAMS];
	int64		n;

	values[P_DEAD_IDS] = PointerGetDatum(ids);
	values[P_DEAD_ROLE] = current_role_name();
	dlsm_plan_run(&queue->plans, DLSM_Q_REQUEUE, values, NULL, 0);
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

		if (strcmp(dlsm_plan_text(r, A_DEAD_STATUS), "new") != 0 ||
			dlsm_pending_holds_row(queue->relid, id))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot cancel request %lld of queue \"%s\": it is in progress",
							(long long) id, dlsm_rel_label(queue->relid)),
					 errdetail("Only new requests can be cancelled; nothing was cancelled."),
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
