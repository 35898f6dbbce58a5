/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The dlsm.* settings.
 *
 * Every setting is defined here, with its global; the prefix "dlsm" is
 * reserved so that a misspelt dlsm setting is reported, not kept.  The
 * worker's settings are PGC_SIGHUP: a reload applies them.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/guc.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "guc.h"

/* Lease of a claim made without one, in seconds. */
int			dlsm_default_lease = 300;

/* Databases the workers serve, comma-separated; empty: all. */
char	   *dlsm_databases = NULL;

/* Time between reaping passes of a worker, in milliseconds. */
int			dlsm_reap_interval = 1000;

/* Settled rows deleted per statement when a queue has a retention. */
int			dlsm_retention_batch = 1000;

/* Units a worker's handlers run before it looks at its other duties. */
int			dlsm_handler_batch = 100;

/* Statement timeout of each handler call, in milliseconds. */
int			dlsm_handler_timeout = 10000;
int			dlsm_max_handler_timeout = 300000;

/* How long the worker waits for a lock on a queue, in milliseconds. */
int			dlsm_lock_timeout = 1000;

/* How long one step of the worker may run, in milliseconds. */
int			dlsm_step_timeout = 10000;

/* This server's number, in the last byte of the process ids it makes. */
int			dlsm_node_id = 0;

/* The most dlsm workers running at once; fewer than databases: turns. */
int			dlsm_max_workers = 3;

/* The most databases with dlsm the workers serve; a slot each. */
int			dlsm_max_databases = 128;

/* Log each statement dlsm prepares, expanded, at LOG. */
bool		dlsm_log_statements = false;

/* Leave the NOTIFYs of queue channels to the database's relay (notify.c). */
bool		dlsm_notify_relay = false;

/* The most relays that run at once, over all databases. */
int			dlsm_max_relays = 2;

/* How long a relay with nothing to notify runs, in milliseconds. */
int			dlsm_relay_idle_timeout = 60000;

static bool
check_databases(char **newval, void **extra, GucSource source)
{
	char	   *copy = pstrdup(*newval);
	List	   *names;
	bool		ok = SplitIdentifierString(copy, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	list_free(names);
	pfree(copy);
	return ok;
}

/* Define the bounds on the worker's waits and steps. */
static void
define_bounds(void)
{
	DefineCustomIntVariable("dlsm.handler_timeout",
							"Sets the longest a dlsm worker lets one handler call run.",
							"A call still running after this is cancelled, and its unit settled as a retry; a queue's own handler_timeout overrides it.",
							&dlsm_handler_timeout,
							10000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.max_handler_timeout",
							"Sets the longest a dlsm worker lets one handler call run, whatever the queue's handler_timeout.",
							"A queue's owner chooses its handler_timeout; this bound, the server's, keeps one owner's handler from holding the worker longer.",
							&dlsm_max_handler_timeout,
							300000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.lock_timeout",
							"Sets how long a dlsm worker waits for a lock on a queue.",
							"A queue whose table stays locked longer is skipped until the next pass, and named in dlsm_worker_status.",
							&dlsm_lock_timeout,
							1000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.step_timeout",
							"Sets the longest one step of a dlsm worker may run.",
							"A step (reading the registry, reaping a queue, a retention batch, deleting expired leases, a handler's claim or settle) still running after this is cancelled, and its queue skipped until the next pass.",
							&dlsm_step_timeout,
							10000,
							1,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * dlsm.max_databases.  A setting fixed at server start exists only where
 * dlsm is preloaded: PostgreSQL refuses to define one later (FATAL), and a
 * library loaded by a session has no workers to size anyway.
 */
static void
define_slots(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("dlsm.max_databases",
							"Sets the most databases dlsm's workers serve.",
							"Each database that may have dlsm takes a slot in shared memory, given back when a worker finds no dlsm there; a database left without one is not served.",
							&dlsm_max_databases,
							128,
							1,
							10000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
}

/* Define the settings of the relay (notify.c, relay.c). */
static void
define_relay(void)
{
	/*
	 * PGC_SUSET: on, a LISTEN or a producer starts a server process, the
	 * relay; the server's configuration (or a superuser's ALTER ROLE or ALTER
	 * DATABASE ... SET) chooses where.
	 */
	DefineCustomBoolVariable("dlsm.notify_relay",
							 "Leaves the NOTIFY of a queue's channel to the database's relay, after the commit.",
							 "Off: a transaction that enqueues notifies in its own commit, holding the notify lock across its WAL flush.",
							 &dlsm_notify_relay,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.max_relays",
							"Sets the most dlsm relays that run at once.",
							"Each takes a background worker process; never more run than max_worker_processes leaves after dlsm's launcher, dlsm.max_workers workers and the logical replication launcher.",
							&dlsm_max_relays,
							2,
							0,
							1024,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.relay_idle_timeout",
							"Sets how long a dlsm relay with nothing to notify runs before it exits.",
							"The next producer that needs it starts it again.",
							&dlsm_relay_idle_timeout,
							60000,
							100,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/* Define the settings; called once from _PG_init. */
void
dlsm_guc_init(void)
{
	DefineCustomIntVariable("dlsm.default_lease",
							"Sets the lease of claims made without one.",
							"A claim not settled within its lease is returned to new by the reaper.",
							&dlsm_default_lease,
							300,
							1,
							INT_MAX / 2,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("dlsm.databases",
							   "Sets the databases dlsm's workers serve.",
							   "A comma-separated list of database names; empty means every database that allows connections and has the extension.",
							   &dlsm_databases,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   check_databases, NULL, NULL);

	DefineCustomIntVariable("dlsm.reap_interval",
							"Sets the time between reaping passes of a dlsm worker.",
							"Expired leases are returned to new, and settled rows past a queue's retention deleted, this often.",
							&dlsm_reap_interval,
							1000,
							10,
							INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.retention_batch",
							"Sets how many settled rows a dlsm worker deletes per statement.",
							"Rows past a queue's retention are deleted in batches of this size, each in its own transaction.",
							&dlsm_retention_batch,
							1000,
							1,
							1000000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("dlsm.handler_batch",
							"Sets how many units a dlsm worker's handlers run in a row.",
							"After this many units the worker serves its other requests and the reaper before it runs more.",
							&dlsm_handler_batch,
							100,
							1,
							1000000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	define_bounds();

	DefineCustomIntVariable("dlsm.max_workers",
							"Sets the most dlsm workers that run at once.",
							"With at least as many as databases with dlsm, each database has a worker of its own; with fewer, the workers take turns: each visits a database, runs its handlers there for at most half a dlsm.reap_interval, and leaves.",
							&dlsm_max_workers,
							3,
							1,
							1024,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	define_slots();

	DefineCustomBoolVariable("dlsm.log_statements",
							 "Logs each statement dlsm prepares for a queue or its catalog, as it runs it.",
							 "Each is prepared once per session and queue, with the queue's table and column names put in.",
							 &dlsm_log_statements,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	define_relay();

	DefineCustomIntVariable("dlsm.node_id",
							"Sets the number of this server in a sharded layout.",
							"It becomes the last byte of every process id dlsm makes, so that a router can tell which server holds a claim; 0 leaves process ids wholly random.",
							&dlsm_node_id,
							0,
							0,
							255,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("dlsm");
}
