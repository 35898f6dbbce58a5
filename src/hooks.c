/*-------------------------------------------------------------------------
 *
 * hooks.c
 *	  dlsm's utility hook: LISTEN counting, NOTIFY dlsm, 'reap', and
 *	  workers out of the way of commands that need a database to
 *	  themselves.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME or SET TABLESPACE and CREATE
 * DATABASE ... TEMPLATE wait for no other session in the database: before
 * them, the database's worker and relay (notify.c) are asked to stop and
 * kept from starting again for STOP_PAUSE_MS (for the database's owner only: others are
 * refused by the command anyway).  LISTEN and UNLISTEN are passed to
 * notify.c, which counts the client backends that listen; NOTIFY dlsm,
 * 'reap' asks the database's worker to reap when it commits (wake.c);
 * COMMIT PREPARED and ROLLBACK PREPARED reset the floors of the
 * database's queues (floor.c); TRUNCATE has the floors of the tables it
 * names forgotten at its commit (wake.c).
 *
 * Calls notify.c, wake.c, floor.c, pool.c and waits.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/hooks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "floor.h"
#include "hooks.h"
#include "notify.h"
#include "pool.h"
#include "waits.h"
#include "wake.h"

#define STOP_PAUSE_MS			10000	/* after DROP/RENAME DATABASE */
#define STOP_WAIT_MS			5000	/* wait for a stopped worker */

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/*
 * Stop a process of database dboid, its worker (pool.c) or its relay
 * (notify.c), and keep another from starting for a while: pause says so,
 * sends it SIGTERM and returns its pid (0: none runs), gone whether it
 * exited.  Returns once it is gone or STOP_WAIT_MS passed.
 */
static void
stop_process(Oid dboid, pid_t (*pause) (Oid dboid, int pause_ms),
			 bool (*gone) (Oid dboid, pid_t pid))
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   STOP_WAIT_MS);
	pid_t		pid = pause(dboid, STOP_PAUSE_MS);

	if (pid == 0)
		return;
	while (GetCurrentTimestamp() < deadline && !gone(dboid, pid))
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, dlsm_wait_event(DLSM_WAIT_WORKER_STOP));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Stop the worker and relay of dbname, if the caller may drop or change it. */
static void
stop_worker_of(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);

	if (OidIsValid(dboid) && DLSM_DATABASE_OWNERCHECK(dboid, GetUserId()))
	{
		stop_process(dboid, dlsm_pool_worker_pause, dlsm_pool_worker_gone);
		stop_process(dboid, dlsm_notify_relay_pause, dlsm_notify_relay_gone);
	}
}

/* Does the option list have an option named name (with a value)? */
static DefElem *
find_option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *opt = lfirst_node(DefElem, lc);

		if (strcmp(opt->defname, name) == 0 && opt->arg != NULL)
			return opt;
	}
	return NULL;
}

/* The database stmt needs to itself, or NULL. */
static const char *
database_needed(Node *stmt)
{
	DefElem    *template;

	if (IsA(stmt, DropdbStmt))
		return ((DropdbStmt *) stmt)->dbname;
	if (IsA(stmt, RenameStmt) &&
		((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		return ((RenameStmt *) stmt)->subname;
	if (IsA(stmt, AlterDatabaseStmt) &&
		find_option(((AlterDatabaseStmt *) stmt)->options, "tablespace"))
		return ((AlterDatabaseStmt *) stmt)->dbname;
	if (IsA(stmt, CreatedbStmt) &&
		(template = find_option(((CreatedbStmt *) stmt)->options,
								"template")) != NULL)
		return defGetString(template);
	return NULL;
}

/*
 * NOTIFY dlsm, 'reap': the database's worker reaps at once when the
 * transaction commits (its workers do not listen: notify.c).
 */
static bool
is_reap_request(NotifyStmt *stmt)
{
	return strcmp(stmt->conditionname, "dlsm") == 0 && stmt->payload != NULL &&
		strcmp(stmt->payload, "reap") == 0;
}

/*
 * TRUNCATE ran (and locked the tables it names): each named table's floor,
 * if it is a queue's, is forgotten at the commit.  Tables truncated by
 * CASCADE or as a named one's partitions keep theirs until the floors'
 * own check (floor.c).
 */
static void
truncated(TruncateStmt *stmt)
{
	ListCell   *lc;

	foreach(lc, stmt->relations)
	{
		Oid			relid = RangeVarGetRelid(lfirst_node(RangeVar, lc),
											 NoLock, true);

		if (OidIsValid(relid))
			dlsm_wake_queue_truncated_at_commit(relid);
	}
}

static void
utility_hook(PlannedStmt *pstmt, const char *queryString,
			 bool readOnlyTree, ProcessUtilityContext context,
			 ParamListInfo params, QueryEnvironment *queryEnv,
			 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	const char *dbname;
	bool		prepared_end = false;

	/* COMMIT PREPARED or ROLLBACK PREPARED: acted on once it has run */
	if (IsA(stmt, TransactionStmt))
	{
		TransactionStmtKind kind = ((TransactionStmt *) stmt)->kind;

		prepared_end = kind == TRANS_STMT_COMMIT_PREPARED ||
			kind == TRANS_STMT_ROLLBACK_PREPARED;
	}

	if (IsA(stmt, ListenStmt) || IsA(stmt, UnlistenStmt))
		dlsm_notify_client_listens(stmt);
	else if (IsA(stmt, NotifyStmt) && is_reap_request((NotifyStmt *) stmt))
		dlsm_wake_worker_request_at_commit(DLSM_REQUEST_REAP);
	else if ((dbname = database_needed(stmt)) != NULL)
		stop_worker_of(dbname);

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	/*
	 * A prepared transaction ended: its group slots came free, and its
	 * changes, told to the floors at PREPARE, are visible now or undone
	 */
	if (IsA(stmt, TruncateStmt))
		truncated((TruncateStmt *) stmt);
	if (prepared_end)
	{
		dlsm_floor_prepared_ended(MyDatabaseId);
		dlsm_wait_wake_all();
		/* it may have changed the registry (queue.c) */
		dlsm_pool_worker_request(MyDatabaseId, DLSM_REQUEST_REGISTRY);
	}
}

/* Install the utility hook; called once from _PG_init. */
void
dlsm_hooks_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = utility_hook;
}
