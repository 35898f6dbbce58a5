/*-------------------------------------------------------------------------
 *
 * views.c
 *	  The SQL-callable functions behind dlsm's monitoring views:
 *	  dlsm_worker_status, dlsm_queue_stats and dlsm_locks.
 *
 * They only read, and work on a hot standby too.  Each fills the columns
 * the installed SQL declares: a function of an older version that declares
 * fewer columns (they are only ever added at the end) gets the first ones.
 * dlsm_queue_stats reads each queue as the queue's owner, for callers who
 * may read that queue (SELECT on it, or pg_monitor): the owner's policies
 * and expressions run as the owner only, and a queue that dlsm refuses
 * (row-level security) shows NULL counts instead of failing the view.
 *
 * Calls queue.c, state.c, plans.c, identity.c, names.c, namedlock.c,
 * notify.c, pool.c and capacity.c; nothing calls it.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/views.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "catalog/pg_class.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "capacity.h"
#include "identity.h"
#include "namedlock.h"
#include "names.h"
#include "notify.h"
#include "plans.h"
#include "pool.h"
#include "queue.h"
#include "state.h"

PG_FUNCTION_INFO_V1(dlsm_worker_status);
PG_FUNCTION_INFO_V1(dlsm_queue_stats);
PG_FUNCTION_INFO_V1(dlsm_locks);
PG_FUNCTION_INFO_V1(dlsm_shared_tables);

/* The columns of dlsm_worker_status. */
enum
{
	WS_DATABASE, WS_PID, WS_STARTED_AT, WS_LAST_REAP_AT, WS_REAPED,
	WS_HANDLED, WS_ERRORS, WS_LAST_ERROR, WS_DELETED, WS_WAKEUPS,
	WS_SKIPPED, WS_STATE, WS_LAST_PASS_AGE, WS_PRODUCER_NOTIFIES,
	WS_CROWDED_NOTIFIES, WS_NCOLS
};

/* dlsm_worker_status.state, by DlsmServedState. */
static const char *const served_names[] = {
	[DLSM_SERVED_SERVING] = "serving",
	[DLSM_SERVED_STARTING] = "starting",
	[DLSM_SERVED_BETWEEN] = "between visits",
	[DLSM_SERVED_WAITING] = "waiting for a worker",
	[DLSM_SERVED_NOT_PRELOADED] = "not preloaded",
	[DLSM_SERVED_NO_SLOT] = "no slot"
};

/*
 * The columns of dlsm_queue_stats: the queue, then A_STATS_* - 1 + 1, then
 * whether the planner has statistics of the table (1.6).
 */
enum
{
	QS_QUEUE, QS_FIRST_STAT, QS_HAS_STATISTICS = QS_FIRST_STAT + N_STATS - 1,
	QS_NCOLS
};

/* The columns of dlsm_locks. */
enum
{
	LK_NAME, LK_SCOPE, LK_FENCE, LK_HOLDER, LK_ACQUIRED_AT, LK_LEASE_UNTIL,
	LK_WAITERS, LK_POSITION, LK_AGE, LK_NCOLS
};

/* The columns of dlsm_shared_tables. */
enum
{
	ST_NAME, ST_CAPACITY, ST_USED, ST_FULL, ST_NCOLS
};

/*
 * Start a set-returning function whose SQL declares at least min and at
 * most max columns; returns how many it declares.
 */
static int
begin_view(FunctionCallInfo fcinfo, int min, int max)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			natts;

	InitMaterializedSRF(fcinfo, 0);
	natts = rsinfo->setDesc->natts;
	if (natts < min || natts > max)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s declares %d result columns, but the dlsm library serves %d to %d",
						format_procedure(fcinfo->flinfo->fn_oid), natts,
						min, max),
				 errhint("Run ALTER EXTENSION dlsm UPDATE.")));
	return natts;
}

static void
put_row(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* One row of dlsm_worker_status from a worker's slot, at now. */
static void
worker_row(DlsmWorkerInfo *w, TimestampTz now, Datum *values, bool *nulls)
{
	char	   *dbname = get_database_name(w->dboid);
	TimestampTz since = w->last_reap_at != 0 ? w->last_reap_at : w->listed_at;
	int64		producer_notifies;
	int64		crowded_notifies;

	values[WS_DATABASE] = DirectFunctionCall1(namein,
											  CStringGetDatum(dbname ? dbname : "?"));
	values[WS_PID] = Int32GetDatum(w->pid);
	nulls[WS_PID] = w->pid == 0;
	values[WS_STARTED_AT] = TimestampTzGetDatum(w->started_at);
	nulls[WS_STARTED_AT] = w->started_at == 0;
	values[WS_LAST_REAP_AT] = TimestampTzGetDatum(w->last_reap_at);
	nulls[WS_LAST_REAP_AT] = w->last_reap_at == 0;
	values[WS_REAPED] = Int64GetDatum(w->counts.reaped);
	values[WS_HANDLED] = Int64GetDatum(w->counts.handled);
	values[WS_ERRORS] = Int64GetDatum(w->counts.errors);
	values[WS_LAST_ERROR] = CStringGetTextDatum(w->last_error);
	nulls[WS_LAST_ERROR] = w->last_error[0] == '\0';
	values[WS_DELETED] = Int64GetDatum(w->counts.deleted);
	values[WS_WAKEUPS] = Int64GetDatum(w->counts.wakeups);
	values[WS_SKIPPED] = Int64GetDatum(w->counts.skipped);
	values[WS_STATE] = CStringGetTextDatum(served_names[w->state]);
	values[WS_LAST_PASS_AGE] = DirectFunctionCall2(timestamp_mi,
												   TimestampTzGetDatum(now),
												   TimestampTzGetDatum(since));
	nulls[WS_LAST_PASS_AGE] = since == 0;
	dlsm_notify_producer_counts(w->dboid, &producer_notifies,
								&crowded_notifies);
	values[WS_PRODUCER_NOTIFIES] = Int64GetDatum(producer_notifies);
	values[WS_CROWDED_NOTIFIES] = Int64GetDatum(crowded_notifies);
}

/*
 * dlsm_worker_status(): one row per database the workers serve, with where
 * it stands (a worker in it, between two visits, waiting for a worker) and
 * how long since its last pass, and its producers that notified listeners
 * in their own commits (1.6); without preloading, one row for this
 * database saying that no worker runs.  A function of 1.2 declares the
 * columns up to skipped.
 */
Datum
dlsm_worker_status(PG_FUNCTION_ARGS)
{
	DlsmWorkerInfo *workers;
	int			n = dlsm_pool_copy_workers(&workers);
	TimestampTz now = GetCurrentTimestamp();

	(void) begin_view(fcinfo, WS_SKIPPED, WS_NCOLS);
	if (!dlsm_pool_available())
	{
		DlsmWorkerInfo none = {MyDatabaseId};

		none.state = DLSM_SERVED_NOT_PRELOADED;

		strlcpy(none.last_error,
				"dlsm is not in shared_preload_libraries: no worker runs",
				DLSM_ERROR_LEN);
		workers[n++] = none;
	}
	for (int i = 0; i < n; i++)
	{
		Datum		values[WS_NCOLS];
		bool		nulls[WS_NCOLS] = {false};

		if (get_database_name(workers[i].dboid) == NULL)
			continue;
		worker_row(&workers[i], now, values, nulls);
		put_row(fcinfo, values, nulls);
	}
	return (Datum) 0;
}

/*
 * Has the planner statistics of relid's table?  False when it was never
 * analysed (nor vacuumed), or analysed empty: its plans then assume a
 * table of a few pages, as plans.c's size_without_statistics says.  Reads
 * pg_class only, so it costs nothing more than the row's look-up.
 */
static bool
has_statistics(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	bool		result = true;

	if (!HeapTupleIsValid(tuple))
		return false;
	form = (Form_pg_class) GETSTRUCT(tuple);
	if (RELKIND_HAS_STORAGE(form->relkind) &&
		(form->reltuples < 0 || form->relpages == 0))
		result = false;
	ReleaseSysCache(tuple);
	return result;
}

/* The row of dlsm_queue_stats of queue relid, read as its owner. */
static void
queue_stats_row(Oid relid, Datum *values, bool *nulls)
{
	DlsmQueue  *queue = dlsm_queue_open(relid, DLSM_QUEUE_MISSING_OK |
										DLSM_QUEUE_ANY_SECURITY |
										DLSM_QUEUE_ANY_SHAPE);
	DlsmIdentity saved;

	values[QS_QUEUE] = ObjectIdGetDatum(relid);
	nulls[QS_QUEUE] = false;
	for (int i = QS_FIRST_STAT; i < QS_NCOLS; i++)
		nulls[i] = true;
	if (queue == NULL)
		return;
	/* a queue that no longer fits dlsm shows no counts, as one with RLS */
	if (!queue->row_security && !queue->misfit)
	{
		dlsm_identity_switch_pinned(queue->owner, &saved);
		dlsm_state_stats(queue, values + QS_FIRST_STAT, nulls + QS_FIRST_STAT);
		dlsm_identity_restore(&saved);
	}
	values[QS_HAS_STATISTICS] = BoolGetDatum(has_statistics(relid));
	nulls[QS_HAS_STATISTICS] = false;
	dlsm_queue_close(queue);
}

/*
 * dlsm_queue_stats(): one row per queue of this database the caller may
 * read; members of pg_monitor may read them all.
 */
Datum
dlsm_queue_stats(PG_FUNCTION_ARGS)
{
	bool		monitor = has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
	ListCell   *lc;

	/* 1.0 declared the columns up to last_autovacuum */
	(void) begin_view(fcinfo, QS_FIRST_STAT + A_STATS_LAST_AUTOVACUUM,
					  QS_NCOLS);
	dlsm_plan_connect();
	foreach(lc, dlsm_queue_list())
	{
		Oid			relid = lfirst_oid(lc);
		Datum		values[QS_NCOLS];
		bool		nulls[QS_NCOLS];

		if (!monitor &&
			pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			continue;
		queue_stats_row(relid, values, nulls);
		put_row(fcinfo, values, nulls);
	}
	dlsm_plan_finish();
	return (Datum) 0;
}

/* How many entries of named wait for name; *position: e's place among them. */
static int
waiters_for(DlsmNamedEntry *named, int n, const char *name,
			DlsmNamedEntry *e, int *position)
{
	int			waiters = 0;

	*position = 0;
	for (int j = 0; j < n; j++)
	{
		if (!named[j].waiting || strcmp(named[j].name, name) != 0)
			continue;
		waiters++;
		if (e != NULL && e->waiting && named[j].since <= e->since)
			(*position)++;
	}
	return waiters;
}

/* One row of dlsm_locks for the lease in row r of the last result. */
static void
lease_row(uint64 r, DlsmNamedEntry *named, int n, TimestampTz now,
		  Datum *values, bool *nulls)
{
	char	   *name = dlsm_plan_text(r, A_LEASE_LIST_NAME);
	char		clipped[DLSM_NAMED_LEN];
	int			position;
	bool		isnull;

	dlsm_name_clip(name, clipped, DLSM_NAMED_LEN);
	values[LK_NAME] = CStringGetTextDatum(name);
	values[LK_SCOPE] = CStringGetTextDatum("lease");
	values[LK_FENCE] = dlsm_plan_value(r, A_LEASE_LIST_FENCE, &isnull);
	values[LK_HOLDER] = dlsm_plan_value(r, A_LEASE_LIST_HOLDER,
										&nulls[LK_HOLDER]);
	values[LK_ACQUIRED_AT] = dlsm_plan_value(r, A_LEASE_LIST_ACQUIRED_AT,
											 &isnull);
	values[LK_LEASE_UNTIL] = dlsm_plan_value(r, A_LEASE_LIST_UNTIL, &isnull);
	values[LK_WAITERS] = Int32GetDatum(waiters_for(named, n, clipped, NULL,
												   &position));
	values[LK_POSITION] = Int32GetDatum(0);
	values[LK_AGE] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										 values[LK_ACQUIRED_AT]);
}

/* One row of dlsm_locks for a transaction-scope holder or a waiter. */
static void
entry_row(DlsmNamedEntry *e, DlsmNamedEntry *named, int n, TimestampTz now,
		  Datum *values, bool *nulls)
{
	int			position;
	int			waiters = waiters_for(named, n, e->name, e, &position);

	values[LK_NAME] = CStringGetTextDatum(e->name);
	values[LK_SCOPE] = CStringGetTextDatum(e->waiting ? "waiting" : "transaction");
	values[LK_FENCE] = Int64GetDatum(e->fence);
	nulls[LK_FENCE] = e->waiting;
	values[LK_HOLDER] = CStringGetTextDatum(psprintf("pid %d", (int) e->pid));
	values[LK_ACQUIRED_AT] = TimestampTzGetDatum(e->since);
	nulls[LK_ACQUIRED_AT] = e->waiting;
	nulls[LK_LEASE_UNTIL] = true;
	values[LK_WAITERS] = Int32GetDatum(waiters);
	values[LK_POSITION] = Int32GetDatum(position);
	values[LK_AGE] = DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(now),
										 TimestampTzGetDatum(e->since));
}

/*
 * dlsm_locks(): the named locks of this database: one row per lease, per
 * transaction-scope holder and per waiter, with the waiters' places in line.
 */
Datum
dlsm_locks(PG_FUNCTION_ARGS)
{
	DlsmNamedEntry *named = palloc(sizeof(DlsmNamedEntry) * DLSM_MAX_NAMED);
	int			n = dlsm_named_copy_entries(named);
	TimestampTz now = GetCurrentTimestamp();

	(void) begin_view(fcinfo, LK_NCOLS, LK_NCOLS);
	dlsm_plan_connect();
	dlsm_plan_read_catalog(DLSM_C_LEASE_LIST, NULL, NULL, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		Datum		values[LK_NCOLS];
		bool		nulls[LK_NCOLS] = {false};

		lease_row(r, named, n, now, values, nulls);
		put_row(fcinfo, values, nulls);
	}
	for (int i = 0; i < n; i++)
	{
		Datum		values[LK_NCOLS];
		bool		nulls[LK_NCOLS] = {false};

		if (!named[i].waiting && named[i].lease)
			continue;			/* shown from dlsm_leases */
		entry_row(&named[i], named, n, now, values, nulls);
		put_row(fcinfo, values, nulls);
	}
	dlsm_plan_finish();
	return (Datum) 0;
}

/*
 * dlsm_shared_tables(): one row per fixed-size table of dlsm's shared
 * memory (none without preloading): its capacity, the entries in use, and
 * how many times since the server started an entry found no room
 * (capacity.c gathers them).  Each owner (floor.c, rate.c, pool.c,
 * namedlock.c, notify.c) says what it does then.
 */
Datum
dlsm_shared_tables(PG_FUNCTION_ARGS)
{
	DlsmTableUsage tables[DLSM_MAX_TABLES];
	int			n;

	(void) begin_view(fcinfo, ST_NCOLS, ST_NCOLS);
	n = dlsm_capacity_tables(tables);
	for (int i = 0; i < n; i++)
	{
		Datum		values[ST_NCOLS];
		bool		nulls[ST_NCOLS] = {false};

		values[ST_NAME] = CStringGetTextDatum(tables[i].name);
		values[ST_CAPACITY] = Int64GetDatum(tables[i].capacity);
		values[ST_USED] = Int64GetDatum(tables[i].used);
		values[ST_FULL] = Int64GetDatum(tables[i].full);
		put_row(fcinfo, values, nulls);
	}
	return (Datum) 0;
}
