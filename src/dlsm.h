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
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/uuid.h"

/* ---- guc.c ---- */
extern int	dlsm_default_lease;	/* seconds */

extern void dlsm_guc_init(void);

/* ---- shmem.c ---- */
extern void dlsm_shmem_init(void);
extern bool dlsm_shmem_available(void);
extern void dlsm_shmem_wake_all(void);
extern void dlsm_shmem_prepare_wait(void);
extern bool dlsm_shmem_wait(long timeout_ms);
extern void dlsm_shmem_cancel_wait(void);

/* ---- locks.c ---- */
extern bool dlsm_lock_entity_try(Oid queue, const char *entity);
extern void dlsm_lock_entity_release(Oid queue, const char *entity);

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
	char	   *col_id;			/* quoted column names, by role */
	char	   *col_status;
	char	   *col_kind;
	char	   *col_entity;
	char	   *col_process_id;
	SPIPlanPtr *plans;			/* DLSM_NUM_QUERIES slots, lazily filled */
} DlsmQueue;

extern void dlsm_queue_init(void);
extern DlsmQueue *dlsm_queue_get(Oid relid);
extern DlsmQueue *dlsm_queue_find(Oid relid);
extern Oid	dlsm_queue_create(const char *name, const char *channel,
							  int max_attempts, Interval *retention);
extern void dlsm_queue_drop(Oid relid, bool drop_table);
extern const char *dlsm_extension_schema(void);
extern Oid	dlsm_fence_sequence(void);

/* ---- plans.c ---- */

/* Statements run against one queue (see plans.c for their text). */
typedef enum DlsmQueryId
{
	DLSM_Q_SCAN,				/* ready candidates after a line in the sand */
	DLSM_Q_ENTITY_STATE,		/* may this candidate's entity be claimed? */
	DLSM_Q_CLAIM_ONE,			/* claim one request */
	DLSM_Q_CLAIM_GROUP,			/* claim an update and the updates after it */
	DLSM_Q_FAIL_UPDATES,		/* settle updates of a failed create as error */
	DLSM_Q_GROUP_BUSY,			/* does another process hold the entity? */
	DLSM_Q_GROUP,				/* dlsm_group_updates */
	DLSM_Q_SETTLE_FINAL,		/* settle process ids as complete or error */
	DLSM_Q_SETTLE_RETRY,		/* settle process ids for a retry */
	DLSM_Q_HEARTBEAT,			/* extend a lease */
	DLSM_Q_REAP,				/* expired leases back to new or error */
	DLSM_Q_ENQUEUE,				/* insert a request */
	DLSM_NUM_QUERIES
} DlsmQueryId;

/* Statements run against dlsm's own tables. */
typedef enum DlsmCatalogQueryId
{
	DLSM_C_LOOKUP,				/* a queue's registry row */
	DLSM_C_REGISTER,			/* add a registry row */
	DLSM_C_UNREGISTER,			/* remove a registry row */
	DLSM_NUM_CATALOG_QUERIES
} DlsmCatalogQueryId;

extern int	dlsm_plan_execute(DlsmQueue *queue, DlsmQueryId query,
							  Datum *values, const char *nulls, long count);
extern int	dlsm_plan_execute_catalog(DlsmCatalogQueryId query,
									  Datum *values, const char *nulls,
									  bool read_only, long count);
extern void dlsm_plan_reset_catalog(void);
extern void dlsm_plan_drop_table(const char *relname, bool drop_table);
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
extern int64 dlsm_state_enqueue(DlsmQueue *queue, Datum entity, Datum kind,
								Datum payload, bool payload_null,
								Datum run_at, bool run_at_null);
extern void dlsm_state_wake_at_commit(void);
extern const char *dlsm_outcome_name(DlsmOutcome outcome);

#endif							/* DLSM_H */
