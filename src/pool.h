/*-------------------------------------------------------------------------
 *
 * pool.h
 *	  The pool of dlsm's workers in shared memory (pool.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/pool.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_POOL_H
#define DLSM_POOL_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

#include "usage.h"

/* Bytes of a worker's last error kept in shared memory. */
#define DLSM_ERROR_LEN 256

/* What a worker counted since it started, for dlsm_worker_status. */
typedef struct DlsmWorkerCounts
{
	int64		reaped;			/* rows moved by its reaper */
	int64		deleted;		/* rows deleted for retention, leases */
	int64		handled;		/* units its handlers completed */
	int64		errors;			/* units its handlers failed, other errors */
	int64		skipped;		/* queue passes skipped: locked, timed out */
	int64		wakeups;		/* times its latch woke it */
} DlsmWorkerCounts;

/* Where a database stands with the workers (dlsm_worker_status.state). */
typedef enum DlsmServedState
{
	DLSM_SERVED_SERVING,		/* a worker is in it */
	DLSM_SERVED_STARTING,		/* one worker each: its worker is starting */
	DLSM_SERVED_BETWEEN,		/* workers take turns: within its bound */
	DLSM_SERVED_WAITING,		/* past its bound, or no worker could start */
	DLSM_SERVED_NOT_PRELOADED,	/* no shared state: no worker ever runs */
	DLSM_SERVED_NO_SLOT			/* dlsm.max_databases slots, all taken */
} DlsmServedState;

/* One database's worker, as dlsm_worker_status shows it. */
typedef struct DlsmWorkerInfo
{
	Oid			dboid;			/* database served */
	pid_t		pid;			/* 0 while no worker runs */
	TimestampTz started_at;		/* when the running worker started */
	TimestampTz last_reap_at;	/* end of its last reaping pass */
	DlsmWorkerCounts counts;
	char		last_error[DLSM_ERROR_LEN]; /* message of its last error */
	TimestampTz listed_at;		/* when the launcher first listed it */
	DlsmServedState state;		/* computed when copied */
} DlsmWorkerInfo;

/* May the launcher start a worker for a database now? */
typedef enum DlsmStartDecision
{
	DLSM_START_NOW,				/* yes: the start is recorded */
	DLSM_START_LATER,			/* one runs, or its pause is not over */
	DLSM_START_NO_SLOT			/* every slot is taken */
} DlsmStartDecision;

/* shared memory (shmem.c) */
extern Size dlsm_pool_shmem_size(int max_databases);
extern void dlsm_pool_shmem_init(int max_databases, LWLock *lock);
extern bool dlsm_pool_available(void);

/* the launcher */
extern bool dlsm_pool_launcher_attach(void);
extern void dlsm_pool_wake_launcher(void);
extern void dlsm_pool_forget_databases(const Oid *keep, int nkeep);
extern DlsmStartDecision dlsm_pool_may_start(Oid dboid, int pause_ms);

/* the pool of workers that take turns (launcher.c) */
extern int	dlsm_pool_count_known(const Oid *dbs, int n, bool *no_slot);
extern void dlsm_pool_set_rotation(bool rotating, int bound_ms);
extern Oid	dlsm_pool_next_visit(const Oid *dbs, int n, const Oid *busy,
								 int nbusy, int reap_ms, int pause_ms,
								 TimestampTz *next_due);
extern int	dlsm_pool_workers_attached(void);
extern int	dlsm_pool_bound(void);
extern bool dlsm_pool_set_no_worker(Oid dboid);
extern bool dlsm_pool_note_late(Oid dboid, int repeat_ms,
								long *waited_ms, TimestampTz *late_at);

/* the workers */
extern bool dlsm_pool_worker_attach(Oid dboid);
extern uint64 dlsm_pool_pokes(void);
extern void dlsm_pool_worker_idle(uint64 pokes_seen);
extern void dlsm_pool_worker_count(const DlsmWorkerCounts *delta,
								   const char *error);
extern void dlsm_pool_worker_passed(void);
extern TimestampTz dlsm_pool_worker_last_pass(void);
extern void dlsm_pool_worker_shun(Oid owner, Oid cause, TimestampTz until,
								  int count);
extern int	dlsm_pool_worker_shuns(Oid owner, TimestampTz since);
extern TimestampTz dlsm_pool_worker_shunned(Oid owner, Oid *cause);
extern pid_t dlsm_pool_worker_pause(Oid dboid, int pause_ms);
extern bool dlsm_pool_worker_gone(Oid dboid, pid_t pid);
extern void dlsm_pool_wake_worker(Oid dboid);
extern bool dlsm_pool_worker_visiting(void);
extern bool dlsm_pool_others_due(int reap_ms);
extern bool dlsm_pool_worker_outdated(bool outdated);
extern bool dlsm_pool_worker_take_pending(void);

/* What a worker is asked to do at once (dlsm_pool_worker_request). */
#define DLSM_REQUEST_REAP		0x01	/* NOTIFY dlsm, 'reap' committed */
#define DLSM_REQUEST_REGISTRY	0x02	/* the registry of queues changed */

extern void dlsm_pool_worker_request(Oid dboid, int requests);
extern int	dlsm_pool_worker_take_requests(void);
extern void dlsm_pool_worker_leave(bool more);

/* a database's reaper, beside its worker (worker.c) */
extern bool dlsm_pool_reaper_attach(Oid dboid, pid_t parent, int yield_ms);
extern bool dlsm_pool_reaper_may_stay(int yield_ms);
extern bool dlsm_pool_worker_has_reaper(int yield_ms, bool *may_start);
extern void dlsm_pool_reapers_give_way(void);

/* What does not work without preloading (dlsm_pool_warn_no_worker). */
typedef enum DlsmNoWorker
{
	DLSM_NO_WORKER_INSTALL,		/* CREATE EXTENSION */
	DLSM_NO_WORKER_HANDLER,		/* dlsm_set_handler */
	DLSM_NO_WORKER_LEASE,		/* a claim with a lease */
	DLSM_NO_WORKER_CASES
} DlsmNoWorker;

extern void dlsm_pool_warn_no_worker(DlsmNoWorker what, const char *queue);
extern int	dlsm_pool_copy_workers(DlsmWorkerInfo **out);
extern int	dlsm_pool_usage(DlsmTableUsage *out);


#endif							/* DLSM_POOL_H */
