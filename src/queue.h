/*-------------------------------------------------------------------------
 *
 * queue.h
 *	  The registry of queues and their descriptors (queue.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/queue.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_QUEUE_H
#define DLSM_QUEUE_H

#include "datatype/timestamp.h"
#include "nodes/parsenodes.h"

#include "plans.h"

/* A way in which a queue's table no longer fits dlsm (queue.c). */
typedef enum DlsmShapeKind
{
	DLSM_SHAPE_FITS,			/* it fits */
	DLSM_SHAPE_MISSING,			/* a column it needs is gone */
	DLSM_SHAPE_TYPE,			/* a column has a type dlsm cannot read */
	DLSM_SHAPE_COLLATION,		/* a key column has a nondeterministic
								 * collation */
	DLSM_SHAPE_NO_DEFAULT,		/* the id column has no default */
	DLSM_SHAPE_NOT_TABLE		/* it is no longer a table */
} DlsmShapeKind;

typedef struct DlsmShapeProblem
{
	DlsmShapeKind kind;
	char		column[NAMEDATALEN];	/* the column, unquoted */
	Oid			type;			/* its type */
	Oid			wanted;			/* the type dlsm needs there */
} DlsmShapeProblem;

/*
 * What dlsm knows of one registered queue: its registry row, the table's
 * owner and the statements prepared for it.
 *
 * The rule for holding one: dlsm_queue_open pins a descriptor and
 * dlsm_queue_close unpins it; while pinned it never changes nor goes away,
 * whatever the SQL run meanwhile does (triggers that re-register or drop
 * the queue, invalidations from other sessions): an invalidation only
 * marks it stale, and the next open builds a fresh one (after one that
 * came while the descriptor was read from the registry, whose snapshot may
 * not have seen the change, the next open reads the registry again).
 * Unregistering a
 * queue that this backend has pinned is refused (dlsm_queue_check_unused),
 * as ALTER TABLE refuses a table that an active query of the session uses.
 * Pins still held when the transaction ends are dropped then.
 */
typedef struct DlsmQueue
{
	Oid			relid;			/* the queue table */
	Oid			owner;			/* the table's owner */
	char	   *channel;		/* NOTIFY channel */
	int			max_attempts;	/* attempts before a retry becomes error */
	bool		has_retention;	/* are settled rows deleted after... */
	Interval	retention;		/* ... this long? */
	char	   *handler;		/* function the worker runs, or NULL */
	int			handler_timeout_ms; /* its statement timeout; 0: the GUC */
	bool		row_security;	/* row-level security is enabled on it */
	bool		update_runs_user_code;	/* an UPDATE of it runs a user's code
										 * (usercode.c), ... */
	bool		user_code_known;	/* ... once looked up (pending.c) */
	struct DlsmLimits *limits;	/* its groups' limits, or NULL: none, ... */
	bool		limits_known;	/* ... once read (grouplimit.c) */
	char	   *creates_index;	/* its unique index of creates, or NULL, */
	bool		creates_index_known;	/* ... once looked up */
	bool		updates_wait_for_create;	/* an update of an entity without
											 * a create waits for one */
	DlsmPlanSet plans;			/* names and kept statements */
	bool		misfit;			/* the table no longer fits dlsm: ... */
	DlsmShapeProblem problem;	/* ... how, found as the descriptor was read */
	/* private to queue.c */
	int			pins;			/* holders; freed at 0 once stale */
	uint64		last_opened;	/* when last opened, of open_clock */
	bool		stale;			/* replaced, or invalidated */
	MemoryContext context;		/* holds the strings above */
} DlsmQueue;

/* Settings of a queue, for registering or changing it. */
typedef struct DlsmQueueOptions
{
	char	   *channel;		/* NULL: the default, or unchanged */
	int			max_attempts;	/* 0: unchanged (alter only) */
	Interval   *retention;		/* NULL: none, or unchanged */
	Interval   *handler_timeout;	/* NULL: unchanged (alter only) */
	char	   *group_column;	/* register only: the group column, or NULL */
	int			updates_wait_for_create;	/* 1 or 0; -1: unchanged (alter
											 * only) */
} DlsmQueueOptions;

/* The five mapped columns of an adopted table, by role. */
enum
{
	DLSM_COL_ID, DLSM_COL_STATUS, DLSM_COL_KIND, DLSM_COL_ENTITY,
	DLSM_COL_PROCESS_ID, DLSM_NUM_COLUMNS
};

extern const char *const dlsm_queue_columns[DLSM_NUM_COLUMNS];

/* The dedup key column of a queue dlsm_create_queue made. */
#define DLSM_DEDUP_COLUMN "dedup_key"

extern void dlsm_queue_init(void);

/* Flags of dlsm_queue_open. */
#define DLSM_QUEUE_MISSING_OK	0x01	/* NULL when not a queue */
#define DLSM_QUEUE_ANY_SECURITY 0x02	/* row-level security allowed */
#define DLSM_QUEUE_WRITE		0x04	/* the caller will write its rows */
#define DLSM_QUEUE_ANY_SHAPE	0x08	/* a table that no longer fits allowed
										 * (misfit): no statement on it */

extern DlsmQueue *dlsm_queue_open(Oid relid, int flags);
extern void dlsm_queue_close(DlsmQueue *queue);
extern void dlsm_queue_check_unused(Oid relid);
extern Oid	dlsm_queue_create(const char *name, DlsmQueueOptions *opts);
extern void dlsm_queue_register(Oid relid, const char *const *columns,
								const char *dedup, DlsmQueueOptions *opts);
extern void dlsm_queue_alter(Oid relid, DlsmQueueOptions *opts);
extern void dlsm_queue_drop(Oid relid, bool drop_table);
extern List *dlsm_queue_list(void);
extern void dlsm_queue_check_owner(Oid relid);
extern void dlsm_queue_check_privileges(Oid relid, AclMode modes);

extern void dlsm_queue_write_registry(DlsmCatalogQueryId query, Oid relid,
									  Datum *values, const char *nulls);

extern const char *dlsm_queue_creates_index(DlsmQueue *queue);

#endif							/* DLSM_QUEUE_H */
