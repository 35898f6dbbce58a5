/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  dlsm's shared state, reached only through these operations (shmem.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_SHMEM_H
#define DLSM_SHMEM_H

#include "common/hashfn.h"
#include "datatype/timestamp.h"

/*
 * The most databases whose clients that LISTEN are counted (notify.c); the
 * databases the workers serve are dlsm.max_databases.
 */
#define DLSM_MAX_DATABASES 64

/* The most transaction-scope holders and waiters of named locks shown. */
#define DLSM_MAX_NAMED 256

/* Bytes of a lock name kept in shared memory, with its terminator. */
#define DLSM_NAMED_LEN 128

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

/* A transaction holding or waiting for a named lock, for dlsm_locks. */
typedef struct DlsmNamedEntry
{
	pid_t		pid;			/* 0: entry free */
	Oid			dboid;			/* database of the transaction */
	bool		waiting;		/* false: holds it */
	bool		lease;			/* asked for a lease */
	int64		fence;			/* when holding */
	TimestampTz since;			/* when it came (waiting) or got it */
	char		name[DLSM_NAMED_LEN];	/* the name, maybe cut short */
} DlsmNamedEntry;

/* May the launcher start a worker for a database now? */
typedef enum DlsmStartDecision
{
	DLSM_START_NOW,				/* yes: the start is recorded */
	DLSM_START_LATER,			/* one runs, or its pause is not over */
	DLSM_START_NO_SLOT			/* every slot is taken */
} DlsmStartDecision;

/*
 * A queue's floor: an id below which no row of the queue is ready to be
 * claimed, so that claims start their walk there instead of at the oldest
 * open row.  Rows of a "parked" entity (one whose rows wait for its create
 * in progress, or for a create still to come) may lie below the floor:
 * the floor passes over them, and keeps the entities so passed over, at
 * most DLSM_MAX_PARKED of them (claim.c moves the floor, wake.c lowers it).
 * A group at its concurrency limit is parked too, under its group key
 * (dlsm_shmem_group_key): its rows wait for a unit of it to end.  A floor
 * parks any number of groups (all floors together, up to a fixed number),
 * and every claim asks whether a group it meets is parked, so that a group
 * found at its limit is counted once, not by every claim.
 * Rows claimed by transactions still in flight lie below it too: the floor
 * knows them (at most DLSM_MAX_IN_FLIGHT), and their claim lowers it again
 * if it rolls back (pending.c), so that a claim does not walk over the
 * claims of every other consumer of the moment.
 */

/* The most rows claimed by transactions in flight a floor knows. */
#define DLSM_MAX_IN_FLIGHT 256

/* The most entities whose waiting rows a queue's floor passes over. */
#define DLSM_MAX_PARKED 8

/* Entities fall into this many buckets, each with its own generation. */
#define DLSM_ENTITY_BUCKETS 32

/* An entity or group whose rows wait, passed over by a floor, from lowest up. */
typedef struct DlsmParked
{
	uint64		key;			/* dlsm_shmem_entity_key, or group_key */
	int64		lowest;
	bool		solid;			/* a group whose units in progress, as
								 * committed, filled it */
} DlsmParked;

/* What a claim read of its queue's floor before its scan (shmem.c). */
typedef struct DlsmFloorSeen
{
	int64		line;			/* scan the rows above it */
	bool		publish;		/* may publish what the scan finds */
	bool		check;			/* the scan starts at the line in the sand */
	bool		may_park;		/* may pass over waiting entities' rows */
	int			nparked;		/* the entities the floor passes over */
	DlsmParked	parked[DLSM_MAX_PARKED];
	int			nin_flight;		/* rows claimed by transactions in flight */
	int64		in_flight[DLSM_MAX_IN_FLIGHT];
	/* private to shmem.c */
	int64		base;
	uint64		gen;
	uint64		clock;			/* floor_clock when it was read */
	TimestampTz checked_at;		/* when it was read */
	uint64		bucket_gen[DLSM_ENTITY_BUCKETS];
} DlsmFloorSeen;

extern void dlsm_shmem_init(int max_databases);
extern uint64 dlsm_shmem_entity_key(const char *entity);
extern uint64 dlsm_shmem_group_key(const char *group);
extern bool dlsm_shmem_available(void);

/* waiting claims */
extern void dlsm_shmem_wake_all(void);
extern void dlsm_shmem_prepare_wait(void);
extern bool dlsm_shmem_wait(long timeout_ms, uint32 wait_event);
extern void dlsm_shmem_cancel_wait(void);

/* the launcher */
extern bool dlsm_shmem_launcher_attach(void);
extern void dlsm_shmem_wake_launcher(void);
extern void dlsm_shmem_forget_databases(const Oid *keep, int nkeep);
extern DlsmStartDecision dlsm_shmem_may_start(Oid dboid, int pause_ms);

/* the pool of workers that take turns (launcher.c) */
extern int	dlsm_shmem_count_known(const Oid *dbs, int n, bool *no_slot);
extern void dlsm_shmem_set_rotation(bool rotating, int bound_ms);
extern Oid	dlsm_shmem_next_visit(const Oid *dbs, int n, const Oid *busy,
								  int nbusy, int reap_ms, int pause_ms,
								  TimestampTz *next_due);
extern int	dlsm_shmem_workers_attached(void);
extern int	dlsm_shmem_bound(void);
extern bool dlsm_shmem_set_no_worker(Oid dboid);
extern bool dlsm_shmem_note_late(Oid dboid, int repeat_ms,
								 long *waited_ms, TimestampTz *late_at);

/* the workers */
extern bool dlsm_shmem_worker_attach(Oid dboid);
extern uint64 dlsm_shmem_pokes(void);
extern void dlsm_shmem_worker_idle(uint64 pokes_seen);
extern void dlsm_shmem_worker_count(const DlsmWorkerCounts *delta,
									const char *error);
extern void dlsm_shmem_worker_passed(void);
extern void dlsm_shmem_worker_shun(Oid owner, Oid cause, TimestampTz until,
								   int count);
extern int	dlsm_shmem_worker_shuns(Oid owner, TimestampTz since);
extern TimestampTz dlsm_shmem_worker_shunned(Oid owner, Oid *cause);
extern pid_t dlsm_shmem_worker_pause(Oid dboid, int pause_ms);
extern bool dlsm_shmem_worker_gone(Oid dboid, pid_t pid);
extern void dlsm_shmem_wake_worker(Oid dboid);
extern bool dlsm_shmem_worker_visiting(void);
extern bool dlsm_shmem_worker_outdated(bool outdated);
extern bool dlsm_shmem_worker_take_pending(void);

/* What a worker is asked to do at once (dlsm_shmem_worker_request). */
#define DLSM_REQUEST_REAP		0x01	/* NOTIFY dlsm, 'reap' committed */
#define DLSM_REQUEST_REGISTRY	0x02	/* the registry of queues changed */

extern void dlsm_shmem_worker_request(Oid dboid, int requests);
extern int	dlsm_shmem_worker_take_requests(void);
extern void dlsm_shmem_worker_leave(bool more);

/* What does not work without preloading (dlsm_shmem_warn_no_worker). */
typedef enum DlsmNoWorker
{
	DLSM_NO_WORKER_INSTALL,		/* CREATE EXTENSION */
	DLSM_NO_WORKER_HANDLER,		/* dlsm_set_handler */
	DLSM_NO_WORKER_LEASE,		/* a claim with a lease */
	DLSM_NO_WORKER_CASES
} DlsmNoWorker;

extern void dlsm_shmem_warn_no_worker(DlsmNoWorker what, const char *queue);
extern int	dlsm_shmem_copy_workers(DlsmWorkerInfo **out);

/* named locks */
extern void dlsm_shmem_clip(const char *from, char *to, int size);
extern int	dlsm_shmem_named_enter(const char *name, bool lease);
extern void dlsm_shmem_named_granted(int entry, int64 fence);
extern void dlsm_shmem_named_leave(int entry);
extern int	dlsm_shmem_copy_named(DlsmNamedEntry *out);

/* where the ready rows of a queue begin */
extern void dlsm_shmem_floor_read(Oid relid, int64 after, int check_ms,
								  DlsmFloorSeen *seen);
extern void dlsm_shmem_floor_publish(Oid relid, const DlsmFloorSeen *seen,
									 int64 line, const DlsmParked *parked,
									 int nparked, const DlsmParked *groups,
									 int ngroups);
extern void dlsm_shmem_floor_lower(Oid relid, int64 below);
extern void dlsm_shmem_floor_reset(Oid relid);
extern void dlsm_shmem_floor_entities(Oid relid, const uint64 *entities,
									  int n);
extern bool dlsm_shmem_group_parked(Oid relid, uint64 group);
extern void dlsm_shmem_floor_groups(Oid relid, const uint64 *groups, int n);
extern void dlsm_shmem_group_probed(Oid relid, uint64 group, uint64 since);
extern bool dlsm_shmem_group_park(Oid relid, uint64 group, int64 lowest,
								  uint64 since);
extern uint64 dlsm_shmem_floor_clock(void);
extern void dlsm_shmem_floors_prepared_ended(Oid dboid);
extern bool dlsm_shmem_floor_in_flight(const DlsmFloorSeen *seen, int64 id);
extern bool dlsm_shmem_floor_claimed(Oid relid, int64 id);
extern void dlsm_shmem_floor_unclaimed(Oid relid, int64 id, bool ready);

/* client backends that LISTEN */
/*
 * The most groups whose rate limit holds back their next claim at once,
 * in all, of the queues of one owner and of one database, so that no
 * tenant fills the table.
 */
#define DLSM_MAX_RATES 16384
#define DLSM_RATES_PER_OWNER 4096
#define DLSM_RATES_PER_DATABASE 8192

/* What a claim took of its group's rate limit, to give it back. */
typedef struct DlsmRateTaken
{
	TimestampTz before;			/* the group's next claim time before */
	TimestampTz after;			/* and after it */
	int64		not_kept;		/* claims admitted without an entry so far */
} DlsmRateTaken;

/* dlsm_shmem_rate_take's answer */
typedef enum DlsmRateAnswer
{
	DLSM_RATE_TAKEN,			/* the claim may go: its turn is taken */
	DLSM_RATE_HELD,				/* not before the group's next turn */
	DLSM_RATE_OWNER_FULL,		/* no entry: the queue owner's share is full */
	DLSM_RATE_DATABASE_FULL,	/* no entry: the database's share is full */
	DLSM_RATE_TABLE_FULL		/* no entry free where the group may go */
} DlsmRateAnswer;

extern DlsmRateAnswer dlsm_shmem_rate_take(Oid relid, Oid owner, uint64 group,
										   int64 spacing_us,
										   DlsmRateTaken *taken);
extern void dlsm_shmem_rate_give_back(Oid relid, uint64 group,
									  const DlsmRateTaken *taken);
extern TimestampTz dlsm_shmem_rate_next(Oid relid, uint64 group);
extern void dlsm_shmem_rate_forget(Oid relid);

extern void dlsm_shmem_count_listener(Oid dboid, int delta);
extern bool dlsm_shmem_anyone_listens(Oid dboid);

#endif							/* DLSM_SHMEM_H */
