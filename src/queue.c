/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  The registry of queues and the per-backend cache of their descriptors.
 *
 * A queue is a table with a row in the extension's dlsm_queues table.  Each
 * backend keeps a DlsmQueue per queue it has used, with the registry row
 * and the statements prepared for it (plans.c), in a hash keyed by the
 * table's OID.  Any relcache invalidation of the table (ALTER, DROP, and the
 * invalidation dlsm sends itself whenever it changes the registry) marks the
 * descriptor stale; it is rebuilt, plans freed, on its next use.  An
 * invalidation of the registry table itself, or a full reset, marks all of
 * them stale, so that DROP and CREATE EXTENSION are followed.
 *
 * The registry is written only here, as the extension's owner, after the
 * caller's right to the table has been checked; it is readable by all.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/queue.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "commands/defrem.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "dlsm.h"

static HTAB *queue_cache = NULL;
static MemoryContext queue_context = NULL;

/*
 * Descriptions replaced while a statement may still run one of their plans
 * (a trigger can rebuild a queue's descriptor in the middle of that queue's
 * INSERT): freed at the end of the transaction, never earlier.
 */
typedef struct RetiredQueue
{
	MemoryContext context;		/* the strings */
	SPIPlanPtr *plans;			/* DLSM_NUM_QUERIES slots */
} RetiredQueue;

static List *retired = NIL;		/* of RetiredQueue, in queue_context */

static void
invalidate_all(void)
{
	HASH_SEQ_STATUS status;
	DlsmQueue  *queue;

	if (queue_cache == NULL)
		return;
	hash_seq_init(&status, queue_cache);
	while ((queue = hash_seq_search(&status)) != NULL)
		queue->valid = false;
}

static void
queue_invalidate(Datum arg, Oid relid)
{
	DlsmQueue  *queue;

	if (relid == InvalidOid || relid == dlsm_extension_registry_seen())
	{
		invalidate_all();
		return;
	}
	if (queue_cache == NULL)
		return;
	queue = hash_search(queue_cache, &relid, HASH_FIND, NULL);
	if (queue != NULL)
		queue->valid = false;
}

/* A schema was renamed: the qualified names of queues may have changed. */
static void
namespace_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	invalidate_all();
}

/* Free the descriptions retired during the transaction that just ended. */
static void
free_retired(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, retired)
	{
		RetiredQueue *r = lfirst(lc);

		for (int i = 0; i < DLSM_NUM_QUERIES; i++)
			if (r->plans[i] != NULL)
				SPI_freeplan(r->plans[i]);
		pfree(r->plans);
		MemoryContextDelete(r->context);
	}
	list_free_deep(retired);
	retired = NIL;
}

/* Register the invalidation callback; called once from _PG_init. */
void
dlsm_queue_init(void)
{
	CacheRegisterRelcacheCallback(queue_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, namespace_invalidate, (Datum) 0);
	RegisterXactCallback(free_retired, NULL);
}

static char *
column_name(HeapTuple tuple, TupleDesc desc, int attno)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, attno, &isnull);

	return pstrdup(quote_identifier(NameStr(*DatumGetName(d))));
}

/* The owner of table relid. */
static Oid
table_owner(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/* The type of the column named in attno of a registry row. */
static Oid
column_type(Oid relid, HeapTuple tuple, TupleDesc desc, int attno)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tuple, desc, attno, &isnull);
	AttrNumber	att = get_attnum(relid, NameStr(*DatumGetName(d)));

	return att == InvalidAttrNumber ? InvalidOid :
		get_atttype(relid, att);
}

static bool
same_description(DlsmQueue *a, DlsmQueue *b)
{
	return strcmp(a->relname, b->relname) == 0 &&
		strcmp(a->channel, b->channel) == 0 &&
		a->max_attempts == b->max_attempts &&
		a->has_retention == b->has_retention &&
		(!a->has_retention ||
		 memcmp(&a->retention, &b->retention, sizeof(Interval)) == 0) &&
		a->handler == b->handler && a->handler_role == b->handler_role &&
		a->owner == b->owner &&
		strcmp(a->col_id, b->col_id) == 0 &&
		strcmp(a->col_status, b->col_status) == 0 &&
		strcmp(a->col_kind, b->col_kind) == 0 &&
		strcmp(a->col_entity, b->col_entity) == 0 &&
		strcmp(a->col_process_id, b->col_process_id) == 0 &&
		a->pid_is_text == b->pid_is_text;
}

/* Set aside a queue's description until the transaction ends. */
static void
retire(DlsmQueue *queue)
{
	MemoryContext old = MemoryContextSwitchTo(queue_context);
	RetiredQueue *r = palloc(sizeof(RetiredQueue));

	r->context = queue->context;
	r->plans = queue->plans;
	retired = lappend(retired, r);
	MemoryContextSwitchTo(old);
	queue->context = NULL;
	queue->plans = NULL;
}

/*
 * Read a queue's description from the registry into a stale or new
 * descriptor; false if it is not registered (any more).  The plans of an
 * unchanged description are kept: the plan cache revalidates them itself.
 */
static bool
load_queue(DlsmQueue *queue)
{
	Datum		values[1] = {ObjectIdGetDatum(queue->relid)};
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	char	   *nspname;
	char	   *relname;
	DlsmQueue	fresh;
	Datum		d;
	MemoryContext context;
	MemoryContext old;

	/* an invalidation arriving from here on makes it stale again */
	queue->valid = true;
	if (dlsm_plan_read_catalog_latest(DLSM_C_LOOKUP, values, NULL, 1) !=
		SPI_OK_SELECT)
		elog(ERROR, "unexpected result from the dlsm registry lookup");
	nspname = get_namespace_name(get_rel_namespace(queue->relid));
	relname = get_rel_name(queue->relid);
	if (SPI_processed == 0 || nspname == NULL || relname == NULL)
		return false;

	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	context = AllocSetContextCreate(queue_context, "dlsm queue",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(context);
	fresh.relname = quote_qualified_identifier(nspname, relname);
	fresh.channel = TextDatumGetCString(SPI_getbinval(tuple, desc, 1, &isnull));
	fresh.max_attempts = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));
	fresh.col_id = column_name(tuple, desc, 3);
	fresh.col_status = column_name(tuple, desc, 4);
	fresh.col_kind = column_name(tuple, desc, 5);
	fresh.col_entity = column_name(tuple, desc, 6);
	fresh.col_process_id = column_name(tuple, desc, 7);
	fresh.pid_is_text = column_type(queue->relid, tuple, desc, 7) != UUIDOID;
	d = SPI_getbinval(tuple, desc, 8, &isnull);
	fresh.has_retention = !isnull;
	if (!isnull)
		fresh.retention = *DatumGetIntervalP(d);
	d = SPI_getbinval(tuple, desc, 9, &isnull);
	fresh.handler = isnull ? InvalidOid : DatumGetObjectId(d);
	d = SPI_getbinval(tuple, desc, 10, &isnull);
	fresh.handler_role = isnull ? InvalidOid : DatumGetObjectId(d);
	fresh.owner = table_owner(queue->relid);
	MemoryContextSwitchTo(old);
	SPI_freetuptable(SPI_tuptable);

	if (queue->context != NULL && same_description(queue, &fresh))
	{
		MemoryContextDelete(context);
		return true;
	}
	if (queue->context != NULL)
		retire(queue);
	queue->context = context;
	queue->relname = fresh.relname;
	queue->channel = fresh.channel;
	queue->max_attempts = fresh.max_attempts;
	queue->has_retention = fresh.has_retention;
	queue->retention = fresh.retention;
	queue->handler = fresh.handler;
	queue->handler_role = fresh.handler_role;
	queue->owner = fresh.owner;
	queue->col_id = fresh.col_id;
	queue->col_status = fresh.col_status;
	queue->col_kind = fresh.col_kind;
	queue->col_entity = fresh.col_entity;
	queue->col_process_id = fresh.col_process_id;
	queue->pid_is_text = fresh.pid_is_text;
	queue->plans = MemoryContextAllocZero(queue_context,
										  sizeof(SPIPlanPtr) * DLSM_NUM_QUERIES);
	return true;
}

/*
 * The descriptor of a registered queue, or NULL when relid is not one.
 * The caller holds an SPI connection.
 */
static DlsmQueue *
find_queue(Oid relid)
{
	DlsmQueue  *queue;
	bool		found;

	(void) dlsm_extension_schema();		/* follows a re-created extension */
	if (queue_cache == NULL)
	{
		HASHCTL		ctl;

		queue_context = AllocSetContextCreate(TopMemoryContext,
											  "dlsm queues",
											  ALLOCSET_SMALL_SIZES);
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DlsmQueue);
		ctl.hcxt = queue_context;
		queue_cache = hash_create("dlsm queues", 16, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}

	queue = hash_search(queue_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		queue->valid = false;
		queue->context = NULL;
		queue->plans = NULL;
	}
	if (!queue->valid || queue->context == NULL)
	{
		volatile bool loaded = false;

		PG_TRY();
		{
			loaded = load_queue(queue);
		}
		PG_CATCH();
		{
			queue->valid = false;	/* look again next time */
			PG_RE_THROW();
		}
		PG_END_TRY();
		if (!loaded)
		{
			if (queue->context != NULL)
				retire(queue);
			hash_search(queue_cache, &relid, HASH_REMOVE, NULL);
			return NULL;
		}
	}
	return queue;
}

/*
 * The descriptor of a registered queue; raises 42704 when relid is not one.
 * The caller holds an SPI connection.
 */
DlsmQueue *
dlsm_queue_get(Oid relid)
{
	DlsmQueue  *queue = find_queue(relid);

	if (queue == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not a dlsm queue",
						get_rel_name(relid) ? get_rel_name(relid) : "?"),
				 errhint("Create a queue with dlsm_create_queue().")));
	return queue;
}

/* Like dlsm_queue_get, but NULL instead of an error. */
DlsmQueue *
dlsm_queue_find(Oid relid)
{
	return find_queue(relid);
}

/* Run one registry statement as the extension's owner. */
static void
write_registry(DlsmCatalogQueryId query, Datum *values, const char *nulls)
{
	int			rc = dlsm_plan_execute_catalog_as_owner(query, values, nulls);

	if (rc != SPI_OK_INSERT && rc != SPI_OK_DELETE && rc != SPI_OK_UPDATE)
		elog(ERROR, "unexpected result from a dlsm registry change: %s",
			 SPI_result_code_string(rc));
	/* at commit, the worker reads the registry again */
	Async_Notify("dlsm", "queues");
}

/* The columns of a queue dlsm created, by role. */
static const char *const default_columns[5] = {
	"id", "status", "kind", "entity", "process_id"
};

/* Write a queue's registry row; columns name the mapped columns. */
static void
register_queue(Oid relid, const char *const *columns, const char *channel,
			   int max_attempts, Interval *retention)
{
	Datum		values[10];
	char		nulls[10] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	values[0] = ObjectIdGetDatum(relid);
	values[1] = CStringGetTextDatum(channel);
	values[2] = Int32GetDatum(max_attempts);
	values[3] = retention ? IntervalPGetDatum(retention) : (Datum) 0;
	nulls[3] = retention ? ' ' : 'n';
	values[4] = ObjectIdGetDatum(GetUserId());
	for (int i = 0; i < 5; i++)
		values[5 + i] = DirectFunctionCall1(namein, CStringGetDatum(columns[i]));
	write_registry(DLSM_C_REGISTER, values, nulls);
	CacheInvalidateRelcacheByRelid(relid);
}

/*
 * Create the queue table "name" (possibly schema-qualified) as the caller,
 * and register it.  The caller holds an SPI connection.
 */
Oid
dlsm_queue_create(const char *name, const char *channel, int max_attempts,
				  Interval *retention)
{
	RangeVar   *rv;
	Oid			nspid;
	char	   *nspname;
	char	   *relname;
	const char *index_names[4];
	const char *labels[4] = {"ready", "creates", "open", "held"};
	Oid			relid;

	rv = makeRangeVarFromNameList(stringToQualifiedNameList(name));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a dlsm queue cannot be a temporary table")));
	nspname = get_namespace_name(nspid);
	relname = quote_qualified_identifier(nspname, rv->relname);
	for (int i = 0; i < lengthof(labels); i++)
		index_names[i] = quote_identifier(ChooseRelationName(rv->relname, NULL,
															 labels[i], nspid,
															 false));

	dlsm_plan_create_table(relname, index_names);
	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "queue table \"%s\" was not created", relname);

	register_queue(relid, default_columns,
				   channel ? channel : rv->relname, max_attempts, retention);
	return relid;
}

/*
 * Unregister a queue, and drop its table when drop_table; the caller must
 * own the table and holds an SPI connection.
 */
void
dlsm_queue_drop(Oid relid, bool drop_table)
{
	DlsmQueue  *queue = dlsm_queue_get(relid);
	Datum		values[1] = {ObjectIdGetDatum(relid)};
	char	   *relname = pstrdup(queue->relname);

	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));

	write_registry(DLSM_C_UNREGISTER, values, NULL);
	CacheInvalidateRelcacheByRelid(relid);
	dlsm_plan_drop_table(relname, drop_table);
}

/*
 * Make the worker run handler (InvalidOid: no handler) for the queue's
 * units, as the calling role.  The caller must own the table; the handler
 * must take (text, text, bigint[], jsonb[]) and the caller must be allowed
 * to execute it.  The caller holds an SPI connection.
 */
void
dlsm_queue_set_handler(Oid relid, Oid handler)
{
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};

	(void) dlsm_queue_get(relid);
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	if (OidIsValid(handler))
	{
		Oid			argtypes[4] = {TEXTOID, TEXTOID, INT8ARRAYOID, JSONBARRAYOID};
		HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(handler));
		Form_pg_proc proc;
		bool		ok;

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for function %u", handler);
		proc = (Form_pg_proc) GETSTRUCT(tuple);
		ok = proc->pronargs == 4 && proc->prokind == PROKIND_FUNCTION &&
			!proc->proretset &&
			memcmp(proc->proargtypes.values, argtypes, sizeof(argtypes)) == 0;
		ReleaseSysCache(tuple);
		if (!ok)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("function %s cannot be a dlsm handler",
							format_procedure(handler)),
					 errhint("A handler is a function taking (entity text, kind text, ids bigint[], payloads jsonb[]).")));
		if (pg_proc_aclcheck(handler, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION,
						   get_func_name(handler));
	}
	values[0] = ObjectIdGetDatum(relid);
	values[1] = ObjectIdGetDatum(handler);
	nulls[1] = OidIsValid(handler) ? ' ' : 'n';
	values[2] = ObjectIdGetDatum(GetUserId());
	nulls[2] = nulls[1];
	write_registry(DLSM_C_SET_HANDLER, values, nulls);
	CacheInvalidateRelcacheByRelid(relid);
	dlsm_shmem_wake_worker(MyDatabaseId);
}

/*
 * The OIDs of every queue of this database, in the caller's memory
 * context.  The caller holds an SPI connection.
 */
List *
dlsm_queue_list(void)
{
	List	   *queues = NIL;
	MemoryContext caller = CurrentMemoryContext;

	if (dlsm_plan_execute_catalog(DLSM_C_LIST, NULL, NULL, true, 0) !=
		SPI_OK_SELECT)
		elog(ERROR, "unexpected result from the dlsm registry list");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc,
														   1, &isnull));
		MemoryContext old = MemoryContextSwitchTo(caller);

		queues = lappend_oid(queues, relid);
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(SPI_tuptable);
	return queues;
}

/* Check that column name of relid exists with one of the types (0-ended). */
static void
check_column(Oid relid, const char *name, const Oid *types, bool must_exist)
{
	AttrNumber	att = get_attnum(relid, name);
	Oid			type;

	if (att == InvalidAttrNumber)
	{
		if (must_exist)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" does not exist",
							name, get_rel_name(relid))));
		return;
	}
	type = get_atttype(relid, att);
	for (int i = 0; types[i] != InvalidOid; i++)
		if (type == types[i])
			return;
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column \"%s\" of table \"%s\" has type %s, which dlsm cannot use",
					name, get_rel_name(relid), format_type_be(type)),
			 errhint("dlsm needs %s there.", format_type_be(types[0]))));
}

/* Has column name of relid a default or an identity? */
static bool
has_default(Oid relid, const char *name)
{
	HeapTuple	tuple = SearchSysCacheAttName(relid, name);
	bool		result;

	if (!HeapTupleIsValid(tuple))
		return false;
	result = ((Form_pg_attribute) GETSTRUCT(tuple))->atthasdef ||
		((Form_pg_attribute) GETSTRUCT(tuple))->attidentity != '\0';
	ReleaseSysCache(tuple);
	return result;
}

/* Does an index of relid have column attno as its first key? */
static bool
has_index_led_by(Oid relid, AttrNumber attno)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID,
											ObjectIdGetDatum(lfirst_oid(lc)));

		if (!HeapTupleIsValid(tuple))
			continue;
		found |= ((Form_pg_index) GETSTRUCT(tuple))->indkey.values[0] == attno;
		ReleaseSysCache(tuple);
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Adopt the existing table relid as a queue, through the column map
 * columns (id, status, kind, entity, process id): add the columns, indexes
 * and trigger dlsm needs and the table lacks, and register it.  The caller
 * must own the table and holds an SPI connection.
 */
void
dlsm_queue_register(Oid relid, const char *const *columns,
					const char *channel, int max_attempts,
					Interval *retention)
{
	static const Oid ints[] = {INT8OID, INT4OID, INT2OID, InvalidOid};
	static const Oid texts[] = {TEXTOID, VARCHAROID, InvalidOid};
	static const Oid pids[] = {UUIDOID, TEXTOID, VARCHAROID, InvalidOid};
	static const struct
	{
		const char *name;
		Oid			type;
	}			own[] = {
		{"payload", JSONBOID}, {"fence", INT8OID}, {"attempts", INT4OID},
		{"run_at", TIMESTAMPTZOID}, {"enqueued_at", TIMESTAMPTZOID},
		{"claimed_at", TIMESTAMPTZOID}, {"lease_until", TIMESTAMPTZOID},
		{"settled_at", TIMESTAMPTZOID}, {"detail", TEXTOID}
	};
	const char *labels[4] = {"dlsm_ready", "dlsm_open", "dlsm_held",
	"dlsm_creates"};
	const char *quoted[5];
	const char *index_names[4];
	Oid			nspid = get_rel_namespace(relid);
	char	   *relname;

	if (get_rel_relkind(relid) != RELKIND_RELATION &&
		get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(relid))));
	if (!pg_class_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(relid));
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a dlsm queue cannot be a temporary table")));
	if (find_queue(relid) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is a dlsm queue already",
						get_rel_name(relid))));

	check_column(relid, columns[0], ints, true);
	if (!has_default(relid, columns[0]))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("column \"%s\" of table \"%s\" has no default",
						columns[0], get_rel_name(relid)),
				 errhint("The id column of a queue needs an identity or a default from a sequence.")));
	check_column(relid, columns[1], texts, true);
	check_column(relid, columns[2], texts, true);
	check_column(relid, columns[3], texts, true);
	check_column(relid, columns[4], pids, true);
	for (int i = 0; i < lengthof(own); i++)
	{
		Oid			types[2] = {own[i].type, InvalidOid};

		check_column(relid, own[i].name, types, false);
	}

	relname = quote_qualified_identifier(get_namespace_name(nspid),
										 get_rel_name(relid));
	for (int i = 0; i < 5; i++)
		quoted[i] = quote_identifier(columns[i]);
	for (int i = 0; i < lengthof(labels); i++)
		index_names[i] = quote_identifier(ChooseRelationName(get_rel_name(relid),
															 NULL, labels[i],
															 nspid, false));
	dlsm_plan_adopt_table(relname, quoted, index_names,
						  !has_index_led_by(relid, get_attnum(relid, columns[3])));
	register_queue(relid, columns, channel ? channel : get_rel_name(relid),
				   max_attempts, retention);
}
