/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  dlsm's shared memory: the hooks that reserve it and create each
 *	  module's part.
 *
 * Each part of dlsm's shared state lives with the module that owns it, as
 * PostgreSQL's lock.c, predicate.c and procarray.c keep theirs: the module
 * alone sees its layout, says how much it needs (dlsm_<module>_shmem_size)
 * and creates or attaches to it (dlsm_<module>_shmem_init).  This file
 * calls them, and only from here: at the request hook for the space, at
 * the startup hook, under AddinShmemInitLock, for the structures.  The
 * parts:
 *	waits.c		the condition variable waiting claims sleep on
 *	pool.c		the launcher's and the workers' slots (dlsm.max_databases)
 *	namedlock.c	the named-lock entries shown by dlsm_locks
 *	notify.c	the counts of client backends that LISTEN
 *	floor.c		the queues' floors, their parked groups, rows in flight
 *	rate.c		the groups' rate limits
 *
 * The locks, in three LWLock tranches (the names wait events show):
 *	"dlsm_floor"	the floors': one per floor slot and two for the whole
 *					cluster (floor.c says which guards what)
 *	"dlsm_rate"		the rates': one per partition of the table and one
 *					for the holders' counters (rate.c says which guards
 *					what)
 *	"dlsm"			one lock for each other part that has fields to guard:
 *					the pool, the named-lock entries, the listener counts
 * Each is given to its part at its creation.  No operation of one part
 * takes another part's lock, and none is held across anything that could
 * block: each is a leaf lock, taken after any heavyweight lock.  Each
 * module's header comment says who takes its locks, in what mode, and
 * what they guard.  The state exists only when the library is preloaded;
 * without it every module answers as if nothing ran.
 *
 * Calls waits.c, pool.c, namedlock.c, notify.c, floor.c and rate.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "floor.h"
#include "namedlock.h"
#include "notify.h"
#include "pool.h"
#include "rate.h"
#include "shmem.h"
#include "waits.h"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static int	nslots = 0;			/* dlsm.max_databases, at the server start */

/* The locks of the tranche "dlsm": one per part with fields to guard. */
enum
{
	DLSM_LOCK_POOL, DLSM_LOCK_NAMED, DLSM_LOCK_LISTENERS, DLSM_NUM_LOCKS
};

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(dlsm_waits_shmem_size());
	RequestAddinShmemSpace(dlsm_pool_shmem_size(nslots));
	RequestAddinShmemSpace(dlsm_named_shmem_size());
	RequestAddinShmemSpace(dlsm_notify_shmem_size());
	RequestAddinShmemSpace(dlsm_floor_shmem_size());
	RequestAddinShmemSpace(dlsm_rate_shmem_size());
	RequestNamedLWLockTranche("dlsm", DLSM_NUM_LOCKS);
	RequestNamedLWLockTranche("dlsm_floor", dlsm_floor_num_locks());
	RequestNamedLWLockTranche("dlsm_rate", dlsm_rate_num_locks());
}

static void
shmem_startup(void)
{
	LWLockPadded *locks;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	locks = GetNamedLWLockTranche("dlsm");
	dlsm_waits_shmem_init();
	dlsm_pool_shmem_init(nslots, &locks[DLSM_LOCK_POOL].lock);
	dlsm_floor_shmem_init(GetNamedLWLockTranche("dlsm_floor"));
	dlsm_rate_shmem_init(GetNamedLWLockTranche("dlsm_rate"));
	dlsm_named_shmem_init(&locks[DLSM_LOCK_NAMED].lock);
	dlsm_notify_shmem_init(&locks[DLSM_LOCK_LISTENERS].lock);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * Install the shared-memory hooks when preloading, with max_databases
 * slots (dlsm.max_databases); called from _PG_init.
 */
void
dlsm_shmem_init(int max_databases)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	nslots = max_databases;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = shmem_startup;
}
