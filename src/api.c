/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The SQL-callable functions of dlsm that act on queues and locks.
 *
 * Each function checks its arguments (bad input raises an error before
 * anything is changed; args.c reads the arguments several functions
 * take), refuses to write on a hot standby (25006), checks the caller's
 * privilege on the queue table, opens the SPI connection and the queue's
 * descriptor, and calls into claim.c, state.c, queue.c, queuehandler.c,
 * capture.c or namedlock.c.  Nothing here is SECURITY DEFINER: every
 * statement on a queue runs as the caller, who chose to act on it, so the
 * caller's privileges apply.  The monitoring functions are in views.c.
 *
 * Calls args.c, duration.c, claim.c, state.c, deadletter.c, queue.c,
 * queuehandler.c, capture.c, namedlock.c, fence.c, wake.c, pool.c,
 * grouplimit.c, plans.c, names.c, extension.c and rate.c (not preloaded:
 * a warning, an error) and guc.c's settings; nothing calls it.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/api.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xlog.h"
#include "commands/trigger.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "args.h"
#include "capture.h"
#include "claim.h"
#include "compat.h"
#include "deadletter.h"
#include "duration.h"
#include "extension.h"
#include "fence.h"
#include "grouplimit.h"
#include "guc.h"
#include "locks.h"
#include "namedlock.h"
#include "names.h"
#include "pool.h"
#include "queue.h"
#include "queuehandler.h"
#include "rate.h"
#include "state.h"
#include "wake.h"

/*
 * Did this session's last dlsm_enqueue return an existing request (its
 * dedup key was held)?  -1: no dlsm_enqueue returned yet.
 */
static int	last_enqueue_deduplicated = -1;

PG_FUNCTION_INFO_V1(dlsm_create_queue);
PG_FUNCTION_INFO_V1(dlsm_register_queue);
PG_FUNCTION_INFO_V1(dlsm_alter_queue);
PG_FUNCTION_INFO_V1(dlsm_drop_queue);
PG_FUNCTION_INFO_V1(dlsm_set_handler);
PG_FUNCTION_INFO_V1(dlsm_enqueue);
PG_FUNCTION_INFO_V1(dlsm_enqueue_deduplicated);
PG_FUNCTION_INFO_V1(dlsm_claim);
PG_FUNCTION_INFO_V1(dlsm_group_updates);
PG_FUNCTION_INFO_V1(dlsm_settle);
PG_FUNCTION_INFO_V1(dlsm_settle_many);
PG_FUNCTION_INFO_V1(dlsm_heartbeat);
PG_FUNCTION_INFO_V1(dlsm_reap);
PG_FUNCTION_INFO_V1(dlsm_wake);
PG_FUNCTION_INFO_V1(dlsm_capture);
PG_FUNCTION_INFO_V1(dlsm_uncapture);
PG_FUNCTION_INFO_V1(dlsm_capture_trigger);
PG_FUNCTION_INFO_V1(dlsm_try_lock);
PG_FUNCTION_INFO_V1(dlsm_unlock);
PG_FUNCTION_INFO_V1(dlsm_refresh_lock);
PG_FUNCTION_INFO_V1(dlsm_raise_fence);
PG_FUNCTION_INFO_V1(dlsm_fence_start);
PG_FUNCTION_INFO_V1(dlsm_launcher_wake);
PG_FUNCTION_INFO_V1(dlsm_set_limit);
PG_FUNCTION_INFO_V1(dlsm_group_state);
PG_FUNCTION_INFO_V1(dlsm_requeue);
PG_FUNCTION_INFO_V1(dlsm_cancel);

/* ---------------------------------------------------------------------
 * The bracket of a call
 * ---------------------------------------------------------------------
 */

/*
 * Raise 25006 when this server is a hot standby: function writes.  As
 * PreventCommandDuringRecovery, the error names no primary: its address is
 * in primary_conninfo, which only superusers may read.
 */
static void
require_primary(const char *function)
{
	if (!RecoveryInProgress())
		return;
	ereport(ERROR,
			(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
			 errmsg("cannot call %s on a hot standby", function),
			 errhint("Call it on the primary server.")));
}

/*
 * Begin a call of function on the queue in argument 0: on a primary, the
 * caller holding every privilege in modes on it (checked before any
 * statement runs, so that the error names the table); returns the queue
 * opened with flags (queue.h), locked for writing when modes write, with
 * SPI connected.
 */
static DlsmQueue *
begin_queue_call(FunctionCallInfo fcinfo, const char *function, AclMode modes,
				 int flags)
{
	Oid			relid;

	require_primary(function);
	dlsm_arg_require(fcinfo, 0, "queue");
	relid = PG_GETARG_OID(0);
	dlsm_queue_check_privileges(relid, modes);
	dlsm_plan_connect();
	if (modes & (ACL_INSERT | ACL_UPDATE | ACL_DELETE))
		flags |= DLSM_QUEUE_WRITE;
	return dlsm_queue_open(relid, flags);
}

static void
end_queue_call(DlsmQueue *queue)
{
	dlsm_queue_close(queue);
	dlsm_plan_finish();
}

/* Raise 42703 unless queue has a group column. */
static void
require_group_column(DlsmQueue *queue)
{
	if (queue->plans.names.group == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("queue \"%s\" has no group column",
						dlsm_rel_label(queue->relid)),
				 errhint("Queues created before dlsm 1.3 have none; dlsm_register_queue names a table's group column with group_key.")));
}

/* ---------------------------------------------------------------------
 * Queues
 * ---------------------------------------------------------------------
 */

/*
 * dlsm_create_queue(queue text, channel text, max_attempts int,
 *					 retention interval, updates_wait_for_create bool)
 * RETURNS regclass
 */
Datum
dlsm_create_queue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_OPTIONS, ARG_WAIT_FOR_CREATE = ARG_OPTIONS + 3
	};
	DlsmQueueOptions opts;
	char	   *name;
	Oid			relid;

	dlsm_extension_check_call(fcinfo, 5);
	require_primary("dlsm_create_queue()");
	dlsm_arg_require(fcinfo, ARG_QUEUE, "queue");
	name = text_to_cstring(PG_GETARG_TEXT_PP(ARG_QUEUE));
	dlsm_arg_queue_options(fcinfo, ARG_OPTIONS, false, &opts);
	/* the 1.2 declaration has no such argument */
	if (PG_NARGS() > ARG_WAIT_FOR_CREATE)
	{
		dlsm_arg_require(fcinfo, ARG_WAIT_FOR_CREATE, "updates_wait_for_create");
		opts.updates_wait_for_create = PG_GETARG_BOOL(ARG_WAIT_FOR_CREATE);
	}
	dlsm_plan_connect();
	relid = dlsm_queue_create(name, &opts);
	dlsm_wake_queue_new(relid);
	dlsm_plan_finish();
	PG_RETURN_OID(relid);
}

/*
 * dlsm_register_queue(queue regclass, id name, status name, kind name,
 *					   entity name, process_id name, channel text,
 *					   max_attempts int, retention interval, group_key name,
 *					   dedup_key name)
 * RETURNS regclass
 */
Datum
dlsm_register_queue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_COLUMNS, ARG_OPTIONS = ARG_COLUMNS + DLSM_NUM_COLUMNS,
		ARG_GROUP_KEY = ARG_OPTIONS + 3, ARG_DEDUP_KEY
	};
	const char *columns[DLSM_NUM_COLUMNS];
	DlsmQueueOptions opts;
	Oid			relid;

	dlsm_extension_check_call(fcinfo, 11);
	require_primary("dlsm_register_queue()");
	dlsm_arg_require(fcinfo, ARG_QUEUE, "queue");
	relid = PG_GETARG_OID(ARG_QUEUE);
	for (int i = 0; i < DLSM_NUM_COLUMNS; i++)
	{
		dlsm_arg_require(fcinfo, ARG_COLUMNS + i, dlsm_queue_columns[i]);
		columns[i] = NameStr(*PG_GETARG_NAME(ARG_COLUMNS + i));
	}
	dlsm_arg_queue_options(fcinfo, ARG_OPTIONS, false, &opts);
	if (!PG_ARGISNULL(ARG_GROUP_KEY))
		opts.group_column = NameStr(*PG_GETARG_NAME(ARG_GROUP_KEY));
	dlsm_plan_connect();
	dlsm_queue_register(relid, columns, PG_ARGISNULL(ARG_DEDUP_KEY) ? NULL :
						NameStr(*PG_GETARG_NAME(ARG_DEDUP_KEY)), &opts);
	dlsm_wake_queue_new(relid);
	dlsm_plan_finish();
	PG_RETURN_OID(relid);
}

/*
 * dlsm_alter_queue(queue regclass, channel text, max_attempts int,
 *					retention interval, handler_timeout interval,
 *					updates_wait_for_create bool) RETURNS void
 */
Datum
dlsm_alter_queue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_OPTIONS, ARG_HANDLER_TIMEOUT = ARG_OPTIONS + 3,
		ARG_WAIT_FOR_CREATE
	};
	DlsmQueueOptions opts;
	DlsmQueue  *queue;

	dlsm_extension_check_call(fcinfo, 6);
	dlsm_arg_queue_options(fcinfo, ARG_OPTIONS, true, &opts);
	if (!PG_ARGISNULL(ARG_HANDLER_TIMEOUT))
	{
		/* a zero timeout clears it: dlsm.handler_timeout applies again */
		if (dlsm_arg_duration(fcinfo, ARG_HANDLER_TIMEOUT, "handler_timeout",
							  true) / 1000 >= INT_MAX)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("handler_timeout is out of range"),
					 errdetail("It must be shorter than %d milliseconds.",
							   INT_MAX)));
		opts.handler_timeout = PG_GETARG_INTERVAL_P(ARG_HANDLER_TIMEOUT);
	}
	/* the 1.2 declaration has no such argument */
	if (PG_NARGS() > ARG_WAIT_FOR_CREATE && !PG_ARGISNULL(ARG_WAIT_FOR_CREATE))
		opts.updates_wait_for_create = PG_GETARG_BOOL(ARG_WAIT_FOR_CREATE);
	queue = begin_queue_call(fcinfo, "dlsm_alter_queue()", ACL_SELECT,
							 DLSM_QUEUE_ANY_SECURITY | DLSM_QUEUE_ANY_SHAPE);
	dlsm_queue_alter(queue->relid, &opts);
	/* updates that waited for their create may be ready now, or not */
	if (opts.updates_wait_for_create >= 0)
		dlsm_wake_queue_changed_at_commit(queue->relid);
	end_queue_call(queue);
	PG_RETURN_VOID();
}

/* dlsm_drop_queue(queue regclass, drop_table bool) RETURNS void */
Datum
dlsm_drop_queue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_DROP_TABLE
	};
	DlsmQueue  *queue;
	Oid			relid;

	dlsm_extension_check_call(fcinfo, 2);
	dlsm_arg_require(fcinfo, ARG_DROP_TABLE, "drop_table");
	queue = begin_queue_call(fcinfo, "dlsm_drop_queue()", ACL_SELECT,
							 DLSM_QUEUE_ANY_SECURITY | DLSM_QUEUE_ANY_SHAPE);
	relid = queue->relid;
	dlsm_queue_close(queue);
	dlsm_queue_drop(relid, PG_GETARG_BOOL(ARG_DROP_TABLE));
	dlsm_wake_queue_dropped_at_commit(relid);
	dlsm_plan_finish();
	PG_RETURN_VOID();
}

/* dlsm_set_handler(queue regclass, handler regproc) RETURNS void */
Datum
dlsm_set_handler(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_HANDLER
	};
	DlsmQueue  *queue;

	dlsm_extension_check_call(fcinfo, 2);
	queue = begin_queue_call(fcinfo, "dlsm_set_handler()", ACL_SELECT,
							 DLSM_QUEUE_ANY_SHAPE);
	dlsm_queue_set_handler(queue->relid, PG_ARGISNULL(ARG_HANDLER) ?
						   InvalidOid : PG_GETARG_OID(ARG_HANDLER));
	if (!PG_ARGISNULL(ARG_HANDLER))
		dlsm_pool_warn_no_worker(DLSM_NO_WORKER_HANDLER,
								 dlsm_rel_label(queue->relid));
	end_queue_call(queue);
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * Requests
 * ---------------------------------------------------------------------
 */

/*
 * The dedup arguments of dlsm_enqueue, which need its queue: the queue has
 * a dedup key column (0A000 otherwise), and a window is no longer than its
 * retention, which deletes the rows the window would look for (22023).
 */
static void
check_dedup(DlsmQueue *queue, DlsmRequest *request)
{
	int64		window;
	int64		retention;

	if (queue->plans.names.dedup == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("queue \"%s\" has no dedup key column",
						dlsm_rel_label(queue->relid)),
				 errhint("A queue made by dlsm_create_queue() since dlsm 1.3 has one; an adopted table names its column with dlsm_register_queue(..., dedup_key => ...).")));
	if (!request->has_dedup_window || !queue->has_retention ||
		!dlsm_interval_usecs(DatumGetIntervalP(request->dedup_window), &window) ||
		!dlsm_interval_usecs(&queue->retention, &retention) || window <= retention)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("dedup_window is longer than the retention of queue \"%s\"",
					dlsm_rel_label(queue->relid)),
			 errdetail("The queue deletes settled requests once their retention (%s) has passed: a longer window cannot see them.",
					   DatumGetCString(DirectFunctionCall1(interval_out,
														   IntervalPGetDatum(&queue->retention)))),
			 errhint("Give a dedup_window no longer than the retention, or change the retention with dlsm_alter_queue().")));
}

/*
 * dlsm_enqueue(queue regclass, entity text, kind text, payload jsonb,
 *				run_at timestamptz, group_key text, dedup_key text,
 *				dedup_window interval) RETURNS bigint
 */
Datum
dlsm_enqueue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_ENTITY, ARG_KIND, ARG_PAYLOAD, ARG_RUN_AT,
		ARG_GROUP_KEY, ARG_DEDUP_KEY, ARG_DEDUP_WINDOW
	};
	DlsmRequest request;
	DlsmQueue  *queue;
	int64		id;
	bool		deduplicated;

	dlsm_extension_check_call(fcinfo, 8);
	dlsm_arg_require(fcinfo, ARG_ENTITY, "entity");
	dlsm_arg_require(fcinfo, ARG_KIND, "kind");
	request.entity = PG_GETARG_DATUM(ARG_ENTITY);
	request.kind = PG_GETARG_DATUM(ARG_KIND);
	request.has_payload = !PG_ARGISNULL(ARG_PAYLOAD);
	request.payload = request.has_payload ? PG_GETARG_DATUM(ARG_PAYLOAD) : 0;
	request.has_run_at = !PG_ARGISNULL(ARG_RUN_AT);
	request.run_at = request.has_run_at ? PG_GETARG_DATUM(ARG_RUN_AT) : 0;
	request.has_group_key = !PG_ARGISNULL(ARG_GROUP_KEY);
	request.group_key = request.has_group_key ?
		PG_GETARG_DATUM(ARG_GROUP_KEY) : 0;
	request.has_dedup_key = !PG_ARGISNULL(ARG_DEDUP_KEY);
	request.dedup_key = request.has_dedup_key ?
		PG_GETARG_DATUM(ARG_DEDUP_KEY) : 0;
	request.has_dedup_window = !PG_ARGISNULL(ARG_DEDUP_WINDOW);
	request.dedup_window = request.has_dedup_window ?
		PG_GETARG_DATUM(ARG_DEDUP_WINDOW) : 0;
	if (request.has_dedup_window && !request.has_dedup_key)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dedup_window applies only with a dedup_key")));
	if (request.has_dedup_window)
		(void) dlsm_arg_duration(fcinfo, ARG_DEDUP_WINDOW, "dedup_window", true);
	queue = begin_queue_call(fcinfo, "dlsm_enqueue()",
							 ACL_SELECT | ACL_INSERT, 0);
	if (request.has_group_key)
		require_group_column(queue);
	if (request.has_dedup_key)
		check_dedup(queue, &request);
	id = dlsm_state_enqueue(queue, &request, &deduplicated);
	end_queue_call(queue);
	last_enqueue_deduplicated = deduplicated ? 1 : 0;
	PG_RETURN_INT64(id);
}

/*
 * dlsm_enqueue_deduplicated() RETURNS boolean: whether this session's last
 * dlsm_enqueue returned the id of an existing request, adding nothing
 * (NULL before the session's first), as lastval() does for sequences.
 */
Datum
dlsm_enqueue_deduplicated(PG_FUNCTION_ARGS)
{
	dlsm_extension_check_call(fcinfo, 0);
	if (last_enqueue_deduplicated < 0)
		PG_RETURN_NULL();
	PG_RETURN_BOOL(last_enqueue_deduplicated == 1);
}

/*
 * Claims read the entity's state after taking its lock, and need a snapshot
 * taken after that: only READ COMMITTED gives one per statement.
 */
static void
require_read_committed(const char *function)
{
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s cannot run in a REPEATABLE READ or SERIALIZABLE transaction",
						function),
				 errhint("Claim in a READ COMMITTED transaction.")));
}

/* Put one claimed row into the function's result. */
static void
emit_claimed(void *arg, Datum *values, bool *nulls)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;

	Assert(rsinfo->setDesc->natts == N_CLAIM - 1);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * dlsm_claim(queue regclass, lease interval, process_id uuid, after bigint,
 *			  wait interval, units int)
 * RETURNS TABLE (id, kind, entity, payload, process_id, fence, lease_until)
 */
Datum
dlsm_claim(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_LEASE, ARG_PROCESS_ID, ARG_AFTER, ARG_WAIT, ARG_UNITS
	};
	DlsmClaimArgs args;

	dlsm_extension_check_call(fcinfo, 6);
	dlsm_arg_require(fcinfo, ARG_AFTER, "after");
	dlsm_arg_require(fcinfo, ARG_UNITS, "units");
	args.lease_us = dlsm_arg_lease(fcinfo, ARG_LEASE);
	args.process_id = PG_ARGISNULL(ARG_PROCESS_ID) ? NULL :
		PG_GETARG_UUID_P(ARG_PROCESS_ID);
	args.after = PG_GETARG_INT64(ARG_AFTER);
	args.wait_us = dlsm_arg_wait(fcinfo, ARG_WAIT);
	args.units = PG_GETARG_INT32(ARG_UNITS);
	if (args.units < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("units must be at least 1")));
	require_read_committed("dlsm_claim");

	InitMaterializedSRF(fcinfo, 0);
	args.queue = begin_queue_call(fcinfo, "dlsm_claim()",
								  ACL_SELECT | ACL_UPDATE, 0);
	if (!PG_ARGISNULL(ARG_LEASE))
		dlsm_pool_warn_no_worker(DLSM_NO_WORKER_LEASE,
								 dlsm_rel_label(args.queue->relid));
	dlsm_claim_units(&args, emit_claimed, fcinfo->resultinfo);
	end_queue_call(args.queue);
	return (Datum) 0;
}

/*
 * dlsm_group_updates(queue regclass, entity text, process_id uuid)
 * RETURNS bigint
 */
Datum
dlsm_group_updates(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_ENTITY, ARG_PROCESS_ID
	};
	DlsmQueue  *queue;
	int64		n;

	dlsm_extension_check_call(fcinfo, 3);
	dlsm_arg_require(fcinfo, ARG_ENTITY, "entity");
	dlsm_arg_require(fcinfo, ARG_PROCESS_ID, "process_id");
	require_read_committed("dlsm_group_updates");
	queue = begin_queue_call(fcinfo, "dlsm_group_updates()",
							 ACL_SELECT | ACL_UPDATE, 0);
	n = dlsm_claim_group(queue, text_to_cstring(PG_GETARG_TEXT_PP(ARG_ENTITY)),
						 PG_GETARG_UUID_P(ARG_PROCESS_ID),
						 (int64) dlsm_default_lease * USECS_PER_SEC);
	end_queue_call(queue);
	PG_RETURN_INT64(n);
}

/*
 * dlsm_settle(queue regclass, process_id uuid, outcome text, detail text,
 *			   retry_after interval) RETURNS bigint
 */
Datum
dlsm_settle(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_PROCESS_ID, ARG_OUTCOME
	};
	DlsmSettle	settle;
	DlsmQueue  *queue;
	int64		n;

	dlsm_extension_check_call(fcinfo, 5);
	dlsm_arg_require_process_id(fcinfo, ARG_PROCESS_ID);
	dlsm_arg_settle(fcinfo, ARG_OUTCOME, &settle);
	queue = begin_queue_call(fcinfo, "dlsm_settle()",
							 ACL_SELECT | ACL_UPDATE, 0);
	n = dlsm_state_settle(queue, PG_GETARG_UUID_P(ARG_PROCESS_ID), &settle);
	end_queue_call(queue);
	PG_RETURN_INT64(n);
}

/* Put one (process_id, settled) row into the function's result. */
static void
emit_settled(void *arg, pg_uuid_t *process_id, int64 settled)
{
	enum
	{
		COL_PROCESS_ID, COL_SETTLED, NCOLS
	};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[NCOLS];
	bool		nulls[NCOLS] = {false};

	Assert(rsinfo->setDesc->natts == NCOLS);
	values[COL_PROCESS_ID] = UUIDPGetDatum(process_id);
	values[COL_SETTLED] = Int64GetDatum(settled);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * dlsm_settle_many(queue regclass, process_ids uuid[], outcome text,
 *					detail text, retry_after interval)
 * RETURNS TABLE (process_id uuid, settled bigint)
 */
Datum
dlsm_settle_many(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_PROCESS_IDS, ARG_OUTCOME
	};
	DlsmSettle	settle;
	DlsmQueue  *queue;
	ArrayType  *process_ids;

	dlsm_extension_check_call(fcinfo, 5);
	dlsm_arg_require(fcinfo, ARG_PROCESS_IDS, "process_ids");
	process_ids = PG_GETARG_ARRAYTYPE_P(ARG_PROCESS_IDS);
	if (ARR_NDIM(process_ids) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("process_ids must be a one-dimensional array")));
	if (array_contains_nulls(process_ids))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("process_ids must not contain nulls")));
	dlsm_arg_settle(fcinfo, ARG_OUTCOME, &settle);

	InitMaterializedSRF(fcinfo, 0);
	queue = begin_queue_call(fcinfo, "dlsm_settle_many()",
							 ACL_SELECT | ACL_UPDATE, 0);
	dlsm_state_settle_many(queue, process_ids, &settle, emit_settled,
						   fcinfo->resultinfo);
	end_queue_call(queue);
	return (Datum) 0;
}

/*
 * dlsm_heartbeat(queue regclass, process_id uuid, lease interval)
 * RETURNS timestamptz
 */
Datum
dlsm_heartbeat(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_PROCESS_ID, ARG_LEASE
	};
	DlsmQueue  *queue;
	int64		lease_us;
	TimestampTz until;

	dlsm_extension_check_call(fcinfo, 3);
	dlsm_arg_require_process_id(fcinfo, ARG_PROCESS_ID);
	lease_us = dlsm_arg_lease(fcinfo, ARG_LEASE);
	queue = begin_queue_call(fcinfo, "dlsm_heartbeat()",
							 ACL_SELECT | ACL_UPDATE, 0);
	until = dlsm_state_heartbeat(queue, PG_GETARG_UUID_P(ARG_PROCESS_ID),
								 lease_us);
	end_queue_call(queue);
	PG_RETURN_TIMESTAMPTZ(until);
}

/* dlsm_reap(queue regclass) RETURNS bigint */
Datum
dlsm_reap(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	int64		n;

	dlsm_extension_check_call(fcinfo, 1);
	queue = begin_queue_call(fcinfo, "dlsm_reap()",
							 ACL_SELECT | ACL_UPDATE, 0);
	n = dlsm_state_reap(queue);
	end_queue_call(queue);
	PG_RETURN_INT64(n);
}

/*
 * dlsm_wake(): statement trigger on a queue.  Notifies the queue's channel
 * and wakes waiting claims when the inserting transaction commits.
 */
Datum
dlsm_wake(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	DlsmQueue  *queue;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dlsm_wake() must be called as a trigger")));
	if (!dlsm_extension_current())
	{
		/* the SQL objects await ALTER EXTENSION dlsm UPDATE: only wake */
		dlsm_wake_rows_ready_at_commit(RelationGetRelid(trigdata->tg_relation),
									   PG_INT64_MIN);
		dlsm_wake_claimers_at_commit();
		return PointerGetDatum(NULL);
	}
	dlsm_plan_connect();
	queue = dlsm_queue_open(RelationGetRelid(trigdata->tg_relation),
							DLSM_QUEUE_MISSING_OK | DLSM_QUEUE_ANY_SECURITY |
							DLSM_QUEUE_ANY_SHAPE);
	if (queue != NULL)
	{
		dlsm_state_enqueued(queue);
		dlsm_queue_close(queue);
	}
	dlsm_plan_finish();
	return PointerGetDatum(NULL);
}

/* ---------------------------------------------------------------------
 * Change capture
 * ---------------------------------------------------------------------
 */

/*
 * dlsm_capture(source regclass, queue regclass, kind text,
 *				entity_column name, columns name[]) RETURNS void
 */
Datum
dlsm_capture(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_SOURCE, ARG_QUEUE, ARG_KIND, ARG_ENTITY_COLUMN, ARG_COLUMNS,
		ARG_GROUP_COLUMN
	};
	Oid			relid;
	DlsmQueue  *queue;
	const char *group_column = NULL;

	dlsm_extension_check_call(fcinfo, 6);
	require_primary("dlsm_capture()");
	dlsm_arg_require(fcinfo, ARG_SOURCE, "source");
	dlsm_arg_require(fcinfo, ARG_QUEUE, "queue");
	dlsm_arg_require(fcinfo, ARG_KIND, "kind");
	relid = PG_GETARG_OID(ARG_QUEUE);
	if (!PG_ARGISNULL(ARG_GROUP_COLUMN))
		group_column = NameStr(*PG_GETARG_NAME(ARG_GROUP_COLUMN));
	if (!PG_ARGISNULL(ARG_COLUMNS) &&
		ARR_NDIM(PG_GETARG_ARRAYTYPE_P(ARG_COLUMNS)) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("columns must be a one-dimensional array")));
	/* the capture inserts into the queue on the caller's behalf */
	dlsm_queue_check_privileges(relid, ACL_INSERT);
	dlsm_plan_connect();

	/*
	 * No lock on the queue before the source's (capture.c takes them in that
	 * order); dlsm_capture_attach opens it again once it is locked, and
	 * checks its shape then
	 */
	queue = dlsm_queue_open(relid, DLSM_QUEUE_ANY_SECURITY |
							DLSM_QUEUE_ANY_SHAPE);
	if (group_column != NULL)
		require_group_column(queue);
	dlsm_capture_attach(PG_GETARG_OID(ARG_SOURCE), queue->relid,
						text_to_cstring(PG_GETARG_TEXT_PP(ARG_KIND)),
						PG_ARGISNULL(ARG_ENTITY_COLUMN) ? NULL :
						NameStr(*PG_GETARG_NAME(ARG_ENTITY_COLUMN)),
						PG_ARGISNULL(ARG_COLUMNS) ? NULL :
						PG_GETARG_ARRAYTYPE_P(ARG_COLUMNS), group_column);
	end_queue_call(queue);
	PG_RETURN_VOID();
}

/* dlsm_uncapture(source regclass, queue regclass) RETURNS void */
Datum
dlsm_uncapture(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_SOURCE, ARG_QUEUE
	};

	dlsm_extension_check_call(fcinfo, 2);
	require_primary("dlsm_uncapture()");
	dlsm_arg_require(fcinfo, ARG_SOURCE, "source");
	dlsm_arg_require(fcinfo, ARG_QUEUE, "queue");
	dlsm_plan_connect();
	dlsm_capture_detach(PG_GETARG_OID(ARG_SOURCE), PG_GETARG_OID(ARG_QUEUE));
	dlsm_plan_finish();
	PG_RETURN_VOID();
}

/* dlsm_capture_trigger(): the row trigger dlsm_capture attaches. */
Datum
dlsm_capture_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata;

	dlsm_extension_check_call(fcinfo, 0);
	trigdata = (TriggerData *) fcinfo->context;
	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dlsm_capture_trigger() must be called as an AFTER row trigger")));
	dlsm_plan_connect();
	dlsm_capture_row(trigdata);
	dlsm_plan_finish();
	return PointerGetDatum(NULL);
}

/* ---------------------------------------------------------------------
 * Named locks and fences
 * ---------------------------------------------------------------------
 */

/* The lock name argument argno: not NULL, not empty. */
static char *
lock_name_arg(FunctionCallInfo fcinfo, int argno)
{
	char	   *name;

	dlsm_arg_require(fcinfo, argno, "name");
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (name[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock name must not be empty")));
	return name;
}

/*
 * dlsm_try_lock(name text, wait interval, lease interval) RETURNS bigint:
 * a fence when granted, NULL when not granted within wait.
 */
Datum
dlsm_try_lock(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_NAME, ARG_WAIT, ARG_LEASE
	};
	char	   *name;
	int64		wait_us;
	int64		lease_us = 0;
	int64		fence;
	bool		granted;

	dlsm_extension_check_call(fcinfo, 3);
	name = lock_name_arg(fcinfo, ARG_NAME);
	wait_us = dlsm_arg_wait(fcinfo, ARG_WAIT);
	if (!PG_ARGISNULL(ARG_LEASE))
		lease_us = dlsm_arg_lease(fcinfo, ARG_LEASE);
	require_primary("dlsm_try_lock()");
	dlsm_plan_connect();
	granted = dlsm_named_try(name, wait_us, lease_us, &fence);
	dlsm_plan_finish();
	if (!granted)
		PG_RETURN_NULL();
	PG_RETURN_INT64(fence);
}

/* dlsm_unlock(name text, fence bigint) RETURNS boolean */
Datum
dlsm_unlock(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_NAME, ARG_FENCE
	};
	char	   *name;
	bool		released;

	dlsm_extension_check_call(fcinfo, 2);
	name = lock_name_arg(fcinfo, ARG_NAME);
	dlsm_arg_require(fcinfo, ARG_FENCE, "fence");
	require_primary("dlsm_unlock()");
	dlsm_plan_connect();
	released = dlsm_named_unlock(name, PG_GETARG_INT64(ARG_FENCE));
	dlsm_plan_finish();
	PG_RETURN_BOOL(released);
}

/* dlsm_refresh_lock(name text, fence bigint, lease interval) RETURNS timestamptz */
Datum
dlsm_refresh_lock(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_NAME, ARG_FENCE, ARG_LEASE
	};
	char	   *name;
	int64		lease_us;
	TimestampTz until;

	dlsm_extension_check_call(fcinfo, 3);
	name = lock_name_arg(fcinfo, ARG_NAME);
	dlsm_arg_require(fcinfo, ARG_FENCE, "fence");
	dlsm_arg_require(fcinfo, ARG_LEASE, "lease");
	lease_us = dlsm_arg_lease(fcinfo, ARG_LEASE);
	require_primary("dlsm_refresh_lock()");
	dlsm_plan_connect();
	until = dlsm_named_refresh(name, PG_GETARG_INT64(ARG_FENCE), lease_us);
	dlsm_plan_finish();
	PG_RETURN_TIMESTAMPTZ(until);
}

/* dlsm_raise_fence(at_least bigint) RETURNS bigint */
Datum
dlsm_raise_fence(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_AT_LEAST
	};
	int64		value;

	dlsm_extension_check_call(fcinfo, 1);
	dlsm_arg_require(fcinfo, ARG_AT_LEAST, "at_least");
	require_primary("dlsm_raise_fence()");
	dlsm_plan_connect();
	value = dlsm_fence_raise(PG_GETARG_INT64(ARG_AT_LEAST));
	dlsm_plan_finish();
	PG_RETURN_INT64(value);
}

/*
 * dlsm_fence_start() RETURNS bigint: where the install script starts the
 * fence sequence (fence.c).
 */
Datum
dlsm_fence_start(PG_FUNCTION_ARGS)
{
	dlsm_extension_check_call(fcinfo, 0);
	require_primary("dlsm_fence_start()");
	PG_RETURN_INT64(dlsm_fence_initial());
}

/*
 * dlsm_launcher_wake(): the launcher looks at every database when this
 * transaction commits (the extension is visible to the worker only then).
 */
Datum
dlsm_launcher_wake(PG_FUNCTION_ARGS)
{
	dlsm_extension_check_call(fcinfo, 0);
	dlsm_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

/* ---------------------------------------------------------------------
 * Limits of groups
 * ---------------------------------------------------------------------
 */

/* A limit argument: NULL is none (0), else from 1 to most. */
static int32
limit_arg(FunctionCallInfo fcinfo, int argno, const char *name, int32 most)
{
	int32		value;

	if (PG_ARGISNULL(argno))
		return 0;
	value = PG_GETARG_INT32(argno);
	if (value < 1 || value > most)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 and %d", name, most)));
	return value;
}

/*
 * dlsm_set_limit(queue regclass, group_key text, concurrency int, rate int,
 *				  per interval) RETURNS void
 */
Datum
dlsm_set_limit(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_GROUP_KEY, ARG_CONCURRENCY, ARG_RATE, ARG_PER
	};
	DlsmLimit	limit;
	DlsmQueue  *queue;
	char	   *group;

	dlsm_extension_check_call(fcinfo, 5);
	group = dlsm_arg_text_or_null(fcinfo, ARG_GROUP_KEY);
	limit.concurrency = limit_arg(fcinfo, ARG_CONCURRENCY, "concurrency",
								  DLSM_MAX_SLOTS);
	limit.rate = limit_arg(fcinfo, ARG_RATE, "rate", PG_INT32_MAX);
	limit.per_us = 0;
	if (limit.rate > 0)
	{
		dlsm_arg_require(fcinfo, ARG_PER, "per");
		limit.per_us = dlsm_arg_duration(fcinfo, ARG_PER, "per", false);
		/* a group's entry in shared memory lives up to per (rate.c) */
		if (limit.per_us > USECS_PER_DAY && !superuser())
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("per must be at most 1 day"),
					 errhint("Only a superuser may set a longer window.")));
		if (!dlsm_rate_available())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("rate limits need dlsm in shared_preload_libraries"),
					 errhint("Add dlsm to shared_preload_libraries and restart the server.")));
	}
	queue = begin_queue_call(fcinfo, "dlsm_set_limit()", ACL_SELECT,
							 DLSM_QUEUE_ANY_SECURITY);
	dlsm_queue_check_owner(queue->relid);
	require_group_column(queue);
	dlsm_limits_set(queue, group,
					limit.concurrency > 0 || limit.rate > 0 ? &limit : NULL,
					limit.rate > 0 ? PG_GETARG_INTERVAL_P(ARG_PER) : NULL);
	end_queue_call(queue);
	PG_RETURN_VOID();
}

/*
 * dlsm_group_state(queue regclass, group_key text, OUT in_progress bigint,
 *					OUT next_claim_at timestamptz) RETURNS record
 *
 * NULLs when the caller may not read the queue, or group_key is NULL: the
 * view dlsm_limits shows every queue's limits to everyone.
 */
Datum
dlsm_group_state(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_GROUP_KEY
	};
	enum
	{
		OUT_IN_PROGRESS, OUT_NEXT_CLAIM_AT, N_OUT
	};
	TupleDesc	tupdesc;
	Datum		values[N_OUT] = {0};
	bool		nulls[N_OUT] = {true, true};
	char	   *group;

	dlsm_extension_check_call(fcinfo, 2);
	group = dlsm_arg_text_or_null(fcinfo, ARG_GROUP_KEY);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (!PG_ARGISNULL(ARG_QUEUE) && group != NULL &&
		pg_class_aclcheck(PG_GETARG_OID(ARG_QUEUE), GetUserId(),
						  ACL_SELECT) == ACLCHECK_OK)
	{
		DlsmQueue  *queue;

		dlsm_plan_connect();
		queue = dlsm_queue_open(PG_GETARG_OID(ARG_QUEUE),
								DLSM_QUEUE_MISSING_OK |
								DLSM_QUEUE_ANY_SECURITY);

		if (queue != NULL)
		{
			values[OUT_IN_PROGRESS] =
				Int64GetDatum(dlsm_limits_in_progress(queue, group));
			values[OUT_NEXT_CLAIM_AT] =
				TimestampTzGetDatum(dlsm_limits_next_claim(queue, group));
			nulls[OUT_IN_PROGRESS] = nulls[OUT_NEXT_CLAIM_AT] = false;
			dlsm_queue_close(queue);
		}
		dlsm_plan_finish();
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values,
													  nulls)));
}

/* ---------------------------------------------------------------------
 * Dead letters
 * ---------------------------------------------------------------------
 */

/* The ids argument argno of a dead-letter call: a list of ids. */
static ArrayType *
request_ids_arg(FunctionCallInfo fcinfo, int argno)
{
	ArrayType  *ids;

	dlsm_arg_require(fcinfo, argno, "ids");
	ids = PG_GETARG_ARRAYTYPE_P(argno);
	if (ARR_NDIM(ids) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ids must be a one-dimensional array")));
	if (array_contains_nulls(ids))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("ids must not contain nulls")));
	return ids;
}

/* dlsm_requeue(queue regclass, ids bigint[]) RETURNS bigint */
Datum
dlsm_requeue(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_IDS
	};
	ArrayType  *ids;
	DlsmQueue  *queue;
	int64		n;

	dlsm_extension_check_call(fcinfo, 2);
	ids = request_ids_arg(fcinfo, ARG_IDS);
	queue = begin_queue_call(fcinfo, "dlsm_requeue()",
							 ACL_SELECT | ACL_UPDATE, 0);
	n = dlsm_deadletter_requeue(queue, ids);
	end_queue_call(queue);
	PG_RETURN_INT64(n);
}

/* dlsm_cancel(queue regclass, ids bigint[]) RETURNS bigint */
Datum
dlsm_cancel(PG_FUNCTION_ARGS)
{
	enum
	{
		ARG_QUEUE, ARG_IDS
	};
	ArrayType  *ids;
	DlsmQueue  *queue;
	int64		n;

	dlsm_extension_check_call(fcinfo, 2);
	ids = request_ids_arg(fcinfo, ARG_IDS);
	queue = begin_queue_call(fcinfo, "dlsm_cancel()",
							 ACL_SELECT | ACL_UPDATE, 0);
	n = dlsm_deadletter_cancel(queue, ids);
	end_queue_call(queue);
	PG_RETURN_INT64(n);
}
