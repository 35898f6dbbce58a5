/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The SQL-callable functions of dlsm.
 *
 * Each function checks its arguments (bad input raises an error before
 * anything is changed), checks the caller's privilege on the queue table,
 * opens the SPI connection, and calls into state.c or queue.c.  Nothing
 * here is SECURITY DEFINER: every statement on a queue runs as the caller,
 * so the caller's privileges and row-level security apply.
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
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/async.h"
#include "commands/trigger.h"
#include "common/int.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dlsm.h"

/* A wait at least this long is a wait without end (100 years). */
#define WAIT_FOREVER_US (INT64CONST(100) * 365 * USECS_PER_DAY)

PG_FUNCTION_INFO_V1(dlsm_create_queue);
PG_FUNCTION_INFO_V1(dlsm_drop_queue);
PG_FUNCTION_INFO_V1(dlsm_enqueue);
PG_FUNCTION_INFO_V1(dlsm_claim);
PG_FUNCTION_INFO_V1(dlsm_group_updates);
PG_FUNCTION_INFO_V1(dlsm_settle);
PG_FUNCTION_INFO_V1(dlsm_settle_many);
PG_FUNCTION_INFO_V1(dlsm_heartbeat);
PG_FUNCTION_INFO_V1(dlsm_reap);
PG_FUNCTION_INFO_V1(dlsm_wake);
PG_FUNCTION_INFO_V1(dlsm_set_handler);
PG_FUNCTION_INFO_V1(dlsm_worker_status);
PG_FUNCTION_INFO_V1(dlsm_queue_stats);
PG_FUNCTION_INFO_V1(dlsm_launcher_wake);
PG_FUNCTION_INFO_V1(dlsm_try_lock);
PG_FUNCTION_INFO_V1(dlsm_register_queue);
PG_FUNCTION_INFO_V1(dlsm_capture);
PG_FUNCTION_INFO_V1(dlsm_uncapture);
PG_FUNCTION_INFO_V1(dlsm_capture_trigger);
PG_FUNCTION_INFO_V1(dlsm_unlock);
PG_FUNCTION_INFO_V1(dlsm_refresh_lock);
PG_FUNCTION_INFO_V1(dlsm_locks);

/* Raise 22004 unless argument argno (named name) is given. */
static void
require_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
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

/* An interval as microseconds; false if it does not fit. */
static bool
interval_usecs(Interval *iv, int64 *result)
{
	int64		days;
	int64		us;

	if (DLSM_INTERVAL_IS_INFINITE(iv))
		return false;
	days = (int64) iv->month * DAYS_PER_MONTH + iv->day;
	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us))
		return false;
	*result = us;
	return true;
}

/* The lease argument argno in microseconds: NULL means dlsm.default_lease. */
static int64
lease_arg(FunctionCallInfo fcinfo, int argno)
{
	int64		us;

	if (PG_ARGISNULL(argno))
		return (int64) dlsm_default_lease * USECS_PER_SEC;
	if (!interval_usecs(PG_GETARG_INTERVAL_P(argno), &us) ||
		us > WAIT_FOREVER_US)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease is out of range"),
				 errdetail("A lease must be shorter than 100 years.")));
	if (us <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease must be greater than zero")));
	return us;
}

/* The outcome argument argno of a settle. */
static DlsmOutcome
outcome_arg(FunctionCallInfo fcinfo, int argno)
{
	char	   *outcome;

	require_arg(fcinfo, argno, "outcome");
	outcome = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strcmp(outcome, "complete") == 0)
		return DLSM_OUTCOME_COMPLETE;
	if (strcmp(outcome, "error") == 0)
		return DLSM_OUTCOME_ERROR;
	if (strcmp(outcome, "retry") == 0)
		return DLSM_OUTCOME_RETRY;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized outcome \"%s\"", outcome),
			 errhint("Valid outcomes are \"complete\", \"error\" and \"retry\".")));
	return DLSM_OUTCOME_ERROR;	/* keep compiler quiet */
}

/* The retry_after argument argno, checked against the outcome. */
static Interval *
retry_after_arg(FunctionCallInfo fcinfo, int argno, DlsmOutcome outcome)
{
	int64		us;

	if (PG_ARGISNULL(argno))
		return NULL;
	if (outcome != DLSM_OUTCOME_RETRY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retry_after applies only to the outcome \"retry\"")));
	if (!interval_usecs(PG_GETARG_INTERVAL_P(argno), &us) || us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retry_after must not be negative")));
	return PG_GETARG_INTERVAL_P(argno);
}

static char *
text_arg_or_null(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * Check the caller holds every privilege in modes on the queue table
 * (42501 otherwise), connect SPI and return the queue (42704 when the table
 * is not one).  Checked here, before any statement runs, so that the error
 * names the table and not one of dlsm's statements.
 */
static DlsmQueue *
open_queue(FunctionCallInfo fcinfo, AclMode modes)
{
	Oid			relid;

	require_arg(fcinfo, 0, "queue");
	relid = PG_GETARG_OID(0);
	/* pg_class_aclcheck passes when any bit is held: ask for each */
	for (AclMode mode = 1; mode != 0 && mode <= modes; mode <<= 1)
	{
		if ((modes & mode) &&
			pg_class_aclcheck(relid, GetUserId(), mode) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return dlsm_queue_get(relid);
}

static void
close_queue(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* A new queue's channel, max_attempts and retention, from argno on. */
typedef struct QueueOptions
{
	char	   *channel;
	int			max_attempts;
	Interval   *retention;
} QueueOptions;

static void
queue_options_args(FunctionCallInfo fcinfo, int argno, QueueOptions *opts)
{
	int64		us;

	opts->channel = text_arg_or_null(fcinfo, argno);
	require_arg(fcinfo, argno + 1, "max_attempts");
	opts->max_attempts = PG_GETARG_INT32(argno + 1);
	opts->retention = NULL;
	if (opts->max_attempts < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_attempts must be at least 1")));
	if (opts->channel != NULL &&
		(opts->channel[0] == '\0' || strlen(opts->channel) >= NAMEDATALEN))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid channel name \"%s\"", opts->channel),
				 errdetail("A channel name must be between 1 and %d bytes long.",
						   NAMEDATALEN - 1)));
	if (!PG_ARGISNULL(argno + 2))
	{
		opts->retention = PG_GETARG_INTERVAL_P(argno + 2);
		if (interval_usecs(opts->retention, &us) && us <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("retention must be greater than zero")));
	}
}

/*
 * dlsm_create_queue(queue text, channel text, max_attempts int,
 *					 retention interval) RETURNS regclass
 */
Datum
dlsm_create_queue(PG_FUNCTION_ARGS)
{
	QueueOptions opts;
	char	   *name;
	Oid			relid;

	require_arg(fcinfo, 0, "queue");
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	queue_options_args(fcinfo, 1, &opts);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	relid = dlsm_queue_create(name, opts.channel, opts.max_attempts,
							  opts.retention);
	close_queue();
	PG_RETURN_OID(relid);
}

/*
 * dlsm_register_queue(queue regclass, id name, status name, kind name,
 *					   entity name, process_id name, channel text,
 *					   max_attempts int, retention interval) RETURNS regclass
 */
Datum
dlsm_register_queue(PG_FUNCTION_ARGS)
{
	static const char *const names[5] = {"id", "status", "kind", "entity",
	"process_id"};
	const char *columns[5];
	QueueOptions opts;
	Oid			relid;

	require_arg(fcinfo, 0, "queue");
	relid = PG_GETARG_OID(0);
	for (int i = 0; i < 5; i++)
	{
		require_arg(fcinfo, 1 + i, names[i]);
		columns[i] = NameStr(*PG_GETARG_NAME(1 + i));
	}
	queue_options_args(fcinfo, 6, &opts);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	dlsm_queue_register(relid, columns, opts.channel, opts.max_attempts,
						opts.retention);
	close_queue();
	PG_RETURN_OID(relid);
}

/* dlsm_drop_queue(queue regclass, drop_table bool) RETURNS void */
Datum
dlsm_drop_queue(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;

	require_arg(fcinfo, 1, "drop_table");
	queue = open_queue(fcinfo, ACL_SELECT);
	dlsm_queue_drop(queue->relid, PG_GETARG_BOOL(1));
	close_queue();
	PG_RETURN_VOID();
}

/*
 * dlsm_enqueue(queue regclass, entity text, kind text, payload jsonb,
 *				run_at timestamptz) RETURNS bigint
 */
Datum
dlsm_enqueue(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	int64		id;

	require_arg(fcinfo, 1, "entity");
	require_arg(fcinfo, 2, "kind");
	queue = open_queue(fcinfo, ACL_SELECT | ACL_INSERT);
	id = dlsm_state_enqueue(queue, PG_GETARG_DATUM(1), PG_GETARG_DATUM(2),
							PG_ARGISNULL(3) ? (Datum) 0 : PG_GETARG_DATUM(3),
							PG_ARGISNULL(3),
							PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4),
							PG_ARGISNULL(4));
	close_queue();
	PG_RETURN_INT64(id);
}

/* Put one claimed row into the function's result. */
static void
emit_claimed(void *arg, HeapTuple tuple, TupleDesc desc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[7];
	bool		nulls[7];

	heap_deform_tuple(tuple, desc, values, nulls);
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
	DlsmClaimArgs args;
	int64		wait_us;

	require_arg(fcinfo, 3, "after");
	require_arg(fcinfo, 4, "wait");
	require_arg(fcinfo, 5, "units");
	args.lease_us = lease_arg(fcinfo, 1);
	args.process_id = PG_ARGISNULL(2) ? NULL : PG_GETARG_UUID_P(2);
	args.after = PG_GETARG_INT64(3);
	if (!interval_usecs(PG_GETARG_INTERVAL_P(4), &wait_us))
		wait_us = WAIT_FOREVER_US;
	if (wait_us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	args.wait_us = wait_us >= WAIT_FOREVER_US ? -1 : wait_us;
	args.units = PG_GETARG_INT32(5);
	if (args.units < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("units must be at least 1")));
	require_read_committed("dlsm_claim");

	InitMaterializedSRF(fcinfo, 0);
	args.queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	dlsm_state_claim(&args, emit_claimed, fcinfo->resultinfo);
	close_queue();
	return (Datum) 0;
}

/*
 * dlsm_group_updates(queue regclass, entity text, process_id uuid)
 * RETURNS bigint
 */
Datum
dlsm_group_updates(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	int64		n;

	require_arg(fcinfo, 1, "entity");
	require_arg(fcinfo, 2, "process_id");
	require_read_committed("dlsm_group_updates");
	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	n = dlsm_state_group(queue, text_to_cstring(PG_GETARG_TEXT_PP(1)),
						 PG_GETARG_UUID_P(2),
						 (int64) dlsm_default_lease * USECS_PER_SEC);
	close_queue();
	PG_RETURN_INT64(n);
}

/*
 * dlsm_settle(queue regclass, process_id uuid, outcome text, detail text,
 *			   retry_after interval) RETURNS bigint
 */
Datum
dlsm_settle(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	DlsmOutcome outcome;
	Interval   *retry_after;
	int64		n;

	require_arg(fcinfo, 1, "process_id");
	outcome = outcome_arg(fcinfo, 2);
	retry_after = retry_after_arg(fcinfo, 4, outcome);
	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	n = dlsm_state_settle(queue, PG_GETARG_UUID_P(1), outcome,
						  text_arg_or_null(fcinfo, 3), retry_after);
	close_queue();
	PG_RETURN_INT64(n);
}

/* Put one (process_id, settled) row into the function's result. */
static void
emit_settled(void *arg, pg_uuid_t *process_id, int64 settled)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[2] = {UUIDPGetDatum(process_id), Int64GetDatum(settled)};
	bool		nulls[2] = {false, false};

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
	DlsmQueue  *queue;
	DlsmOutcome outcome;
	Interval   *retry_after;
	ArrayType  *process_ids;

	require_arg(fcinfo, 1, "process_ids");
	process_ids = PG_GETARG_ARRAYTYPE_P(1);
	if (ARR_NDIM(process_ids) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("process_ids must be a one-dimensional array")));
	if (array_contains_nulls(process_ids))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("process_ids must not contain nulls")));
	outcome = outcome_arg(fcinfo, 2);
	retry_after = retry_after_arg(fcinfo, 4, outcome);

	InitMaterializedSRF(fcinfo, 0);
	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	dlsm_state_settle_many(queue, process_ids, outcome,
						   text_arg_or_null(fcinfo, 3), retry_after,
						   emit_settled, fcinfo->resultinfo);
	close_queue();
	return (Datum) 0;
}

/*
 * dlsm_heartbeat(queue regclass, process_id uuid, lease interval)
 * RETURNS timestamptz
 */
Datum
dlsm_heartbeat(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	int64		lease_us;
	TimestampTz until;

	require_arg(fcinfo, 1, "process_id");
	lease_us = lease_arg(fcinfo, 2);
	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	until = dlsm_state_heartbeat(queue, PG_GETARG_UUID_P(1), lease_us);
	close_queue();
	PG_RETURN_TIMESTAMPTZ(until);
}

/* dlsm_reap(queue regclass) RETURNS bigint */
Datum
dlsm_reap(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;
	int64		n;

	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	n = dlsm_state_reap(queue);
	close_queue();
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

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	queue = dlsm_queue_find(RelationGetRelid(trigdata->tg_relation));
	if (queue != NULL)
	{
		dlsm_notify_queue(queue->channel);
		dlsm_state_wake_at_commit();
		if (OidIsValid(queue->handler))
			dlsm_state_wake_worker_at_commit();
	}
	close_queue();
	return PointerGetDatum(NULL);
}

/* dlsm_set_handler(queue regclass, handler regproc) RETURNS void */
Datum
dlsm_set_handler(PG_FUNCTION_ARGS)
{
	DlsmQueue  *queue;

	queue = open_queue(fcinfo, ACL_SELECT | ACL_UPDATE);
	dlsm_queue_set_handler(queue->relid,
						   PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1));
	close_queue();
	PG_RETURN_VOID();
}

/*
 * dlsm_worker_status(): one row per database a worker serves; without
 * preloading, one row for this database saying that no worker runs.
 */
Datum
dlsm_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DlsmWorkerSlot *slots = palloc(sizeof(DlsmWorkerSlot) * DLSM_MAX_DATABASES);
	int			n = dlsm_shmem_copy_slots(slots);

	InitMaterializedSRF(fcinfo, 0);
	if (!dlsm_shmem_available())
	{
		Datum		values[10] = {0};
		bool		nulls[10] = {false, true, true, true, false, false, false,
		false, false, false};

		values[0] = CStringGetDatum(get_database_name(MyDatabaseId));
		values[0] = DirectFunctionCall1(namein, values[0]);
		values[7] = CStringGetTextDatum("dlsm is not in shared_preload_libraries: no worker runs");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	for (int i = 0; i < n; i++)
	{
		DlsmWorkerSlot *slot = &slots[i];
		char	   *dbname = get_database_name(slot->dboid);
		Datum		values[10];
		bool		nulls[10] = {false};

		if (dbname == NULL)
			continue;
		values[0] = DirectFunctionCall1(namein, CStringGetDatum(dbname));
		values[1] = Int32GetDatum(slot->worker_pid);
		nulls[1] = slot->worker_pid == 0;
		values[2] = TimestampTzGetDatum(slot->started_at);
		nulls[2] = slot->started_at == 0;
		values[3] = TimestampTzGetDatum(slot->last_reap_at);
		nulls[3] = slot->last_reap_at == 0;
		values[4] = Int64GetDatum(slot->reaped);
		values[5] = Int64GetDatum(slot->handled);
		values[6] = Int64GetDatum(slot->errors);
		values[7] = CStringGetTextDatum(slot->last_error);
		nulls[7] = slot->last_error[0] == '\0';
		values[8] = Int64GetDatum(slot->deleted);
		values[9] = Int64GetDatum(slot->wakeups);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * dlsm_queue_stats(): one row per queue of this database the caller may
 * read; members of pg_monitor may read them all.
 */
Datum
dlsm_queue_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		monitor = has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
	List	   *relids;
	ListCell   *lc;
	int			natts;

	InitMaterializedSRF(fcinfo, 0);

	/*
	 * The columns the installed SQL declares: 1.0's function lacks the last
	 * one until ALTER EXTENSION dlsm UPDATE, and is served as it is.
	 */
	natts = rsinfo->setDesc->natts;
	if (natts != DLSM_STATS_COLUMNS && natts != DLSM_STATS_COLUMNS_1_0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s declares %d result columns, but dlsm_queue_stats serves %d or %d",
						format_procedure(fcinfo->flinfo->fn_oid), natts,
						DLSM_STATS_COLUMNS_1_0, DLSM_STATS_COLUMNS),
				 errhint("Run ALTER EXTENSION dlsm UPDATE.")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	relids = dlsm_queue_list();
	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		bool		readable = pg_class_aclcheck(relid, GetUserId(),
												 ACL_SELECT) == ACLCHECK_OK;
		DlsmQueue  *queue;
		Datum		values[DLSM_STATS_COLUMNS];
		bool		nulls[DLSM_STATS_COLUMNS];
		DlsmIdentity saved;

		if (!readable && !monitor)
			continue;
		queue = dlsm_queue_find(relid);
		if (queue == NULL)
			continue;
		values[0] = ObjectIdGetDatum(relid);
		nulls[0] = false;
		/* a monitor reads the queue as its owner */
		dlsm_identity_switch(readable ? GetUserId() : queue->owner, &saved);
		dlsm_state_stats(queue, values + 1, nulls + 1);
		dlsm_identity_restore(&saved);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	close_queue();
	return (Datum) 0;
}

/*
 * dlsm_launcher_wake(): the launcher looks at every database when this
 * transaction commits (the extension is visible to the worker only then).
 */
Datum
dlsm_launcher_wake(PG_FUNCTION_ARGS)
{
	dlsm_state_wake_launcher_at_commit();
	PG_RETURN_VOID();
}

/* The lock name argument argno: not NULL, not empty. */
static char *
lock_name_arg(FunctionCallInfo fcinfo, int argno)
{
	char	   *name;

	require_arg(fcinfo, argno, "name");
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
	char	   *name = lock_name_arg(fcinfo, 0);
	int64		wait_us;
	int64		lease_us = 0;
	bool		granted;
	Datum		fence;

	require_arg(fcinfo, 1, "wait");
	if (!interval_usecs(PG_GETARG_INTERVAL_P(1), &wait_us))
		wait_us = WAIT_FOREVER_US;
	if (wait_us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	if (wait_us >= WAIT_FOREVER_US)
		wait_us = -1;
	if (!PG_ARGISNULL(2))
		lease_us = lease_arg(fcinfo, 2);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	fence = dlsm_named_try(name, wait_us, lease_us, &granted);
	close_queue();
	if (!granted)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(fence);
}

/* dlsm_unlock(name text, fence bigint) RETURNS boolean */
Datum
dlsm_unlock(PG_FUNCTION_ARGS)
{
	char	   *name = lock_name_arg(fcinfo, 0);
	bool		released;

	require_arg(fcinfo, 1, "fence");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	released = dlsm_named_unlock(name, PG_GETARG_INT64(1));
	close_queue();
	PG_RETURN_BOOL(released);
}

/* dlsm_refresh_lock(name text, fence bigint, lease interval) RETURNS timestamptz */
Datum
dlsm_refresh_lock(PG_FUNCTION_ARGS)
{
	char	   *name = lock_name_arg(fcinfo, 0);
	int64		lease_us;
	TimestampTz until;

	require_arg(fcinfo, 1, "fence");
	require_arg(fcinfo, 2, "lease");
	lease_us = lease_arg(fcinfo, 2);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	until = dlsm_named_refresh(name, PG_GETARG_INT64(1), lease_us);
	close_queue();
	PG_RETURN_TIMESTAMPTZ(until);
}

/*
 * dlsm_locks(): the named locks of this database: one row per lease, per
 * transaction-scope holder and per waiter, with the waiters' places in line.
 */
Datum
dlsm_locks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DlsmNamedEntry *named = palloc(sizeof(DlsmNamedEntry) * DLSM_MAX_NAMED);
	int			n = dlsm_shmem_copy_named(named);
	TimestampTz now = GetCurrentTimestamp();

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (dlsm_plan_read_catalog_latest(DLSM_C_LEASE_LIST, NULL, NULL, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "unexpected result from listing leases");

	/* leases: name, fence, holder, acquired_at, lease_until */
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[9];
		bool		nulls[9] = {false};
		bool		isnull;
		char	   *name = SPI_getvalue(SPI_tuptable->vals[r],
										SPI_tuptable->tupdesc, 1);
		char		clipped[DLSM_NAMED_LEN];
		int			waiters = 0;

		dlsm_shmem_clip_name(name, clipped);
		for (int i = 0; i < n; i++)
			waiters += named[i].waiting &&
				strcmp(named[i].name, clipped) == 0;
		values[0] = CStringGetTextDatum(name);
		values[1] = CStringGetTextDatum("lease");
		values[2] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 2, &isnull);
		values[3] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 3, &nulls[3]);
		values[4] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 4, &isnull);
		values[5] = SPI_getbinval(SPI_tuptable->vals[r], SPI_tuptable->tupdesc, 5, &isnull);
		values[6] = Int32GetDatum(waiters);
		values[7] = Int32GetDatum(0);
		values[8] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										values[4]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	/* transaction-scope holders and every waiter */
	for (int i = 0; i < n; i++)
	{
		DlsmNamedEntry *e = &named[i];
		Datum		values[9];
		bool		nulls[9] = {false};
		int			waiters = 0;
		int			position = 0;

		if (!e->waiting && e->lease)
			continue;			/* shown from dlsm_leases */
		for (int j = 0; j < n; j++)
		{
			if (!named[j].waiting || strcmp(named[j].name, e->name) != 0)
				continue;
			waiters++;
			if (e->waiting && named[j].since <= e->since)
				position++;
		}
		values[0] = CStringGetTextDatum(e->name);
		values[1] = CStringGetTextDatum(e->waiting ? "waiting" : "transaction");
		values[2] = Int64GetDatum(e->fence);
		nulls[2] = e->waiting;
		values[3] = CStringGetTextDatum(psprintf("pid %d", (int) e->pid));
		values[4] = TimestampTzGetDatum(e->since);
		nulls[4] = e->waiting;
		nulls[5] = true;
		values[6] = Int32GetDatum(waiters);
		values[7] = Int32GetDatum(position);
		values[8] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										TimestampTzGetDatum(e->since));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	close_queue();
	return (Datum) 0;
}

/*
 * dlsm_capture(source regclass, queue regclass, kind text,
 *				entity_column name, columns name[]) RETURNS void
 */
Datum
dlsm_capture(PG_FUNCTION_ARGS)
{
	Oid			source;
	Oid			relid;
	DlsmQueue  *queue;

	require_arg(fcinfo, 0, "source");
	require_arg(fcinfo, 1, "queue");
	require_arg(fcinfo, 2, "kind");
	source = PG_GETARG_OID(0);
	relid = PG_GETARG_OID(1);
	if (!PG_ARGISNULL(4) && ARR_NDIM(PG_GETARG_ARRAYTYPE_P(4)) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("columns must be a one-dimensional array")));
	/* the capture inserts into the queue as the caller */
	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(relid));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	queue = dlsm_queue_get(relid);
	dlsm_capture_attach(source, queue, text_to_cstring(PG_GETARG_TEXT_PP(2)),
						PG_ARGISNULL(3) ? NULL : NameStr(*PG_GETARG_NAME(3)),
						PG_ARGISNULL(4) ? NULL : PG_GETARG_ARRAYTYPE_P(4));
	close_queue();
	PG_RETURN_VOID();
}

/* dlsm_uncapture(source regclass, queue regclass) RETURNS void */
Datum
dlsm_uncapture(PG_FUNCTION_ARGS)
{
	require_arg(fcinfo, 0, "source");
	require_arg(fcinfo, 1, "queue");
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	dlsm_capture_detach(PG_GETARG_OID(0), PG_GETARG_OID(1));
	close_queue();
	PG_RETURN_VOID();
}

/* dlsm_capture_trigger(): the row trigger dlsm_capture attaches. */
Datum
dlsm_capture_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("dlsm_capture_trigger() must be called as an AFTER row trigger")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	dlsm_capture_row(trigdata);
	close_queue();
	return PointerGetDatum(NULL);
}
