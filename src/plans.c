/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  The statements dlsm runs, prepared once and kept.
 *
 * Statements against a queue are written (in querytext.c) as templates
 * with placeholders for the queue's quoted name, its mapped column names
 * and dlsm's own objects; each is expanded, prepared and kept
 * (SPI_keepplan) the first time a backend runs it for that queue, in the
 * queue's DlsmPlanSet, and freed with it (queue.c frees a set only when nothing runs its plans).
 * Between those, the plan cache revalidates the kept plans by itself.
 *
 * Except in a queue's first minute: a table never analysed (or analysed
 * empty) has no statistics, and a plan made then is made for the ten pages
 * the planner assumes of it.  Such a plan stays until the first ANALYZE,
 * and it can be a bad one: for a one-row look-up by id it may read the
 * whole `open` index (id is its second column): 85 buffers a statement
 * where the same statement planned with statistics reads 7.  So a plan
 * made without statistics records the table's size, reads it again every
 * few runs, and once the table has grown to four times that, it is set
 * aside and prepared again, for the size the table has then: a handful of
 * times in a queue's first minute, and never once the queue has
 * statistics (the plan cache replans after an ANALYZE by itself).
 *
 * Statements on dlsm's own tables are kept here, and prepared again only
 * when the extension's schema or objects changed (extension.c's
 * generation); the replaced plans are freed when the transaction ends, as
 * one of them may be running in an outer call until then.  They run as
 * the extension's owner: dlsm's functions check the caller's rights first.
 *
 * The templates, and the placeholders they are written with, are described
 * in querytext.c; the operators' placeholders are expanded here, {=} to
 * OPERATOR(pg_catalog.=) and so on.
 *
 * Calls extension.c, identity.c and names.c; reads the statements' text
 * from querytext.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "extension.h"
#include "guc.h"
#include "identity.h"
#include "names.h"
#include "plans.h"

/*
 * The size the planner assumes of a table never analysed, in pages, and
 * the growth past the size a plan was made for at which it is made again.
 */
#define UNANALYSED_MIN_BLOCKS 10
#define REPLAN_GROWTH 4

/*
 * The size, in pages (8 MB), from which a queue grown without statistics
 * is worth a NOTICE: below it a guessed plan costs little, and a session
 * filling a small new queue should not hear of it.
 */
#define UNANALYSED_SAY_BLOCKS 1024

/*
 * Such a plan reads the table's size (a system call) at one run in this
 * many: a bad plan outlives the growth that condemns it by as many runs.
 */
#define SIZE_READ_EVERY 16

/* ---------------------------------------------------------------------
 * Templates
 * ---------------------------------------------------------------------
 */

/* One placeholder of a template and what replaces it. */
typedef struct Subst
{
	const char *name;
	const char *value;
} Subst;

static const Subst operators[] = {
	{"=", "OPERATOR(pg_catalog.=)"},
	{"<>", "OPERATOR(pg_catalog.<>)"},
	{"<", "OPERATOR(pg_catalog.<)"},
	{"<=", "OPERATOR(pg_catalog.<=)"},
	{">", "OPERATOR(pg_catalog.>)"},
	{">=", "OPERATOR(pg_catalog.>=)"},
	{"+", "OPERATOR(pg_catalog.+)"},
	{"-", "OPERATOR(pg_catalog.-)"},
	{"*", "OPERATOR(pg_catalog.*)"},
};

/* The value of placeholder p (len bytes) in subst (n entries), or NULL. */
static const char *
lookup_subst(const char *p, size_t len, const Subst *subst, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(subst[i].name) == len && strncmp(p, subst[i].name, len) == 0)
			return subst[i].value;
	for (int i = 0; i < lengthof(operators); i++)
		if (strlen(operators[i].name) == len &&
			strncmp(p, operators[i].name, len) == 0)
			return operators[i].value;
	return NULL;
}

/*
 * The template with each {name} replaced by its value in subst (n entries)
 * or operators, in the current memory context.  Unknown names are left as
 * they are, so that literals such as '{new,in-progress}' pass.
 */
static char *
expand(const char *template, const Subst *subst, int n)
{
	StringInfoData buf;
	const char *p = template;

	initStringInfo(&buf);
	while (*p)
	{
		const char *close = *p == '{' ? strchr(p, '}') : NULL;
		const char *value = NULL;

		if (close != NULL)
			value = lookup_subst(p + 1, close - p - 1, subst, n);

		if (value == NULL)
			appendStringInfoChar(&buf, *p++);
		else
		{
			appendStringInfoString(&buf, value);
			p = close + 1;
		}
	}
	return buf.data;
}

/*
 * Which parameters text uses: used[n] for each $n outside quotes, n from 1
 * to DLSM_MAX_PARAMS; errors, naming def's statement, on a higher one.
 */
static void
params_used(const char *text, const DlsmQueryDef *def, bool *used)
{
	const char *p = text;

	memset(used, 0, sizeof(bool) * (DLSM_MAX_PARAMS + 1));
	while (*p)
	{
		if (*p == '\'' || *p == '"')
		{
			/* a literal or a quoted name: '' and "" only double the quote */
			const char *close = strchr(p + 1, *p);

			p = close ? close + 1 : p + strlen(p);
		}
		else if (*p == '$' && isdigit((unsigned char) p[1]))
		{
			long		n = strtol(p + 1, (char **) &p, 10);

			if (n < 1 || n > def->nargs)
				elog(ERROR, "statement %s uses $%ld but declares %d parameters",
					 def->name, n, def->nargs);
			used[n] = true;
		}
		else
			p++;
	}
}

/*
 * Check a statement just prepared against its layout in querytext.h: its
 * parameters (their constants, that its text uses each, by used from
 * params_used, and their types) and its result (its columns, their names and types).  A
 * mismatch is a developer's mistake: an internal error naming the
 * statement.
 */
static void
check_layout(SPIPlanPtr plan, const bool *used, const DlsmQueryDef *def)
{
	List	   *sources;
	TupleDesc	desc;
	int			natts;

	if (SPI_getargcount(plan) != def->nargs)
		elog(ERROR, "statement %s takes %d parameters, not %d", def->name,
			 SPI_getargcount(plan), def->nargs);
	for (int i = 0; i < def->nargs; i++)
	{
		if (def->argslots[i] != i)
			elog(ERROR, "statement %s declares as its parameter $%d the constant of $%d",
				 def->name, i + 1, def->argslots[i] + 1);
		if (!used[i + 1] && !(def->may_skip & DLSM_PARAM_BIT(i)))
			elog(ERROR, "statement %s does not use its parameter $%d",
				 def->name, i + 1);
		if (SPI_getargtypeid(plan, i) != def->argtypes[i])
			elog(ERROR, "statement %s takes parameter $%d as %s, not %s",
				 def->name, i + 1, format_type_be(SPI_getargtypeid(plan, i)),
				 format_type_be(def->argtypes[i]));
	}

	/* the result's shape, as the parser left it: nothing is planned */
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		elog(ERROR, "statement %s is %d statements, not one", def->name,
			 list_length(sources));
	desc = ((CachedPlanSource *) linitial(sources))->resultDesc;
	natts = desc ? desc->natts : 0;
	if (natts != def->ncols)
		elog(ERROR, "statement %s returns %d columns, not %d", def->name,
			 natts, def->ncols);
	for (int i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		const DlsmColumnDef *col = &def->columns[i];

		if (def->colslots[i] != i + 1)
			elog(ERROR, "statement %s declares as its column %d the constant of column %d",
				 def->name, i + 1, def->colslots[i]);
		if (strcmp(NameStr(att->attname), col->name) != 0)
			elog(ERROR, "statement %s returns column %d as \"%s\", not \"%s\"",
				 def->name, i + 1, NameStr(att->attname), col->name);
		if (col->type != DLSM_QUEUE_COLUMN && att->atttypid != col->type)
			elog(ERROR, "statement %s returns column \"%s\" as %s, not %s",
				 def->name, col->name, format_type_be(att->atttypid),
				 format_type_be(col->type));
	}
}

/*
 * Prepare text (whose layout def describes), check it against def and
 * keep the plan.
 */
static SPIPlanPtr
prepare_kept(const char *text, const DlsmQueryDef *def)
{
	SPIPlanPtr	plan;
	bool		used[DLSM_MAX_PARAMS + 1];

	/* dlsm.log_statements: every statement, as it runs, one line each */
	if (dlsm_log_statements)
		ereport(LOG,
				(errmsg_internal("dlsm prepares %s: %s", def->what, text)));

	/*
	 * Generic plans: parameters only pick rows, never a better plan, so
	 * planning once saves replanning every call (custom plans would be tried
	 * first and often kept, at the cost of a plan per execution).
	 *
	 * The $n are read first: a higher one than declared would otherwise be
	 * the parser's error, which names no statement.
	 */
	params_used(text, def, used);
	plan = SPI_prepare_cursor(text, def->nargs, (Oid *) def->argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 text, SPI_result_code_string(SPI_result));
	check_layout(plan, used, def);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/*
 * Check a statement's result against what def expects: its SPI code and,
 * when it returned rows, its result columns.  Returns the rows processed.
 */
static uint64
check(int rc, const DlsmQueryDef *def)
{
	if (rc != def->expected)
		elog(ERROR, "unexpected result from %s: %s", def->what,
			 SPI_result_code_string(rc));
	if (SPI_tuptable != NULL && def->ncols != 0 &&
		SPI_tuptable->tupdesc->natts != def->ncols)
		elog(ERROR, "%s returned %d columns, not %d", def->what,
			 SPI_tuptable->tupdesc->natts, def->ncols);
	return SPI_processed;
}

/* Run DDL built from a template; not kept, it runs once. */
static void
execute_utility(const char *template, const Subst *subst, int n)
{
	char	   *text = expand(template, subst, n);
	int			rc = SPI_execute(text, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
	pfree(text);
}

/* ---------------------------------------------------------------------
 * Plans set aside
 * ---------------------------------------------------------------------
 */

static List *retired_plans = NIL;	/* replaced, freed at transaction end */
static bool callback_registered = false;

static void
free_retired_plans(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, retired_plans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(retired_plans);
	retired_plans = NIL;
}

/*
 * Set a kept plan aside, replaced: it may be running in an outer call
 * until the transaction ends, when it is freed.
 */
static void
retire_plan(SPIPlanPtr plan)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	if (!callback_registered)
		RegisterXactCallback(free_retired_plans, NULL);
	callback_registered = true;
	retired_plans = lappend(retired_plans, plan);
	MemoryContextSwitchTo(old);
}

/* ---------------------------------------------------------------------
 * A queue's statements
 * ---------------------------------------------------------------------
 */

/* The placeholders of a queue's names, filled into the first entries. */
#define NUM_NAME_SUBSTS 15

static void
name_substs(const DlsmQueueNames *names, Subst *subst)
{
	const Subst fill[NUM_NAME_SUBSTS] = {
		{"q", names->relname},
		{"id", names->id},
		{"status", names->status},
		{"kind", names->kind},
		{"entity", names->entity},
		{"pid", names->process_id},
		{"pidin", names->pid_is_text ? "::pg_catalog.text" : ""},
		{"pidarr", names->pid_is_text ? "::pg_catalog.text[]" : ""},
		{"pidout", names->pid_is_text ? "::pg_catalog.uuid" : ""},
		{"group", names->group ? names->group : "NULL::pg_catalog.text"},
		{"groupcol", names->group ? psprintf(", %s", names->group) : ""},
		{"groupval", names->group ? ", $5" : ""},
		{"capgroupval", names->group ? ", $7" : ""},
		{"tgroup", names->group ? psprintf("t.%s", names->group) : "NULL::pg_catalog.text"},
		{"dedup", names->dedup},	/* NULL: left as it is, never run */
	};

	memcpy(subst, fill, sizeof(fill));
}

/*
 * The size, in pages, the planner assumes of the queue table relid when it
 * has no statistics: never analysed, or analysed empty (relpages 0); 0 when
 * it has statistics, or no storage of its own.  Takes the lock the
 * statement about to run takes anyway.
 */
static BlockNumber
size_without_statistics(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	BlockNumber blocks = 0;

	if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		(rel->rd_rel->reltuples < 0 || rel->rd_rel->relpages == 0))
		blocks = Max(RelationGetNumberOfBlocks(rel), UNANALYSED_MIN_BLOCKS);
	table_close(rel, NoLock);
	return blocks;
}

/*
 * The queue's table grew past the size its plans were made for, to 8 MB
 * or more, and has no statistics yet: say so to the session, once for
 * each queue.  The
 * plans are made again, but the planner still guesses until an ANALYZE.
 */
static void
say_unanalysed(DlsmPlanSet *set)
{
	char	   *relname;

	if (set->said_unanalysed)
		return;
	set->said_unanalysed = true;
	relname = get_rel_name(set->relid);
	ereport(NOTICE,
			(errmsg("queue \"%s\" has grown without statistics",
					relname ? relname : "?"),
			 errdetail("Until its table is analysed, dlsm plans its statements again each time it grows fourfold, and the planner guesses the table's contents."),
			 errhint("Run ANALYZE on the queue's table after loading it; autovacuum analyses it only at its next round.")));
}

static SPIPlanPtr
queue_plan(DlsmPlanSet *set, DlsmQueryId query)
{
	/* a plan made without statistics, for a table since grown */
	if (set->plans[query] != NULL && set->planned_for[query] != 0 &&
		++set->runs[query] % SIZE_READ_EVERY == 0)
	{
		BlockNumber now = size_without_statistics(set->relid);

		if (now == 0)
		{
			/* analysed: the plan cache makes every plan again by itself */
			memset(set->planned_for, 0, sizeof(set->planned_for));
		}
		else if (now / REPLAN_GROWTH >= set->planned_for[query])
		{
			if (now >= UNANALYSED_SAY_BLOCKS)
				say_unanalysed(set);
			/* it may run in an outer call: freed when the transaction ends */
			retire_plan(set->plans[query]);
			set->plans[query] = NULL;
		}
	}
	if (set->plans[query] == NULL)
	{
		Subst		subst[NUM_NAME_SUBSTS];
		char	   *text;

		name_substs(&set->names, subst);
		text = expand(dlsm_queue_queries[query].text, subst, lengthof(subst));

		set->plans[query] = prepare_kept(text, &dlsm_queue_queries[query]);
		set->planned_for[query] = size_without_statistics(set->relid);
		pfree(text);
	}
	return set->plans[query];
}

/*
 * Run one of a queue's statements as the current user, and check its
 * result; returns the rows processed, which are in SPI_tuptable.  The
 * caller holds an SPI connection.
 *
 * NB: even the pure reads run with read_only = false, which gives each
 * statement a fresh snapshot in READ COMMITTED: a claim must see what
 * committed before it took an entity lock, and a waiting claim must see
 * rows enqueued while it slept.
 */
uint64
dlsm_plan_run(DlsmPlanSet *set, DlsmQueryId query, Datum *values,
			  const char *nulls, long count)
{
	const DlsmQueryDef *def = &dlsm_queue_queries[query];
	SPIPlanPtr	plan = queue_plan(set, query);
	int			nest_level = 0;
	int			rc;

	/* plans are made as the statement runs: the setting holds for both */
	if (def->no_jit)
	{
		nest_level = NewGUCNestLevel();
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	rc = SPI_execute_plan(plan, values, nulls, false, count);
	if (def->no_jit)
		AtEOXact_GUC(true, nest_level);
	return check(rc, def);
}

/*
 * dlsm_plan_run with the latest snapshot, whatever the transaction's
 * isolation: a statement run after a lock was granted sees what the
 * lock's previous holder committed (as ri_triggers.c does).
 */
uint64
dlsm_plan_run_latest(DlsmPlanSet *set, DlsmQueryId query, Datum *values,
					 const char *nulls, long count)
{
	const DlsmQueryDef *def = &dlsm_queue_queries[query];
	int			nest_level = 0;
	SPIPlanPtr	plan;
	int			rc;

	/*
	 * the plan is made (or made again, after an invalidation) when it runs:
	 * the setting holds for both; an error undoes it with the
	 * (sub)transaction
	 */
	if (def->no_seqscan)
	{
		nest_level = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
	}
	plan = queue_plan(set, query);
	rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, false, true, count);
	if (def->no_seqscan)
		AtEOXact_GUC(true, nest_level);
	return check(rc, def);
}

/* Free a queue's kept plans; none of them may be running. */
void
dlsm_plan_free(DlsmPlanSet *set)
{
	for (int i = 0; i < DLSM_NUM_QUERIES; i++)
	{
		if (set->plans[i] != NULL)
			SPI_freeplan(set->plans[i]);
		set->plans[i] = NULL;
	}
}

/* ---------------------------------------------------------------------
 * Statements on dlsm's own tables
 * ---------------------------------------------------------------------
 */

static SPIPlanPtr catalog_plans[DLSM_NUM_CATALOG_QUERIES];
static uint64 catalog_generation = 0;	/* dlsm_extension_generation() seen */

/* The extension was created again: set the old plans aside. */
static void
retire_catalog_plans(void)
{
	for (int i = 0; i < DLSM_NUM_CATALOG_QUERIES; i++)
	{
		if (catalog_plans[i] != NULL)
			retire_plan(catalog_plans[i]);
		catalog_plans[i] = NULL;
	}
}

static SPIPlanPtr
catalog_plan(DlsmCatalogQueryId query)
{
	uint64		current = dlsm_extension_generation();

	if (current != catalog_generation)
	{
		retire_catalog_plans();
		catalog_generation = current;
	}
	if (catalog_plans[query] == NULL)
	{
		const char *schema = dlsm_extension_schema();
		Subst		subst[] = {
			{"queues", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_QUEUES))},
			{"captures", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_CAPTURES))},
			{"leases", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_LEASES))},
			{"limits", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_GROUP_LIMITS))},
			{"fence_seq", psprintf("%u", dlsm_extension_object(DLSM_OBJ_FENCE_SEQ))},
		};
		char	   *text = expand(dlsm_catalog_queries[query].text, subst,
								  lengthof(subst));

		catalog_plans[query] = prepare_kept(text, &dlsm_catalog_queries[query]);
		pfree(text);
	}
	return catalog_plans[query];
}

/*
 * Run one of the statements on dlsm's own tables as the extension's owner,
 * with a fresh snapshot (the latest, when latest: it must see what
 * committed a moment ago, whatever the transaction's isolation), and check
 * its result; returns the rows processed.  The caller holds an SPI
 * connection and checked the caller's rights.
 */
static uint64
run_catalog(DlsmCatalogQueryId query, Datum *values, const char *nulls,
			long count, bool latest)
{
	Oid			owner = dlsm_extension_owner();
	DlsmIdentity saved;
	SPIPlanPtr	plan;
	int			rc;

	/*
	 * prepared as the owner too: the caller may not see dlsm's schema; the
	 * caller's search_path never reaches code on dlsm's tables
	 */
	dlsm_identity_switch_pinned(owner, &saved);
	plan = catalog_plan(query);
	if (latest)
		rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
								  InvalidSnapshot, true, false, count);
	else
		rc = SPI_execute_plan(plan, values, nulls, false, count);
	dlsm_identity_restore(&saved);
	return check(rc, &dlsm_catalog_queries[query]);
}

/* Run a statement that writes dlsm's own tables, as their owner. */
uint64
dlsm_plan_run_catalog(DlsmCatalogQueryId query, Datum *values,
					  const char *nulls, long count)
{
	return run_catalog(query, values, nulls, count, false);
}

/* Read dlsm's own tables as their owner, with the latest snapshot. */
uint64
dlsm_plan_read_catalog(DlsmCatalogQueryId query, Datum *values,
					   const char *nulls, long count)
{
	return run_catalog(query, values, nulls, count, true);
}

/* Open the SPI connection of a call into dlsm. */
void
dlsm_plan_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/* Close it. */
void
dlsm_plan_finish(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* ---------------------------------------------------------------------
 * Results
 * ---------------------------------------------------------------------
 */

/*
 * A caller's column number past the last result's columns would read as
 * NULL: a caller and a statement that disagree are an error.
 */
static void
check_attno(int attno)
{
	if (attno < 1 || attno > SPI_tuptable->tupdesc->natts)
		elog(ERROR, "result column %d asked of a result of %d columns",
			 attno, SPI_tuptable->tupdesc->natts);
}

/* Column attno of row of the last result. */
Datum
dlsm_plan_value(uint64 row, int attno, bool *isnull)
{
	check_attno(attno);
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 attno, isnull);
}

/*
 * The one value of a statement run for one row: column attno of the last
 * result's first row, which is then freed (*isnull when there is no row,
 * or the value is NULL).  A value passed by reference is copied into the
 * current memory context first.
 */
Datum
dlsm_plan_one_value(int attno, bool *isnull)
{
	Datum		d = (Datum) 0;

	*isnull = true;
	if (SPI_processed > 0)
	{
		Form_pg_attribute att;

		check_attno(attno);
		att = TupleDescAttr(SPI_tuptable->tupdesc, attno - 1);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
						  attno, isnull);
		if (!*isnull)
			d = datumCopy(d, att->attbyval, att->attlen);
	}
	SPI_freetuptable(SPI_tuptable);
	return d;
}

/* Column attno of row of the last result as text, NULL for NULL. */
char *
dlsm_plan_text(uint64 row, int attno)
{
	check_attno(attno);
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						attno);
}

/*
 * Is column attno of result row the string text?  False when it is NULL:
 * a queue's row may hold one where dlsm never writes it (an owner's
 * trigger, an adopted table's nullable column).
 */
bool
dlsm_plan_text_is(uint64 row, int attno, const char *text)
{
	char	   *value = dlsm_plan_text(row, attno);

	return value != NULL && strcmp(value, text) == 0;
}

/* ---------------------------------------------------------------------
 * DDL
 * ---------------------------------------------------------------------
 */

/*
 * Create a queue table named relname (quoted and qualified) with its
 * indexes (index_names, quoted, by DLSM_INDEX_*) and wake trigger.  Runs
 * as the caller.
 */
void
dlsm_plan_create_table(const char *relname, const char *const *index_names)
{
	Subst		subst[] = {
		{"q", relname},
		{"ready", index_names[DLSM_INDEX_READY]},
		{"creates", index_names[DLSM_INDEX_CREATES]},
		{"open", index_names[DLSM_INDEX_OPEN]},
		{"held", index_names[DLSM_INDEX_HELD]},
		{"ext", quote_identifier(dlsm_extension_schema())},
		{"dedupidx", index_names[DLSM_INDEX_DEDUP]},
	};

	execute_utility(dlsm_create_table_text, subst, lengthof(subst));
}

/* A regclass[] literal of the index names just made, in schema. */
static char *
new_indexes_literal(const char *schema, const char *const *index_names,
					bool creates_index, bool dedup_index)
{
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "ARRAY[");
	for (int i = 0; i < DLSM_NUM_INDEXES; i++)
	{
		if ((i == DLSM_INDEX_CREATES && !creates_index) ||
			(i == DLSM_INDEX_DEDUP && !dedup_index))
			continue;
		appendStringInfo(&buf, "%s%s", first ? "" : ", ",
						 quote_literal_cstr(psprintf("%s.%s", schema,
													 index_names[i])));
		first = false;
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * Add to an adopted table what dlsm needs and it lacks: names are its
 * quoted names, schema its quoted schema, index_names the quoted index
 * names (DLSM_INDEX_*), and creates_index whether to build the creates
 * index; the dedup index is built when names->dedup is set.  Indexes that
 * repeat ones the table has are dropped again.  Runs as the caller.
 */
void
dlsm_plan_adopt_table(const DlsmQueueNames *names, const char *schema,
					  const char *const *index_names, bool creates_index)
{
	enum
	{
		S_READY = NUM_NAME_SUBSTS, S_OPEN, S_HELD, S_CREATES, S_EXT,
		S_DEDUPIDX, S_NEW_INDEXES, S_CREATES_INDEX, S_DEDUP_INDEX,
		S_DROP_DUPLICATES, NUM_SUBSTS
	};
	Subst		subst[NUM_SUBSTS] = {
		[S_READY] = {"ready", index_names[DLSM_INDEX_READY]},
		[S_OPEN] = {"open", index_names[DLSM_INDEX_OPEN]},
		[S_HELD] = {"held", index_names[DLSM_INDEX_HELD]},
		[S_CREATES] = {"creates", index_names[DLSM_INDEX_CREATES]},
		[S_EXT] = {"ext", quote_identifier(dlsm_extension_schema())},
		[S_DEDUPIDX] = {"dedupidx", index_names[DLSM_INDEX_DEDUP]},
		[S_NEW_INDEXES] = {"new_indexes", new_indexes_literal(schema, index_names,
															  creates_index,
															  names->dedup != NULL)},
		[S_CREATES_INDEX] = {"creates_index", ""},
		[S_DEDUP_INDEX] = {"dedup_index", ""},
		[S_DROP_DUPLICATES] = {"drop_duplicates", ""},
	};
	int			nest_level;

	/* the last three are built from the template with the others */
	name_substs(names, subst);
	subst[S_CREATES_INDEX].value = creates_index ?
		expand(dlsm_creates_index_text, subst, S_CREATES_INDEX) : "";
	subst[S_DEDUP_INDEX].value = names->dedup != NULL ?
		expand(dlsm_dedup_index_text, subst, S_CREATES_INDEX) : "";
	subst[S_DROP_DUPLICATES].value =
		expand(dlsm_drop_duplicates_text, subst, S_CREATES_INDEX);

	/* "column ... already exists, skipping" says nothing to the caller */
	nest_level = NewGUCNestLevel();
	(void) set_config_option("client_min_messages", "warning", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	execute_utility(dlsm_register_table_text, subst, lengthof(subst));
	AtEOXact_GUC(true, nest_level);
}

/*
 * Drop a queue table (relname quoted and qualified), or when !drop_table
 * only the wake trigger dlsm put on it.  Runs as the caller.
 */
void
dlsm_plan_drop_table(const char *relname, bool drop_table)
{
	Subst		subst[] = {{"q", relname}};

	execute_utility(drop_table ? dlsm_drop_table_text : dlsm_drop_trigger_text,
					subst, lengthof(subst));
}

/* Attach the capture trigger named trigger to source. */
void
dlsm_plan_capture_trigger(Oid source, const char *trigger)
{
	Subst		subst[] = {
		{"src", quote_qualified_identifier(dlsm_schema_name(get_rel_namespace(source)),
										   dlsm_rel_name(source))},
		{"trigger", quote_identifier(trigger)},
		{"ext", quote_identifier(dlsm_extension_schema())},
	};

	execute_utility(dlsm_capture_text, subst, lengthof(subst));
}
