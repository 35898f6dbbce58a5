/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher of dlsm's per-database workers.
 *
 * The launcher (registered while preloading, started once recovery has
 * finished, restarted by the postmaster) connects to no database.  Every
 * LAUNCHER_NAP_MS, and whenever poked (CREATE EXTENSION, a worker that
 * stopped), it lists the databases that allow connections, keeps those
 * named in dlsm.databases (all when empty), and starts a dynamic worker for
 * each that has none (worker.c).  Whether one may start now is shmem.c's
 * decision: a worker that found no dlsm in its database keeps the launcher
 * away from it for a while unless poked, a database being dropped keeps it
 * away for good, and starts of one database are at least RESTART_PAUSE_MS
 * apart.
 *
 * Calls shmem.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/launcher.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "compat.h"
#include "guc.h"
#include "shmem.h"
#include "launcher.h"

#define LAUNCHER_NAP_MS			5000	/* launcher looks at databases */
#define RESTART_PAUSE_MS		1000	/* between starts of one worker */

typedef struct LauncherDb
{
	Oid			dboid;
	char		name[NAMEDATALEN];
} LauncherDb;

/* Fill bgw for one of dlsm's background workers. */
static void
worker_fill(BackgroundWorker *bgw, const char *function, const char *type)
{
	memset(bgw, 0, sizeof(BackgroundWorker));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	strlcpy(bgw->bgw_library_name, "dlsm", BGW_MAXLEN);
	strlcpy(bgw->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(bgw->bgw_type, type, BGW_MAXLEN);
}

/* Register the launcher while preloading; called from _PG_init. */
void
dlsm_launcher_init(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress)
		return;
	worker_fill(&bgw, "dlsm_launcher_main", "dlsm launcher");
	strlcpy(bgw.bgw_name, "dlsm launcher", BGW_MAXLEN);
	bgw.bgw_restart_time = 1;
	RegisterBackgroundWorker(&bgw);
}

/* Is database name wanted by dlsm.databases (wanted: its list)? */
static bool
database_wanted(List *wanted, const char *name)
{
	ListCell   *lc;

	if (wanted == NIL)
		return true;
	foreach(lc, wanted)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/* The databases the workers may serve, per dlsm.databases. */
static List *
eligible_databases(void)
{
	List	   *result = NIL;
	List	   *wanted = NIL;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	MemoryContext caller = CurrentMemoryContext;

	(void) SplitIdentifierString(pstrdup(dlsm_databases), ',', &wanted);
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
		MemoryContext old;
		LauncherDb *entry;

		if (!db->datallowconn || db->datistemplate ||
			DLSM_DATABASE_IS_INVALID(db) ||
			!database_wanted(wanted, NameStr(db->datname)))
			continue;
		old = MemoryContextSwitchTo(caller);
		entry = palloc(sizeof(LauncherDb));
		entry->dboid = db->oid;
		strlcpy(entry->name, NameStr(db->datname), NAMEDATALEN);
		result = lappend(result, entry);
		MemoryContextSwitchTo(old);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

static void
start_worker(LauncherDb *db)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	worker_fill(&bgw, "dlsm_worker_main", "dlsm worker");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "dlsm worker for database %s",
			 db->name);
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	bgw.bgw_main_arg = ObjectIdGetDatum(db->dboid);
	bgw.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		ereport(LOG,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start dlsm worker for database \"%s\"",
						db->name),
				 errhint("You may need to increase \"max_worker_processes\".")));
		return;
	}
	pfree(handle);
}

/* One look at the databases: start the workers that are missing. */
static void
launcher_pass(void)
{
	List	   *databases = eligible_databases();
	Oid		   *keep = palloc(sizeof(Oid) * Max(list_length(databases), 1));
	int			nkeep = 0;
	ListCell   *lc;

	foreach(lc, databases)
		keep[nkeep++] = ((LauncherDb *) lfirst(lc))->dboid;
	dlsm_shmem_forget_databases(keep, nkeep);
	foreach(lc, databases)
	{
		LauncherDb *db = lfirst(lc);

		switch (dlsm_shmem_may_start(db->dboid, RESTART_PAUSE_MS))
		{
			case DLSM_START_NOW:
				start_worker(db);
				break;
			case DLSM_START_LATER:
				break;
			case DLSM_START_NO_SLOT:
				ereport(LOG,
						(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
						 errmsg("could not start dlsm worker for database \"%s\"",
								db->name),
						 errdetail("dlsm serves at most %d databases.",
								   DLSM_MAX_DATABASES)));
				break;
		}
	}
}

void
dlsm_launcher_main(Datum main_arg)
{
	MemoryContext loop_context;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	if (!dlsm_shmem_launcher_attach())
	{
		ereport(LOG, (errmsg("dlsm launcher already running")));
		proc_exit(0);
	}
	ereport(LOG, (errmsg("dlsm launcher started")));

	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm launcher loop",
										 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		MemoryContextSwitchTo(loop_context);
		launcher_pass();
		MemoryContextReset(loop_context);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 LAUNCHER_NAP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
