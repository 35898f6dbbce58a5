/*-------------------------------------------------------------------------
 *
 * pool.c
 *	  The pool of dlsm's workers in shared memory: the launcher's and the
 *	  workers' slots, and the turns they take when they are fewer than the
 *	  databases.
 *
 * This file owns the pool's shared state: no other file sees its layout.
 * Others call the named operations below, each of which takes and
 * releases the lock itself, so that a rule about a field is written once,
 * here.  The state exists only when the library is preloaded; without it
 * every operation is a no-op that answers as if nothing ran (no worker).
 *
 * Locking: DlsmPoolShared.lock (of the LWLock tranche "dlsm", given by
 * shmem.c) guards every field, every slot, slot_index and without_dlsm.
 * It is a leaf lock: taken after any heavyweight lock, held for a few
 * field reads or writes only, never across SPI, a wait or a signal that
 * could block.  The protocol:
 *
 * - Exclusive, to write any field below but pending: the launcher, the
 *	 workers and reapers (attach, exit, counts), any backend (a poke, a
 *	 stop, a request).
 * - Shared, to read: the views, a worker's or the launcher's look, and an
 *	 enqueue for a handler (dlsm_pool_wake_worker), which runs at the
 *	 commit of every such enqueue and so must not serialize them.
 * - A slot's pending is a pg_atomic_uint32, set under the shared lock
 *	 (wake_worker, a worker leaving with work left) and taken with an
 *	 exchange (the slot's worker), so that no wake-up is lost between a
 *	 set and a take; it is zeroed with the rest of a slot (slot_clear)
 *	 only under the exclusive lock.
 * - The index: slot_index maps a database to its slot (one at most),
 *	 nused counts the slots with a database, nattached those with a
 *	 worker.  Each changes with the slot it describes, under the
 *	 exclusive lock (slot_for giving a slot, free_slot, a worker's attach
 *	 and exit), so that finding a database's slot is one hash probe; under
 *	 the shared lock only the probe is made (slot_for with add false).  No
 *	 operation for one database walks every slot.
 *
 * Who writes what:
 *	launcher_pid, launcher_latch	the launcher (attach and its exit)
 *	rescan, pokes					any backend (dlsm_pool_wake_launcher)
 *	rotating, bound_ms				the launcher (each look at the databases)
 *	slot dboid						the launcher (forget), a worker (attach; its
 *									exit, when it found no dlsm)
 *	slot pid, latch, started_at		the slot's worker (attach and its exit)
 *	slot paused_until, no_extension	the launcher (a start), the worker (no
 *									extension; a pass), a backend of the
 *									database (a poke)
 *	without_dlsm (the hash)			a worker that found no dlsm (its exit),
 *									a backend of the database (a poke), the
 *									launcher (forget)
 *	nslotless, slotless[]			the launcher (each look at the databases)
 *	slot stopped_until				any backend (a stop)
 *	slot listed_at					the launcher (when it takes the slot)
 *	slot no_worker					the launcher (a start failed), the slot's
 *									worker (attach)
 *	slot late_said_at				the launcher (a database late)
 *	slot pending (atomic)			any backend (an enqueue for a handler),
 *									the slot's worker (its handler pass)
 *	slot_index, nused				the launcher (a database's first look;
 *									forget), a worker (its exit, when it
 *									found no dlsm)
 *	nattached						a worker (attach and its exit)
 *	slot outdated_said				the slot's worker
 *	slot counts, last_reap_at,
 *	slot last_error					the slot's worker or reaper
 *	slot shunned[], shunned_until[],
 *	slot shun_count[], shun_cause[]			the slot's worker or reaper (at its
 *									exit, when a step ignored its cancel)
 *	slot reaper_pid, reaper_latch	the slot's reaper (attach and its exit)
 *	slot reaper_requests			any backend (a request), the slot's reaper
 *	reapers_yield_at				the launcher (a worker could not start)
 *
 * A database's reaper (worker.c) shares its worker's slot: it counts, says
 * its last error, marks its passes and shuns there as the worker does, and
 * takes requests of its own (reaper_requests), so that the worker, busy
 * with a handler call, never holds a reap that NOTIFY dlsm, 'reap' asked
 * for.  It runs only while the slot's worker does (reaper_parent).
 *
 * Liveness: a pid in the shared state (launcher_pid, a slot's pid or
 * reaper_pid) is that of a process alive now, because the process itself
 * writes it, under the lock, when it attaches, and clears it from a
 * before_shmem_exit callback registered at once (launcher_detach,
 * worker_detach, reaper_detach), which proc_exit runs on every exit: a
 * return, an ERROR or FATAL, a SIGTERM.  A process that dies without
 * running them (SIGKILL, a crash) makes the postmaster reinitialize shared
 * memory, and shmem.c creates this state anew, every pid 0.  So an attach
 * takes a slot whose pid is 0 and no other: no pid is sent signal 0 to
 * ask whether it lives, since PIDs are reused (test/arch.pl checks it).
 *
 * Calls names.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/pool.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "names.h"
#include "pool.h"

/*
 * The most databases where a worker found no dlsm that are remembered
 * apart from the slots (more keep their slot), and the most databases left
 * without a slot that dlsm_worker_status shows.
 */
#define DLSM_MAX_WITHOUT 4096
#define DLSM_MAX_SLOTLESS 64

/* The most queues a database's worker leaves alone at once. */
#define DLSM_MAX_SHUNNED 8

/* One database's worker, as the launcher and the worker see it. */
typedef struct DlsmSlot
{
	DlsmWorkerInfo info;		/* dboid InvalidOid: slot free */
	Latch	   *latch;			/* the worker's latch, NULL while none */
	bool		no_extension;	/* the worker found no dlsm there: kept while
								 * it exits, or when without_dlsm has no room
								 * for the database */
	TimestampTz paused_until;	/* the launcher starts no worker before */
	TimestampTz stopped_until;	/* no worker runs before (DROP DATABASE) */
	Oid			shunned[DLSM_MAX_SHUNNED];	/* owners whose queues are left
											 * alone ... */
	TimestampTz shunned_until[DLSM_MAX_SHUNNED];	/* ... until then */
	int			shun_count[DLSM_MAX_SHUNNED];	/* ... after so many shuns */
	Oid			shun_cause[DLSM_MAX_SHUNNED];	/* ... of the last, this queue */
	bool		no_worker;		/* its last start found no free process */
	TimestampTz late_said_at;	/* the launcher logged it past its bound */
	pg_atomic_uint32 pending;	/* 1: a handler queue got work since its last
								 * handler pass (atomic: set under the shared
								 * lock) */
	int			requests;		/* DLSM_REQUEST_*, not yet taken */
	bool		outdated_said;	/* a worker logged that the extension awaits
								 * its UPDATE */
	pid_t		reaper_pid;		/* its reaper, 0 while none is attached */
	pid_t		reaper_parent;	/* the worker that reaper runs beside */
	Latch	   *reaper_latch;	/* the reaper's latch, NULL while none */
	int			reaper_requests;	/* DLSM_REQUEST_*, not yet taken by it */
} DlsmSlot;

/* An entry of slot_index: the slot of a database. */
typedef struct DlsmSlotIndexEntry
{
	Oid			dboid;			/* key: the database */
	int			slot;			/* its slot, an index into slots */
} DlsmSlotIndexEntry;

/* The launcher's side of the pool; the slots follow it. */
typedef struct DlsmPoolShared
{
	LWLock	   *lock;			/* guards everything below, and the slots */
	pid_t		launcher_pid;	/* 0 while the launcher is not running */
	Latch	   *launcher_latch; /* set to make it look at databases now */
	bool		rescan;			/* launcher: look at every database again */
	uint64		pokes;			/* times the launcher was asked to look */
	bool		rotating;		/* fewer workers than databases: turns */
	int			bound_ms;		/* then: most time between two passes */
	int			nslotless;		/* databases the launcher's last look left
								 * without a slot, ... */
	Oid			slotless[DLSM_MAX_SLOTLESS];	/* ... the first of them */
	/* times each table had no room (dlsm_pool_usage) */
	uint64		slots_refused;	/* a database a look left without a slot */
	uint64		slotless_left;	/* ... and not shown */
	uint64		without_left;	/* a database without dlsm kept its slot */
	uint64		shuns_cut;		/* a shun ended early for another's */
	TimestampTz reapers_yield_at;	/* a worker could not start: reapers give
									 * way for a while from then on */
	int			nused;			/* slots with a database (in slot_index) */
	int			nattached;		/* slots with a worker (pid not 0) */
} DlsmPoolShared;

static DlsmPoolShared *shared = NULL;
static DlsmSlot *slots = NULL;	/* nslots of them, under lock */
static int	nslots = 0;			/* dlsm.max_databases, at the server start */
static HTAB *without_dlsm = NULL;	/* Oids of databases without dlsm */
static HTAB *slot_index = NULL; /* database -> its slot, under lock */
static DlsmSlot *my_slot = NULL;	/* the slot of this worker or reaper */
static bool i_am_reaper = false;	/* this process is my_slot's reaper */

static DlsmSlot *slot_for(Oid dboid, bool add);

/* Shared memory for the pool of max_databases slots. */
Size
dlsm_pool_shmem_size(int max_databases)
{
	Size		size = MAXALIGN(sizeof(DlsmPoolShared));

	size = add_size(size, MAXALIGN(mul_size(max_databases, sizeof(DlsmSlot))));
	size = add_size(size, hash_estimate_size(max_databases,
											 sizeof(DlsmSlotIndexEntry)));
	return add_size(size, hash_estimate_size(DLSM_MAX_WITHOUT, sizeof(Oid)));
}

/*
 * Make slot free and empty: everything 0, pending too (an atomic, whose
 * zero memset alone may not make).  Lock held exclusively.
 */
static void
slot_clear(DlsmSlot *slot)
{
	Assert(slot->info.pid == 0);
	memset(slot, 0, sizeof(DlsmSlot));
	pg_atomic_init_u32(&slot->pending, 0);
}

/*
 * Give slot back: its database leaves slot_index.  The rest stays until
 * the slot is taken again (slot_for), so that a reaper still attached
 * sees its worker gone.  Lock held exclusively; no worker attached.
 */
static void
free_slot(DlsmSlot *slot)
{
	Assert(slot->info.pid == 0);
	(void) hash_search(slot_index, &slot->info.dboid, HASH_REMOVE, NULL);
	slot->info.dboid = InvalidOid;
	shared->nused--;
}

/*
 * Create or attach to the pool of max_databases slots, guarded by lock;
 * AddinShmemInitLock held.
 */
void
dlsm_pool_shmem_init(int max_databases, LWLock *lock)
{
	bool		found;
	HASHCTL		ctl;

	nslots = max_databases;
	shared = ShmemInitStruct("dlsm", sizeof(DlsmPoolShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmPoolShared));
		shared->lock = lock;
	}
	slots = ShmemInitStruct("dlsm slots", mul_size(nslots, sizeof(DlsmSlot)),
							&found);
	if (!found)
	{
		memset(slots, 0, mul_size(nslots, sizeof(DlsmSlot)));
		for (int i = 0; i < nslots; i++)
			slot_clear(&slots[i]);
	}
	/* one entry per slot: never full */
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DlsmSlotIndexEntry);
	slot_index = DLSM_SHMEM_INIT_HASH("dlsm slots by database", nslots, &ctl,
									  HASH_ELEM | HASH_BLOBS |
									  HASH_FIXED_SIZE);
	/* fixed: past it, a database without dlsm keeps its slot */
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(Oid);
	without_dlsm = DLSM_SHMEM_INIT_HASH("dlsm databases without dlsm",
										DLSM_MAX_WITHOUT, &ctl,
										HASH_ELEM | HASH_BLOBS |
										HASH_FIXED_SIZE);
}

/*
 * Take the lock in mode, if there is shared state; false when there is
 * none (the library was not preloaded).
 */
static bool
lock_state(LWLockMode mode)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(shared->lock, mode);
	return true;
}

/* Is the shared state there (was the library preloaded)? */
bool
dlsm_pool_available(void)
{
	return shared != NULL;
}

/*
 * Without preloading no worker runs: say so, once per session for each
 * case, where it matters: at CREATE EXTENSION, when a handler is set (on
 * queue), when a claim takes a lease (on queue).
 */
void
dlsm_pool_warn_no_worker(DlsmNoWorker what, const char *queue)
{
	static bool said[DLSM_NO_WORKER_CASES];

	if (shared != NULL || said[what])
		return;
	said[what] = true;
	switch (what)
	{
		case DLSM_NO_WORKER_INSTALL:
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("dlsm is not loaded through shared_preload_libraries"),
					 errdetail("Without it no dlsm worker runs: expired leases are not reaped, handlers do not run and expired named locks are not deleted."),
					 errhint("Add dlsm to shared_preload_libraries in postgresql.conf and restart the server.")));
			break;
		case DLSM_NO_WORKER_HANDLER:
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the handler of queue \"%s\" will not run", queue),
					 errdetail("The dlsm library is not loaded through shared_preload_libraries: no dlsm worker runs."),
					 errhint("Add dlsm to shared_preload_libraries in postgresql.conf and restart the server.")));
			break;
		case DLSM_NO_WORKER_LEASE:
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("expired leases of queue \"%s\" will not be reaped",
							queue),
					 errdetail("The dlsm library is not loaded through shared_preload_libraries: no dlsm worker runs."),
					 errhint("Add dlsm to shared_preload_libraries in postgresql.conf and restart the server, or call dlsm_reap() on a schedule.")));
			break;
		case DLSM_NO_WORKER_CASES:
			break;
	}
}

/* ---------------------------------------------------------------------
 * The launcher
 * ---------------------------------------------------------------------
 */

/*
 * End an attach of this process to the shared state: release the lock and,
 * when ok, arrange for detach to run at exit.  Returns ok.
 */
static bool
attached(bool ok, pg_on_exit_callback detach)
{
	LWLockRelease(shared->lock);
	if (ok)
		before_shmem_exit(detach, (Datum) 0);
	return ok;
}

static void
launcher_detach(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->launcher_pid = 0;
	shared->launcher_latch = NULL;
	LWLockRelease(shared->lock);
}

/*
 * Record this process as the launcher, until it exits; false when another
 * launcher runs already.
 */
bool
dlsm_pool_launcher_attach(void)
{
	bool		ok;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	ok = shared->launcher_pid == 0; /* live: see "Liveness" above */
	if (ok)
	{
		shared->launcher_pid = MyProcPid;
		shared->launcher_latch = MyLatch;
	}
	return attached(ok, launcher_detach);
}

/*
 * Ask the launcher to look at every database again, now: this database,
 * which had no dlsm, has it (CREATE EXTENSION), so its pause ends.  The
 * others stay as their last worker found them, so that the count of
 * databases that may have dlsm does not jump (launcher.c).
 */
void
dlsm_pool_wake_launcher(void)
{
	DlsmSlot   *slot;

	if (!lock_state(LW_EXCLUSIVE))
		return;
	shared->rescan = true;
	shared->pokes++;
	(void) hash_search(without_dlsm, &MyDatabaseId, HASH_REMOVE, NULL);
	slot = slot_for(MyDatabaseId, false);
	if (slot != NULL && slot->no_extension)
		slot->paused_until = 0;
	if (slot != NULL)
		slot->no_extension = false;
	if (shared->launcher_latch != NULL)
		SetLatch(shared->launcher_latch);
	LWLockRelease(shared->lock);
}

/*
 * The launcher keeps the databases in keep: the slots of others are freed,
 * their running workers asked to stop, and their marks without dlsm
 * forgotten.  keep is searched sorted, so that a look costs the slots and
 * the marks times log(nkeep), not times nkeep.
 */
void
dlsm_pool_forget_databases(const Oid *keep, int nkeep)
{
	HASH_SEQ_STATUS seq;
	Oid		   *dboid;
	Oid		   *sorted = palloc(sizeof(Oid) * Max(nkeep, 1));

	memcpy(sorted, keep, sizeof(Oid) * nkeep);
	qsort(sorted, nkeep, sizeof(Oid), oid_cmp);
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, without_dlsm);
	while ((dboid = hash_seq_search(&seq)) != NULL)
	{
		if (bsearch(dboid, sorted, nkeep, sizeof(Oid), oid_cmp) == NULL)
			(void) hash_search(without_dlsm, dboid, HASH_REMOVE, NULL);
	}
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot->info.dboid == InvalidOid ||
			bsearch(&slot->info.dboid, sorted, nkeep, sizeof(Oid),
					oid_cmp) != NULL)
			continue;
		if (slot->info.pid != 0)
			kill(slot->info.pid, SIGTERM);
		else
			free_slot(slot);
	}
	shared->rescan = false;
	LWLockRelease(shared->lock);
	pfree(sorted);
}

/* Did a worker find no dlsm in dboid (since the last poke there)?  Lock held. */
static bool
without_dlsm_has(Oid dboid)
{
	return hash_search(without_dlsm, &dboid, HASH_FIND, NULL) != NULL;
}

/*
 * The slot of dboid; when add is true and dboid has none, a free slot is
 * given to it, unless a worker found no dlsm there.  NULL if none.  A slot
 * is never taken from another database: one found without dlsm gives its
 * slot back as its worker exits (worker_detach).  Lock held, exclusively
 * when add is true.
 *
 * Cost: one probe of slot_index; giving a slot walks the slots for the
 * first free one (so that slots are taken in order, as dlsm_worker_status
 * lists them), once per database that gets one, and never when all are
 * taken (nused).
 */
static DlsmSlot *
slot_for(Oid dboid, bool add)
{
	DlsmSlotIndexEntry *entry;
	int			nused;

	if (!OidIsValid(dboid))
		return NULL;
	entry = hash_search(slot_index, &dboid, HASH_FIND, NULL);
	if (entry != NULL)
		return &slots[entry->slot];
	if (!add || shared->nused >= nslots || without_dlsm_has(dboid))
		return NULL;
	Assert(LWLockHeldByMeInMode(shared->lock, LW_EXCLUSIVE));
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];
		bool		found;

		if (slot->info.dboid != InvalidOid)
			continue;
		entry = hash_search(slot_index, &dboid, HASH_ENTER_NULL, &found);
		if (entry == NULL)
		{
			/* sized for nslots; the lock goes first (see below) */
			LWLockRelease(shared->lock);
			elog(ERROR, "dlsm slot index is full");
		}
		entry->slot = i;
		slot_clear(slot);
		slot->info.dboid = dboid;
		slot->info.listed_at = GetCurrentTimestamp();
		shared->nused++;
		return slot;
	}

	/*
	 * Released before the error: in the launcher an ERROR is FATAL, and its
	 * exit callback (launcher_detach) takes this lock before anything
	 * releases the locks a process holds.
	 */
	nused = shared->nused;
	LWLockRelease(shared->lock);
	elog(ERROR, "dlsm slot count is %d, but no slot is free", nused);
	return NULL;				/* keep compiler quiet */
}

/*
 * May the launcher start a worker for dboid now?  When it may, the start
 * is recorded and the next one waits pause_ms.
 */
DlsmStartDecision
dlsm_pool_may_start(Oid dboid, int pause_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	DlsmStartDecision decision = DLSM_START_NO_SLOT;
	DlsmSlot   *slot;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, true);
	if (without_dlsm_has(dboid) || (slot != NULL && slot->no_extension))
		decision = DLSM_START_LATER;	/* until a poke there */
	else if (slot != NULL)
	{
		decision = (slot->info.pid == 0 && now >= slot->paused_until &&
					now >= slot->stopped_until) ?
			DLSM_START_NOW : DLSM_START_LATER;
		if (decision == DLSM_START_NOW)
			slot->paused_until = TimestampTzPlusMilliseconds(now, pause_ms);
	}
	LWLockRelease(shared->lock);
	return decision;
}

/*
 * Since when slot's database waits for a pass: its last pass, or, before
 * the first, when the launcher listed it.  Lock held.
 */
static TimestampTz
waiting_since(DlsmSlot *slot)
{
	return slot->info.last_reap_at != 0 ?
		slot->info.last_reap_at : slot->info.listed_at;
}

/* Where slot's database stands with the workers at now.  Lock held. */
static DlsmServedState
served_state(DlsmSlot *slot, TimestampTz now)
{
	if (slot->info.pid != 0)
		return DLSM_SERVED_SERVING;
	if (slot->no_worker)
		return DLSM_SERVED_WAITING;
	if (!shared->rotating)
		return DLSM_SERVED_STARTING;
	if (TimestampDifferenceExceeds(waiting_since(slot), now,
								   shared->bound_ms))
		return DLSM_SERVED_WAITING;
	return DLSM_SERVED_BETWEEN;
}

/* ---------------------------------------------------------------------
 * The pool: fewer workers than databases, which take turns
 * ---------------------------------------------------------------------
 */

/*
 * How many of the n databases dbs may have dlsm and have a slot: all but
 * those whose last worker found none, and those left without a slot.  Each
 * gets a slot (if one is free), so that its wait counts from now; no_slot
 * (n entries) tells which were left without one, and dlsm_worker_status
 * shows them.  Cost: one probe of slot_index per database.
 */
int
dlsm_pool_count_known(const Oid *dbs, int n, bool *no_slot)
{
	int			count = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->nslotless = 0;
	for (int i = 0; i < n; i++)
	{
		DlsmSlot   *slot = slot_for(dbs[i], true);

		no_slot[i] = slot == NULL && !without_dlsm_has(dbs[i]);
		shared->slots_refused += no_slot[i];
		if (no_slot[i] && shared->nslotless < DLSM_MAX_SLOTLESS)
			shared->slotless[shared->nslotless++] = dbs[i];
		else if (no_slot[i])
			shared->slotless_left++;
		if (slot != NULL && !slot->no_extension)
			count++;
	}
	LWLockRelease(shared->lock);
	return count;
}

/*
 * The launcher's choice: the workers take turns (rotating), each database
 * visited at least every bound_ms; or each database has its own.
 */
void
dlsm_pool_set_rotation(bool rotating, int bound_ms)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->rotating = rotating;
	shared->bound_ms = rotating ? bound_ms : 0;
	LWLockRelease(shared->lock);
}

/*
 * Which turn comes first, for a database due for a visit that has waited
 * age_ms: one that waited half its bound, then one whose handler queues
 * got work, then the others; lower first.  Lock held.
 */
static int
turn_class(DlsmSlot *slot, long age_ms)
{
	if (age_ms >= shared->bound_ms / 2)
		return 0;
	return pg_atomic_read_u32(&slot->pending) != 0 ? 1 : 2;
}

/*
 * The next database of the n in dbs to visit: none of the nbusy in busy
 * (their workers start), nor one without a slot, nor one a worker is in
 * or found without dlsm, nor one paused; one due:
 * its handler queues got work, or its last pass was reap_ms ago, or it
 * never had one.  Of those, the first by turn_class, then the one that
 * waited longest.  Its start is recorded (the next waits pause_ms).
 * InvalidOid when none is due; *next_due is then when the next one is
 * (or 0: none).
 */
Oid
dlsm_pool_next_visit(const Oid *dbs, int n, const Oid *busy, int nbusy,
					 int reap_ms, int pause_ms, TimestampTz *next_due)
{
	TimestampTz now = GetCurrentTimestamp();
	DlsmSlot   *best = NULL;
	int			best_class = 0;
	long		best_age = 0;

	*next_due = 0;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < n; i++)
	{
		DlsmSlot   *slot = slot_for(dbs[i], false);
		TimestampTz due;
		long		age;
		int			class;
		bool		is_busy = false;

		for (int k = 0; k < nbusy && !is_busy; k++)
			is_busy = busy[k] == dbs[i];
		if (slot == NULL || is_busy || slot->info.pid != 0 ||
			slot->no_extension)
			continue;
		due = pg_atomic_read_u32(&slot->pending) != 0 ||
			slot->info.last_reap_at == 0 ? now :
			TimestampTzPlusMilliseconds(slot->info.last_reap_at, reap_ms);
		due = Max(due, Max(slot->paused_until, slot->stopped_until));
		if (due > now)
		{
			if (*next_due == 0 || due < *next_due)
				*next_due = due;
			continue;
		}
		age = TimestampDifferenceMilliseconds(waiting_since(slot), now);
		class = turn_class(slot, age);
		if (best == NULL || class < best_class ||
			(class == best_class && age > best_age))
		{
			best = slot;
			best_class = class;
			best_age = age;
		}
	}
	if (best != NULL)
		best->paused_until = TimestampTzPlusMilliseconds(now, pause_ms);
	LWLockRelease(shared->lock);
	return best != NULL ? best->info.dboid : InvalidOid;
}

/* The bound on the time between two passes while workers take turns. */
int
dlsm_pool_bound(void)
{
	int			bound_ms;

	LWLockAcquire(shared->lock, LW_SHARED);
	bound_ms = shared->bound_ms;
	LWLockRelease(shared->lock);
	return bound_ms;
}

/* How many workers are in their databases now. */
int
dlsm_pool_workers_attached(void)
{
	int			count;

	LWLockAcquire(shared->lock, LW_SHARED);
	count = shared->nattached;
	LWLockRelease(shared->lock);
	return count;
}

/*
 * No worker could start for dboid (no free background worker process):
 * it waits for one.  True the first time since its last worker, when the
 * launcher says so.
 */
bool
dlsm_pool_set_no_worker(Oid dboid)
{
	DlsmSlot   *slot;
	bool		first = false;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, false);
	if (slot != NULL && slot->info.pid == 0 && !slot->no_extension)
	{
		first = !slot->no_worker;
		slot->no_worker = true;
	}
	LWLockRelease(shared->lock);
	return first;
}

/*
 * Has dboid waited for a pass longer than its bound, while the workers
 * take turns?  True when the launcher should say so: not within repeat_ms
 * of the last time, so that a database late at every turn is not said at
 * every turn; *waited_ms: how long.  *late_at: when it will be late, if it
 * is waiting for its turn and not late yet (else 0), so that the launcher
 * looks again then.
 */
bool
dlsm_pool_note_late(Oid dboid, int repeat_ms, long *waited_ms,
					TimestampTz *late_at)
{
	DlsmSlot   *slot;
	bool		first = false;
	TimestampTz now = GetCurrentTimestamp();
	DlsmServedState state;

	*late_at = 0;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, false);
	if (slot == NULL || slot->no_extension || slot->no_worker ||
		!shared->rotating)
	{
		LWLockRelease(shared->lock);
		return false;
	}
	state = served_state(slot, now);
	if (state == DLSM_SERVED_BETWEEN)
		*late_at = TimestampTzPlusMilliseconds(waiting_since(slot),
											   shared->bound_ms);
	else if (state == DLSM_SERVED_WAITING &&
			 (slot->late_said_at == 0 ||
			  TimestampDifferenceExceeds(slot->late_said_at, now, repeat_ms)))
	{
		first = true;
		slot->late_said_at = now;
		*waited_ms = TimestampDifferenceMilliseconds(waiting_since(slot), now);
	}
	LWLockRelease(shared->lock);
	return first;
}

/* ---------------------------------------------------------------------
 * The workers
 * ---------------------------------------------------------------------
 */

/*
 * This worker exits: its slot has no worker.  When it found no dlsm (and
 * no poke came since), the database is remembered without dlsm, and its
 * slot given back, if there is room for the mark; else the slot keeps it.
 */
static void
worker_detach(int code, Datum arg)
{
	bool		found;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->info.pid = 0;
	shared->nattached--;
	my_slot->latch = NULL;
	if (my_slot->reaper_latch != NULL)
		SetLatch(my_slot->reaper_latch);	/* it leaves too */
	if (my_slot->no_extension &&
		hash_search(without_dlsm, &my_slot->info.dboid, HASH_ENTER_NULL,
					&found) != NULL)
	{
		free_slot(my_slot);
		slot_clear(my_slot);
	}
	else if (my_slot->no_extension)
		shared->without_left++;
	LWLockRelease(shared->lock);
}

/*
 * Record this process as the worker of dboid, until it exits; false when
 * another worker serves it, no slot is free, or a command that needs the
 * database to itself (DROP DATABASE) paused its workers.
 */
bool
dlsm_pool_worker_attach(Oid dboid)
{
	DlsmSlot   *slot;
	bool		ok;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, true);
	ok = slot != NULL &&
		slot->info.pid == 0 &&
		GetCurrentTimestamp() >= slot->stopped_until;
	if (ok && !shared->rotating)
	{
		/* a worker of its own: its counts start again */
		memset(&slot->info.counts, 0, sizeof(DlsmWorkerCounts));
		slot->info.last_reap_at = 0;
		slot->info.last_error[0] = '\0';
		slot->outdated_said = false;
	}
	if (ok)
	{
		slot->info.pid = MyProcPid;
		shared->nattached++;
		slot->info.started_at = GetCurrentTimestamp();
		slot->latch = MyLatch;
		slot->no_worker = false;
		my_slot = slot;
	}
	return attached(ok, worker_detach);
}

/* How many times the launcher was poked so far. */
uint64
dlsm_pool_pokes(void)
{
	uint64		pokes;

	LWLockAcquire(shared->lock, LW_SHARED);
	pokes = shared->pokes;
	LWLockRelease(shared->lock);
	return pokes;
}

/*
 * This worker found no dlsm in its database: the launcher leaves the
 * database alone until a poke there (CREATE EXTENSION), unless it was
 * poked since pokes_seen (one that committed while the worker looked).
 */
void
dlsm_pool_worker_idle(uint64 pokes_seen)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->no_extension = shared->pokes == pokes_seen;
	LWLockRelease(shared->lock);
}

/* Add delta to this worker's counts; error, if given, is its last error. */
void
dlsm_pool_worker_count(const DlsmWorkerCounts *delta, const char *error)
{
	DlsmWorkerCounts *c = &my_slot->info.counts;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	c->reaped += delta->reaped;
	c->deleted += delta->deleted;
	c->handled += delta->handled;
	c->errors += delta->errors;
	c->skipped += delta->skipped;
	c->wakeups += delta->wakeups;
	if (error != NULL)
		dlsm_name_clip(error, my_slot->info.last_error, DLSM_ERROR_LEN);
	LWLockRelease(shared->lock);
}

/*
 * Have this database's workers leave the queues of role owner alone until
 * until, its count-th shun, caused by queue cause (the oldest entry gives
 * way); called by a worker whose step on cause ignored its cancel, as it
 * exits.
 */
void
dlsm_pool_worker_shun(Oid owner, Oid cause, TimestampTz until, int count)
{
	int			pick = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_SHUNNED; i++)
	{
		if (my_slot->shunned[i] == owner)
		{
			pick = i;
			break;
		}
		if (my_slot->shunned_until[i] < my_slot->shunned_until[pick])
			pick = i;
	}
	if (my_slot->shunned[pick] != owner &&
		my_slot->shunned_until[pick] > GetCurrentTimestamp())
		shared->shuns_cut++;
	my_slot->shunned[pick] = owner;
	my_slot->shunned_until[pick] = until;
	my_slot->shun_count[pick] = count;
	my_slot->shun_cause[pick] = cause;
	LWLockRelease(shared->lock);
}

/*
 * How many shuns of role owner this database's workers remember, the last
 * of them ended at since or later; 0 if none.
 */
int
dlsm_pool_worker_shuns(Oid owner, TimestampTz since)
{
	int			count = 0;

	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_SHUNNED; i++)
		if (my_slot->shunned[i] == owner &&
			my_slot->shunned_until[i] >= since)
			count = my_slot->shun_count[i];
	LWLockRelease(shared->lock);
	return count;
}

/*
 * Until when this worker leaves the queues of role owner alone (0 if it
 * does not), and the queue that caused it (*cause).
 */
TimestampTz
dlsm_pool_worker_shunned(Oid owner, Oid *cause)
{
	TimestampTz until = 0;

	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < DLSM_MAX_SHUNNED; i++)
		if (my_slot->shunned[i] == owner &&
			my_slot->shunned_until[i] > GetCurrentTimestamp())
		{
			until = my_slot->shunned_until[i];
			*cause = my_slot->shun_cause[i];
		}
	LWLockRelease(shared->lock);
	return until;
}

/*
 * The end of the last reaping pass of this process's slot (its worker's or
 * its reaper's), or 0 when none was made: a reaper started beside a worker
 * keeps the worker's schedule.
 */
TimestampTz
dlsm_pool_worker_last_pass(void)
{
	TimestampTz last;

	LWLockAcquire(shared->lock, LW_SHARED);
	last = my_slot->info.last_reap_at;
	LWLockRelease(shared->lock);
	return last;
}

/*
 * This worker finished a reaping pass: its database has dlsm (found
 * without it before, it counts again from now on).
 */
void
dlsm_pool_worker_passed(void)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->no_extension = false;
	my_slot->info.last_reap_at = GetCurrentTimestamp();
	LWLockRelease(shared->lock);
}

/*
 * Stop the workers of database dboid for pause_ms: none starts there, and
 * one that was starting stops at once.  The worker running there is sent
 * SIGTERM under the lock (a process clears its pid under it before it
 * exits, so the pid is still that process's); returns its pid, or 0.
 */
pid_t
dlsm_pool_worker_pause(Oid dboid, int pause_ms)
{
	DlsmSlot   *slot;
	pid_t		pid = 0;

	if (!lock_state(LW_EXCLUSIVE))
		return 0;
	slot = slot_for(dboid, true);
	if (slot != NULL)
	{
		slot->stopped_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
														  pause_ms);
		pid = slot->info.pid;
		if (pid != 0)
			kill(pid, SIGTERM);
	}
	LWLockRelease(shared->lock);
	return pid;
}

/* Has the worker pid of dboid stopped, and its reaper with it? */
bool
dlsm_pool_worker_gone(Oid dboid, pid_t pid)
{
	DlsmSlot   *slot;
	bool		gone;

	LWLockAcquire(shared->lock, LW_SHARED);
	slot = slot_for(dboid, false);
	gone = slot == NULL || (slot->info.pid != pid && slot->reaper_pid == 0);
	LWLockRelease(shared->lock);
	return gone;
}

/*
 * A handler queue of database dboid got work: set the latch of the worker
 * serving it, if one runs; when the workers take turns and none is there,
 * the launcher's, so that the database's turn comes first.
 */
void
dlsm_pool_wake_worker(Oid dboid)
{
	DlsmSlot   *slot;

	/* shared: this runs at the commit of every enqueue for a handler */
	if (!lock_state(LW_SHARED))
		return;
	slot = slot_for(dboid, false);
	if (slot != NULL)
	{
		bool		was_pending = pg_atomic_exchange_u32(&slot->pending, 1) != 0;

		if (slot->latch != NULL)
			SetLatch(slot->latch);
		else if (shared->rotating && !was_pending &&
				 shared->launcher_latch != NULL)
			SetLatch(shared->launcher_latch);
	}
	LWLockRelease(shared->lock);
}

/*
 * This worker found the extension's SQL objects outdated (or not): true
 * when it should say so, the first time since they were not, so that
 * visits do not repeat it.
 */
bool
dlsm_pool_worker_outdated(bool outdated)
{
	bool		say;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	say = outdated && !my_slot->outdated_said;
	my_slot->outdated_said = outdated;
	LWLockRelease(shared->lock);
	return say;
}

/* Do the workers take turns (and this one leave after its visit)? */
bool
dlsm_pool_worker_visiting(void)
{
	bool		rotating;

	LWLockAcquire(shared->lock, LW_SHARED);
	rotating = shared->rotating;
	LWLockRelease(shared->lock);
	return rotating;
}

/*
 * Is a database other than this worker's due for a visit and without a
 * worker: its handler queues got work, or its last pass is reap_ms old, or
 * it never had one, and no start of it is under way (paused_until)?  The
 * same test as dlsm_pool_next_visit's, for a visiting worker that could
 * stay: it stays only while no other database waits for its turn.
 */
bool
dlsm_pool_others_due(int reap_ms)
{
	TimestampTz now = GetCurrentTimestamp();
	bool		due = false;

	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < nslots && !due; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot == my_slot || slot->info.dboid == InvalidOid ||
			slot->info.pid != 0 || slot->no_extension ||
			now < Max(slot->paused_until, slot->stopped_until))
			continue;
		due = pg_atomic_read_u32(&slot->pending) != 0 ||
			slot->info.last_reap_at == 0 ||
			TimestampDifferenceExceeds(slot->info.last_reap_at, now, reap_ms);
	}
	LWLockRelease(shared->lock);
	return due;
}

/* Did a handler queue get work since the last call?  Clears the mark. */
bool
dlsm_pool_worker_take_pending(void)
{
	bool		pending;

	LWLockAcquire(shared->lock, LW_SHARED);
	pending = pg_atomic_exchange_u32(&my_slot->pending, 0) != 0;
	LWLockRelease(shared->lock);
	return pending;
}

/*
 * Ask the worker of database dboid (requests: DLSM_REQUEST_*) to reap or
 * read the registry at once: set its latch, if one runs; the next one
 * starts with both anyway.
 */
void
dlsm_pool_worker_request(Oid dboid, int requests)
{
	DlsmSlot   *slot;

	if (!lock_state(LW_EXCLUSIVE))
		return;
	slot = slot_for(dboid, false);
	if (slot != NULL)
	{
		slot->requests |= requests;
		slot->reaper_requests |= requests;
		if (slot->latch != NULL)
			SetLatch(slot->latch);
		if (slot->reaper_latch != NULL)
			SetLatch(slot->reaper_latch);
	}
	LWLockRelease(shared->lock);
}

/*
 * What this worker (or reaper) was asked to do since it last looked
 * (DLSM_REQUEST_*).
 */
int
dlsm_pool_worker_take_requests(void)
{
	int		   *field;
	int			requests;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	field = i_am_reaper ? &my_slot->reaper_requests : &my_slot->requests;
	requests = *field;
	*field = 0;
	LWLockRelease(shared->lock);
	return requests;
}

/*
 * This worker leaves its database at the end of its visit; more: its
 * handlers may have work left, so that the database's turn comes first.
 */
void
dlsm_pool_worker_leave(bool more)
{
	LWLockAcquire(shared->lock, LW_SHARED);
	if (more)
		pg_atomic_write_u32(&my_slot->pending, 1);
	LWLockRelease(shared->lock);
}

/* ---------------------------------------------------------------------
 * Reapers
 * ---------------------------------------------------------------------
 */

/* Did a worker fail to start less than yield_ms ago? (caller holds lock) */
static bool
reapers_yield(int yield_ms)
{
	return shared->reapers_yield_at != 0 &&
		!TimestampDifferenceExceeds(shared->reapers_yield_at,
									GetCurrentTimestamp(), yield_ms);
}

static void
reaper_detach(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	if (my_slot->reaper_pid == MyProcPid)
	{
		my_slot->reaper_pid = 0;
		my_slot->reaper_parent = 0;
		my_slot->reaper_latch = NULL;
	}
	LWLockRelease(shared->lock);
}

/*
 * Record this process as the reaper of dboid beside its worker parent,
 * until it exits; false when parent no longer serves dboid, another reaper
 * runs there, a command paused the database's workers, or reapers give way
 * (dlsm_pool_reapers_give_way, within yield_ms).
 */
bool
dlsm_pool_reaper_attach(Oid dboid, pid_t parent, int yield_ms)
{
	DlsmSlot   *slot;
	bool		ok;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, false);
	ok = slot != NULL && slot->info.pid == parent && !shared->rotating &&
		slot->reaper_pid == 0 &&
		GetCurrentTimestamp() >= slot->stopped_until &&
		!reapers_yield(yield_ms);
	if (ok)
	{
		slot->reaper_pid = MyProcPid;
		slot->reaper_parent = parent;
		slot->reaper_latch = MyLatch;
		slot->reaper_requests = 0;
		my_slot = slot;
		i_am_reaper = true;
	}
	return attached(ok, reaper_detach);
}

/*
 * May this reaper go on?  Not once its worker is gone, the workers take
 * turns, or reapers give way (within yield_ms).
 */
bool
dlsm_pool_reaper_may_stay(int yield_ms)
{
	bool		stay;

	LWLockAcquire(shared->lock, LW_SHARED);
	/* its slot still its own (a freed slot is cleared, then reused) */
	stay = my_slot->reaper_pid == MyProcPid &&
		my_slot->info.pid == my_slot->reaper_parent && !shared->rotating &&
		!reapers_yield(yield_ms);
	LWLockRelease(shared->lock);
	return stay;
}

/*
 * Does this worker's database have a reaper (attached, beside this
 * worker)?  May it start one (no reaper gives way, within yield_ms)?
 */
bool
dlsm_pool_worker_has_reaper(int yield_ms, bool *may_start)
{
	bool		has;

	LWLockAcquire(shared->lock, LW_SHARED);
	has = my_slot->reaper_pid != 0 && my_slot->reaper_parent == MyProcPid;
	*may_start = !shared->rotating && !reapers_yield(yield_ms);
	LWLockRelease(shared->lock);
	return has;
}

/*
 * The launcher could not start a worker for want of a background worker
 * process: every reaper gives way (its worker reaps between handler calls
 * again), so that each database has its worker before any has a reaper.
 */
void
dlsm_pool_reapers_give_way(void)
{
	if (!lock_state(LW_EXCLUSIVE))
		return;
	shared->reapers_yield_at = GetCurrentTimestamp();
	for (int i = 0; i < nslots; i++)
	{
		if (slots[i].reaper_latch != NULL)
			SetLatch(slots[i].reaper_latch);
	}
	LWLockRelease(shared->lock);
}

/*
 * What dlsm_worker_status shows of the databases served, and of those the
 * launcher's last look left without a slot, palloc'd in *out with room for
 * one more; returns how many.
 */
int
dlsm_pool_copy_workers(DlsmWorkerInfo **out)
{
	int			n = 0;
	TimestampTz now = GetCurrentTimestamp();

	*out = palloc0(sizeof(DlsmWorkerInfo) * (nslots + DLSM_MAX_SLOTLESS + 1));
	if (!lock_state(LW_SHARED))
		return 0;
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot->info.dboid == InvalidOid || slot->no_extension)
			continue;
		(*out)[n] = slot->info;
		(*out)[n++].state = served_state(slot, now);
	}
	for (int i = 0; i < shared->nslotless; i++)
	{
		(*out)[n].dboid = shared->slotless[i];
		(*out)[n++].state = DLSM_SERVED_NO_SLOT;
	}
	LWLockRelease(shared->lock);
	return n;
}

/*
 * How full the pool's tables are: out (DLSM_MAX_OWNER_TABLES entries)
 * gets one entry for each; returns how many.  Only the launcher and the
 * workers add entries: a database is made by a role that may create
 * databases, a shun by a worker.  When full: a database left without a
 * slot waits for one to come free (dlsm_worker_status shows the first
 * DLSM_MAX_SLOTLESS of them), a database without dlsm that finds no room
 * keeps its slot, and the shun that ends first gives way to a new one.
 */
int
dlsm_pool_usage(DlsmTableUsage *out)
{
	TimestampTz now = GetCurrentTimestamp();
	int64		used;
	int64		shuns = 0;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->lock, LW_SHARED);
	used = shared->nused;
	for (int i = 0; i < nslots; i++)
	{
		int64		n = 0;

		for (int k = 0; k < DLSM_MAX_SHUNNED; k++)
			n += slots[i].shunned_until[k] > now;
		shuns = Max(shuns, n);
	}
	out[0] = (DlsmTableUsage)
	{
		"worker slots", nslots, used, (int64) shared->slots_refused
	};
	out[1] = (DlsmTableUsage)
	{
		"databases without dlsm", DLSM_MAX_WITHOUT,
			(int64) hash_get_num_entries(without_dlsm),
			(int64) shared->without_left
	};
	out[2] = (DlsmTableUsage)
	{
		"databases shown without a slot", DLSM_MAX_SLOTLESS,
			shared->nslotless, (int64) shared->slotless_left
	};
	out[3] = (DlsmTableUsage)
	{
		"shunned owners, per database", DLSM_MAX_SHUNNED, shuns,
			(int64) shared->shuns_cut
	};
	LWLockRelease(shared->lock);
	return 4;
}
