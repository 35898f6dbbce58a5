/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  dlsm's background workers: a launcher and one worker per database.
 *
 * The launcher (registered while preloading, started once recovery has
 * finished, restarted by the postmaster) connects to no database.  Every
 * LAUNCHER_NAP_MS, and whenever poked (CREATE EXTENSION, a worker that
 * stopped), it lists the databases that allow connections, keeps those
 * named in dlsm.databases (all when empty), and starts a dynamic worker for
 * each that has none.  A worker that finds no dlsm extension in its
 * database says so in its slot and exits; the launcher then leaves that
 * database alone for NO_EXTENSION_PAUSE_MS unless poked (a poke that lands
 * while the worker looks cancels the pause).  Such databases give their
 * slot up to databases that need one.
 *
 * A worker listens on the channel "dlsm" and on every queue's channel
 * (notify.c), and loops: drain notifications, reap (every
 * dlsm.reap_interval, or at once on NOTIFY dlsm, 'reap'; expired leases
 * of named locks are deleted in the same pass), run the
 * handlers of handler queues, sleep on its latch.  Each queue is reaped,
 * purged and handled in transactions of its own; an error is logged and
 * counted in the slot, and the worker goes on with the next queue.
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME or SET TABLESPACE and CREATE
 * DATABASE ... TEMPLATE wait for no other session in the database: a
 * utility hook stops the database's worker first (for the database's
 * owner only: others are refused by the command anyway) and keeps the launcher from starting
 * another for STOP_PAUSE_MS.  The same hook counts the client backends
 * that LISTEN (notify.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "compat.h"
#include "dlsm.h"

#define LAUNCHER_NAP_MS			5000	/* launcher looks at databases */
#define NO_EXTENSION_PAUSE_MS	60000	/* a database without dlsm */
#define RESTART_PAUSE_MS		1000	/* between starts of one worker */
#define STOP_PAUSE_MS			10000	/* after DROP/RENAME DATABASE */
#define STOP_WAIT_MS			5000	/* wait for a stopped worker */
#define PURGE_BATCHES			100		/* retention batches per pass */

PGDLLEXPORT void dlsm_launcher_main(Datum main_arg);
PGDLLEXPORT void dlsm_worker_main(Datum main_arg);

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

/* The worker's slot, and what its notifications asked for. */
static DlsmWorkerSlot *my_slot = NULL;
static bool reap_requested = false;
static bool registry_changed = false;
static char *my_dbname = NULL;

/* One queue as the worker's last reaping pass found it. */
typedef struct WorkerQueue
{
	Oid			relid;
	bool		has_handler;
} WorkerQueue;

/* ---------------------------------------------------------------------
 * Slots
 * ---------------------------------------------------------------------
 */

/*
 * The slot of dboid, or when add a free one (or one a database without
 * dlsm holds); NULL if none.  Lock held.
 */
static DlsmWorkerSlot *
slot_for(Oid dboid, bool add)
{
	DlsmWorkerSlot *free_slot = NULL;
	DlsmWorkerSlot *idle_slot = NULL;

	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		DlsmWorkerSlot *slot = &dlsm_shared->slots[i];

		if (slot->dboid == dboid)
			return slot;
		if (free_slot == NULL && slot->dboid == InvalidOid)
			free_slot = slot;
		if (idle_slot == NULL && slot->no_extension && slot->worker_pid == 0)
			idle_slot = slot;
	}
	if (free_slot == NULL)
		free_slot = idle_slot;
	if (add && free_slot != NULL)
	{
		memset(free_slot, 0, sizeof(DlsmWorkerSlot));
		free_slot->dboid = dboid;
		return free_slot;
	}
	return NULL;
}

/* Count an event in this worker's slot; message, if given, is kept. */
static void
slot_count(int64 reaped, int64 deleted, int64 handled, int64 errors,
		   const char *message)
{
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	my_slot->reaped += reaped;
	my_slot->deleted += deleted;
	my_slot->handled += handled;
	my_slot->errors += errors;
	if (message != NULL)
		strlcpy(my_slot->last_error, message, sizeof(my_slot->last_error));
	LWLockRelease(dlsm_shared->lock);
}

static void
worker_detach(int code, Datum arg)
{
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	my_slot->worker_pid = 0;
	my_slot->latch = NULL;
	LWLockRelease(dlsm_shared->lock);
}

static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	dlsm_shared->launcher_pid = 0;
	dlsm_shared->launcher_latch = NULL;
	LWLockRelease(dlsm_shared->lock);
}

/* ---------------------------------------------------------------------
 * Registration and the utility hook
 * ---------------------------------------------------------------------
 */

/*
 * Stop the worker of database dboid and keep the launcher from starting
 * another for a while; returns once it is gone or STOP_WAIT_MS passed.
 */
void
dlsm_worker_wait_gone(Oid dboid)
{
	TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													   STOP_WAIT_MS);
	DlsmWorkerSlot *slot;
	pid_t		pid = 0;

	if (dlsm_shared == NULL)
		return;
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, false);
	if (slot != NULL)
	{
		slot->paused_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														 STOP_PAUSE_MS);
		pid = slot->worker_pid;
	}
	LWLockRelease(dlsm_shared->lock);
	if (pid == 0)
		return;

	kill(pid, SIGTERM);
	while (GetCurrentTimestamp() < deadline)
	{
		bool		gone;

		LWLockAcquire(dlsm_shared->lock, LW_SHARED);
		gone = slot->dboid != dboid || slot->worker_pid != pid;
		LWLockRelease(dlsm_shared->lock);
		if (gone)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Stop the worker of dbname, if the caller may drop or change it. */
static void
stop_worker_of(const char *dbname)
{
	Oid			dboid = get_database_oid(dbname, true);

	if (OidIsValid(dboid) && pg_database_ownercheck(dboid, GetUserId()))
		dlsm_worker_wait_gone(dboid);
}

/* Before commands that need a database to themselves, stop its worker. */
static void
dlsm_utility_hook(PlannedStmt *pstmt, const char *queryString,
				  bool readOnlyTree, ProcessUtilityContext context,
				  ParamListInfo params, QueryEnvironment *queryEnv,
				  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;

	if (IsA(stmt, ListenStmt) || IsA(stmt, UnlistenStmt))
		dlsm_notify_client_listens(stmt);
	else if (IsA(stmt, DropdbStmt))
		stop_worker_of(((DropdbStmt *) stmt)->dbname);
	else if (IsA(stmt, RenameStmt) &&
			 ((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
		stop_worker_of(((RenameStmt *) stmt)->subname);
	else if (IsA(stmt, AlterDatabaseStmt))
	{
		ListCell   *lc;

		foreach(lc, ((AlterDatabaseStmt *) stmt)->options)
			if (strcmp(lfirst_node(DefElem, lc)->defname, "tablespace") == 0)
				stop_worker_of(((AlterDatabaseStmt *) stmt)->dbname);
	}
	else if (IsA(stmt, CreatedbStmt))
	{
		ListCell   *lc;

		foreach(lc, ((CreatedbStmt *) stmt)->options)
		{
			DefElem    *opt = lfirst_node(DefElem, lc);

			if (strcmp(opt->defname, "template") == 0 && opt->arg != NULL)
				stop_worker_of(defGetString(opt));
		}
	}

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
							params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

static void
fill_worker(BackgroundWorker *bgw, const char *function, const char *type)
{
	memset(bgw, 0, sizeof(BackgroundWorker));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	strlcpy(bgw->bgw_library_name, "dlsm", BGW_MAXLEN);
	strlcpy(bgw->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(bgw->bgw_type, type, BGW_MAXLEN);
}

/* Register the launcher and the utility hook while preloading. */
void
dlsm_worker_init(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress)
		return;
	fill_worker(&bgw, "dlsm_launcher_main", "dlsm launcher");
	strlcpy(bgw.bgw_name, "dlsm launcher", BGW_MAXLEN);
	bgw.bgw_restart_time = 1;
	RegisterBackgroundWorker(&bgw);

	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = dlsm_utility_hook;
}

/* ---------------------------------------------------------------------
 * The launcher
 * ---------------------------------------------------------------------
 */

typedef struct LauncherDb
{
	Oid			dboid;
	char		name[NAMEDATALEN];
} LauncherDb;

/* The databases the workers may serve, per dlsm.databases. */
static List *
eligible_databases(void)
{
	List	   *result = NIL;
	List	   *wanted = NIL;
	char	   *copy = pstrdup(dlsm_databases);
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	MemoryContext caller = CurrentMemoryContext;

	(void) SplitIdentifierString(copy, ',', &wanted);

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tuple);
		bool		keep = db->datallowconn && !db->datistemplate &&
			!DLSM_DATABASE_IS_INVALID(db);

		if (keep && wanted != NIL)
		{
			ListCell   *lc;

			keep = false;
			foreach(lc, wanted)
				keep |= strcmp(lfirst(lc), NameStr(db->datname)) == 0;
		}
		if (keep)
		{
			MemoryContext old = MemoryContextSwitchTo(caller);
			LauncherDb *entry = palloc(sizeof(LauncherDb));

			entry->dboid = db->oid;
			strlcpy(entry->name, NameStr(db->datname), NAMEDATALEN);
			result = lappend(result, entry);
			MemoryContextSwitchTo(old);
		}
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return result;
}

static bool
start_worker(LauncherDb *db)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;

	fill_worker(&bgw, "dlsm_worker_main", "dlsm worker");
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
		return false;
	}
	pfree(handle);
	return true;
}

/* One look at the databases: start the workers that are missing. */
static void
launcher_pass(void)
{
	List	   *databases = eligible_databases();
	TimestampTz now = GetCurrentTimestamp();
	ListCell   *lc;

	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	/* forget databases that are gone or no longer wanted */
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		DlsmWorkerSlot *slot = &dlsm_shared->slots[i];
		bool		wanted = false;

		foreach(lc, databases)
			wanted |= ((LauncherDb *) lfirst(lc))->dboid == slot->dboid;
		if (!wanted && slot->worker_pid != 0)
			kill(slot->worker_pid, SIGTERM);
		else if (!wanted && slot->dboid != InvalidOid)
			slot->dboid = InvalidOid;
	}
	dlsm_shared->rescan = false;
	LWLockRelease(dlsm_shared->lock);

	foreach(lc, databases)
	{
		LauncherDb *db = lfirst(lc);
		DlsmWorkerSlot *slot;
		bool		start;

		LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
		slot = slot_for(db->dboid, true);
		start = slot != NULL && slot->worker_pid == 0 &&
			!(slot->no_extension && now < slot->paused_until) &&
			now >= slot->paused_until;
		if (start)
			slot->paused_until = TimestampTzPlusMilliseconds(now,
															 RESTART_PAUSE_MS);
		LWLockRelease(dlsm_shared->lock);
		if (slot == NULL)
			ereport(LOG,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("could not start dlsm worker for database \"%s\"",
							db->name),
					 errdetail("dlsm serves at most %d databases.",
							   DLSM_MAX_DATABASES)));
		else if (start)
			(void) start_worker(db);
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

	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	if (dlsm_shared->launcher_pid != 0 &&
		kill(dlsm_shared->launcher_pid, 0) == 0)
	{
		LWLockRelease(dlsm_shared->lock);
		ereport(LOG, (errmsg("dlsm launcher already running")));
		proc_exit(0);
	}
	dlsm_shared->launcher_pid = MyProcPid;
	dlsm_shared->launcher_latch = MyLatch;
	LWLockRelease(dlsm_shared->lock);
	before_shmem_exit(launcher_detach, (Datum) 0);
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

/* ---------------------------------------------------------------------
 * The per-database worker
 * ---------------------------------------------------------------------
 */

/*
 * Run fn(arg) in a transaction of its own, with SPI and a snapshot; on an
 * error, log it, count it in the slot and return false.
 */
static bool
run_transaction(void (*fn) (void *), void *arg, const char *activity)
{
	MemoryContext context = CurrentMemoryContext;
	bool		ok = true;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PG_TRY();
	{
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, activity);
		fn(arg);
		if (SPI_finish() != SPI_OK_FINISH)
			elog(ERROR, "SPI_finish failed");
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		AbortCurrentTransaction();
		ereport(LOG,
				(errmsg("dlsm worker could not %s: %s", activity,
						edata->message)));
		slot_count(0, 0, 0, 1, edata->message);
		FreeErrorData(edata);
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	pgstat_report_stat(true);
	pgstat_report_activity(STATE_IDLE, NULL);
	return ok;
}

/* What a pass over the registry found. */
typedef struct RegistryPass
{
	bool		extension;		/* is dlsm installed here? */
	List	   *queues;			/* of WorkerQueue, in the caller's context */
	MemoryContext context;
} RegistryPass;

/* List the queues and listen on their channels. */
static void
read_registry(void *arg)
{
	RegistryPass *pass = (RegistryPass *) arg;
	List	   *relids;
	ListCell   *lc;

	pass->extension = OidIsValid(get_extension_oid("dlsm", true));
	if (!pass->extension)
		return;
	dlsm_notify_listen("dlsm");
	relids = dlsm_queue_list();
	foreach(lc, relids)
	{
		DlsmQueue  *queue = dlsm_queue_find(lfirst_oid(lc));
		MemoryContext old;
		WorkerQueue *wq;

		if (queue == NULL)
			continue;
		dlsm_notify_listen(queue->channel);
		old = MemoryContextSwitchTo(pass->context);
		wq = palloc(sizeof(WorkerQueue));
		wq->relid = queue->relid;
		wq->has_handler = OidIsValid(queue->handler);
		pass->queues = lappend(pass->queues, wq);
		MemoryContextSwitchTo(old);
	}
}

typedef struct QueueWork
{
	Oid			relid;
	int64		count;			/* rows or units done */
	bool		more;			/* a full batch: there may be more */
	char	   *failure;		/* the handler's error message, or NULL */
} QueueWork;

/*
 * The reaper and the retention pass act on a queue as its owner, never as
 * the worker's superuser: triggers and expressions on the table are the
 * owner's code.
 */
static void
reap_queue(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmQueue  *queue = dlsm_queue_find(work->relid);
	DlsmIdentity saved;

	work->count = 0;
	if (queue == NULL)
		return;
	dlsm_identity_switch(queue->owner, &saved);
	work->count = dlsm_state_reap(queue);
	dlsm_identity_restore(&saved);
}

static void
purge_queue(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmQueue  *queue = dlsm_queue_find(work->relid);
	DlsmIdentity saved;

	work->count = 0;
	if (queue != NULL && queue->has_retention)
	{
		dlsm_identity_switch(queue->owner, &saved);
		work->count = dlsm_state_purge(queue, dlsm_retention_batch);
		dlsm_identity_restore(&saved);
	}
	work->more = work->count == dlsm_retention_batch;
}

static void
handle_unit(void *arg)
{
	QueueWork  *work = (QueueWork *) arg;
	DlsmQueue  *queue = dlsm_queue_find(work->relid);

	work->failure = NULL;
	work->more = queue != NULL && OidIsValid(queue->handler) &&
		dlsm_handler_run_one(queue, &work->failure);
	if (work->failure != NULL)	/* keep it past the transaction */
		work->failure = MemoryContextStrdup(TopMemoryContext, work->failure);
}

static void
purge_leases(void *arg)
{
	*(int64 *) arg = dlsm_named_purge();
}

/*
 * Read the registry: the queues, and listen on their channels.  Exits
 * when the extension is gone from the database.
 */
static List *
registry_pass(MemoryContext context)
{
	RegistryPass pass = {false, NIL, context};
	uint64		pokes;

	LWLockAcquire(dlsm_shared->lock, LW_SHARED);
	pokes = dlsm_shared->pokes;
	LWLockRelease(dlsm_shared->lock);
	if (!run_transaction(read_registry, &pass, "read the dlsm registry"))
		return NIL;
	if (!pass.extension)
	{
		LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
		/* a CREATE EXTENSION that committed while we looked: no pause */
		my_slot->no_extension = dlsm_shared->pokes == pokes;
		my_slot->paused_until = !my_slot->no_extension ? 0 :
			TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										NO_EXTENSION_PAUSE_MS);
		LWLockRelease(dlsm_shared->lock);
		ereport(LOG,
				(errmsg("dlsm worker for database \"%s\" stops: the extension is not installed there",
						my_dbname)));
		proc_exit(0);
	}
	return pass.queues;
}

/* Reap every queue, delete settled rows past their retention and expired leases. */
static void
reaping_pass(List *queues)
{
	ListCell   *lc;
	int64		leases = 0;

	foreach(lc, queues)
	{
		QueueWork	work = {((WorkerQueue *) lfirst(lc))->relid, 0, false, NULL};
		int64		deleted = 0;

		if (run_transaction(reap_queue, &work, "reap a queue"))
			slot_count(work.count, 0, 0, 0, NULL);
		for (int i = 0; i < PURGE_BATCHES; i++)
		{
			if (!run_transaction(purge_queue, &work, "delete settled rows"))
				break;
			deleted += work.count;
			if (!work.more)
				break;
		}
		if (deleted > 0)
			slot_count(0, deleted, 0, 0, NULL);
	}
	if (run_transaction(purge_leases, &leases, "delete expired leases"))
		slot_count(0, leases, 0, 0, NULL);
	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	my_slot->last_reap_at = GetCurrentTimestamp();
	LWLockRelease(dlsm_shared->lock);
}

/* Run the handlers; true if one may have more work right now. */
static bool
handler_pass(List *queues)
{
	bool		more = false;
	ListCell   *lc;

	foreach(lc, queues)
	{
		WorkerQueue *wq = lfirst(lc);
		QueueWork	work = {wq->relid, 0, false, NULL};
		int			units = 0;

		if (!wq->has_handler)
			continue;
		while (units < dlsm_handler_batch)
		{
			if (!run_transaction(handle_unit, &work, "run a queue's handler") ||
				!work.more)
				break;
			units++;
			slot_count(0, 0, work.failure ? 0 : 1, work.failure ? 1 : 0,
					   work.failure);
			if (work.failure != NULL)
				pfree(work.failure);
		}
		more |= units == dlsm_handler_batch;
	}
	return more;
}

/*
 * A notification: NOTIFY dlsm, 'reap' reaps now; 'queues', sent by dlsm
 * itself when the registry changed, reads it again; every one is a wake-up.
 */
static void
on_notification(void *arg, const char *channel, const char *payload)
{
	if (strcmp(channel, "dlsm") != 0)
		return;
	if (strcmp(payload, "reap") == 0)
		reap_requested = true;
	else if (strcmp(payload, "queues") == 0)
		registry_changed = true;
}

void
dlsm_worker_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	MemoryContext loop_context;
	MemoryContext queues_context;
	List	   *queues = NIL;
	TimestampTz next_reap = 0;
	bool		more = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
	my_slot = slot_for(dboid, true);
	if (my_slot == NULL || (my_slot->worker_pid != 0 &&
							kill(my_slot->worker_pid, 0) == 0))
	{
		LWLockRelease(dlsm_shared->lock);
		proc_exit(0);			/* another worker serves this database */
	}
	my_slot->worker_pid = MyProcPid;
	my_slot->latch = MyLatch;
	my_slot->no_extension = false;
	my_slot->started_at = GetCurrentTimestamp();
	LWLockRelease(dlsm_shared->lock);
	before_shmem_exit(worker_detach, (Datum) 0);
	pgstat_report_appname("dlsm worker");

	/* catalog lookups need a transaction, even for a name */
	StartTransactionCommand();
	my_dbname = MemoryContextStrdup(TopMemoryContext,
									get_database_name(dboid));
	CommitTransactionCommand();

	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm worker loop",
										 ALLOCSET_DEFAULT_SIZES);
	queues_context = AllocSetContextCreate(TopMemoryContext, "dlsm worker queues",
										   ALLOCSET_SMALL_SIZES);

	/* said once the database turns out to have dlsm */
	queues = registry_pass(queues_context);
	ereport(LOG,
			(errmsg("dlsm worker started for database \"%s\"", my_dbname)));
	for (;;)
	{
		TimestampTz now;
		long		timeout;

		MemoryContextSwitchTo(loop_context);
		if (notifyInterruptPending)
		{
			LWLockAcquire(dlsm_shared->lock, LW_EXCLUSIVE);
			my_slot->wakeups++;
			LWLockRelease(dlsm_shared->lock);
			dlsm_notify_drain(on_notification, NULL);
			more = true;		/* a queue's channel: its handler may have work */
		}

		now = GetCurrentTimestamp();
		if (reap_requested || registry_changed || now >= next_reap)
		{
			registry_changed = false;
			MemoryContextReset(queues_context);
			queues = registry_pass(queues_context);
			more = true;
		}
		if (reap_requested || now >= next_reap)
		{
			reap_requested = false;
			reaping_pass(queues);
			next_reap = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													dlsm_reap_interval);
		}
		if (more)
			more = handler_pass(queues);
		MemoryContextReset(loop_context);

		timeout = more ? 0 :
			TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_reap);
		if (WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					  timeout, PG_WAIT_EXTENSION) & WL_LATCH_SET)
			more = true;		/* an enqueue into a handler queue */
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			next_reap = 0;
		}
	}
}
