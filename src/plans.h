/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  All SQL dlsm runs: the statements, their parameters and result
 *	  columns by name, and how to run them (plans.c).
 *
 * Each statement has an enum of its parameters (P_<STATEMENT>_<NAME>, the
 * index into the values and nulls arrays, ending with N_..._PARAMS, their
 * count) and, when it returns rows, of its result columns
 * (A_<STATEMENT>_<NAME>, the attribute number, from 1, ending with N_...,
 * one past the last).  The counts are checked against the prepared plan
 * and the result's tuple descriptor.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/plans.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_PLANS_H
#define DLSM_PLANS_H

#include "executor/spi.h"

/* ---- statements on a queue ---- */
typedef enum DlsmQueryId
{
	DLSM_Q_SCAN,				/* new rows after a line in the sand */
	DLSM_Q_SCAN_LIMITED,		/* the same, but for groups at their limit */
	DLSM_Q_BLOCKED,				/* does its entity block a candidate? */
	DLSM_Q_ENTITY_STATE,		/* an entity's create, and is it blocked? */
	DLSM_Q_LOCK_SINGLES,		/* lock single-request units to claim */
	DLSM_Q_LOCK_ONE,			/* lock one single-request unit to claim */
	DLSM_Q_LOCK_GROUP,			/* lock an update and the updates after it */
	DLSM_Q_WRITE_CLAIMS,		/* write pending claims as in-progress */
	DLSM_Q_SETTLE_CLAIMED_FINAL,	/* settle pending claims: complete, error */
	DLSM_Q_SETTLE_ONE_FINAL,	/* settle one pending claim: complete, error */
	DLSM_Q_SETTLE_CLAIMED_RETRY,	/* settle pending claims for a retry */
	DLSM_Q_FAIL_UPDATES,		/* settle updates of a failed create as error */
	DLSM_Q_GROUP_BUSY,			/* may an entity's updates be grouped? */
	DLSM_Q_GROUP,				/* dlsm_group_updates */
	DLSM_Q_SETTLE_FINAL,		/* settle process ids as complete or error */
	DLSM_Q_SETTLE_RETRY,		/* settle process ids for a retry */
	DLSM_Q_HEARTBEAT,			/* extend a lease */
	DLSM_Q_REAP,				/* expired leases back to new or error */
	DLSM_Q_PURGE,				/* delete settled rows past the retention */
	DLSM_Q_STATS,				/* the queue's row of dlsm_queue_stats */
	DLSM_Q_CAPTURE,				/* enqueue a captured row change */
	DLSM_Q_ENQUEUE,				/* insert a request */
	DLSM_Q_GROUP_LOAD,			/* units of a group in progress */
	DLSM_Q_UPDATES_GROUP,		/* the group of an entity's open updates */
	DLSM_Q_CREATE_ARRIVED,		/* has an entity a create request? */
	/* dead letters (deadletter.c) */
	DLSM_Q_REQUEUE,				/* error rows back to new */
	DLSM_Q_CANCEL_LOCK,			/* lock the open rows a cancel names */
	DLSM_Q_CANCEL,				/* new rows to error */
	DLSM_Q_DEDUP_LOOKUP,		/* the request holding a dedup key */
	DLSM_Q_ENQUEUE_DEDUP,		/* insert a request with a dedup key */
	DLSM_NUM_QUERIES
} DlsmQueryId;

enum
{
	P_SCAN_AFTER, P_SCAN_LIMIT, N_SCAN_PARAMS
};
enum
{
	P_SCAN_FULL_GROUPS = N_SCAN_PARAMS, N_SCAN_LIMITED_PARAMS
};
enum
{
	A_SCAN_ID = 1, A_SCAN_KIND, A_SCAN_ENTITY, A_SCAN_DUE, A_SCAN_GROUP, N_SCAN
};
enum
{
	P_BLOCKED_ID, P_BLOCKED_ENTITY, P_BLOCKED_KIND, P_BLOCKED_WAIT_FOR_CREATE,
	N_BLOCKED_PARAMS
};
enum
{
	A_BLOCKED_ANY = 1, N_BLOCKED
};
enum
{
	P_ENTITY_STATE_ENTITY, P_ENTITY_STATE_ID, N_ENTITY_STATE_PARAMS
};
enum
{
	A_ENTITY_STATE_CREATE_STATUS = 1, A_ENTITY_STATE_CREATE_ID,
	A_ENTITY_STATE_BLOCKED, N_ENTITY_STATE
};

/*
 * The claim statements lock the rows they claim and write nothing
 * (pending.c keeps what the claim gave them); they share their parameters
 * and their result.
 */
enum
{
	P_LOCK_ID,					/* LOCK_SINGLES: the ids; LOCK_ONE: the id;
								 * LOCK_GROUP: the first */
	P_LOCK_NOW,					/* the claim's clock */
	P_LOCK_ENTITY,				/* LOCK_GROUP only */
	P_LOCK_WAIT_FOR_CREATE,		/* LOCK_GROUP only: the queue option */
	N_LOCK_GROUP_PARAMS
};
#define N_LOCK_SINGLES_PARAMS P_LOCK_ENTITY
enum
{
	A_LOCK_ID = 1, A_LOCK_KIND, A_LOCK_ENTITY, A_LOCK_PAYLOAD, N_LOCK
};

/* What dlsm_claim returns for a claimed row. */
enum
{
	A_CLAIM_ID = 1, A_CLAIM_KIND, A_CLAIM_ENTITY, A_CLAIM_PAYLOAD,
	A_CLAIM_PROCESS_ID, A_CLAIM_FENCE, A_CLAIM_LEASE_UNTIL, N_CLAIM
};

/*
 * Statements that write pending claims (WRITE_CLAIMS, SETTLE_CLAIMED_*):
 * the rows and what their claim gave them, as arrays of one length
 * (SETTLE_ONE_FINAL: one row, as scalars); the settles take the parameters
 * of SETTLE_FINAL or SETTLE_RETRY after these.
 */
enum
{
	P_CLAIMED_IDS, P_CLAIMED_PROCESS_IDS, P_CLAIMED_FENCES, P_CLAIMED_AT,
	P_CLAIMED_LEASE_UNTIL, N_CLAIMED_PARAMS
};
enum
{
	P_CLAIMED_STATUS = N_CLAIMED_PARAMS, P_CLAIMED_DETAIL,
	N_SETTLE_CLAIMED_FINAL_PARAMS
};
enum
{
	P_CLAIMED_RETRY_DETAIL = N_CLAIMED_PARAMS, P_CLAIMED_RETRY_AFTER,
	P_CLAIMED_RETRY_MAX_ATTEMPTS, N_SETTLE_CLAIMED_RETRY_PARAMS
};
enum
{
	A_WRITE_CLAIMS_ENTITY = 1, N_WRITE_CLAIMS
};
enum
{
	P_FAIL_UPDATES_ENTITY, P_FAIL_UPDATES_DETAIL, N_FAIL_UPDATES_PARAMS
};
enum
{
	P_GROUP_ENTITY, P_GROUP_PROCESS_ID, P_GROUP_LEASE, P_GROUP_FENCE,
	P_GROUP_NOW, N_GROUP_PARAMS
};
#define N_GROUP_BUSY_PARAMS P_GROUP_LEASE
enum
{
	A_GROUP_BUSY_HELD = 1, A_GROUP_BUSY_CREATE_OPEN, N_GROUP_BUSY
};
enum
{
	P_SETTLE_PROCESS_IDS, P_SETTLE_STATUS, P_SETTLE_DETAIL,
	N_SETTLE_FINAL_PARAMS
};
enum
{
	P_RETRY_PROCESS_IDS, P_RETRY_DETAIL, P_RETRY_AFTER, P_RETRY_MAX_ATTEMPTS,
	N_SETTLE_RETRY_PARAMS
};
enum
{
	A_SETTLE_PROCESS_ID = 1, A_SETTLE_ID, A_SETTLE_ENTITY, A_SETTLE_GROUP,
	N_SETTLE
};
enum
{
	P_HEARTBEAT_PROCESS_ID, P_HEARTBEAT_LEASE, N_HEARTBEAT_PARAMS
};
enum
{
	A_HEARTBEAT_UNTIL = 1, N_HEARTBEAT
};
enum
{
	P_REAP_MAX_ATTEMPTS, N_REAP_PARAMS
};
enum
{
	A_REAP_STATUS = 1, A_REAP_ID, A_REAP_ENTITY, A_REAP_GROUP, N_REAP
};
enum
{
	P_PURGE_RETENTION, P_PURGE_BATCH, N_PURGE_PARAMS
};
enum
{
	P_STATS_QUEUE,
	P_STATS_CONCURRENCY,		/* the default concurrency limit, or NULL */
	P_STATS_GROUPS,				/* groups with a limit of their own ... */
	P_STATS_GROUP_CONCURRENCY,	/* ... and theirs (NULL: none) */
	P_STATS_WAIT_FOR_CREATE,	/* the queue's updates_wait_for_create */
	N_STATS_PARAMS
};
enum
{
	A_STATS_NEW = 1, A_STATS_IN_PROGRESS, A_STATS_COMPLETE, A_STATS_ERROR,
	A_STATS_READY, A_STATS_DELAYED, A_STATS_WAITING_ON_CREATE,
	A_STATS_OLDEST_READY_AGE, A_STATS_EXPIRED_LEASES, A_STATS_DEAD_TUPLES,
	A_STATS_LAST_AUTOVACUUM, A_STATS_OLDEST_CLAIM_AGE, A_STATS_HELD_BY_LIMITS,
	A_STATS_WAITING_FOR_CREATE_TO_ARRIVE, N_STATS
};
enum
{
	P_CAPTURE_ENTITY, P_CAPTURE_KIND, P_CAPTURE_OP, P_CAPTURE_TABLE,
	P_CAPTURE_OLD, P_CAPTURE_NEW, P_CAPTURE_GROUP, N_CAPTURE_PARAMS
};
enum
{
	P_ENQUEUE_ENTITY, P_ENQUEUE_KIND, P_ENQUEUE_PAYLOAD, P_ENQUEUE_RUN_AT,
	P_ENQUEUE_GROUP, N_ENQUEUE_PARAMS
};
enum
{
	A_ENQUEUE_ID = 1, N_ENQUEUE
};
enum
{
	P_GROUP_LOAD_GROUP, N_GROUP_LOAD_PARAMS
};
enum
{
	A_GROUP_LOAD_UNITS = 1, N_GROUP_LOAD
};
#define N_UPDATES_GROUP_PARAMS N_GROUP_BUSY_PARAMS
enum
{
	A_UPDATES_GROUP_GROUP = 1, A_UPDATES_GROUP_HELD, N_UPDATES_GROUP
};
enum
{
	P_CREATE_ARRIVED_ENTITY, N_CREATE_ARRIVED_PARAMS
};
enum
{
	A_CREATE_ARRIVED_ANY = 1, N_CREATE_ARRIVED
};

/* Dead letters: REQUEUE, CANCEL_LOCK and CANCEL take the ids, then a role. */
enum
{
	P_DEAD_IDS, P_DEAD_ROLE, N_DEAD_PARAMS
};
#define N_CANCEL_LOCK_PARAMS P_DEAD_ROLE
enum
{
	A_DEAD_ID = 1, A_DEAD_ENTITY, A_DEAD_STATUS, N_DEAD
};

/* ENQUEUE_DEDUP: ENQUEUE's parameters, then the key; ENQUEUE's result */
enum
{
	P_ENQUEUE_DEDUP_KEY = N_ENQUEUE_PARAMS, N_ENQUEUE_DEDUP_PARAMS
};
enum
{
	P_DEDUP_LOOKUP_KEY, P_DEDUP_LOOKUP_WINDOW, N_DEDUP_LOOKUP_PARAMS
};
enum
{
	A_DEDUP_LOOKUP_ID = 1, N_DEDUP_LOOKUP
};

/* The names a queue's statements are written with, all quoted. */
typedef struct DlsmQueueNames
{
	char	   *relname;		/* schema-qualified */
	char	   *id;				/* the mapped columns */
	char	   *status;
	char	   *kind;
	char	   *entity;
	char	   *process_id;
	char	   *group;			/* the group column, or NULL: none */
	bool		pid_is_text;	/* process id column is text, not uuid */
	char	   *dedup;			/* the dedup key column, or NULL: none */
} DlsmQueueNames;

/* A queue's statements, prepared on first use and kept. */
typedef struct DlsmPlanSet
{
	DlsmQueueNames names;
	SPIPlanPtr	plans[DLSM_NUM_QUERIES];
} DlsmPlanSet;

extern uint64 dlsm_plan_run(DlsmPlanSet *set, DlsmQueryId query,
							 Datum *values, const char *nulls, long count);
extern uint64 dlsm_plan_run_latest(DlsmPlanSet *set, DlsmQueryId query,
									Datum *values, const char *nulls,
									long count);
extern void dlsm_plan_free(DlsmPlanSet *set);

/* ---- statements on dlsm's own tables ---- */
typedef enum DlsmCatalogQueryId
{
	DLSM_C_LOOKUP,				/* a queue's registry row */
	DLSM_C_REGISTER,			/* add a registry row */
	DLSM_C_UNREGISTER,			/* remove a registry row */
	DLSM_C_SET_HANDLER,			/* set or clear a queue's handler */
	DLSM_C_ALTER,				/* change a queue's settings */
	DLSM_C_LIST,				/* every registered queue */
	DLSM_C_CAPTURE_ADD,			/* register a capture */
	DLSM_C_CAPTURE_REMOVE,		/* unregister a capture */
	DLSM_C_CAPTURE_READ,		/* a capture, by its trigger */
	DLSM_C_CAPTURE_TRIGGER,		/* the trigger capturing a table into a queue */
	DLSM_C_CAPTURED_INTO,		/* a table capturing into a queue */
	DLSM_C_LEASE_READ,			/* a named lock's lease */
	DLSM_C_LEASE_TAKE,			/* take a named lock's lease */
	DLSM_C_LEASE_RELEASE,		/* give a lease back */
	DLSM_C_LEASE_REFRESH,		/* extend a lease */
	DLSM_C_LEASE_PURGE,			/* delete expired leases */
	DLSM_C_LEASE_LIST,			/* every lease */
	DLSM_C_FENCE_FLOOR,			/* raise the fence sequence to a floor */
	DLSM_C_GROUP_COLUMN,		/* set a queue's group column */
	DLSM_C_LIMITS_READ,			/* a queue's limits */
	DLSM_C_LIMIT_SET,			/* set a limit */
	DLSM_C_LIMIT_REMOVE,		/* remove a limit */
	DLSM_C_SET_WAIT_FOR_CREATE, /* set a queue's updates_wait_for_create */
	DLSM_NUM_CATALOG_QUERIES
} DlsmCatalogQueryId;

enum
{
	P_LOOKUP_QUEUE, N_LOOKUP_PARAMS
};
enum
{
	A_LOOKUP_CHANNEL = 1, A_LOOKUP_MAX_ATTEMPTS, A_LOOKUP_ID_COLUMN,
	A_LOOKUP_STATUS_COLUMN, A_LOOKUP_KIND_COLUMN, A_LOOKUP_ENTITY_COLUMN,
	A_LOOKUP_PROCESS_ID_COLUMN, A_LOOKUP_RETENTION, A_LOOKUP_HANDLER,
	A_LOOKUP_HANDLER_TIMEOUT, A_LOOKUP_GROUP_COLUMN,
	A_LOOKUP_UPDATES_WAIT_FOR_CREATE, A_LOOKUP_DEDUP_COLUMN, N_LOOKUP
};
enum
{
	P_REGISTER_QUEUE, P_REGISTER_CHANNEL, P_REGISTER_MAX_ATTEMPTS,
	P_REGISTER_RETENTION, P_REGISTER_BY, P_REGISTER_ID_COLUMN,
	P_REGISTER_STATUS_COLUMN, P_REGISTER_KIND_COLUMN,
	P_REGISTER_ENTITY_COLUMN, P_REGISTER_PROCESS_ID_COLUMN,
	P_REGISTER_DEDUP_COLUMN, N_REGISTER_PARAMS
};
enum
{
	P_UNREGISTER_QUEUE, N_UNREGISTER_PARAMS
};
enum
{
	P_SET_HANDLER_QUEUE, P_SET_HANDLER_HANDLER, N_SET_HANDLER_PARAMS
};
enum
{
	P_ALTER_QUEUE, P_ALTER_CHANNEL, P_ALTER_MAX_ATTEMPTS, P_ALTER_RETENTION,
	P_ALTER_HANDLER_TIMEOUT, N_ALTER_PARAMS
};
enum
{
	A_LIST_QUEUE = 1, N_LIST
};
enum
{
	P_SET_WAIT_FOR_CREATE_QUEUE, P_SET_WAIT_FOR_CREATE_ON,
	N_SET_WAIT_FOR_CREATE_PARAMS
};
enum
{
	P_CAPTURE_ADD_SOURCE, P_CAPTURE_ADD_QUEUE, P_CAPTURE_ADD_TRIGGER,
	P_CAPTURE_ADD_KIND, P_CAPTURE_ADD_ENTITY_COLUMNS, P_CAPTURE_ADD_COLUMNS,
	P_CAPTURE_ADD_GROUP_COLUMN, N_CAPTURE_ADD_PARAMS
};
enum
{
	P_CAPTURE_KEY_SOURCE, P_CAPTURE_KEY_TRIGGER, N_CAPTURE_KEY_PARAMS
};
enum
{
	A_CAPTURE_READ_QUEUE = 1, A_CAPTURE_READ_KIND,
	A_CAPTURE_READ_ENTITY_COLUMNS, A_CAPTURE_READ_COLUMNS,
	A_CAPTURE_READ_GROUP_COLUMN, N_CAPTURE_READ
};
enum
{
	P_CAPTURE_TRIGGER_SOURCE, P_CAPTURE_TRIGGER_QUEUE,
	N_CAPTURE_TRIGGER_PARAMS
};
enum
{
	A_CAPTURE_TRIGGER_NAME = 1, N_CAPTURE_TRIGGER
};
enum
{
	P_CAPTURED_INTO_QUEUE, N_CAPTURED_INTO_PARAMS
};
enum
{
	A_CAPTURED_INTO_SOURCE = 1, N_CAPTURED_INTO
};
enum
{
	P_LEASE_READ_NAME, N_LEASE_READ_PARAMS
};
enum
{
	P_LEASE_TAKE_NAME, P_LEASE_TAKE_LEASE, P_LEASE_TAKE_HOLDER,
	P_LEASE_TAKE_ROLE, P_LEASE_TAKE_FENCE, N_LEASE_TAKE_PARAMS
};
enum
{
	P_LEASE_NAME, P_LEASE_FENCE, N_LEASE_RELEASE_PARAMS
};
enum
{
	P_REFRESH_NAME, P_REFRESH_FENCE, P_REFRESH_LEASE, N_LEASE_REFRESH_PARAMS
};
enum
{
	A_REFRESH_UNTIL = 1, N_REFRESH
};
enum
{
	A_LEASE_FENCE = 1, A_LEASE_UNTIL, A_LEASE_EXPIRED, A_LEASE_ROLE,
	N_LEASE_READ
};
enum
{
	A_LEASE_LIST_NAME = 1, A_LEASE_LIST_FENCE, A_LEASE_LIST_HOLDER,
	A_LEASE_LIST_ACQUIRED_AT, A_LEASE_LIST_UNTIL, N_LEASE_LIST
};
enum
{
	P_FENCE_FLOOR, N_FENCE_FLOOR_PARAMS
};
enum
{
	A_FENCE_VALUE = 1, N_FENCE
};
enum
{
	P_GROUP_COLUMN_QUEUE, P_GROUP_COLUMN_NAME, N_GROUP_COLUMN_PARAMS
};
enum
{
	P_LIMIT_QUEUE, P_LIMIT_GROUP, P_LIMIT_CONCURRENCY, P_LIMIT_RATE,
	P_LIMIT_PER, N_LIMIT_SET_PARAMS
};
#define N_LIMIT_REMOVE_PARAMS P_LIMIT_CONCURRENCY
#define N_LIMITS_READ_PARAMS P_LIMIT_GROUP
enum
{
	A_LIMITS_GROUP = 1, A_LIMITS_CONCURRENCY, A_LIMITS_RATE, A_LIMITS_PER,
	N_LIMITS_READ
};

extern uint64 dlsm_plan_run_catalog(DlsmCatalogQueryId query,
									Datum *values, const char *nulls,
									long count);
extern uint64 dlsm_plan_read_catalog(DlsmCatalogQueryId query,
									 Datum *values, const char *nulls,
									 long count);
extern void dlsm_plan_connect(void);
extern void dlsm_plan_finish(void);

/* ---- reading results ---- */
extern Datum dlsm_plan_value(uint64 row, int attno, bool *isnull);
extern char *dlsm_plan_text(uint64 row, int attno);

/* ---- DDL, run once as the caller ---- */
extern void dlsm_plan_create_table(const char *relname,
								   const char *const *index_names);
extern void dlsm_plan_adopt_table(const DlsmQueueNames *names,
								  const char *schema,
								  const char *const *index_names,
								  bool creates_index);
extern void dlsm_plan_drop_table(const char *relname, bool drop_table);
extern void dlsm_plan_capture_trigger(Oid source, const char *trigger);

/* The indexes dlsm gives a queue, in this order in index_names. */
enum
{
	DLSM_INDEX_READY, DLSM_INDEX_CREATES, DLSM_INDEX_OPEN, DLSM_INDEX_HELD,
	DLSM_INDEX_DEDUP, DLSM_NUM_INDEXES
};

#endif							/* DLSM_PLANS_H */
