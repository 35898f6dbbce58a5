/*-------------------------------------------------------------------------
 *
 * dlsm.c
 *	  Entry point of the dlsm extension: the distributed lock state machine.
 *
 * Loading the library defines the settings and the backend-local hooks;
 * preloading it (shared_preload_libraries) also reserves the shared state
 * that wakes waiting claims and registers the background workers.  Without
 * preloading every SQL function works; only the workers are missing.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/dlsm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"

#include "dlsm.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	dlsm_guc_init();
	dlsm_shmem_init();
	dlsm_extension_init();
	dlsm_queue_init();
	dlsm_state_init();
	dlsm_named_init();
	dlsm_worker_init();
}
