/*-------------------------------------------------------------------------
 *
 * waits.c
 *	  The wait events dlsm's processes show while they sleep.
 *
 * From PostgreSQL 17 on an extension can name its wait events:
 * pg_stat_activity then shows wait_event_type 'Extension' with a name of
 * dlsm's own (DlsmClaimWait, DlsmNamedLockWait, DlsmWorkerMain,
 * DlsmLauncherMain, DlsmWorkerStop) instead of the bare 'Extension'.  A name is registered
 * in shared memory at a process's first wait of its kind, and every
 * process gets the same number for it.  Before 17 every wait is
 * PG_WAIT_EXTENSION, shown as wait_event 'Extension'.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/waits.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/wait_event.h"

#include "compat.h"
#include "waits.h"

static const char *const wait_names[DLSM_NUM_WAITS] = {
	[DLSM_WAIT_CLAIM] = "DlsmClaimWait",
	[DLSM_WAIT_NAMED_LOCK] = "DlsmNamedLockWait",
	[DLSM_WAIT_WORKER] = "DlsmWorkerMain",
	[DLSM_WAIT_LAUNCHER] = "DlsmLauncherMain",
	[DLSM_WAIT_WORKER_STOP] = "DlsmWorkerStop",
};

/* The wait event of wait, registered at its first use in this process. */
uint32
dlsm_wait_event(DlsmWait wait)
{
	static uint32 events[DLSM_NUM_WAITS];

	Assert(wait >= 0 && wait < DLSM_NUM_WAITS);
	if (events[wait] == 0)
		events[wait] = DLSM_WAIT_EVENT_NEW(wait_names[wait]);
	return events[wait];
}
