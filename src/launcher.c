/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher of dlsm's per-database workers.
 *
 * The launcher (registered while preloading, started once recovery has
 * finished, restarted by the postmaster) connects to no database.  Every
 * LAUNCHER_NAP_MS, and whenever poked (CREATE EXTENSION, a worker that
 * started or stopped), it lists the databases that allow connections,
 * keeps those named in dlsm.databases (all when empty), and serves them
 * with at most dlsm.max_workers dynamic workers (worker.c).
 *
 * When there are no more databases that may have dlsm (all but those whose
 * last worker found none) than dlsm.max_workers, each has a worker of its
 * own, started when it has none.  With more, the workers take turns, as
 * autovacuum's do: the launcher starts a worker for the database whose
 * turn it is, the worker makes one pass there (registry, reaping, handlers
 * for at most half a dlsm.reap_interval, longer while no other database
 * is due) and exits, and the launcher, told of the exit (bgw_notify_pid
 * sets its latch), starts one for the next.  A database's turn comes when its
 * handler queues got work, or its last pass is one dlsm.reap_interval old;
 * one that waited half its bound goes first, then those with handler work,
 * then the one that waited longest (pool.c).  So every database is
 * visited at least every dlsm.reap_interval times the number of databases
 * over dlsm.max_workers (rounded up), while visits, with their process
 * start, are not longer than a dlsm.reap_interval.  A database past that
 * bound, or for which no worker could start (no free background worker
 * process), is shown waiting in dlsm_worker_status and said in the log:
 * once until a worker is in it, for want of a process; at most every
 * LATE_REPEAT_MS, past its bound.
 *
 * Whether a database's worker may start now is pool.c's decision:  a
 * worker that found no dlsm in its database keeps the launcher away from
 * it until poked (CREATE EXTENSION there), a database being dropped keeps
 * it away for good, and starts of one database are at least
 * RESTART_PAUSE_MS apart.
 *
 * Each database that may have dlsm needs one of dlsm.max_databases slots
 * in shared memory; one found without dlsm gives its slot back, and no
 * slot is ever taken from another database.  A database left without one
 * is not served: said in the log once (per launcher), shown with state
 * "no slot" in dlsm_worker_status.
 *
 * A worker with handler queues starts a reaper beside it (worker.c), which
 * takes one more background worker process; when no process is free for a
 * database's worker, every reaper gives way (pool.c): each database has
 * its worker before any has a reaper.
 *
 * At each pass it also has capacity.c say, once per table, that one of
 * dlsm's shared tables had no room.
 *
 * Calls pool.c, capacity.c, bound.c, waits.c and bgw.c.
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
#include "utils/timestamp.h"
#include "utils/varlena.h"

#include "bgw.h"
#include "bound.h"
#include "capacity.h"
#include "compat.h"
#include "guc.h"
#include "launcher.h"
#include "pool.h"
#include "waits.h"

#define LAUNCHER_NAP_MS			5000	/* launcher looks at databases */
#define RESTART_PAUSE_MS		1000	/* between starts of one worker */
#define MIN_NAP_MS				10	/* the launcher's shortest nap */
#define LATE_REPEAT_MS			600000	/* a late database said again */

typedef struct LauncherDb
{
	Oid			dboid;
	char		name[NAMEDATALEN];
} LauncherDb;

/* A worker the launcher started, until it stops. */
typedef struct LauncherWorker
{
	Oid			dboid;
	BackgroundWorkerHandle *handle;
} LauncherWorker;

static List *started = NIL;		/* of LauncherWorker, in TopMemoryContext */
static int	rotation_said = 0;	/* the log says this many workers take turns
								 * (0: one worker each) */
static List *no_slot_said = NIL;	/* of database Oids, in TopMemoryContext */

/* Register the launcher while preloading; called from _PG_init. */
void
dlsm_launcher_init(void)
{
	BackgroundWorker bgw;

	if (!process_shared_preload_libraries_in_progress)
		return;
	dlsm_bgw_fill(&bgw, "dlsm launcher", "dlsm_launcher_main", NULL,
				  (Datum) 0, 1, 0);
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
	{
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	}
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

/*
 * Start a worker for db; false when no background worker process is free.
 * The launcher keeps its handle, to count it until it stops.
 */
static bool
start_worker(LauncherDb *db)
{
	BackgroundWorker bgw;
	BackgroundWorkerHandle *handle;
	LauncherWorker *worker;
	MemoryContext old;

	/* the postmaster sets the launcher's latch as the worker stops */
	dlsm_bgw_fill(&bgw, "dlsm worker", "dlsm_worker_main", db->name,
				  ObjectIdGetDatum(db->dboid), BGW_NEVER_RESTART, MyProcPid);
	old = MemoryContextSwitchTo(TopMemoryContext);
	if (!RegisterDynamicBackgroundWorker(&bgw, &handle))
	{
		MemoryContextSwitchTo(old);
		return false;
	}
	worker = palloc(sizeof(LauncherWorker));
	worker->dboid = db->dboid;
	worker->handle = handle;
	started = lappend(started, worker);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * No worker could start for db: it waits for one.  Said once, until a
 * worker is in it again.  Every reaper gives way meanwhile (pool.c).
 */
static void
say_no_worker(LauncherDb *db)
{
	/* a database's worker comes before another's reaper */
	dlsm_pool_reapers_give_way();
	if (dlsm_pool_set_no_worker(db->dboid))
		ereport(LOG,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start dlsm worker for database \"%s\"",
						db->name),
				 errdetail("The database waits for a worker: expired leases are not reaped and handlers do not run there until one starts."),
				 errhint("You may need to increase \"max_worker_processes\".")));
}

/*
 * Forget the workers that stopped; fill busy (room for all) with the
 * databases of those that start or run, and return how many.
 */
static int
workers_started(Oid *busy)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, started)
	{
		LauncherWorker *worker = lfirst(lc);
		pid_t		pid;

		if (GetBackgroundWorkerPid(worker->handle, &pid) == BGWH_STOPPED)
		{
			pfree(worker->handle);
			pfree(worker);
			started = foreach_delete_current(started, lc);
			continue;
		}
		busy[n++] = worker->dboid;
	}
	return n;
}

/* The database dboid of databases. */
static LauncherDb *
find_database(List *databases, Oid dboid)
{
	ListCell   *lc;

	foreach(lc, databases)
	{
		if (((LauncherDb *) lfirst(lc))->dboid == dboid)
			return lfirst(lc);
	}
	return NULL;
}

/* One database each: start the workers that are missing. */
static void
start_missing(List *databases)
{
	ListCell   *lc;
	Oid		   *busy = palloc(sizeof(Oid) * (list_length(started) + 1));

	(void) workers_started(busy);	/* forget the stopped ones */
	foreach(lc, databases)
	{
		LauncherDb *db = lfirst(lc);

		switch (dlsm_pool_may_start(db->dboid, RESTART_PAUSE_MS))
		{
			case DLSM_START_NOW:
				if (!start_worker(db))
					say_no_worker(db);
				break;
			case DLSM_START_LATER:
			case DLSM_START_NO_SLOT:	/* said by say_no_slot */
				break;
		}
	}
}

/*
 * Say in the log that db, waiting for its turn, waited longer than its
 * bound (once in LATE_REPEAT_MS).  *next_due is brought forward to when it
 * will be late, if it is not yet, so that the launcher says it while it
 * waits.
 */
static void
say_if_late(LauncherDb *db, TimestampTz *next_due)
{
	long		waited_ms;
	TimestampTz late_at;
	bool		late = dlsm_pool_note_late(db->dboid, LATE_REPEAT_MS,
										   &waited_ms, &late_at);

	if (late_at != 0 && (*next_due == 0 || late_at < *next_due))
		*next_due = late_at;
	if (late)
		ereport(LOG,
				(errmsg("database \"%s\" waited %ld ms for a dlsm worker, longer than its bound",
						db->name, waited_ms),
				 errdetail("Each database should be visited at least every %d ms, with \"dlsm.max_workers\" at %d.",
						   dlsm_pool_bound(), dlsm_max_workers),
				 errhint("You may need to increase \"dlsm.max_workers\" and \"max_worker_processes\", or \"dlsm.reap_interval\".")));
}

/*
 * The workers take turns: start workers, up to dlsm.max_workers, for the
 * databases whose turn it is; say once each database past its bound.
 * Returns how long to nap before the next turn is due.
 */
static long
start_turns(List *databases, const Oid *dbs, int n)
{
	Oid		   *busy = palloc(sizeof(Oid) * (list_length(started) + n + 1));
	int			nbusy = workers_started(busy);
	int			running = Max(nbusy, dlsm_pool_workers_attached());
	TimestampTz next_due = 0;
	TimestampTz started_late_at = 0;	/* of one being started: unused */
	long		nap;
	ListCell   *lc;

	while (running < dlsm_max_workers)
	{
		/* a turn may come every dlsm.reap_interval: pause no longer */
		Oid			dboid = dlsm_pool_next_visit(dbs, n, busy, nbusy,
												 dlsm_reap_interval,
												 Min(RESTART_PAUSE_MS,
													 dlsm_reap_interval),
												 &next_due);
		LauncherDb *db = find_database(databases, dboid);

		if (db == NULL)
			break;
		/* late and not said yet (the launcher slept past it): now */
		say_if_late(db, &started_late_at);
		if (!start_worker(db))
		{
			/* no process is free: every database waiting waits for one */
			foreach(lc, databases)
				say_no_worker(lfirst(lc));
			return RESTART_PAUSE_MS;
		}
		busy[nbusy++] = dboid;
		running++;
	}
	foreach(lc, databases)
		say_if_late(lfirst(lc), &next_due);
	nap = next_due == 0 ? LAUNCHER_NAP_MS :
		TimestampDifferenceMilliseconds(GetCurrentTimestamp(), next_due);
	return Max(Min(nap, LAUNCHER_NAP_MS), MIN_NAP_MS);
}

/*
 * Turns or one worker each: decide, tell pool.c, and say in the log when
 * it changes (or dlsm.max_workers does).  Returns whether the workers take
 * turns.
 */
static bool
choose_rotation(int known)
{
	int64		rounds = (known + dlsm_max_workers - 1) / dlsm_max_workers;
	bool		rotating = known > dlsm_max_workers;
	int			bound_ms = (int) Min(rounds * dlsm_reap_interval, INT_MAX);

	dlsm_pool_set_rotation(rotating, bound_ms);
	if (rotating && rotation_said != dlsm_max_workers)
		ereport(LOG,
				(errmsg("dlsm workers take turns"),
				 errdetail("%d databases may have dlsm, and \"dlsm.max_workers\" is %d; each database is visited at least every %d ms.",
						   known, dlsm_max_workers, bound_ms)));
	else if (!rotating && rotation_said != 0)
		ereport(LOG,
				(errmsg("each database with dlsm has a dlsm worker of its own again")));
	rotation_said = rotating ? dlsm_max_workers : 0;
	return rotating;
}

/*
 * Keep in no_slot_said only the databases that are still without a slot
 * (no_slot[i] for the i-th of databases): one that got one, or is gone, is
 * said again if it loses it again.
 */
static void
forget_slotted(List *databases, const bool *no_slot)
{
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach(lc, databases)
	{
		Oid			dboid = ((LauncherDb *) lfirst(lc))->dboid;

		if (no_slot[foreach_current_index(lc)] &&
			list_member_oid(no_slot_said, dboid))
			kept = lappend_oid(kept, dboid);
	}
	list_free(no_slot_said);
	no_slot_said = kept;
	MemoryContextSwitchTo(old);
}

/*
 * The launcher's look left db without a slot: say so, the first time
 * for db.
 */
static void
say_no_slot(LauncherDb *db)
{
	MemoryContext old;

	if (list_member_oid(no_slot_said, db->dboid))
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	no_slot_said = lappend_oid(no_slot_said, db->dboid);
	MemoryContextSwitchTo(old);
	ereport(LOG,
			(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
			 errmsg("dlsm cannot serve database \"%s\"", db->name),
			 errdetail("Every one of dlsm's %d slots is taken: each database that may have dlsm takes a slot until a worker finds no dlsm there.  Expired leases are not reaped and handlers do not run in this one until a slot comes free.",
					   dlsm_max_databases),
			 errhint("You may need to increase \"dlsm.max_databases\" and restart the server.")));
}

/*
 * One look at the databases: start the workers that are missing, or
 * those whose turn it is.  Returns how long to nap.
 */
static long
launcher_pass(void)
{
	List	   *databases = eligible_databases();
	Oid		   *keep = palloc(sizeof(Oid) * Max(list_length(databases), 1));
	bool	   *no_slot = palloc(sizeof(bool) * Max(list_length(databases), 1));
	int			nkeep = 0;
	int			known;
	ListCell   *lc;

	foreach(lc, databases)
		keep[nkeep++] = ((LauncherDb *) lfirst(lc))->dboid;
	dlsm_pool_forget_databases(keep, nkeep);
	known = dlsm_pool_count_known(keep, nkeep, no_slot);
	foreach(lc, databases)
	{
		if (no_slot[foreach_current_index(lc)])
			say_no_slot(lfirst(lc));
	}
	forget_slotted(databases, no_slot);
	dlsm_capacity_say_full();
	if (choose_rotation(known))
		return start_turns(databases, keep, nkeep);
	start_missing(databases);
	return LAUNCHER_NAP_MS;
}

void
dlsm_launcher_main(Datum main_arg)
{
	MemoryContext loop_context;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	if (!dlsm_pool_launcher_attach())
	{
		ereport(LOG, (errmsg("dlsm launcher already running")));
		proc_exit(0);
	}
	ereport(LOG, (errmsg("dlsm launcher started")));

	loop_context = AllocSetContextCreate(TopMemoryContext, "dlsm launcher loop",
										 ALLOCSET_DEFAULT_SIZES);
	for (;;)
	{
		long		nap;

		MemoryContextSwitchTo(loop_context);
		nap = launcher_pass();
		MemoryContextReset(loop_context);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 nap, dlsm_wait_event(DLSM_WAIT_LAUNCHER));
		ResetLatch(MyLatch);
		dlsm_bound_idle();		/* a cancel sent now ends nothing */
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
