/*-------------------------------------------------------------------------
 *
 * bgw.c
 *	  The description of every background worker dlsm starts.
 *
 * dlsm's processes (the launcher, a database's worker and its reaper, a
 * relay) are background workers of dlsm.so that all use shared memory,
 * connect to a database (the launcher to none, for the catalog only), and
 * start once recovery has finished.  One function fills their
 * BackgroundWorker, so that these choices are written once; the callers
 * say what differs (its type and main function, its database, its restart
 * time, the process told of its start and stop) and register it, each in
 * its own way (the launcher while preloading, the others dynamically).
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bgw.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "postmaster/bgworker.h"

#include "bgw.h"

/*
 * Fill bgw for one of dlsm's background workers: of bgw_type type, its
 * main function of dlsm.so, named "type for database dbname" (type alone
 * when dbname is NULL), given main_arg; restarted restart_time seconds
 * after it stops (BGW_NEVER_RESTART: never); notify_pid (0: none) has its
 * latch set as it starts and stops.  Anything else (bgw_extra) is zero.
 */
void
dlsm_bgw_fill(BackgroundWorker *bgw, const char *type, const char *function,
			  const char *dbname, Datum main_arg, int restart_time,
			  pid_t notify_pid)
{
	memset(bgw, 0, sizeof(BackgroundWorker));
	bgw->bgw_flags = BGWORKER_SHMEM_ACCESS |
		BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw->bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw->bgw_restart_time = restart_time;
	strlcpy(bgw->bgw_library_name, "dlsm", BGW_MAXLEN);
	strlcpy(bgw->bgw_function_name, function, BGW_MAXLEN);
	strlcpy(bgw->bgw_type, type, BGW_MAXLEN);
	if (dbname != NULL)
		snprintf(bgw->bgw_name, BGW_MAXLEN, "%s for database %s", type,
				 dbname);
	else
		strlcpy(bgw->bgw_name, type, BGW_MAXLEN);
	bgw->bgw_main_arg = main_arg;
	bgw->bgw_notify_pid = notify_pid;
}
