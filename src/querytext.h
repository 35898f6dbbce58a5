/*-------------------------------------------------------------------------
 *
 * querytext.h
 *	  The statements dlsm runs, by name, and their text (querytext.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/querytext.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_QUERYTEXT_H
#define DLSM_QUERYTEXT_H

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
	DLSM_Q_REQUEUE_KEYS,		/* lock the keyed error rows of a requeue */
	DLSM_Q_REQUEUE_HOLDERS,		/* live requests holding requeued keys */
	DLSM_Q_REQUEUE_KEYED,		/* REQUEUE of a queue with dedup keys */
	DLSM_Q_DEDUP_LOOKUP,		/* the request holding a dedup key */
	DLSM_Q_ENQUEUE_DEDUP,		/* insert a request with a dedup key */
	DLSM_NUM_QUERIES
} DlsmQueryId;

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
	DLSM_C_CAPTURE_READ,		/* a capture, by its trigger or a clone of it */
	DLSM_C_CAPTURE_TRIGGER,		/* the trigger capturing a table into a queue */
	DLSM_C_CAPTURED_INTO,		/* an existing table capturing into a queue */
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

/* The most parameters of one statement. */
#define DLSM_MAX_PARAMS 16

typedef struct DlsmQueryDef
{
	const char *text;
	int			nargs;
	Oid			argtypes[DLSM_MAX_PARAMS];
	int			expected;		/* SPI result code */
	int			ncols;			/* its result's columns, or 0: unchecked */
	const char *what;			/* the statement, in an error */
	bool		no_seqscan;		/* planned with enable_seqscan off */
	bool		no_jit;			/* planned with jit off */
} DlsmQueryDef;

extern const DlsmQueryDef dlsm_queue_queries[DLSM_NUM_QUERIES];
extern const DlsmQueryDef dlsm_catalog_queries[DLSM_NUM_CATALOG_QUERIES];

extern const char *const dlsm_create_table_text;
extern const char *const dlsm_register_table_text;
extern const char *const dlsm_creates_index_text;
extern const char *const dlsm_dedup_index_text;
extern const char *const dlsm_drop_duplicates_text;
extern const char *const dlsm_capture_text;
extern const char *const dlsm_drop_table_text;
extern const char *const dlsm_drop_trigger_text;

#endif							/* DLSM_QUERYTEXT_H */
