/*-------------------------------------------------------------------------
 *
 * plans.h
 *	  How to run the statements dlsm runs (plans.c).
 *
 * The statements are named in querytext.h, which this includes, each
 * with its layout: its parameters (P_<STATEMENT>_<NAME>, the index into
 * the values and nulls arrays) and its result columns (A_<STATEMENT>_<NAME>,
 * the attribute number, from 1), which the callers index with.  The text
 * of every one is in querytext.c; plans.c checks each against its layout
 * when it prepares it, and each result's width as it runs.
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

#include "querytext.h"

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
	bool		said_unanalysed;	/* the NOTICE that the table grew without
									 * statistics was sent */
} DlsmPlanSet;

extern uint64 dlsm_plan_run(DlsmPlanSet *set, DlsmQueryId query,
							Datum *values, const char *nulls, long count);
extern uint64 dlsm_plan_run_latest(DlsmPlanSet *set, DlsmQueryId query,
								   Datum *values, const char *nulls,
								   long count);
extern void dlsm_plan_free(DlsmPlanSet *set);

/* ---- statements on dlsm's own tables ---- */
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
extern Datum dlsm_plan_one_value(int attno, bool *isnull);
extern char *dlsm_plan_text(uint64 row, int attno);
extern bool dlsm_plan_text_is(uint64 row, int attno, const char *text);

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
