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
 *	7 entry		dlsm.c
 *	6 top		api.c views.c worker.c launcher.c relay.c hooks.c, shmem.c
 *				(it creates the shared state of the modules below)
 *	5 work		handler.c args.c capacity.c
 *	4 moves		claim.c state.c namedlock.c capture.c deadletter.c
 *	3 pending	pending.c grouplimit.c queuehandler.c
 *	2 queues	queue.c fence.c wake.c dedup.c
 *	1 services	plans.c notify.c locks.c bound.c pool.c
 *	0 base		extension.c identity.c subxact.c guc.c names.c waits.c
 *				floor.c rate.c querytext.c duration.c usercode.c bgw.c,
 *				cache.h
 *	  under all	compat.h: the shims between PostgreSQL's majors, macros over
 *				PostgreSQL's headers alone, so that any module, the base
 *				included, may use them; usage.h, how full a shared table
 *				is, which every owner of one reports
 *
 * test/arch.pl checks that every include of a dlsm header goes down, that
 * this table is its own and that each file's "Calls" sentence names what
 * the file calls.
 *
 * This file only wires the modules together.
 *
 * Calls the init function of each module that has one.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/dlsm.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "fmgr.h"
#include "miscadmin.h"

#include "capture.h"
#include "extension.h"
#include "grouplimit.h"
#include "guc.h"
#include "hooks.h"
#include "launcher.h"
#include "namedlock.h"
#include "notify.h"
#include "pending.h"
#include "pool.h"
#include "queue.h"
#include "shmem.h"
#include "wake.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	dlsm_guc_init();
	dlsm_shmem_init(dlsm_max_databases);
	dlsm_extension_init();
	dlsm_notify_init();
	dlsm_wake_init();
	dlsm_limits_init();
	dlsm_queue_init();
	dlsm_pending_init();
	dlsm_named_init();
	dlsm_capture_init();
	dlsm_hooks_init();
	dlsm_launcher_init();
	/* loaded by CREATE EXTENSION dlsm, not preloaded: no worker will run */
	if (creating_extension && !process_shared_preload_libraries_in_progress)
		dlsm_pool_warn_no_worker(DLSM_NO_WORKER_INSTALL, NULL);
}
