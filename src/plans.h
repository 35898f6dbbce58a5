/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  The statements dlsm runs, by name, and how to run them (plans.c).
 *
 * The text of every statement is in plans.c, with its parameters' types
 * and its result's width, which are checked against the prepared plan and
 * each result.  Which value goes to which parameter, and which result
 * column holds what, is said where the statement is run: each caller names
 * them in enums of its own (P_<STATEMENT>_<NAME>, the index into the values
 * and nulls arrays; A_<STATEMENT>_<NAME>, the attribute number, from 1).
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
#include "storage/block.h"

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

/*
 * A queue's statements, prepared on first use and kept.  A plan made while
 * the table had no statistics is made again once the table has outgrown
 * the size the planner assumed (plans.c).
 */
typedef struct DlsmPlanSet
{
	DlsmQueueNames names;
	Oid			relid;			/* the queue table */
	SPIPlanPtr	plans[DLSM_NUM_QUERIES];
	BlockNumber planned_for[DLSM_NUM_QUERIES];	/* the table's size a plan
												 * made without statistics
												 * assumed; 0: made with them */
	uint32		runs[DLSM_NUM_QUERIES]; /* such a plan's runs, to space the
										 * reads of the table's size */
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
