/*-------------------------------------------------------------------------
 *
 * dlsm.h
 *	  Shared declarations of the dlsm extension, sectioned by the file that
 *	  defines them.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/dlsm.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_H
#define DLSM_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/uuid.h"
#include "nodes/nodes.h"

/* ---- identity.c ---- */

/* Who dlsm was before it switched to another role. */
typedef struct DlsmIdentity
{
	Oid			userid;
	int			sec_context;
	int			guc_nest_level;
} DlsmIdentity;

extern void dlsm_identity_switch(Oid role, DlsmIdentity *saved);
extern void dlsm_identity_restore(DlsmIdentity *saved);

/* ---- guc.c ---- */
extern int	dlsm_default_lease;	/* seconds */
extern char *dlsm_databases;
extern int	dlsm_reap_interval; /* milliseconds */
extern int	dlsm_retention_batch;
extern int	dlsm_handler_batch;

extern void dlsm_guc_init(void);

/* ---- shmem.c ---- */

/* The most databases dlsm's workers serve at once. */
#define DLSM_MAX_DATABASES 64

/* One database's worker, as the launcher and the worker see it. */
typedef struct DlsmWorkerSlot
{
	Oid			dboid;			/* database served; InvalidOid: slot free */
	pid_t		worker_pid;		/* 0 while no worker runs */
	Latch	   *latch;			/* the worker's latch, NULL while none */
	bool		no_extension;	/* the worker found no dlsm there */
	TimestampTz paused_until;	/* launcher: start no worker before */
	TimestampTz started_at;		/* when the running worker started */
	TimestampTz last_reap_at;	/* end of its last reaping pass */
	int64		reaped;			/* rows moved by its reaper */
	int64		deleted;		/* settled rows deleted for retention */
	int64		handled;		/* units its handlers completed */
	int64		errors;			/* units its handlers failed, other errors */
	int64		wakeups;		/* notifications and latch wake-ups seen */
	char		last_error[256];	/* message of its last error */
} DlsmWorkerSlot;

/* The most transaction-scope holders and waiters of named locks shown. */
#define DLSM_MAX_NAMED 256
#define DLSM_NAMED_LEN 128

/* A transaction holding or waiting for a named lock, for dlsm_locks. */
typedef struct DlsmNamedEntry
{
	pid_t		pid;			/* 0: entry free */
	bool		waiting;		/* false: holds it */
	bool		lease;			/* asked for a lease */
	int64		fence;			/* when holding */
	TimestampTz since;			/* when it came (waiting) or got it */
	char		name[DLSM_NAMED_LEN];	/* the name, maybe cut short */
} DlsmNamedEntry;

typedef struct DlsmSharedState
{
	LWLock	   *lock;			/* guards everything below but work_cv */
	ConditionVariable work_cv;	/* broadcast when work became claimable */
	pid_t		launcher_pid;	/* 0 while the launcher is not running */
	Latch	   *launcher_latch; /* set to make it look at databases now */
	bool		rescan;			/* launcher: look at every database again */
	uint64		pokes;			/* times the launcher was asked to look */
	DlsmWorkerSlot slots[DLSM_MAX_DATABASES];
	DlsmNamedEntry named[DLSM_MAX_NAMED];	/* in database order, no order */
	Oid			named_db[DLSM_MAX_NAMED];	/* database of each entry */
	Oid			listen_db[DLSM_MAX_DATABASES];	/* databases with... */
	int			listeners[DLSM_MAX_DATABASES];	/* ...client backends that LISTEN */
	bool		listeners_lost; /* a listener found no free entry */
} DlsmSharedState;

extern DlsmSharedState *dlsm_shared;

extern void dlsm_shmem_init(void);
extern bool dlsm_shmem_available(void);
extern void dlsm_shmem_wake_all(void);
extern void dlsm_shmem_wake_worker(Oid dboid);
extern void dlsm_shmem_wake_launcher(void);
extern int	dlsm_shmem_copy_slots(DlsmWorkerSlot *out);
extern void dlsm_shmem_count_listener(Oid dboid, int delta);
extern bool dlsm_shmem_anyone_listens(Oid dboid);
extern void dlsm_shmem_clip_name(const char *name, char *out);
extern int	dlsm_shmem_named_enter(const char *name, bool lease);
extern void dlsm_shmem_named_granted(int entry, int64 fence);
extern void dlsm_shmem_named_leave(int entry);
extern int	dlsm_shmem_copy_named(DlsmNamedEntry *out);
extern void dlsm_shmem_prepare_wait(void);
extern bool dlsm_shmem_wait(long timeout_ms);
extern void dlsm_shmem_cancel_wait(void);

/* ---- notify.c ---- */

/* Receives one notification: its channel and payload. */
typedef void (*DlsmNotifySink) (void *arg, const char *channel,
								const char *payload);

extern void dlsm_notify_listen(const char *channel);
extern void dlsm_notify_drain(DlsmNotifySink sink, void *arg);
extern void dlsm_notify_client_listens(Node *stmt);
extern void dlsm_notify_queue(const char *channel);

/* ---- locks.c ---- */
extern bool dlsm_lock_entity_try(Oid queue, const char *entity);
extern void dlsm_lock_entity_release(Oid queue, const char *entity);
extern bool dlsm_lock_named_acquire(const char *name, long wait_ms);
extern bool dlsm_lock_named_release(const char *name);

/* ---- extension.c ---- */
extern void dlsm_extension_init(void);
extern const char *dlsm_extension_schema(void);
extern Oid	dlsm_extension_owner(void);
extern Oid	dlsm_fence_sequence(void);
extern Oid	dlsm_extension_registry_seen(void);
extern uint64 dlsm_extension_generation(void);

/* ---- queue.c ---- */

/*
 * What dlsm knows of one registered queue: its registry row, the names of
 * its columns and the plans prepared for it.  Kept per backend in a hash
 * keyed by the table's OID; a relcache invalidation of the table drops it.
 */
typedef struct DlsmQueue
{
	Oid			relid;			/* hash key: the queue table */
	bool		valid;			/* false once invalidated */
	MemoryContext context;		/* holds the strings below */
	char	   *relname;		/* schema-qualified, quoted */
	char	   *channel;		/* NOTIFY channel */
	int			max_attempts;	/* attempts before a retry becomes error */
	bool		has_retention;	/* are settled rows deleted after... */
	Interval	retention;		/* ... this long? */
	Oid			handler;		/* function the worker runs, or InvalidOid */
	Oid			handler_role;	/* role the worker runs it as */
	Oid			owner;			/* the table's owner */
	char	   *col_id;			/* quoted column names, by role */
	char	   *col_status;
	char	   *col_kind;
	char	   *col_entity;
	char	   *col_process_id;
	bool		pid_is_text;	/* process id column is text, not uuid */
	SPIPlanPtr *plans;			/* DLSM_NUM_QUERIES slots, lazily filled */
} DlsmQueue;

extern void dlsm_queue_init(void);
extern DlsmQueue *dlsm_queue_get(Oid relid);
extern DlsmQueue *dlsm_queue_find(Oid relid);
extern Oid	dlsm_queue_create(const char *name, const char *channel,
							  int max_attempts, Interval *retention);
extern void dlsm_queue_drop(Oid relid, bool drop_table);
extern void dlsm_queue_register(Oid relid, const char *const *columns,
								const char *channel, int max_attempts,
								Interval *retention);
extern void dlsm_queue_set_handler(Oid relid, Oid handler);
extern List *dlsm_queue_list(void);


/* ---- plans.c ---- */

/* Statements run against one queue (see plans.c for their text). */
typedef enum DlsmQueryId
{
	DLSM_Q_SCAN,				/* ready candidates after a line in the sand */
	DLSM_Q_SCAN_WIDE,			/* the same, eight times as many */
	DLSM_Q_ENTITY_STATE,		/* may this candidate's entity be claimed? */
	DLSM_Q_CLAIM_MANY,			/* claim single-request units together */
	DLSM_Q_CLAIM_GROUP,			/* claim an update and the updates after it */
	DLSM_Q_FAIL_UPDATES,		/* settle updates of a failed create as error */
	DLSM_Q_GROUP_BUSY,			/* does another process hold the entity? */
	DLSM_Q_GROUP,				/* dlsm_group_updates */
	DLSM_Q_SETTLE_FINAL,		/* settle process ids as complete or error */
	DLSM_Q_SETTLE_RETRY,		/* settle process ids for a retry */
	DLSM_Q_HEARTBEAT,			/* extend a lease */
	DLSM_Q_REAP,				/* expired leases back to new or error */
	DLSM_Q_ENQUEUE,				/* insert a request */
	DLSM_Q_PURGE,				/* delete settled rows past the retention */
	DLSM_Q_STATS,				/* the queue's row of dlsm_queue_stats */
	DLSM_Q_CAPTURE,				/* enqueue a captured row change */
	DLSM_NUM_QUERIES
} DlsmQueryId;

/* Statements run against dlsm's own tables. */
typedef enum DlsmCatalogQueryId
{
	DLSM_C_LOOKUP,				/* a queue's registry row */
	DLSM_C_REGISTER,			/* add a registry row */
	DLSM_C_UNREGISTER,			/* remove a registry row */
	DLSM_C_SET_HANDLER,			/* set or clear a queue's handler */
	DLSM_C_LIST,				/* every registered queue */
	DLSM_C_LEASE_READ,			/* a named lock's lease */
	DLSM_C_LEASE_TAKE,			/* take a named lock's lease */
	DLSM_C_LEASE_RELEASE,		/* give a lease back */
	DLSM_C_LEASE_REFRESH,		/* extend a lease */
	DLSM_C_LEASE_PURGE,			/* delete expired leases */
	DLSM_C_LEASE_LIST,			/* every lease */
	DLSM_C_FENCE,				/* the next fence */
	DLSM_NUM_CATALOG_QUERIES
} DlsmCatalogQueryId;

extern int	dlsm_plan_execute(DlsmQueue *queue, DlsmQueryId query,
							  Datum *values, const char *nulls, long count);
extern int	dlsm_plan_execute_catalog(DlsmCatalogQueryId query,
									  Datum *values, const char *nulls,
									  bool read_only, long count);
extern int	dlsm_plan_read_catalog_latest(DlsmCatalogQueryId query,
										  Datum *values, const char *nulls,
										  long count);
extern int	dlsm_plan_execute_catalog_as_owner(DlsmCatalogQueryId query,
											   Datum *values,
											   const char *nulls);
extern void dlsm_plan_drop_table(const char *relname, bool drop_table);
extern void dlsm_plan_capture_trigger(Oid source, const char *trigger,
									  const char *const *args, bool attach);
extern void dlsm_plan_adopt_table(const char *relname,
								  const char *const *columns,
								  const char *const *index_names,
								  bool creates_index);
extern void dlsm_plan_create_table(const char *relname,
								   const char *const *index_names);

/* ---- state.c ---- */

/* Outcomes a claimant can settle with. */
typedef enum DlsmOutcome
{
	DLSM_OUTCOME_COMPLETE,		/* in-progress -> complete */
	DLSM_OUTCOME_ERROR,			/* in-progress -> error */
	DLSM_OUTCOME_RETRY			/* in-progress -> new, or error when spent */
} DlsmOutcome;

/* One claim request, as dlsm_claim was called. */
typedef struct DlsmClaimArgs
{
	DlsmQueue  *queue;
	int64		lease_us;		/* lease length, microseconds */
	pg_uuid_t  *process_id;		/* NULL: a fresh UUID per unit */
	int64		after;			/* line in the sand */
	int64		wait_us;		/* -1: forever */
	int			units;			/* most units to return */
} DlsmClaimArgs;

/* Called for each claimed row, to build the function's result. */
typedef void (*DlsmClaimEmit) (void *arg, HeapTuple tuple, TupleDesc desc);

/* Called for each process id given to dlsm_settle_many. */
typedef void (*DlsmSettledEmit) (void *arg, pg_uuid_t *process_id,
								 int64 settled);

extern void dlsm_state_init(void);
extern int	dlsm_state_claim(DlsmClaimArgs *args, DlsmClaimEmit emit, void *arg);
extern int64 dlsm_state_group(DlsmQueue *queue, const char *entity,
							  pg_uuid_t *process_id, int64 lease_us);
extern int64 dlsm_state_settle(DlsmQueue *queue, pg_uuid_t *process_id,
							   DlsmOutcome outcome, const char *detail,
							   Interval *retry_after);
extern void dlsm_state_settle_many(DlsmQueue *queue, ArrayType *process_ids,
								   DlsmOutcome outcome, const char *detail,
								   Interval *retry_after,
								   DlsmSettledEmit emit, void *arg);
extern TimestampTz dlsm_state_heartbeat(DlsmQueue *queue,
										pg_uuid_t *process_id,
										int64 lease_us);
extern int64 dlsm_state_reap(DlsmQueue *queue);
extern int64 dlsm_state_purge(DlsmQueue *queue, int batch);
/* dlsm_queue_stats has 13 columns since 1.1 (12 in 1.0's SQL) */
#define DLSM_STATS_COLUMNS		13
#define DLSM_STATS_COLUMNS_1_0	12
extern void dlsm_state_stats(DlsmQueue *queue, Datum *values, bool *nulls);
extern int64 dlsm_state_enqueue(DlsmQueue *queue, Datum entity, Datum kind,
								Datum payload, bool payload_null,
								Datum run_at, bool run_at_null);
extern void dlsm_state_wake_at_commit(void);
extern void dlsm_state_wake_worker_at_commit(void);
extern void dlsm_state_wake_launcher_at_commit(void);
extern const char *dlsm_outcome_name(DlsmOutcome outcome);

/* ---- namedlock.c ---- */
extern void dlsm_named_init(void);
extern Datum dlsm_named_try(const char *name, int64 wait_us, int64 lease_us,
							bool *granted);
extern bool dlsm_named_unlock(const char *name, int64 fence);
extern TimestampTz dlsm_named_refresh(const char *name, int64 fence,
									  int64 lease_us);
extern int64 dlsm_named_purge(void);

/* ---- capture.c ---- */
extern void dlsm_capture_attach(Oid source, DlsmQueue *queue,
								const char *kind, const char *entity_column,
								ArrayType *columns);
extern void dlsm_capture_detach(Oid source, Oid queue);
extern void dlsm_capture_row(struct TriggerData *trigdata);

/* ---- handler.c ---- */
extern bool dlsm_handler_run_one(DlsmQueue *queue, char **failure);

/* ---- worker.c ---- */
extern void dlsm_worker_init(void);
extern void dlsm_worker_wait_gone(Oid dboid);

#endif							/* DLSM_H */
