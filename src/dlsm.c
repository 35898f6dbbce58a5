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
 * The modules, in layers (a module calls only modules below it):
 *
 *	entry		dlsm.c
 *	top			api.c views.c worker.c launcher.c hooks.c
 *	work		handler.c
 *	moves		claim.c state.c namedlock.c capture.c
 *	queues		queue.c fence.c wake.c
 *	sql			plans.c notify.c
 *	base		extension.c identity.c subxact.c locks.c shmem.c guc.c
 *
 * This file only wires the modules' init functions together.
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

#include "capture.h"
#include "extension.h"
#include "guc.h"
#include "hooks.h"
#include "namedlock.h"
#include "notify.h"
#include "queue.h"
#include "shmem.h"
#include "wake.h"
#include "worker.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	dlsm_guc_init();
	dlsm_shmem_init();
	dlsm_extension_init();
	dlsm_notify_init();
	dlsm_wake_init();
	dlsm_queue_init();
	dlsm_named_init();
	dlsm_capture_init();
	dlsm_hooks_init();
	dlsm_launcher_init();
}
