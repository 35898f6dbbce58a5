/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  dlsm's shared state: wake-ups of waiting claims, the launcher's and
 *	  the workers' slots, named-lock entries and listener counts.
 *
 * This file owns the shared struct: no other file sees its layout.  Others
 * call the named operations below, each of which takes and releases the
 * lock itself, so that a rule about a field is written once, here.  The
 * state exists only when the library is preloaded; without it every
 * operation is a no-op that answers as if nothing ran (no worker, nobody
 * waiting), and a waiting claim polls every POLL_MS instead of sleeping on
 * the condition variable.
 *
 * Locking: DlsmShared.lock (the LWLock tranche "dlsm") guards every field
 * but work_cv, which guards itself.  It is held for a few field reads or
 * writes only, never across SPI, a wait or a signal that could block.
 * AddinShmemInitLock is held only while the struct is created.  Who writes
 * what:
 *	launcher_pid, launcher_latch	the launcher (attach and its exit)
 *	rescan, pokes					any backend (dlsm_shmem_wake_launcher)
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
 *	slot pending					any backend (an enqueue for a handler),
 *									the slot's worker (its handler pass)
 *	slot outdated_said				the slot's worker
 *	slot counts, last_reap_at,
 *	slot last_error					the slot's worker
 *	slot shunned[], shunned_until[],
 *	slot shun_count[], shun_cause[]			the slot's worker (at its exit, when a
 *									step ignored its cancel)
 *	named[]							the backend whose pid is in the entry
 *	listen_db[], listeners[]		any backend, at its (UN)LISTEN's commit
 *
 * The floors of the queues have a lock of their own, DlsmShared.floor_lock
 * (the second of the tranche), held the same way; any backend reads and
 * writes them (dlsm_shmem_floor_*), as the rules below them say.  So have
 * the groups' rate limits, DlsmShared.rate_lock (the third), which any
 * claiming backend takes for a few field reads and writes
 * (dlsm_shmem_rate_*); a claim that must take an entry at its share, and
 * a dropped queue's, read or write the whole table under it.  An entry
 * counts against its queue owner's and its database's shares (the
 * counters rate_holders[]) from the claim that takes it until it is freed:
 * taken again when spent, swept, or forgotten with its queue.
 *
 * entity_seed is written once, when the struct is created, and only read
 * afterwards, without a lock.  It seeds the hash of entity names in the
 * floors and in claim passes (dlsm_shmem_entity_key): a secret chosen at
 * every start of the server, so that a producer cannot name an entity to
 * collide with another's and have its rows passed over.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "shmem.h"

/* How often a waiting claim looks again when dlsm is not preloaded. */
#define POLL_MS 50

/*
 * The most databases where a worker found no dlsm that are remembered
 * apart from the slots (more keep their slot), and the most databases left
 * without a slot that dlsm_worker_status shows.
 */
#define DLSM_MAX_WITHOUT 4096
#define DLSM_MAX_SLOTLESS 64

/* The most queues a database's worker leaves alone at once. */
#define DLSM_MAX_SHUNNED 8

/* The most queues whose floor is kept; more share the slots in turn. */
#define DLSM_MAX_FLOORS 128

/*
 * The most groups at their concurrency limit that the floors pass over, in
 * all, and the buckets by which a floor records the groups that came free.
 */
#define DLSM_MAX_PARKED_GROUPS 16384
#define DLSM_GROUP_BUCKETS 1024

/*
 * How many entries of the rate table (DLSM_MAX_RATES, shmem.h) a group's
 * key may be found in (from its hash on).  The owners and databases
 * holding entries are counted in DLSM_RATE_HOLDERS counters; one at its
 * share looks for spent entries in the whole table, at most every
 * DLSM_RATE_SWEEP_US.
 */
#define DLSM_RATE_PROBES 64
#define DLSM_RATE_HOLDERS 128
#define DLSM_RATE_SWEEP_US USECS_PER_SEC

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
	bool		pending;		/* a handler queue got work since its last
								 * handler pass */
	int			requests;		/* DLSM_REQUEST_*, not yet taken */
	bool		outdated_said;	/* a worker logged that the extension awaits
								 * its UPDATE */
} DlsmSlot;

/*
 * A group whose rate limit spaces its claims: none may be made before
 * next_at.  An entry whose next_at has passed says nothing and may be
 * taken for another group; until then it counts against its database's
 * and its queue owner's shares.
 */
typedef struct DlsmRate
{
	Oid			dboid;			/* with relid and group, the key; InvalidOid:
								 * free and counted nowhere */
	Oid			relid;
	uint64		group;			/* dlsm_shmem_entity_key of the group */
	Oid			owner;			/* the queue's owner, whose share it uses */
	TimestampTz next_at;
} DlsmRate;

/*
 * The entries of rates[] one database (owner InvalidOid) or one role
 * (dboid InvalidOid) holds; held 0: the counter is free.
 */
typedef struct DlsmRateHolder
{
	Oid			dboid;
	Oid			owner;
	int			held;
} DlsmRateHolder;

/*
 * A lowering of a floor: at gen, below the row id below (PG_INT64_MIN:
 * all).  A floor keeps its DLSM_FLOOR_RECENT latest.
 */
#define DLSM_FLOOR_RECENT 32

typedef struct DlsmLowering
{
	uint64		gen;
	int64		below;
} DlsmLowering;

/*
 * When groups of a bucket last came free at a floor (floor_clock values).
 * A slot taken to ask whether a group has room, and given back at once
 * because it had none, may have been counted by other claims meanwhile:
 * its group comes free as any other (dlsm_shmem_group_probed), but the
 * backend that took it may still park the group.  So the bucket keeps who
 * made its latest change by such a probe, and the latest change before
 * that by anyone else.
 */
typedef struct DlsmGroupBucket
{
	uint64		freed;			/* the latest */
	uint64		freed_before;	/* the latest not by prober */
	int			prober;			/* process number of freed's prober, or -1 */
	uint64		ended;			/* the latest by a unit's end (not a probe) */
} DlsmGroupBucket;

/*
 * Where the ready rows of a queue begin.  Rules: every row with an id in
 * (base, line] was seen by a claim not new, or new but belonging to a
 * parked entity (from its lowest id up), whose rows wait for a change of
 * that entity.  The claim's snapshot was taken after it read gen, and
 * after it read the generation of the bucket of each entity it parked.  A
 * commit that may make such a row ready moves them on: one that makes a
 * row new again (an insert, a retry, a reap) lowers line below it and
 * moves gen on; one that changes rows of an entity moves its bucket's
 * generation on and, if the entity is parked, unparks it, lowering line
 * below its lowest id and moving gen on.  A claim publishes what it saw
 * only if no lowering since it read gen reached its line (the recent
 * lowerings are kept: an insert above the line, the common case while
 * producers run, does not stop the claims of the moment from moving the
 * floor), and the generations of the buckets of the entities it parks did
 * not move.  Groups at their limit are parked apart (DlsmParkedGroup): a
 * group filled by its units in progress, as committed, is parked as soon
 * as a claim finds it so, and unparked by the end of any unit of it; a
 * group filled by slots taken by claims in flight is parked when the claim
 * publishes, unless a group of its bucket came free meanwhile, and is
 * unparked by the end of any unit or slot of it.  Changes dlsm cannot see
 * (a row set back to 'new' by hand, a unit settled by hand) are found by a
 * claim that scans from its line in the sand again, asking every group it
 * meets, at most every check_ms (dlsm_shmem_floor_read).
 */
typedef struct DlsmFloor
{
	Oid			dboid;			/* with relid, the key; InvalidOid: free */
	Oid			relid;
	int64		base;			/* rows above base... */
	int64		line;			/* ...up to line are not ready */
	uint64		gen;			/* from floor_clock, when last lowered */
	uint64		forgotten;		/* lowerings up to this gen are not kept */
	int			next_recent;	/* where the next lowering is kept */
	DlsmLowering recent[DLSM_FLOOR_RECENT]; /* the latest lowerings */
	int			nin_flight;		/* rows claimed by transactions in flight */
	int64		in_flight[DLSM_MAX_IN_FLIGHT];	/* in no order */
	TimestampTz checked_at;		/* last scan from base */
	int64		check_us;		/* how long the last one took */
	int			nparked;
	DlsmParked	parked[DLSM_MAX_PARKED];
	uint64		bucket_gen[DLSM_ENTITY_BUCKETS];
	int			ngroups;		/* its groups in parked_groups */
	DlsmGroupBucket group_freed[DLSM_GROUP_BUCKETS];
} DlsmFloor;

/*
 * A group at its concurrency limit parked at a floor: its rows from lowest
 * up wait for a unit of it to end.  A floor may park any number of groups
 * (up to DLSM_MAX_PARKED_GROUPS in all), kept in one shared table; a walk
 * asks it for each group it meets (dlsm_shmem_group_parked).  A group that
 * comes free is unparked, lowering its floor below its lowest row.
 */
typedef struct DlsmGroupKey
{
	Oid			dboid;
	Oid			relid;
	uint64		group;			/* dlsm_shmem_group_key */
} DlsmGroupKey;

typedef struct DlsmParkedGroup
{
	DlsmGroupKey key;
	int64		lowest;
	uint64		parked_at;		/* floor_clock when it was parked */
	bool		solid;			/* parked for units in progress, as committed:
								 * only a unit's end unparks it */
} DlsmParkedGroup;


typedef struct DlsmShared
{
	LWLock	   *lock;			/* guards everything below but work_cv */
	ConditionVariable work_cv;	/* broadcast when work became claimable */
	pid_t		launcher_pid;	/* 0 while the launcher is not running */
	Latch	   *launcher_latch; /* set to make it look at databases now */
	bool		rescan;			/* launcher: look at every database again */
	uint64		pokes;			/* times the launcher was asked to look */
	bool		rotating;		/* fewer workers than databases: turns */
	int			bound_ms;		/* then: most time between two passes */
	int			nslotless;		/* databases the launcher's last look left
								 * without a slot, ... */
	Oid			slotless[DLSM_MAX_SLOTLESS];	/* ... the first of them */
	DlsmNamedEntry named[DLSM_MAX_NAMED];	/* in no order */
	Oid			listen_db[DLSM_MAX_DATABASES];	/* databases with... */
	int			listeners[DLSM_MAX_DATABASES];	/* ...clients that LISTEN */
	bool		listeners_lost; /* a listener found no free entry */
	LWLock	   *floor_lock;		/* guards the fields below */
	uint64		floor_clock;	/* moved on by every lowering */
	int			floor_victim;	/* the next slot to take when all are used */
	DlsmFloor	floors[DLSM_MAX_FLOORS];
	LWLock	   *rate_lock;		/* guards the fields below */
	DlsmRate	rates[DLSM_MAX_RATES];
	DlsmRateHolder rate_holders[DLSM_RATE_HOLDERS]; /* in no order */
	TimestampTz rates_swept_at; /* spent entries last freed */
	uint64		rates_not_kept; /* claims admitted without an entry */
	uint64		entity_seed;	/* random, set at creation: see above */
} DlsmShared;

static DlsmShared *shared = NULL;
static HTAB *parked_groups = NULL;	/* DlsmParkedGroup, under floor_lock */
static DlsmSlot *slots = NULL;	/* nslots of them, under lock */
static int	nslots = 0;			/* dlsm.max_databases, at the server start */
static HTAB *without_dlsm = NULL;	/* Oids of databases without dlsm */
static DlsmSlot *my_slot = NULL;	/* the slot of this worker */
static uint64 entity_seed = 0;	/* this backend's copy; 0: not read yet */

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(DlsmShared)));
	RequestAddinShmemSpace(MAXALIGN(mul_size(nslots, sizeof(DlsmSlot))));
	RequestAddinShmemSpace(hash_estimate_size(DLSM_MAX_WITHOUT, sizeof(Oid)));
	RequestAddinShmemSpace(hash_estimate_size(DLSM_MAX_PARKED_GROUPS,
											  sizeof(DlsmParkedGroup)));
	RequestNamedLWLockTranche("dlsm", 3);
}

/* A shared hash table of n entries at most, never more (HASH_FIXED_SIZE). */
static HTAB *
fixed_hash(const char *name, long n, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	return DLSM_SHMEM_INIT_HASH(name, n, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
}

/* A random non-zero seed. */
static uint64
random_seed(void)
{
	uint64		seed;

	if (!pg_strong_random(&seed, sizeof(seed)))
		elog(ERROR, "could not generate a random seed");
	return seed | 1;
}

static void
shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("dlsm", sizeof(DlsmShared), &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmShared));
		shared->lock = &(GetNamedLWLockTranche("dlsm"))[0].lock;
		shared->floor_lock = &(GetNamedLWLockTranche("dlsm"))[1].lock;
		shared->rate_lock = &(GetNamedLWLockTranche("dlsm"))[2].lock;
		ConditionVariableInit(&shared->work_cv);
		shared->entity_seed = random_seed();
	}
	slots = ShmemInitStruct("dlsm slots", mul_size(nslots, sizeof(DlsmSlot)),
							&found);
	if (!found)
		memset(slots, 0, mul_size(nslots, sizeof(DlsmSlot)));
	/* fixed: past it, a database without dlsm keeps its slot */
	without_dlsm = fixed_hash("dlsm databases without dlsm", DLSM_MAX_WITHOUT,
							  sizeof(Oid), sizeof(Oid));
	/* fixed: past it, groups are not parked (HASH_ENTER_NULL) */
	parked_groups = fixed_hash("dlsm parked groups", DLSM_MAX_PARKED_GROUPS,
							   sizeof(DlsmGroupKey), sizeof(DlsmParkedGroup));
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
dlsm_shmem_available(void)
{
	return shared != NULL;
}

/*
 * Without preloading no worker runs: say so, once per session for each
 * case, where it matters: at CREATE EXTENSION, when a handler is set (on
 * queue), when a claim takes a lease (on queue).
 */
void
dlsm_shmem_warn_no_worker(DlsmNoWorker what, const char *queue)
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
					 errmsg("the handler of queue \"%s\" will not run: dlsm is not loaded through shared_preload_libraries",
							queue),
					 errhint("Add dlsm to shared_preload_libraries in postgresql.conf and restart the server.")));
			break;
		case DLSM_NO_WORKER_LEASE:
			ereport(WARNING,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("expired leases of queue \"%s\" will not be reaped: dlsm is not loaded through shared_preload_libraries",
							queue),
					 errhint("Add dlsm to shared_preload_libraries in postgresql.conf and restart the server, or call dlsm_reap() on a schedule.")));
			break;
		case DLSM_NO_WORKER_CASES:
			break;
	}
}

/* ---------------------------------------------------------------------
 * Waiting claims
 * ---------------------------------------------------------------------
 */

/* Wake every waiting claim, in every database. */
void
dlsm_shmem_wake_all(void)
{
	if (shared != NULL)
		ConditionVariableBroadcast(&shared->work_cv);
}

/*
 * Start listening for wake-ups; call before looking for work, so that a
 * broadcast between the look and the sleep is not missed.
 */
void
dlsm_shmem_prepare_wait(void)
{
	if (shared != NULL)
		ConditionVariablePrepareToSleep(&shared->work_cv);
}

/*
 * Sleep until woken or timeout_ms passed, shown as wait_event (waits.c);
 * true when woken.  Interrupts (cancel, statement_timeout, termination) are
 * served while asleep.
 */
bool
dlsm_shmem_wait(long timeout_ms, uint32 wait_event)
{
	int			rc;

	if (shared != NULL)
		return !ConditionVariableTimedSleep(&shared->work_cv, timeout_ms,
											wait_event);

	rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
				   Min(timeout_ms, POLL_MS), wait_event);
	ResetLatch(MyLatch);
	CHECK_FOR_INTERRUPTS();
	return (rc & WL_LATCH_SET) != 0;
}

/* Stop listening for wake-ups. */
void
dlsm_shmem_cancel_wait(void)
{
	if (shared != NULL)
		ConditionVariableCancelSleep();
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
dlsm_shmem_launcher_attach(void)
{
	bool		ok;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	ok = shared->launcher_pid == 0 || kill(shared->launcher_pid, 0) != 0;
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
dlsm_shmem_wake_launcher(void)
{
	if (!lock_state(LW_EXCLUSIVE))
		return;
	shared->rescan = true;
	shared->pokes++;
	(void) hash_search(without_dlsm, &MyDatabaseId, HASH_REMOVE, NULL);
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot->info.dboid != MyDatabaseId)
			continue;
		if (slot->no_extension)
			slot->paused_until = 0;
		slot->no_extension = false;
	}
	if (shared->launcher_latch != NULL)
		SetLatch(shared->launcher_latch);
	LWLockRelease(shared->lock);
}

/* Is dboid one of the n in dbs? */
static bool
oid_in(Oid dboid, const Oid *dbs, int n)
{
	for (int i = 0; i < n; i++)
	{
		if (dbs[i] == dboid)
			return true;
	}
	return false;
}

/*
 * The launcher keeps the databases in keep: the slots of others are freed,
 * their running workers asked to stop, and their marks without dlsm
 * forgotten.
 */
void
dlsm_shmem_forget_databases(const Oid *keep, int nkeep)
{
	HASH_SEQ_STATUS seq;
	Oid		   *dboid;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, without_dlsm);
	while ((dboid = hash_seq_search(&seq)) != NULL)
	{
		if (!oid_in(*dboid, keep, nkeep))
			(void) hash_search(without_dlsm, dboid, HASH_REMOVE, NULL);
	}
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];
		bool		wanted = false;

		for (int k = 0; k < nkeep && !wanted; k++)
			wanted = keep[k] == slot->info.dboid;
		if (!wanted && slot->info.pid != 0)
			kill(slot->info.pid, SIGTERM);
		else if (!wanted)
			slot->info.dboid = InvalidOid;
	}
	shared->rescan = false;
	LWLockRelease(shared->lock);
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
 * slot back as its worker exits (worker_detach).  Lock held.
 *
 * Cost: a walk over every slot, so a launcher's look costs databases times
 * dlsm.max_databases steps; at the default (128) that is nothing, near the
 * maximum (10000) a look at as many databases takes milliseconds, under
 * the lock (README, dlsm.max_databases).
 */
static DlsmSlot *
slot_for(Oid dboid, bool add)
{
	DlsmSlot   *free_slot = NULL;

	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot->info.dboid == dboid)
			return slot;
		if (free_slot == NULL && slot->info.dboid == InvalidOid)
			free_slot = slot;
	}
	if (add && free_slot != NULL && !without_dlsm_has(dboid))
	{
		memset(free_slot, 0, sizeof(DlsmSlot));
		free_slot->info.dboid = dboid;
		free_slot->info.listed_at = GetCurrentTimestamp();
		return free_slot;
	}
	return NULL;
}

/*
 * May the launcher start a worker for dboid now?  When it may, the start
 * is recorded and the next one waits pause_ms.
 */
DlsmStartDecision
dlsm_shmem_may_start(Oid dboid, int pause_ms)
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
 * shows them.
 */
int
dlsm_shmem_count_known(const Oid *dbs, int n, bool *no_slot)
{
	int			count = 0;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->nslotless = 0;
	for (int i = 0; i < n; i++)
	{
		DlsmSlot   *slot = slot_for(dbs[i], true);

		no_slot[i] = slot == NULL && !without_dlsm_has(dbs[i]);
		if (no_slot[i] && shared->nslotless < DLSM_MAX_SLOTLESS)
			shared->slotless[shared->nslotless++] = dbs[i];
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
dlsm_shmem_set_rotation(bool rotating, int bound_ms)
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
	return slot->pending ? 1 : 2;
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
dlsm_shmem_next_visit(const Oid *dbs, int n, const Oid *busy, int nbusy,
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
		due = slot->pending || slot->info.last_reap_at == 0 ? now :
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
dlsm_shmem_bound(void)
{
	int			bound_ms;

	LWLockAcquire(shared->lock, LW_SHARED);
	bound_ms = shared->bound_ms;
	LWLockRelease(shared->lock);
	return bound_ms;
}

/* How many workers are in their databases now. */
int
dlsm_shmem_workers_attached(void)
{
	int			count = 0;

	LWLockAcquire(shared->lock, LW_SHARED);
	for (int i = 0; i < nslots; i++)
		count += slots[i].info.pid != 0;
	LWLockRelease(shared->lock);
	return count;
}

/*
 * No worker could start for dboid (no free background worker process):
 * it waits for one.  True the first time since its last worker, when the
 * launcher says so.
 */
bool
dlsm_shmem_set_no_worker(Oid dboid)
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
dlsm_shmem_note_late(Oid dboid, int repeat_ms, long *waited_ms,
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
	my_slot->latch = NULL;
	if (my_slot->no_extension &&
		hash_search(without_dlsm, &my_slot->info.dboid, HASH_ENTER_NULL,
					&found) != NULL)
		memset(my_slot, 0, sizeof(DlsmSlot));
	LWLockRelease(shared->lock);
}

/*
 * Record this process as the worker of dboid, until it exits; false when
 * another worker serves it, no slot is free, or a command that needs the
 * database to itself (DROP DATABASE) paused its workers.
 */
bool
dlsm_shmem_worker_attach(Oid dboid)
{
	DlsmSlot   *slot;
	bool		ok;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	slot = slot_for(dboid, true);
	ok = slot != NULL &&
		(slot->info.pid == 0 || kill(slot->info.pid, 0) != 0) &&
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
		slot->info.started_at = GetCurrentTimestamp();
		slot->latch = MyLatch;
		slot->no_worker = false;
		my_slot = slot;
	}
	return attached(ok, worker_detach);
}

/* How many times the launcher was poked so far. */
uint64
dlsm_shmem_pokes(void)
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
dlsm_shmem_worker_idle(uint64 pokes_seen)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->no_extension = shared->pokes == pokes_seen;
	LWLockRelease(shared->lock);
}

/*
 * Copy the string from into the buffer to, of size bytes: cut at a
 * character boundary when it does not fit, and always terminated.
 */
void
dlsm_shmem_clip(const char *from, char *to, int size)
{
	int			len = pg_mbcliplen(from, strlen(from), size - 1);

	memcpy(to, from, len);
	to[len] = '\0';
}

/* Add delta to this worker's counts; error, if given, is its last error. */
void
dlsm_shmem_worker_count(const DlsmWorkerCounts *delta, const char *error)
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
		dlsm_shmem_clip(error, my_slot->info.last_error, DLSM_ERROR_LEN);
	LWLockRelease(shared->lock);
}

/*
 * Have this database's workers leave the queues of role owner alone until
 * until, its count-th shun, caused by queue cause (the oldest entry gives
 * way); called by a worker whose step on cause ignored its cancel, as it
 * exits.
 */
void
dlsm_shmem_worker_shun(Oid owner, Oid cause, TimestampTz until, int count)
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
dlsm_shmem_worker_shuns(Oid owner, TimestampTz since)
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
dlsm_shmem_worker_shunned(Oid owner, Oid *cause)
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
 * This worker finished a reaping pass: its database has dlsm (found
 * without it before, it counts again from now on).
 */
void
dlsm_shmem_worker_passed(void)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->no_extension = false;
	my_slot->info.last_reap_at = GetCurrentTimestamp();
	LWLockRelease(shared->lock);
}

/*
 * Stop the workers of database dboid for pause_ms: none starts there, and
 * one that was starting stops at once.  Returns the pid of the worker
 * running there, or 0; the caller signals it.
 */
pid_t
dlsm_shmem_worker_pause(Oid dboid, int pause_ms)
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
	}
	LWLockRelease(shared->lock);
	return pid;
}

/* Has the worker pid of dboid stopped? */
bool
dlsm_shmem_worker_gone(Oid dboid, pid_t pid)
{
	DlsmSlot   *slot;
	bool		gone;

	LWLockAcquire(shared->lock, LW_SHARED);
	slot = slot_for(dboid, false);
	gone = slot == NULL || slot->info.pid != pid;
	LWLockRelease(shared->lock);
	return gone;
}

/*
 * A handler queue of database dboid got work: set the latch of the worker
 * serving it, if one runs; when the workers take turns and none is there,
 * the launcher's, so that the database's turn comes first.
 */
void
dlsm_shmem_wake_worker(Oid dboid)
{
	if (!lock_state(LW_EXCLUSIVE))
		return;
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];
		bool		was_pending = slot->pending;

		if (slot->info.dboid != dboid)
			continue;
		slot->pending = true;
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
dlsm_shmem_worker_outdated(bool outdated)
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
dlsm_shmem_worker_visiting(void)
{
	bool		rotating;

	LWLockAcquire(shared->lock, LW_SHARED);
	rotating = shared->rotating;
	LWLockRelease(shared->lock);
	return rotating;
}

/* Did a handler queue get work since the last call?  Clears the mark. */
bool
dlsm_shmem_worker_take_pending(void)
{
	bool		pending;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	pending = my_slot->pending;
	my_slot->pending = false;
	LWLockRelease(shared->lock);
	return pending;
}

/*
 * Ask the worker of database dboid (requests: DLSM_REQUEST_*) to reap or
 * read the registry at once: set its latch, if one runs; the next one
 * starts with both anyway.
 */
void
dlsm_shmem_worker_request(Oid dboid, int requests)
{
	if (!lock_state(LW_EXCLUSIVE))
		return;
	for (int i = 0; i < nslots; i++)
	{
		DlsmSlot   *slot = &slots[i];

		if (slot->info.dboid != dboid)
			continue;
		slot->requests |= requests;
		if (slot->latch != NULL)
			SetLatch(slot->latch);
	}
	LWLockRelease(shared->lock);
}

/* What this worker was asked to do since it last looked (DLSM_REQUEST_*). */
int
dlsm_shmem_worker_take_requests(void)
{
	int			requests;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	requests = my_slot->requests;
	my_slot->requests = 0;
	LWLockRelease(shared->lock);
	return requests;
}

/*
 * This worker leaves its database at the end of its visit; more: its
 * handlers may have work left, so that the database's turn comes first.
 */
void
dlsm_shmem_worker_leave(bool more)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	my_slot->pending |= more;
	LWLockRelease(shared->lock);
}

/*
 * What dlsm_worker_status shows of the databases served, and of those the
 * launcher's last look left without a slot, palloc'd in *out with room for
 * one more; returns how many.
 */
int
dlsm_shmem_copy_workers(DlsmWorkerInfo **out)
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

/* ---------------------------------------------------------------------
 * Named locks
 * ---------------------------------------------------------------------
 */

/*
 * A transaction starts waiting for the named lock name: take an entry.
 * Returns its index, or -1 when there is no shared state or no free entry
 * (the lock works as well; dlsm_locks does not show it).
 */
int
dlsm_shmem_named_enter(const char *name, bool lease)
{
	int			found = -1;

	if (!lock_state(LW_EXCLUSIVE))
		return -1;
	for (int i = 0; i < DLSM_MAX_NAMED && found < 0; i++)
	{
		DlsmNamedEntry *e = &shared->named[i];

		if (e->pid != 0)
			continue;
		e->pid = MyProcPid;
		e->dboid = MyDatabaseId;
		e->waiting = true;
		e->lease = lease;
		e->fence = 0;
		e->since = GetCurrentTimestamp();
		dlsm_shmem_clip(name, e->name, DLSM_NAMED_LEN);
		found = i;
	}
	LWLockRelease(shared->lock);
	return found;
}

/* The waiting transaction of entry got its lock, with fence. */
void
dlsm_shmem_named_granted(int entry, int64 fence)
{
	if (entry < 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->named[entry].waiting = false;
	shared->named[entry].fence = fence;
	shared->named[entry].since = GetCurrentTimestamp();
	LWLockRelease(shared->lock);
}

/* Free an entry: the transaction stopped waiting, or ended. */
void
dlsm_shmem_named_leave(int entry)
{
	if (entry < 0)
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	shared->named[entry].pid = 0;
	LWLockRelease(shared->lock);
}

/*
 * Copy this database's named-lock entries into out (DLSM_MAX_NAMED
 * entries); returns how many.
 */
int
dlsm_shmem_copy_named(DlsmNamedEntry *out)
{
	DlsmNamedEntry *e = shared ? shared->named : NULL;
	int			n = 0;

	if (!lock_state(LW_SHARED))
		return 0;
	for (; e < shared->named + DLSM_MAX_NAMED; e++)
		if (e->pid != 0 && e->dboid == MyDatabaseId)
			out[n++] = *e;
	LWLockRelease(shared->lock);
	return n;
}

/* ---------------------------------------------------------------------
 * Listeners
 * ---------------------------------------------------------------------
 */

/*
 * A client backend of database dboid started (delta 1) or stopped (-1)
 * listening.  The counts only let dlsm skip a NOTIFY nobody would read.
 */
void
dlsm_shmem_count_listener(Oid dboid, int delta)
{
	int			entry = -1;

	if (!lock_state(LW_EXCLUSIVE))
		return;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (shared->listen_db[i] == dboid)
		{
			entry = i;
			break;
		}
		if (entry < 0 && shared->listeners[i] == 0)
			entry = i;			/* free: take it unless dboid has one */
	}
	if (entry < 0)
		shared->listeners_lost = true;	/* full: from now on, unsure */
	else
	{
		shared->listen_db[entry] = dboid;
		shared->listeners[entry] = Max(shared->listeners[entry] + delta, 0);
	}
	LWLockRelease(shared->lock);
}

/*
 * May a client backend of dboid be listening?  True when unsure (dlsm not
 * preloaded, or a listener that found no free entry).
 */
bool
dlsm_shmem_anyone_listens(Oid dboid)
{
	bool		listens;

	if (!lock_state(LW_SHARED))
		return true;
	listens = shared->listeners_lost;
	for (int i = 0; i < DLSM_MAX_DATABASES && !listens; i++)
		listens = shared->listen_db[i] == dboid && shared->listeners[i] > 0;
	LWLockRelease(shared->lock);
	return listens;
}

/* ---------------------------------------------------------------------
 * Floors: where the ready rows of a queue begin
 * ---------------------------------------------------------------------
 */

/*
 * The key of an entity in the floors and in a claim pass: a hash of its
 * name, seeded with the server's secret (a backend's own, when the library
 * is not preloaded: there are no floors then, and a pass and the claims a
 * transaction holds are the backend's).
 */
uint64
dlsm_shmem_entity_key(const char *entity)
{
	if (entity_seed == 0)
		entity_seed = shared != NULL ? shared->entity_seed : random_seed();
	return hash_bytes_extended((const unsigned char *) entity,
							   strlen(entity), entity_seed);
}

/*
 * The key of a group (grouplimit.c) in the floors and claim passes: as an
 * entity's, with another seed, so that a group and an entity of one name
 * have different keys.
 */
uint64
dlsm_shmem_group_key(const char *group)
{
	return dlsm_shmem_entity_key(group) ^ UINT64CONST(0x9e3779b97f4a7c15);
}

/* The floor of relid in this database, or NULL.  floor_lock held. */
static DlsmFloor *
find_floor(Oid relid)
{
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		if (f->relid == relid && f->dboid == MyDatabaseId)
			return f;
	}
	return NULL;
}

/* The key of group of floor f in parked_groups. */
static DlsmGroupKey
parked_group_key(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	memset(&key, 0, sizeof(key));
	key.dboid = f->dboid;
	key.relid = f->relid;
	key.group = group;
	return key;
}

/* The parked group of floor f, or NULL.  floor_lock held. */
static DlsmParkedGroup *
find_parked_group(const DlsmFloor *f, uint64 group)
{
	DlsmGroupKey key;

	if (f->ngroups == 0)
		return NULL;
	key = parked_group_key(f, group);
	return hash_search(parked_groups, &key, HASH_FIND, NULL);
}

/* Unpark every group of floor f.  floor_lock held exclusively. */
static void
drop_parked_groups(DlsmFloor *f)
{
	HASH_SEQ_STATUS status;
	DlsmParkedGroup *p;

	if (f->ngroups == 0)
		return;
	hash_seq_init(&status, parked_groups);
	while ((p = hash_seq_search(&status)) != NULL)
		if (p->key.dboid == f->dboid && p->key.relid == f->relid)
			hash_search(parked_groups, &p->key, HASH_REMOVE, NULL);
	f->ngroups = 0;
}

/*
 * Every group of floor f may have come free, now: no claim that read the
 * floors' clock before parks one.  floor_lock held exclusively.
 */
static void
all_groups_freed(DlsmFloor *f)
{
	uint64		clock = ++shared->floor_clock;

	for (int b = 0; b < DLSM_GROUP_BUCKETS; b++)
	{
		f->group_freed[b].freed_before = clock;
		f->group_freed[b].freed = clock;
		f->group_freed[b].ended = clock;
		f->group_freed[b].prober = -1;
	}
}

/* A new floor for relid, in a free slot or the next one in turn. */
static DlsmFloor *
add_floor(Oid relid)
{
	DlsmFloor  *f = NULL;

	for (int i = 0; i < DLSM_MAX_FLOORS && f == NULL; i++)
		if (shared->floors[i].relid == InvalidOid)
			f = &shared->floors[i];
	if (f == NULL)
	{
		f = &shared->floors[shared->floor_victim];
		shared->floor_victim = (shared->floor_victim + 1) % DLSM_MAX_FLOORS;
		drop_parked_groups(f);
	}
	memset(f, 0, sizeof(DlsmFloor));
	f->dboid = MyDatabaseId;
	f->relid = relid;
	f->gen = shared->floor_clock;
	f->forgotten = f->gen;		/* what came before is not known */
	/* nor which groups came free: any may have, since any clock read */
	all_groups_freed(f);
	return f;
}

/*
 * Before a claim's first scan of relid with line in the sand after: where
 * to start (seen->line, above after) and whether the claim may publish
 * what the scan finds (seen->publish).  When the floor was last checked
 * from its base more than check_ms ago, this claim checks it: it starts at
 * after (seen->check).
 */
void
dlsm_shmem_floor_read(Oid relid, int64 after, int check_ms,
					  DlsmFloorSeen *seen)
{
	DlsmFloor  *f;
	TimestampTz now;

	seen->line = after;
	seen->publish = false;
	seen->check = true;
	seen->nparked = 0;
	seen->may_park = false;
	seen->nin_flight = 0;
	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	f = find_floor(relid);
	if (f == NULL)
	{
		/*
		 * The queue's first claim (since the floor was last taken for another
		 * queue) makes its floor, knowing nothing yet: from now on it keeps
		 * the lowerings, without which a claim could move it only in a moment
		 * without any commit of an insert
		 */
		LWLockRelease(shared->floor_lock);
		LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
		f = find_floor(relid);
		if (f == NULL)
			f = add_floor(relid);
	}
	seen->gen = f->gen;
	seen->clock = shared->floor_clock;
	seen->nin_flight = f->nin_flight;
	memcpy(seen->in_flight, f->in_flight, sizeof(int64) * f->nin_flight);
	seen->base = after;
	seen->publish = after <= f->line;
	seen->may_park = true;
	memcpy(seen->bucket_gen, f->bucket_gen, sizeof(f->bucket_gen));
	if (f->base <= after && after <= f->line)
	{
		seen->base = f->base;
		seen->line = f->line;
		seen->check = false;
		seen->nparked = f->nparked;
		memcpy(seen->parked, f->parked, sizeof(DlsmParked) * f->nparked);
	}
	now = GetCurrentTimestamp();
	seen->checked_at = now;

	/*
	 * A check that took long (a backlog of rows held back) comes at most
	 * every ten times as long: the checks take a tenth of the claims' time
	 */
	check_ms = (int) Max(check_ms, Min(f->check_us / 100, INT_MAX));
	if (!seen->check && TimestampDifferenceExceeds(f->checked_at, now,
												   check_ms))
	{
		/* this claim checks the floor; the others go on */
		LWLockRelease(shared->floor_lock);
		LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
		f = find_floor(relid);
		if (f != NULL && TimestampDifferenceExceeds(f->checked_at, now,
													check_ms))
		{
			f->checked_at = now;
			seen->line = seen->base = after;
			seen->check = true;
			seen->nparked = 0;
		}
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * Did no lowering of floor f since gen (read by a claim before its scan)
 * reach line?  Those above it made ready only rows the claim's walk did
 * not pass over.  False when one of them is forgotten.
 */
static bool
unlowered(DlsmFloor *f, uint64 gen, int64 line)
{
	if (f->gen == gen)
		return true;
	if (gen < f->forgotten)
		return false;
	for (int i = 0; i < DLSM_FLOOR_RECENT; i++)
		if (f->recent[i].gen > gen && f->recent[i].below <= line)
			return false;
	return true;
}

/*
 * Add the parked entities of a claim to floor f (or, after a check, put
 * them in place of its own): false when they do not fit, or when one of
 * them changed since the claim read the floor.
 */
static bool
park(DlsmFloor *f, const DlsmFloorSeen *seen, const DlsmParked *parked,
	 int n)
{
	DlsmParked	all[DLSM_MAX_PARKED];
	int			count = seen->check ? 0 : f->nparked;

	memcpy(all, f->parked, sizeof(DlsmParked) * count);
	for (int i = 0; i < n; i++)
	{
		int			b = parked[i].key % DLSM_ENTITY_BUCKETS;
		int			k = 0;

		if (!seen->may_park || f->bucket_gen[b] != seen->bucket_gen[b])
			return false;
		while (k < count && all[k].key != parked[i].key)
			k++;
		if (k == count && count == DLSM_MAX_PARKED)
			return false;
		if (k == count)
			all[count++] = parked[i];
		else
			all[k].lowest = Min(all[k].lowest, parked[i].lowest);
	}
	memcpy(f->parked, all, sizeof(DlsmParked) * count);
	f->nparked = count;
	return true;
}

/*
 * Did no group of the bucket of group of floor f come free since clock,
 * but by this backend's own probes?
 */
static bool
unfreed(const DlsmFloor *f, uint64 group, uint64 clock)
{
	const DlsmGroupBucket *b = &f->group_freed[group % DLSM_GROUP_BUCKETS];

	if (b->freed <= clock)
		return true;
	return b->prober == DLSM_MY_PROC_NUMBER && b->freed_before <= clock;
}

/*
 * A group of floor f came free (by a probe of backend prober, or -1):
 * note it in its bucket.  floor_lock held exclusively.
 */
static void
note_freed(DlsmFloor *f, uint64 group, int prober)
{
	DlsmGroupBucket *b = &f->group_freed[group % DLSM_GROUP_BUCKETS];

	if (b->prober < 0 || b->prober != prober)
		b->freed_before = b->freed;
	b->freed = ++shared->floor_clock;
	b->prober = prober;
	if (prober < 0)
		b->ended = b->freed;
}

/*
 * Park at floor f the groups a claim found at their limit (n of them, by
 * their lowest row, ascending), whose rows it passed over up to line;
 * returns how far the floor may go: below the lowest row of the first
 * group that may have come free since the claim read the floor (seen), or
 * that does not fit.
 */
static int64
park_groups(DlsmFloor *f, const DlsmFloorSeen *seen, int64 line,
			const DlsmParked *groups, int n)
{
	for (int i = 0; i < n && groups[i].lowest <= line; i++)
	{
		DlsmGroupKey key = parked_group_key(f, groups[i].key);
		DlsmParkedGroup *p = find_parked_group(f, groups[i].key);
		bool		found = p != NULL;

		/*
		 * Parked already (by another claim): it waits still.  One filled by
		 * its units in progress was parked when found, and is gone only if
		 * one of them ended since.
		 */
		if (!found && (groups[i].solid ||
					   !unfreed(f, groups[i].key, seen->clock)))
			return groups[i].lowest - 1;
		if (!found)
			p = hash_search(parked_groups, &key, HASH_ENTER_NULL, &found);
		if (p == NULL)
			return groups[i].lowest - 1;
		if (!found)
		{
			p->lowest = groups[i].lowest;
			p->parked_at = ++shared->floor_clock;
			p->solid = groups[i].solid;
			f->ngroups++;
		}
		else
			p->lowest = Min(p->lowest, groups[i].lowest);
	}
	return line;
}

/*
 * A claim whose scan began at seen->line found no ready row up to line
 * but those of the parked entities (n of them) and groups (ngroups):
 * record it, unless a change since seen was read may have made such a row
 * ready.
 */
void
dlsm_shmem_floor_publish(Oid relid, const DlsmFloorSeen *seen, int64 line,
						 const DlsmParked *parked, int n,
						 const DlsmParked *groups, int ngroups)
{
	DlsmFloor  *f;

	if (shared == NULL || !seen->publish ||
		(line == seen->line && n == 0 && ngroups == 0 && !seen->check))
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f == NULL && seen->gen == shared->floor_clock && n == 0 &&
		ngroups == 0)
		f = add_floor(relid);
	/* what the check cost counts, whether its finding is kept or not */
	if (f != NULL && seen->check)
		f->check_us = GetCurrentTimestamp() - seen->checked_at;
	if (f != NULL && unlowered(f, seen->gen, line) && park(f, seen, parked, n))
	{
		if (seen->check)
			f->checked_at = GetCurrentTimestamp();
		f->base = seen->base;
		f->line = park_groups(f, seen, line, groups, ngroups);
	}
	LWLockRelease(shared->floor_lock);
}

/* Lower floor f below id below, after the commit of a change. */
static void
lower(DlsmFloor *f, int64 below)
{
	DlsmLowering *kept = &f->recent[f->next_recent];

	f->line = Max(f->base, Min(f->line, below == PG_INT64_MIN ?
							   PG_INT64_MIN : below - 1));
	f->gen = ++shared->floor_clock;
	/* the lowering it replaces is forgotten */
	f->forgotten = Max(f->forgotten, kept->gen);
	kept->gen = f->gen;
	kept->below = below;
	f->next_recent = (f->next_recent + 1) % DLSM_FLOOR_RECENT;
}

/*
 * Rows of relid with ids from below up may have become ready (this
 * transaction committed an insert, a retry, a reap): lower the floor under
 * them.  Call after the commit.
 */
void
dlsm_shmem_floor_lower(Oid relid, int64 below)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
		lower(f, below);
	else
		shared->floor_clock++;
	LWLockRelease(shared->floor_lock);
}

/*
 * The rules of relid changed (dlsm_alter_queue): lower its floor to its
 * base and unpark every entity.  Call after the commit.
 */
void
dlsm_shmem_floor_reset(Oid relid)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
	{
		lower(f, PG_INT64_MIN);
		f->nparked = 0;
		drop_parked_groups(f);
	}
	else
		shared->floor_clock++;
	LWLockRelease(shared->floor_lock);
}

/*
 * This transaction changed rows of the given entities of relid (n keys):
 * unpark them.  Call after the commit.
 */
void
dlsm_shmem_floor_entities(Oid relid, const uint64 *entities, int n)
{
	DlsmFloor  *f;

	if (shared == NULL || n == 0)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < n; i++)
	{
		f->bucket_gen[entities[i] % DLSM_ENTITY_BUCKETS]++;
		for (int k = 0; k < f->nparked; k++)
		{
			if (f->parked[k].key != entities[i])
				continue;
			lower(f, f->parked[k].lowest);
			f->parked[k--] = f->parked[--f->nparked];
		}
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * Is group parked at relid's floor?  A walk passes over its rows: should
 * it come free before the walk's claim publishes, the floor goes below
 * them, and the claim's publish is refused (unlowered).
 */
bool
dlsm_shmem_group_parked(Oid relid, uint64 group)
{
	DlsmFloor  *f;
	bool		parked = false;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	f = find_floor(relid);
	if (f != NULL)
		parked = find_parked_group(f, group) != NULL;
	LWLockRelease(shared->floor_lock);
	return parked;
}

/*
 * Unpark group p of floor f, lowering the floor below its lowest row.
 * floor_lock held exclusively.
 */
static void
unpark_group(DlsmFloor *f, DlsmParkedGroup *p)
{
	lower(f, p->lowest);
	hash_search(parked_groups, &p->key, HASH_REMOVE, NULL);
	f->ngroups--;
}

/*
 * Groups of relid may have room (n keys: a unit of each ended, or a slot
 * of each came free): unpark them.  Call once the change is visible.
 */
void
dlsm_shmem_floor_groups(Oid relid, const uint64 *groups, int n)
{
	DlsmFloor  *f;

	if (shared == NULL || n == 0)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < n; i++)
	{
		DlsmParkedGroup *p = find_parked_group(f, groups[i]);

		note_freed(f, groups[i], -1);
		if (p != NULL)
			unpark_group(f, p);
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * This backend took a slot of group of relid after the floor's clock read
 * since, found the group without room and gave the slot back: other
 * claims may have counted it, so the group comes free, and a parking of
 * it since then is undone; this backend's own claim may still park it.
 */
void
dlsm_shmem_group_probed(Oid relid, uint64 group, uint64 since)
{
	DlsmFloor  *f;
	DlsmParkedGroup *p;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL)
	{
		note_freed(f, group, DLSM_MY_PROC_NUMBER);
		p = find_parked_group(f, group);
		if (p != NULL && !p->solid && p->parked_at > since)
			unpark_group(f, p);
	}
	LWLockRelease(shared->floor_lock);
}

/*
 * A claim found group of relid filled by its units in progress, as
 * committed, counted after the floors' clock read since, at its row
 * lowest: park it now, unless a unit of a group of its bucket ended since
 * (false).  Only a unit's end unparks it.
 */
bool
dlsm_shmem_group_park(Oid relid, uint64 group, int64 lowest, uint64 since)
{
	DlsmFloor  *f;
	DlsmParkedGroup *p = NULL;
	DlsmGroupKey key;
	bool		found;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL &&
		f->group_freed[group % DLSM_GROUP_BUCKETS].ended <= since)
	{
		key = parked_group_key(f, group);
		p = hash_search(parked_groups, &key, HASH_ENTER_NULL, &found);
	}
	if (p != NULL && !found)
	{
		p->lowest = lowest;
		p->parked_at = ++shared->floor_clock;
		f->ngroups++;
	}
	else if (p != NULL)
		p->lowest = Min(p->lowest, lowest);
	if (p != NULL)
		p->solid = true;
	LWLockRelease(shared->floor_lock);
	return p != NULL;
}

/*
 * A prepared transaction of database dboid was committed or rolled back:
 * its slots came free, and its inserts, settles and claims (told to the
 * floors at PREPARE, before anyone could see them) are visible now, or
 * undone.  Lower the database's floors to their base, unpark every entity
 * and group, and let no claim that read a floor before park one.
 */
void
dlsm_shmem_floors_prepared_ended(Oid dboid)
{
	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_FLOORS; i++)
	{
		DlsmFloor  *f = &shared->floors[i];

		if (f->relid == InvalidOid || f->dboid != dboid)
			continue;
		lower(f, PG_INT64_MIN);
		f->nparked = 0;
		for (int b = 0; b < DLSM_ENTITY_BUCKETS; b++)
			f->bucket_gen[b]++;
		drop_parked_groups(f);
		all_groups_freed(f);
	}
	LWLockRelease(shared->floor_lock);
}

/* The floors' clock, for dlsm_shmem_group_probed. */
uint64
dlsm_shmem_floor_clock(void)
{
	uint64		clock;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->floor_lock, LW_SHARED);
	clock = shared->floor_clock;
	LWLockRelease(shared->floor_lock);
	return clock;
}

/*
 * Was row id claimed by a transaction in flight when the floor was read
 * (seen)?  Then a walk may pass over it: if that transaction rolls back,
 * it lowers the floor below the row again (dlsm_shmem_floor_unclaimed).
 */
bool
dlsm_shmem_floor_in_flight(const DlsmFloorSeen *seen, int64 id)
{
	for (int i = 0; i < seen->nin_flight; i++)
		if (seen->in_flight[i] == id)
			return true;
	return false;
}

/*
 * This transaction claimed row id of relid: let the floor know it, so that
 * the walks of other claims pass over it while it is in flight.  False
 * when the floor does not take it (no floor, or full): walks then stop at
 * the row, as at any they cannot claim.
 */
bool
dlsm_shmem_floor_claimed(Oid relid, int64 id)
{
	DlsmFloor  *f;
	bool		taken = false;

	if (shared == NULL)
		return false;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	if (f != NULL && f->nin_flight < DLSM_MAX_IN_FLIGHT)
	{
		f->in_flight[f->nin_flight++] = id;
		taken = true;
	}
	LWLockRelease(shared->floor_lock);
	return taken;
}

/*
 * The claim of row id of relid that the floor knows
 * (dlsm_shmem_floor_claimed) ended; ready: it ended without changing the
 * row (a rollback), which is ready again, so the floor goes below it.  Call
 * before the claim's locks are released.
 */
void
dlsm_shmem_floor_unclaimed(Oid relid, int64 id, bool ready)
{
	DlsmFloor  *f;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->floor_lock, LW_EXCLUSIVE);
	f = find_floor(relid);
	for (int i = 0; f != NULL && i < f->nin_flight; i++)
	{
		if (f->in_flight[i] != id)
			continue;
		f->in_flight[i] = f->in_flight[--f->nin_flight];
		if (ready)
			lower(f, id);
		break;
	}
	LWLockRelease(shared->floor_lock);
}

/* ---------------------------------------------------------------------
 * Rate limits of groups
 * ---------------------------------------------------------------------
 */

/*
 * The counter of database dboid (owner InvalidOid) or role owner (dboid
 * InvalidOid); when it has none and create, a free one (NULL when none is
 * free), which stays free until the caller counts an entry in it.
 * rate_lock held, exclusively to create.
 */
static DlsmRateHolder *
rate_holder(Oid dboid, Oid owner, bool create)
{
	DlsmRateHolder *free_holder = NULL;

	for (int i = 0; i < DLSM_RATE_HOLDERS; i++)
	{
		DlsmRateHolder *h = &shared->rate_holders[i];

		if (h->held > 0 && h->dboid == dboid && h->owner == owner)
			return h;
		if (h->held == 0 && free_holder == NULL)
			free_holder = h;
	}
	if (free_holder == NULL || !create)
		return NULL;
	free_holder->dboid = dboid;
	free_holder->owner = owner;
	return free_holder;
}

/* The entries database dboid or role owner holds.  rate_lock held. */
static int
rate_held(Oid dboid, Oid owner)
{
	DlsmRateHolder *h = rate_holder(dboid, owner, false);

	return h == NULL ? 0 : h->held;
}

/* Entry r is free again, counted nowhere.  rate_lock held exclusively. */
static void
rate_free(DlsmRate *r)
{
	DlsmRateHolder *h;

	if (!OidIsValid(r->dboid))
		return;
	if ((h = rate_holder(r->dboid, InvalidOid, false)) != NULL)
		h->held--;
	if ((h = rate_holder(InvalidOid, r->owner, false)) != NULL)
		h->held--;
	memset(r, 0, sizeof(DlsmRate));
}

/*
 * Free every spent entry, unless that was done less than
 * DLSM_RATE_SWEEP_US ago.  rate_lock held exclusively.
 */
static void
rates_sweep(TimestampTz now)
{
	if (now - shared->rates_swept_at < DLSM_RATE_SWEEP_US)
		return;
	shared->rates_swept_at = now;
	for (int i = 0; i < DLSM_MAX_RATES; i++)
	{
		if (shared->rates[i].next_at <= now)
			rate_free(&shared->rates[i]);
	}
}

/*
 * The entry of (relid, group) in this database, or NULL; *free_entry is
 * then the first entry it may take (spent, or free), or NULL when every
 * entry it may use holds another group back.  rate_lock held.
 */
static DlsmRate *
find_rate(Oid relid, uint64 group, TimestampTz now, DlsmRate **free_entry)
{
	uint64		key = group ^ relid ^ ((uint64) MyDatabaseId << 32);
	uint64		start = key % DLSM_MAX_RATES;

	*free_entry = NULL;
	for (int i = 0; i < DLSM_RATE_PROBES; i++)
	{
		DlsmRate   *r = &shared->rates[(start + i) % DLSM_MAX_RATES];

		if (r->group == group && r->relid == relid &&
			r->dboid == MyDatabaseId)
			return r;
		if (*free_entry == NULL && r->next_at <= now)
			*free_entry = r;
	}
	return NULL;
}

/*
 * Take entry r (spent or free, from find_rate) for group of queue relid,
 * whose owner is owner, if the shares of owner and of this database leave
 * room: DLSM_RATE_TAKEN, else which share (or the table) is full.
 * rate_lock held exclusively.
 */
static DlsmRateAnswer
new_rate(Oid relid, Oid owner, uint64 group, TimestampTz now, DlsmRate *r)
{
	DlsmRateHolder *db;
	DlsmRateHolder *role;

	if (r != NULL)
		rate_free(r);

	/*
	 * a share full, or a database or owner that holds nothing yet and needs a
	 * counter: spent entries free their counters (at most once a second)
	 */
	if (rate_held(InvalidOid, owner) >= DLSM_RATES_PER_OWNER ||
		rate_held(MyDatabaseId, InvalidOid) >= DLSM_RATES_PER_DATABASE ||
		rate_holder(MyDatabaseId, InvalidOid, false) == NULL ||
		rate_holder(InvalidOid, owner, false) == NULL)
		rates_sweep(now);
	if (rate_held(InvalidOid, owner) >= DLSM_RATES_PER_OWNER)
		return DLSM_RATE_OWNER_FULL;
	if (rate_held(MyDatabaseId, InvalidOid) >= DLSM_RATES_PER_DATABASE)
		return DLSM_RATE_DATABASE_FULL;
	if (r == NULL || (db = rate_holder(MyDatabaseId, InvalidOid, true)) == NULL)
		return DLSM_RATE_TABLE_FULL;
	db->held++;
	if ((role = rate_holder(InvalidOid, owner, true)) == NULL)
	{
		db->held--;
		return DLSM_RATE_TABLE_FULL;
	}
	role->held++;
	r->dboid = MyDatabaseId;
	r->relid = relid;
	r->group = group;
	r->owner = owner;
	r->next_at = 0;
	return DLSM_RATE_TAKEN;
}

/*
 * May a claim of group (a dlsm_shmem_entity_key) of queue relid, owned by
 * owner, be made now, spacing_us after the group's last one?  If so
 * (DLSM_RATE_TAKEN), the group's next claim is put off by spacing_us and
 * taken says what to give back if the claim is not made after all.
 * DLSM_RATE_HELD when it may not, or without shared state: a limit that
 * cannot be kept holds the group back.  When the group has no entry and
 * none can be taken for it, which share is full (nothing taken; the
 * caller admits the claim: a full table never holds a group back), and
 * taken->not_kept counts such claims since the server started.
 */
DlsmRateAnswer
dlsm_shmem_rate_take(Oid relid, Oid owner, uint64 group, int64 spacing_us,
					 DlsmRateTaken *taken)
{
	TimestampTz now = GetCurrentTimestamp();
	DlsmRate   *r;
	DlsmRate   *free_entry;
	DlsmRateAnswer answer = DLSM_RATE_HELD;

	taken->not_kept = 0;
	if (shared == NULL)
		return DLSM_RATE_HELD;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	r = find_rate(relid, group, now, &free_entry);
	if (r == NULL)
	{
		answer = new_rate(relid, owner, group, now, free_entry);
		if (answer == DLSM_RATE_TAKEN)
			r = free_entry;
		else
			taken->not_kept = (int64) ++shared->rates_not_kept;
	}
	if (r != NULL && r->next_at <= now)
	{
		taken->before = r->next_at;
		taken->after = now + spacing_us;
		r->next_at = taken->after;
		answer = DLSM_RATE_TAKEN;
	}
	else if (r != NULL)
		answer = DLSM_RATE_HELD;
	LWLockRelease(shared->rate_lock);
	return answer;
}

/* Give back what dlsm_shmem_rate_take took, unless another claim came. */
void
dlsm_shmem_rate_give_back(Oid relid, uint64 group, const DlsmRateTaken *taken)
{
	DlsmRate   *r;
	DlsmRate   *free_entry;

	if (shared == NULL)
		return;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	r = find_rate(relid, group, GetCurrentTimestamp(), &free_entry);
	if (r != NULL && r->next_at == taken->after)
		r->next_at = taken->before;
	LWLockRelease(shared->rate_lock);
}

/* When the next claim of group of relid may be made (0: now, or unknown). */
TimestampTz
dlsm_shmem_rate_next(Oid relid, uint64 group)
{
	DlsmRate   *r;
	DlsmRate   *free_entry;
	TimestampTz next_at = 0;

	if (shared == NULL)
		return 0;
	LWLockAcquire(shared->rate_lock, LW_SHARED);
	r = find_rate(relid, group, GetCurrentTimestamp(), &free_entry);
	if (r != NULL)
		next_at = r->next_at;
	LWLockRelease(shared->rate_lock);
	return next_at;
}

/*
 * Queue relid of this database was dropped: its groups' entries are free,
 * and count no more against its owner's and the database's shares.
 */
void
dlsm_shmem_rate_forget(Oid relid)
{
	if (shared == NULL)
		return;
	LWLockAcquire(shared->rate_lock, LW_EXCLUSIVE);
	for (int i = 0; i < DLSM_MAX_RATES; i++)
	{
		DlsmRate   *r = &shared->rates[i];

		if (r->dboid == MyDatabaseId && r->relid == relid)
			rate_free(r);
	}
	LWLockRelease(shared->rate_lock);
}
