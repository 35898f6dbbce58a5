/*-------------------------------------------------------------------------
 *
 * queue.c
 *	  The registry of queues and the per-backend cache of their descriptors.
 *
 * A queue is a table with a row in the extension's dlsm_queues table.  Each
 * backend keeps a DlsmQueue per queue it uses, with the registry row and
 * the statements prepared for it (plans.c), in a hash keyed by the table's
 * OID.  The rule for holding a descriptor is stated in queue.h: a pinned
 * descriptor never changes and never goes away.  Any relcache invalidation
 * of the table (ALTER, GRANT, DROP, and the one dlsm sends whenever it
 * changes the registry), of dlsm's own tables, a renamed schema or a full
 * reset only marks descriptors stale; the next dlsm_queue_open reads the
 * registry again and, when nothing changed and nobody holds the old one,
 * keeps it and its plans.  A stale descriptor is freed, plans and all,
 * once its last pin is gone; pins left at the end of a transaction (an
 * error between open and close) are dropped then.
 *
 * The registry is read and written as the extension's owner (plans.c),
 * after the caller's right to the table has been checked here, so that
 * nobody needs privileges on dlsm's schema to use a queue.  A queue's
 * handler is checked and written by queuehandler.c, through
 * dlsm_queue_write_registry.
 *
 * Calls plans.c, extension.c (the registry's own tables), names.c,
 * duration.c, cache.h and pool.c, to ask the database's worker to read the
 * registry again when a change of it commits.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/queue.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/resowner.h"
#include "utils/syscache.h"

#include "cache.h"
#include "compat.h"
#include "duration.h"
#include "extension.h"
#include "names.h"
#include "pool.h"
#include "queue.h"

/* The hash entry of a queue: its current descriptor. */
typedef struct QueueEntry
{
	Oid			relid;			/* hash key */
	DlsmQueue  *current;		/* NULL: look it up */
	bool		recheck;		/* read the registry again at the next open */
} QueueEntry;

/* A pin, held by the (sub)transaction that took it. */
typedef struct QueuePin
{
	DlsmQueue  *queue;
	SubTransactionId subid;
} QueuePin;

static HTAB *queue_cache = NULL;
static MemoryContext cache_context = NULL;
static List *descriptors = NIL; /* every live DlsmQueue, current or not */
static List *pins = NIL;		/* of QueuePin, newest last */
static uint64 invalidations = 0;	/* invalidations that reached a queue */
static uint64 open_clock = 0;	/* opens so far, for last_opened */

/*
 * Descriptors nobody holds that a backend keeps at a transaction's end, the
 * most recently opened: each holds its queue's plans (some 200 kB), and the
 * worker opens every queue of its database at each pass, so that without
 * a bound any role making queues would grow it without end.
 */
#define KEPT_DESCRIPTORS 32

static bool shape_problem(Oid relid, const char *const *columns,
						  const char *group, const char *dedup,
						  DlsmShapeProblem *problem);
static void report_problem(Oid relid, const DlsmShapeProblem *problem);

/*
 * The columns of a queue dlsm created, by role; also the names of
 * dlsm_register_queue's arguments that map them.
 */
const char *const dlsm_queue_columns[DLSM_NUM_COLUMNS] = {
	[DLSM_COL_ID] = "id",
	[DLSM_COL_STATUS] = "status",
	[DLSM_COL_KIND] = "kind",
	[DLSM_COL_ENTITY] = "entity",
	[DLSM_COL_PROCESS_ID] = "process_id",
};

/* Free a descriptor nobody holds, and forget it. */
static void
free_descriptor(DlsmQueue *queue)
{
	QueueEntry *entry = hash_search(queue_cache, &queue->relid, HASH_FIND,
									NULL);

	Assert(queue->pins == 0);
	if (entry != NULL && entry->current == queue)
		entry->current = NULL;
	descriptors = list_delete_ptr(descriptors, queue);
	dlsm_plan_free(&queue->plans);
	MemoryContextDelete(queue->context);
}

/* Mark a descriptor stale; free it when nobody holds it. */
static void
retire(DlsmQueue *queue)
{
	queue->stale = true;
	if (queue->pins == 0)
		free_descriptor(queue);
}

static void
invalidate_all(void)
{
	ListCell   *lc;

	invalidations++;
	foreach(lc, descriptors)
		((DlsmQueue *) lfirst(lc))->stale = true;
}

/*
 * Invalidation callbacks only mark: they run inside catalog access, where
 * freeing plans or reading the registry is not allowed.
 */
static void
queue_relcache_invalidate(Datum arg, Oid relid)
{
	QueueEntry *entry;

	if (queue_cache == NULL)
		return;
	if (relid == InvalidOid || dlsm_extension_is_registry(relid))
	{
		invalidate_all();
		return;
	}
	entry = hash_search(queue_cache, &relid, HASH_FIND, NULL);
	if (entry != NULL)
		invalidations++;		/* its descriptor may be being read */
	if (entry != NULL && entry->current != NULL)
		entry->current->stale = true;
}

/* A schema was renamed: the qualified names of queues may have changed. */
static void
queue_namespace_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	invalidate_all();
}

/* Drop the pins for which drop(pin, subid) says so; free what is stale. */
static void
drop_pins(bool (*drop) (QueuePin *pin, SubTransactionId subid),
		  SubTransactionId subid)
{
	List	   *stale = NIL;
	ListCell   *lc;

	foreach(lc, pins)
	{
		QueuePin   *pin = lfirst(lc);

		if (!drop(pin, subid))
			continue;
		if (--pin->queue->pins == 0 && pin->queue->stale)
			stale = lappend(stale, pin->queue);
		pfree(pin);
		pins = foreach_delete_current(pins, lc);
	}
	foreach(lc, stale)
		free_descriptor(lfirst(lc));
	list_free(stale);
}

static bool
any_pin(QueuePin *pin, SubTransactionId subid)
{
	return true;
}

static bool
pin_of(QueuePin *pin, SubTransactionId subid)
{
	return pin->subid == subid;
}

/* This transaction wrote the registry (write_registry). */
static bool registry_written = false;

/*
 * The transaction that wrote the registry committed: once every backend
 * was told to drop its descriptors (after the invalidations), ask the
 * worker to read the registry again.  (A prepared one asks at COMMIT
 * PREPARED: hooks.c.)
 */
static void
registry_release(ResourceReleasePhase phase, bool isCommit, bool isTopLevel,
				 void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	if (registry_written && isCommit)
		dlsm_pool_worker_request(MyDatabaseId, DLSM_REQUEST_REGISTRY);
	registry_written = false;
}

/*
 * Free the least recently opened descriptors nobody holds beyond
 * KEPT_DESCRIPTORS; the next open of their queue reads the registry and
 * prepares its plans again.
 */
static void
trim_descriptors(void)
{
	int			n = list_length(descriptors);

	while (n > KEPT_DESCRIPTORS)
	{
		DlsmQueue  *oldest = NULL;
		ListCell   *lc;

		foreach(lc, descriptors)
		{
			DlsmQueue  *queue = lfirst(lc);

			if (queue->pins == 0 &&
				(oldest == NULL || queue->last_opened < oldest->last_opened))
				oldest = queue;
		}
		if (oldest == NULL)
			break;
		free_descriptor(oldest);
		n--;
	}
}

/*
 * The transaction ended: drop the pins left (an error between open and
 * close), free what is stale, and keep at most KEPT_DESCRIPTORS others.
 */
static void
end_of_transaction(XactEvent event, void *arg)
{
	List	   *stale = NIL;
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	/* prepared: the worker is asked at COMMIT PREPARED (hooks.c) */
	if (event == XACT_EVENT_PREPARE)
		registry_written = false;
	if (pins != NIL && event == XACT_EVENT_COMMIT)
		elog(WARNING, "dlsm queue reference leak: %d pins left",
			 list_length(pins));
	drop_pins(any_pin, InvalidSubTransactionId);
	foreach(lc, descriptors)
	{
		if (((DlsmQueue *) lfirst(lc))->stale)
			stale = lappend(stale, lfirst(lc));
	}
	foreach(lc, stale)
		free_descriptor(lfirst(lc));
	list_free(stale);
	trim_descriptors();
}

/*
 * A subtransaction ended: its pins pass to its parent when it commits, and
 * are dropped when it aborts.
 */
static void
end_of_subtransaction(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
		drop_pins(pin_of, mySubid);
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, pins)
		{
			if (((QueuePin *) lfirst(lc))->subid == mySubid)
				((QueuePin *) lfirst(lc))->subid = parentSubid;
		}
	}
}

/* Register the callbacks; called once from _PG_init. */
void
dlsm_queue_init(void)
{
	CacheRegisterRelcacheCallback(queue_relcache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, queue_namespace_invalidate, (Datum) 0);
	RegisterXactCallback(end_of_transaction, NULL);
	RegisterResourceReleaseCallback(registry_release, NULL);
	RegisterSubXactCallback(end_of_subtransaction, NULL);
}

/* ---------------------------------------------------------------------
 * Reading the registry
 * ---------------------------------------------------------------------
 */

/* A name column of the registry row, quoted, in the current context. */
static char *
column_name(int attno)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, attno, &isnull);

	return pstrdup(quote_identifier(NameStr(*DatumGetName(d))));
}

/* A name column of the registry row as it is, or NULL, in the current context. */
static char *
raw_column_name(int attno)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, attno, &isnull);

	return isnull ? NULL : pstrdup(NameStr(*DatumGetName(d)));
}

/* Is the column named in registry column attno of type uuid in relid? */
static bool
column_is_uuid(Oid relid, int attno)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, attno, &isnull);
	AttrNumber	att = get_attnum(relid, NameStr(*DatumGetName(d)));

	return att != InvalidAttrNumber && get_atttype(relid, att) == UUIDOID;
}

/*
 * An interval of the registry row in milliseconds, 0 when NULL; cut to
 * under 100 years (duration.c).
 */
static int64
interval_ms(int attno)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, attno, &isnull);

	if (isnull)
		return 0;
	return dlsm_duration_stored_usecs(DatumGetIntervalP(d)) / 1000;
}

/*
 * The name of relid's unique index of creates, or NULL: unique, with a
 * predicate, on entity (a quoted column name) alone.
 */
static char *
creates_index(Oid relid, const char *entity)
{
	Relation	rel = table_open(relid, RowExclusiveLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	char	   *name = NULL;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID,
											ObjectIdGetDatum(lfirst_oid(lc)));
		Form_pg_index index;

		if (!HeapTupleIsValid(tuple))
			continue;
		index = (Form_pg_index) GETSTRUCT(tuple);
		if (index->indisunique && index->indnkeyatts == 1 &&
			index->indkey.values[0] > 0 &&
			!heap_attisnull(tuple, Anum_pg_index_indpred, NULL) &&
			strcmp(quote_identifier(get_attname(relid, index->indkey.values[0],
												false)), entity) == 0)
			name = get_rel_name(index->indexrelid);
		ReleaseSysCache(tuple);
		if (name != NULL)
			break;
	}
	list_free(indexes);
	table_close(rel, NoLock);	/* the insert keeps it */
	return name;
}

/*
 * The name of queue's unique index of creates, or NULL: a unique index on
 * one column with a predicate, as dlsm_create_queue makes (an adopted
 * table's index of creates is not unique).  For dlsm_enqueue's error when
 * an entity's second create breaks it; found once per descriptor, before
 * an insert of a create, under the insert's own lock.
 */
const char *
dlsm_queue_creates_index(DlsmQueue *queue)
{
	MemoryContext old;

	if (!queue->creates_index_known)
	{
		old = MemoryContextSwitchTo(queue->context);
		queue->creates_index = creates_index(queue->relid,
											 queue->plans.names.entity);
		MemoryContextSwitchTo(old);
		queue->creates_index_known = true;
	}
	return queue->creates_index;
}

/*
 * Does the table still fit dlsm, as its registry row describes it?  Noted
 * in queue->problem, and raised by dlsm_queue_open (queue.h).
 */
static void
find_shape_problem(DlsmQueue *queue)
{
	static const int attnos[DLSM_NUM_COLUMNS] = {
		[DLSM_COL_ID] = A_LOOKUP_ID_COLUMN,
		[DLSM_COL_STATUS] = A_LOOKUP_STATUS_COLUMN,
		[DLSM_COL_KIND] = A_LOOKUP_KIND_COLUMN,
		[DLSM_COL_ENTITY] = A_LOOKUP_ENTITY_COLUMN,
		[DLSM_COL_PROCESS_ID] = A_LOOKUP_PROCESS_ID_COLUMN,
	};
	const char *columns[DLSM_NUM_COLUMNS];

	for (int i = 0; i < DLSM_NUM_COLUMNS; i++)
		columns[i] = raw_column_name(attnos[i]);
	queue->misfit = shape_problem(queue->relid, columns,
								  raw_column_name(A_LOOKUP_GROUP_COLUMN),
								  raw_column_name(A_LOOKUP_DEDUP_COLUMN),
								  &queue->problem);
}

/* Fill queue from the registry row just read, in its own memory context. */
static void
fill_from_row(DlsmQueue *queue, Form_pg_class form)
{
	DlsmQueueNames *names = &queue->plans.names;
	bool		isnull;
	Datum		d;

	queue->plans.relid = queue->relid;
	names->relname = quote_qualified_identifier(dlsm_schema_name(form->relnamespace),
												NameStr(form->relname));
	names->id = column_name(A_LOOKUP_ID_COLUMN);
	names->status = column_name(A_LOOKUP_STATUS_COLUMN);
	names->kind = column_name(A_LOOKUP_KIND_COLUMN);
	names->entity = column_name(A_LOOKUP_ENTITY_COLUMN);
	names->process_id = column_name(A_LOOKUP_PROCESS_ID_COLUMN);
	names->group = NULL;
	(void) dlsm_plan_value(0, A_LOOKUP_GROUP_COLUMN, &isnull);
	if (!isnull)
		names->group = column_name(A_LOOKUP_GROUP_COLUMN);
	names->pid_is_text = !column_is_uuid(queue->relid,
										 A_LOOKUP_PROCESS_ID_COLUMN);
	(void) dlsm_plan_value(0, A_LOOKUP_DEDUP_COLUMN, &isnull);
	names->dedup = isnull ? NULL : column_name(A_LOOKUP_DEDUP_COLUMN);
	queue->owner = form->relowner;
	queue->channel = dlsm_plan_text(0, A_LOOKUP_CHANNEL);
	queue->max_attempts = DatumGetInt32(dlsm_plan_value(0, A_LOOKUP_MAX_ATTEMPTS,
														&isnull));
	d = dlsm_plan_value(0, A_LOOKUP_RETENTION, &isnull);
	queue->has_retention = !isnull;
	if (!isnull)
		queue->retention = *DatumGetIntervalP(d);
	queue->handler = dlsm_plan_text(0, A_LOOKUP_HANDLER);
	queue->handler_timeout_ms = (int) Min(interval_ms(A_LOOKUP_HANDLER_TIMEOUT),
										  INT_MAX);
	queue->row_security = form->relrowsecurity;
	queue->updates_wait_for_create =
		DatumGetBool(dlsm_plan_value(0, A_LOOKUP_UPDATES_WAIT_FOR_CREATE,
									 &isnull));
	find_shape_problem(queue);
}

/* Do two descriptors say the same? */
static bool
same_description(DlsmQueue *a, DlsmQueue *b)
{
	DlsmQueueNames *x = &a->plans.names;
	DlsmQueueNames *y = &b->plans.names;

	return strcmp(x->relname, y->relname) == 0 &&
		strcmp(x->id, y->id) == 0 && strcmp(x->status, y->status) == 0 &&
		strcmp(x->kind, y->kind) == 0 && strcmp(x->entity, y->entity) == 0 &&
		strcmp(x->process_id, y->process_id) == 0 &&
		((x->group == NULL && y->group == NULL) ||
		 (x->group != NULL && y->group != NULL &&
		  strcmp(x->group, y->group) == 0)) &&

		x->pid_is_text == y->pid_is_text &&
		((x->dedup == NULL && y->dedup == NULL) ||
		 (x->dedup != NULL && y->dedup != NULL &&
		  strcmp(x->dedup, y->dedup) == 0)) &&
		a->owner == b->owner && strcmp(a->channel, b->channel) == 0 &&
		a->max_attempts == b->max_attempts &&
		a->has_retention == b->has_retention &&
		(!a->has_retention ||
		 memcmp(&a->retention, &b->retention, sizeof(Interval)) == 0) &&
		((a->handler == NULL && b->handler == NULL) ||
		 (a->handler != NULL && b->handler != NULL &&
		  strcmp(a->handler, b->handler) == 0)) &&
		a->handler_timeout_ms == b->handler_timeout_ms &&
		a->row_security == b->row_security &&
		a->updates_wait_for_create == b->updates_wait_for_create;
}

/*
 * A new descriptor of relid read from the registry, or NULL when relid is
 * not registered.  The caller holds an SPI connection.
 */
static DlsmQueue *
load(Oid relid)
{
	Datum		values[N_LOOKUP_PARAMS];
	HeapTuple	classtup;
	MemoryContext context;
	MemoryContext old;
	DlsmQueue  *queue;

	values[P_LOOKUP_QUEUE] = ObjectIdGetDatum(relid);
	dlsm_plan_read_catalog(DLSM_C_LOOKUP, values, NULL, 1);
	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (SPI_processed == 0 || !HeapTupleIsValid(classtup))
	{
		if (HeapTupleIsValid(classtup))
			ReleaseSysCache(classtup);
		return NULL;
	}
	/* made under the caller's context: an error while filling frees it */
	context = AllocSetContextCreate(CurrentMemoryContext, "dlsm queue",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(context);
	queue = palloc0(sizeof(DlsmQueue));
	queue->relid = relid;
	queue->context = context;
	fill_from_row(queue, (Form_pg_class) GETSTRUCT(classtup));
	MemoryContextSwitchTo(old);
	MemoryContextSetParent(context, cache_context);
	ReleaseSysCache(classtup);
	SPI_freetuptable(SPI_tuptable);
	return queue;
}

/*
 * Make entry's descriptor current: read the registry again; keep the old
 * descriptor (and its plans) when nothing changed and nobody holds it.
 *
 * NB: load reads the registry under one snapshot, and the catalog lookups
 * after it may take locks, which deliver the invalidations that came
 * meanwhile: one of a change the snapshot did not see marks no descriptor
 * built from it (none is current yet, or the old one is).  So when any
 * came during load, the entry is to be checked again: this call uses what
 * its snapshot saw, and the next open reads the registry again (keeping
 * the descriptor and its plans if the registry still says the same).
 */
static DlsmQueue *
queue_refresh(QueueEntry *entry)
{
	DlsmQueue  *old = entry->current;
	uint64		seen = invalidations;
	DlsmQueue  *fresh = load(entry->relid);

	entry->recheck = invalidations != seen;
	if (old != NULL && fresh != NULL && old->pins == 0 &&
		same_description(old, fresh))
	{
		/* the registry says the same; the table may have changed */
		old->misfit = fresh->misfit;
		old->problem = fresh->problem;
		MemoryContextDelete(fresh->context);
		old->stale = false;
		old->limits_known = false;	/* grouplimit.c reads them again */
		old->user_code_known = false;	/* pending.c looks again */
		return old;
	}
	if (old != NULL)
		retire(old);
	entry->current = fresh;
	if (fresh != NULL)
	{
		MemoryContext context = MemoryContextSwitchTo(cache_context);

		descriptors = lappend(descriptors, fresh);
		MemoryContextSwitchTo(context);
	}
	return fresh;
}

/*
 * Pin and return the descriptor of queue relid.  When relid is not a
 * queue: NULL with DLSM_QUEUE_MISSING_OK, else error 42704.  A queue with
 * row-level security enabled is refused (0A000) unless
 * DLSM_QUEUE_ANY_SECURITY.  With DLSM_QUEUE_WRITE the table is locked
 * ROW EXCLUSIVE first, before any statement of the caller reads it: a
 * statement that read it under a weaker lock (a scan, a claim's FOR
 * UPDATE, the planning of a WITH query) and wrote it afterwards would
 * deadlock against DDL waiting in between; without it, ACCESS SHARE.  A
 * table that no longer fits dlsm (a column's type changed since it was
 * registered, say: queue.h's DLSM_SHAPE_*) is refused with the error its
 * registration would get, unless DLSM_QUEUE_ANY_SHAPE, for callers that
 * only read the descriptor and run no statement on the table: they leave
 * it unlocked, but for DLSM_QUEUE_WRITE.  The caller holds an SPI
 * connection, and closes the descriptor with dlsm_queue_close.
 */
DlsmQueue *
dlsm_queue_open(Oid relid, int flags)
{
	QueueEntry *entry;
	DlsmQueue  *queue;
	QueuePin   *pin;
	MemoryContext oldcontext;
	bool		found;

	if (queue_cache == NULL)
	{
		cache_context = AllocSetContextCreate(TopMemoryContext, "dlsm queues",
											  ALLOCSET_SMALL_SIZES);
		queue_cache = dlsm_cache_create("dlsm queues", sizeof(QueueEntry),
										cache_context);
	}
	(void) dlsm_extension_schema(); /* follows a re-created extension */

	/*
	 * Changes committed since this transaction last took a lock (a limit set,
	 * the registry written) hold from their commit on: the queue's locks may
	 * be held already, and take none that would deliver them.
	 */
	AcceptInvalidationMessages();
	entry = hash_search(queue_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->current = NULL;
		entry->recheck = false;
	}
	for (;;)
	{
		queue = entry->current;
		if (queue == NULL || queue->stale || entry->recheck)
			queue = queue_refresh(entry);
		if (queue == NULL)
		{
			hash_search(queue_cache, &relid, HASH_REMOVE, NULL);
			if (flags & DLSM_QUEUE_MISSING_OK)
				return NULL;
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("table \"%s\" is not a dlsm queue",
							dlsm_rel_label(relid)),
					 errhint("Create a queue with dlsm_create_queue().")));
		}
		if (queue->row_security && !(flags & DLSM_QUEUE_ANY_SECURITY))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("dlsm queue \"%s\" has row-level security enabled",
							dlsm_rel_label(relid)),
					 errdetail("dlsm keeps one unit per entity in progress only when it sees every row of the queue."),
					 errhint("Disable row-level security on the table.")));
		if (flags & DLSM_QUEUE_ANY_SHAPE)
		{
			if (flags & DLSM_QUEUE_WRITE)
				LockRelationOid(relid, RowExclusiveLock);
			break;
		}

		/*
		 * The table's shape holds only while it is locked: an ALTER TABLE
		 * that committed before the lock was granted has sent its
		 * invalidation by then, and none can commit until this transaction
		 * ends.  When one came, look again.
		 */
		LockRelationOid(relid, (flags & DLSM_QUEUE_WRITE) ?
						RowExclusiveLock : AccessShareLock);
		if (queue->stale || entry->recheck)
			continue;
		if (queue->misfit)
			report_problem(relid, &queue->problem);
		break;
	}
	pin = MemoryContextAlloc(cache_context, sizeof(QueuePin));
	pin->queue = queue;
	pin->subid = GetCurrentSubTransactionId();
	oldcontext = MemoryContextSwitchTo(cache_context);
	pins = lappend(pins, pin);
	MemoryContextSwitchTo(oldcontext);
	queue->pins++;
	queue->last_opened = ++open_clock;
	return queue;
}

/* Unpin a descriptor dlsm_queue_open returned. */
void
dlsm_queue_close(DlsmQueue *queue)
{
	/* the newest pin of the queue: it belongs to the innermost subtransaction */
	for (int i = list_length(pins) - 1; i >= 0; i--)
	{
		QueuePin   *pin = list_nth(pins, i);

		if (pin->queue != queue)
			continue;
		pfree(pin);
		pins = list_delete_nth_cell(pins, i);
		break;
	}
	Assert(queue->pins > 0);
	if (--queue->pins == 0 && queue->stale)
		free_descriptor(queue);
}

/*
 * Refuse to unregister relid while this backend works on it: an outer dlsm
 * call holds its descriptor.
 */
void
dlsm_queue_check_unused(Oid relid)
{
	ListCell   *lc;

	foreach(lc, descriptors)
	{
		DlsmQueue  *queue = lfirst(lc);

		if (queue->relid == relid && queue->pins > 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("cannot unregister queue \"%s\" because it is being used by active queries in this session",
							dlsm_rel_label(relid))));
	}
}

/* ---------------------------------------------------------------------
 * Privileges
 * ---------------------------------------------------------------------
 */

/* The caller must own table relid (42501 otherwise). */
void
dlsm_queue_check_owner(Oid relid)
{
	if (!DLSM_CLASS_OWNERCHECK(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, dlsm_rel_label(relid));
}

/* The caller must hold every privilege in modes on table relid (42501). */
void
dlsm_queue_check_privileges(Oid relid, AclMode modes)
{
	/* pg_class_aclcheck passes when any bit is held: ask for each */
	for (AclMode mode = 1; mode != 0 && mode <= modes; mode <<= 1)
	{
		if ((modes & mode) &&
			pg_class_aclcheck(relid, GetUserId(), mode) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, dlsm_rel_label(relid));
	}
}

/* ---------------------------------------------------------------------
 * Writing the registry
 * ---------------------------------------------------------------------
 */

/*
 * Run one registry statement as the extension's owner; the worker reads
 * the registry again when the transaction commits, and other backends
 * drop their descriptor of relid.
 */
void
dlsm_queue_write_registry(DlsmCatalogQueryId query, Oid relid,
						  Datum *values, const char *nulls)
{
	(void) dlsm_plan_run_catalog(query, values, nulls, 0);
	registry_written = true;
	CacheInvalidateRelcacheByRelid(relid);
}

/*
 * Write a queue's registry row; columns name the mapped columns, dedup the
 * dedup key column (or NULL).
 */
static void
register_queue(Oid relid, const char *const *columns, const char *dedup,
			   const char *channel, DlsmQueueOptions *opts)
{
	Datum		values[N_REGISTER_PARAMS];
	char		nulls[N_REGISTER_PARAMS];
	static const int column_params[DLSM_NUM_COLUMNS] = {
		[DLSM_COL_ID] = P_REGISTER_ID_COLUMN,
		[DLSM_COL_STATUS] = P_REGISTER_STATUS_COLUMN,
		[DLSM_COL_KIND] = P_REGISTER_KIND_COLUMN,
		[DLSM_COL_ENTITY] = P_REGISTER_ENTITY_COLUMN,
		[DLSM_COL_PROCESS_ID] = P_REGISTER_PROCESS_ID_COLUMN,
	};

	memset(nulls, ' ', sizeof(nulls));
	values[P_REGISTER_QUEUE] = ObjectIdGetDatum(relid);
	values[P_REGISTER_CHANNEL] = CStringGetTextDatum(opts->channel ?
													 opts->channel : channel);
	values[P_REGISTER_MAX_ATTEMPTS] = Int32GetDatum(opts->max_attempts);
	values[P_REGISTER_RETENTION] = PointerGetDatum(opts->retention);
	nulls[P_REGISTER_RETENTION] = opts->retention ? ' ' : 'n';
	values[P_REGISTER_BY] = ObjectIdGetDatum(GetUserId());
	for (int i = 0; i < DLSM_NUM_COLUMNS; i++)
		values[column_params[i]] = DirectFunctionCall1(namein,
													   CStringGetDatum(columns[i]));
	values[P_REGISTER_DEDUP_COLUMN] = dedup == NULL ? (Datum) 0 :
		DirectFunctionCall1(namein, CStringGetDatum(dedup));
	nulls[P_REGISTER_DEDUP_COLUMN] = dedup == NULL ? 'n' : ' ';
	dlsm_queue_write_registry(DLSM_C_REGISTER, relid, values, nulls);
	if (opts->group_column != NULL)
	{
		values[P_GROUP_COLUMN_QUEUE] = ObjectIdGetDatum(relid);
		values[P_GROUP_COLUMN_NAME] =
			DirectFunctionCall1(namein, CStringGetDatum(opts->group_column));
		(void) dlsm_plan_run_catalog(DLSM_C_GROUP_COLUMN, values, NULL, 0);
	}
}

/* Write a queue's updates_wait_for_create, unless opts leaves it as is. */
static void
set_wait_for_create(Oid relid, DlsmQueueOptions *opts)
{
	Datum		values[N_SET_WAIT_FOR_CREATE_PARAMS];

	if (opts->updates_wait_for_create < 0)
		return;
	values[P_SET_WAIT_FOR_CREATE_QUEUE] = ObjectIdGetDatum(relid);
	values[P_SET_WAIT_FOR_CREATE_ON] =
		BoolGetDatum(opts->updates_wait_for_create > 0);
	dlsm_queue_write_registry(DLSM_C_SET_WAIT_FOR_CREATE, relid, values, NULL);
}

/* Quoted names of a queue's indexes, chosen free in nspid. */
static void
choose_index_names(const char *relname, Oid nspid, const char *prefix,
				   const char **index_names)
{
	static const char *const labels[DLSM_NUM_INDEXES] = {
		[DLSM_INDEX_READY] = "ready",
		[DLSM_INDEX_CREATES] = "creates",
		[DLSM_INDEX_OPEN] = "open",
		[DLSM_INDEX_HELD] = "held",
		[DLSM_INDEX_DEDUP] = "dedup",
	};

	for (int i = 0; i < DLSM_NUM_INDEXES; i++)
		index_names[i] = quote_identifier(ChooseRelationName(relname, NULL,
															 psprintf("%s%s", prefix, labels[i]),
															 nspid, false));
}

/*
 * Create the queue table "name" (possibly schema-qualified) as the caller,
 * and register it.  The caller holds an SPI connection.
 */
Oid
dlsm_queue_create(const char *name, DlsmQueueOptions *opts)
{
	RangeVar   *rv;
	Oid			nspid;
	const char *index_names[DLSM_NUM_INDEXES];
	Oid			relid;

	rv = makeRangeVarFromNameList(DLSM_QUALIFIED_NAME_LIST(name));
	nspid = RangeVarGetCreationNamespace(rv);
	if (isAnyTempNamespace(nspid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a dlsm queue cannot be a temporary table")));
	choose_index_names(rv->relname, nspid, "", index_names);
	dlsm_plan_create_table(quote_qualified_identifier(dlsm_schema_name(nspid),
													  rv->relname),
						   index_names);
	relid = get_relname_relid(rv->relname, nspid);
	if (!OidIsValid(relid))
		elog(ERROR, "queue table \"%s\" was not created", rv->relname);
	opts->group_column = "group_key";
	register_queue(relid, dlsm_queue_columns, DLSM_DEDUP_COLUMN, rv->relname,
				   opts);
	set_wait_for_create(relid, opts);
	return relid;
}

/*
 * What dlsm needs of a queue's columns, checked when a table is registered
 * and again whenever a descriptor of the queue is built, that is after any
 * ALTER TABLE of it: nothing read at registration is trusted.  A column
 * dlsm reads through a kept statement must still have a type it reads (a
 * plan made again after ALTER ... TYPE yields the new type, which the C
 * code would take for the old), and the columns dlsm compares as bytes
 * (the entity and group, whose locks are keyed on their text, and the
 * dedup key) a deterministic collation, under which equal means the same
 * bytes.
 */
static const Oid ints[] = {INT8OID, INT4OID, INT2OID, InvalidOid};
static const Oid texts[] = {TEXTOID, VARCHAROID, InvalidOid};
static const Oid pids[] = {UUIDOID, TEXTOID, VARCHAROID, InvalidOid};

/* Find the first problem of column name of relid; false when it has none. */
static bool
column_problem(Oid relid, const char *name, const Oid *types,
			   bool must_exist, bool bytes, DlsmShapeProblem *problem)
{
	HeapTuple	tuple = SearchSysCacheAttName(relid, name);
	Form_pg_attribute att;
	bool		fits = false;

	problem->kind = DLSM_SHAPE_FITS;
	strlcpy(problem->column, name, NAMEDATALEN);
	if (!HeapTupleIsValid(tuple))
	{
		if (must_exist)
			problem->kind = DLSM_SHAPE_MISSING;
		return must_exist;
	}
	att = (Form_pg_attribute) GETSTRUCT(tuple);
	problem->type = att->atttypid;
	problem->wanted = types[0];
	for (int i = 0; types[i] != InvalidOid; i++)
		fits |= att->atttypid == types[i];
	if (!fits)
		problem->kind = DLSM_SHAPE_TYPE;
	else if (bytes && OidIsValid(att->attcollation) &&
			 !get_collation_isdeterministic(att->attcollation))
		problem->kind = DLSM_SHAPE_COLLATION;
	ReleaseSysCache(tuple);
	return problem->kind != DLSM_SHAPE_FITS;
}

/* Raise the error of a problem column_problem or shape_problem found. */
static void
report_problem(Oid relid, const DlsmShapeProblem *problem)
{
	switch (problem->kind)
	{
		case DLSM_SHAPE_FITS:
			return;
		case DLSM_SHAPE_MISSING:
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" does not exist",
							problem->column, dlsm_rel_label(relid))));
			break;
		case DLSM_SHAPE_TYPE:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column \"%s\" of table \"%s\" has type %s, which dlsm cannot use",
							problem->column, dlsm_rel_label(relid),
							format_type_be(problem->type)),
					 errhint("dlsm needs %s there.",
							 format_type_be(problem->wanted))));
			break;
		case DLSM_SHAPE_COLLATION:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("column \"%s\" of table \"%s\" has a nondeterministic collation, which dlsm cannot use",
							problem->column, dlsm_rel_label(relid)),
					 errdetail("dlsm takes two values of this column for the same only when their bytes are equal."),
					 errhint("Give the column a deterministic collation, such as \"C\".")));
			break;
		case DLSM_SHAPE_NO_DEFAULT:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("column \"%s\" of table \"%s\" has no default",
							problem->column, dlsm_rel_label(relid)),
					 errhint("The id column of a queue needs an identity or a default from a sequence.")));
			break;
		case DLSM_SHAPE_NOT_TABLE:
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not a table", dlsm_rel_label(relid))));
			break;
	}
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

/*
 * The first way in which table relid does not fit dlsm: columns name the
 * mapped columns (DLSM_COL_*), group and dedup the group and dedup key
 * columns (or NULL).  False when it fits.
 */
static bool
shape_problem(Oid relid, const char *const *columns, const char *group,
			  const char *dedup, DlsmShapeProblem *problem)
{
	static const struct
	{
		const char *name;
		Oid			types[2];
	}			own[] = {
		{"payload", {JSONBOID}}, {"fence", {INT8OID}},
		{"attempts", {INT4OID}}, {"run_at", {TIMESTAMPTZOID}},
		{"enqueued_at", {TIMESTAMPTZOID}}, {"claimed_at", {TIMESTAMPTZOID}},
		{"lease_until", {TIMESTAMPTZOID}}, {"settled_at", {TIMESTAMPTZOID}},
		{"detail", {TEXTOID}}
	};
	char		relkind = get_rel_relkind(relid);

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
	{
		problem->kind = DLSM_SHAPE_NOT_TABLE;
		return true;
	}
	if (column_problem(relid, columns[DLSM_COL_ID], ints, true, false, problem))
		return true;
	if (!has_default(relid, columns[DLSM_COL_ID]))
	{
		problem->kind = DLSM_SHAPE_NO_DEFAULT;
		return true;
	}
	if (column_problem(relid, columns[DLSM_COL_STATUS], texts, true, false,
					   problem) ||
		column_problem(relid, columns[DLSM_COL_KIND], texts, true, false,
					   problem) ||
		column_problem(relid, columns[DLSM_COL_ENTITY], texts, true, true,
					   problem) ||
		column_problem(relid, columns[DLSM_COL_PROCESS_ID], pids, true, false,
					   problem) ||
		(group != NULL &&
		 column_problem(relid, group, texts, true, true, problem)) ||
		(dedup != NULL &&
		 column_problem(relid, dedup, texts, true, true, problem)))
		return true;
	for (int i = 0; i < lengthof(own); i++)
		if (column_problem(relid, own[i].name, own[i].types, false, false,
						   problem))
			return true;
	return false;
}

/* Check the columns of a table to adopt: the mapped ones and dlsm's own. */
static void
check_adopted_columns(Oid relid, const char *const *columns,
					  const char *group_column, const char *dedup)
{
	DlsmShapeProblem problem;

	if (shape_problem(relid, columns, group_column, dedup, &problem))
		report_problem(relid, &problem);
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

/* Has table relid row-level security enabled? */
static bool
has_row_security(Oid relid)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		result;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	result = ((Form_pg_class) GETSTRUCT(tuple))->relrowsecurity;
	ReleaseSysCache(tuple);
	return result;
}

/* Can relid become a queue at all?  Errors if not. */
static void
check_adoptable(Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", dlsm_rel_label(relid))));
	dlsm_queue_check_owner(relid);
	if (isAnyTempNamespace(get_rel_namespace(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a dlsm queue cannot be a temporary table")));
	if (dlsm_queue_open(relid, DLSM_QUEUE_MISSING_OK | DLSM_QUEUE_ANY_SECURITY |
						DLSM_QUEUE_ANY_SHAPE) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is a dlsm queue already",
						dlsm_rel_label(relid))));
	if (has_row_security(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table \"%s\" has row-level security enabled",
						dlsm_rel_label(relid)),
				 errdetail("dlsm keeps one unit per entity in progress only when it sees every row of the queue."),
				 errhint("Disable row-level security on the table.")));
}

/*
 * Adopt the existing table relid as a queue, through the column map
 * columns (DLSM_COL_*) and its dedup key column dedup (NULL: none): add
 * the columns, indexes and trigger dlsm needs and the table lacks, and
 * register it.  The caller must own the table and holds an SPI connection.
 */
void
dlsm_queue_register(Oid relid, const char *const *columns, const char *dedup,
					DlsmQueueOptions *opts)
{
	char	   *relname = dlsm_rel_name(relid);
	Oid			nspid = get_rel_namespace(relid);
	char	   *schema = dlsm_schema_name(nspid);
	DlsmQueueNames names;
	const char *index_names[DLSM_NUM_INDEXES];

	check_adoptable(relid);
	check_adopted_columns(relid, columns, opts->group_column, dedup);
	names.relname = quote_qualified_identifier(schema, relname);
	names.id = (char *) quote_identifier(columns[DLSM_COL_ID]);
	names.status = (char *) quote_identifier(columns[DLSM_COL_STATUS]);
	names.kind = (char *) quote_identifier(columns[DLSM_COL_KIND]);
	names.entity = (char *) quote_identifier(columns[DLSM_COL_ENTITY]);
	names.process_id = (char *) quote_identifier(columns[DLSM_COL_PROCESS_ID]);
	names.group = NULL;
	names.dedup = dedup == NULL ? NULL : (char *) quote_identifier(dedup);
	choose_index_names(relname, nspid, "dlsm_", index_names);
	dlsm_plan_adopt_table(&names, quote_identifier(schema), index_names,
						  !has_index_led_by(relid,
											get_attnum(relid, columns[DLSM_COL_ENTITY])));
	register_queue(relid, columns, dedup, relname, opts);
}

/*
 * Change a queue's settings (NULL or 0 in opts: unchanged); the caller
 * must own the table and holds an SPI connection.
 */
void
dlsm_queue_alter(Oid relid, DlsmQueueOptions *opts)
{
	Datum		values[N_ALTER_PARAMS];
	char		nulls[N_ALTER_PARAMS];
	DlsmQueue  *queue = dlsm_queue_open(relid, DLSM_QUEUE_ANY_SECURITY |
										DLSM_QUEUE_ANY_SHAPE);

	dlsm_queue_close(queue);
	dlsm_queue_check_owner(relid);
	memset(nulls, ' ', sizeof(nulls));
	values[P_ALTER_QUEUE] = ObjectIdGetDatum(relid);
	values[P_ALTER_CHANNEL] = opts->channel ?
		CStringGetTextDatum(opts->channel) : (Datum) 0;
	nulls[P_ALTER_CHANNEL] = opts->channel ? ' ' : 'n';
	values[P_ALTER_MAX_ATTEMPTS] = Int32GetDatum(opts->max_attempts);
	nulls[P_ALTER_MAX_ATTEMPTS] = opts->max_attempts > 0 ? ' ' : 'n';
	values[P_ALTER_RETENTION] = PointerGetDatum(opts->retention);
	nulls[P_ALTER_RETENTION] = opts->retention ? ' ' : 'n';
	values[P_ALTER_HANDLER_TIMEOUT] = PointerGetDatum(opts->handler_timeout);
	nulls[P_ALTER_HANDLER_TIMEOUT] = opts->handler_timeout ? ' ' : 'n';
	dlsm_queue_write_registry(DLSM_C_ALTER, relid, values, nulls);
	set_wait_for_create(relid, opts);
}

/* No table may capture into queue relid (2BP01 otherwise). */
static void
check_not_captured_into(Oid relid)
{
	Datum		values[N_CAPTURED_INTO_PARAMS];
	bool		isnull;
	Oid			source;

	values[P_CAPTURED_INTO_QUEUE] = ObjectIdGetDatum(relid);
	dlsm_plan_read_catalog(DLSM_C_CAPTURED_INTO, values, NULL, 1);
	source = DatumGetObjectId(dlsm_plan_one_value(A_CAPTURED_INTO_SOURCE,
												  &isnull));
	if (OidIsValid(source))
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot unregister queue \"%s\" because table \"%s\" is captured into it",
						dlsm_rel_label(relid), dlsm_rel_label(source)),
				 errhint("Remove the capture with dlsm_uncapture() first.")));
}

/*
 * Unregister a queue, and drop its table when drop_table; the caller must
 * own the table and holds an SPI connection.
 */
void
dlsm_queue_drop(Oid relid, bool drop_table)
{
	Datum		values[N_UNREGISTER_PARAMS];
	DlsmQueue  *queue = dlsm_queue_open(relid, DLSM_QUEUE_ANY_SECURITY |
										DLSM_QUEUE_ANY_SHAPE);
	char	   *relname = pstrdup(queue->plans.names.relname);

	dlsm_queue_close(queue);
	dlsm_queue_check_owner(relid);
	dlsm_queue_check_unused(relid);

	/*
	 * A capture into the queue takes ROW EXCLUSIVE on it until it commits
	 * (capture.c): wait for those in flight, so that the check below sees
	 * them, and keep new ones out until this transaction ends.
	 */
	LockRelationOid(relid, ShareRowExclusiveLock);
	check_not_captured_into(relid);
	values[P_UNREGISTER_QUEUE] = ObjectIdGetDatum(relid);
	dlsm_queue_write_registry(DLSM_C_UNREGISTER, relid, values, NULL);
	dlsm_plan_drop_table(relname, drop_table);
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

	dlsm_plan_read_catalog(DLSM_C_LIST, NULL, NULL, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(dlsm_plan_value(i, A_LIST_QUEUE,
															 &isnull));
		MemoryContext old = MemoryContextSwitchTo(caller);

		queues = lappend_oid(queues, relid);
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(SPI_tuptable);
	return queues;
}
