/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture: a row trigger that enqueues each change of a table.
 *
 * dlsm_capture attaches to a source table an AFTER INSERT OR UPDATE OR
 * DELETE row trigger and records the capture in dlsm_captures: the source
 * and the queue (regclass: they follow renames, and survive a dump and
 * restore as names), the trigger's name, the kind to enqueue, and the
 * names of the entity's columns and of the watched columns (names, not
 * attribute numbers, which a restore of a table with dropped columns
 * shifts).  The trigger's name is chosen free among the source's triggers
 * (and its partitions') and cut at a character boundary.  A temporary
 * table is refused: PostgreSQL drops it without sql_drop, and the event
 * trigger would never forget its capture.
 *
 * A partitioned source's row trigger is cloned by PostgreSQL onto every
 * partition, present and attached later, and dropped from a partition
 * detached.  A clone finds its capture through its parent trigger
 * (pg_trigger.tgparentid, up to the topmost), and enqueues the
 * partition's change as a change of the captured table, on its owner's
 * behalf.
 *
 * For each change the trigger enqueues, in the writer's own transaction (a
 * rolled back change leaves no request), one request whose entity is the
 * row's key and whose payload is {op, table, old, new}.  When watched
 * columns are given, an UPDATE changing none of them enqueues nothing; an
 * UPDATE that changes the entity enqueues the change for the new entity
 * and the old.  What the trigger reads of dlsm_captures is cached per
 * trigger, until the source table or dlsm's tables change.
 *
 * The request is inserted as the queue table's owner, once the source
 * table's current owner is found to hold INSERT on the queue: the queue's
 * triggers and defaults, its owner's code, never run as another role, and
 * writers of the source need no privilege on the queue.  A change that
 * cannot be captured (the capture or its queue is gone) fails the write:
 * nothing is lost silently.
 *
 * Attaching and detaching check the caller's rights, and whether the
 * capture exists, before they lock the source table (a lock request, even
 * one that fails later, makes everyone after it wait), then lock it and
 * check again, as RangeVarGetRelidExtended's callbacks do.  Attaching
 * then locks the queue until commit, so that a drop of the queue waits
 * for the capture and sees it.  A capture whose source is gone (dropped
 * where the event trigger did not fire: with session_replication_role =
 * replica, the event trigger disabled, or a temporary source of an
 * earlier version) is the queue's owner's to remove, and unregistering
 * the queue removes it (querytext.c).
 *
 * Calls queue.c, plans.c, extension.c, names.c, cache.h and identity.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/capture.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "cache.h"
#include "capture.h"
#include "compat.h"
#include "extension.h"
#include "identity.h"
#include "names.h"
#include "queue.h"

/* What a capture trigger needs, as dlsm_captures says, resolved. */
typedef struct CaptureDesc
{
	Oid			trigger;		/* hash key: the trigger's OID */
	bool		valid;			/* false: read dlsm_captures again */
	MemoryContext context;		/* holds kind, entity, watched; or NULL */
	Oid			relation;		/* the table the trigger is on */
	Oid			source;			/* the captured table: relation, or an
								 * ancestor of the partition relation */
	Oid			queue;
	char	   *kind;
	int			nentity;
	AttrNumber *entity;			/* the entity's columns */
	int			nwatched;
	AttrNumber *watched;		/* the watched columns, or none */
	AttrNumber	group;			/* the column of the group, or 0 */
} CaptureDesc;

static HTAB *capture_cache = NULL;
static MemoryContext capture_context = NULL;

static void
capture_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	CaptureDesc *desc;

	if (capture_cache == NULL)
		return;
	hash_seq_init(&status, capture_cache);
	while ((desc = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || desc->source == relid ||
			desc->relation == relid || dlsm_extension_is_registry(relid))
			desc->valid = false;
}

/* Register the invalidation callback; called once from _PG_init. */
void
dlsm_capture_init(void)
{
	CacheRegisterRelcacheCallback(capture_invalidate, (Datum) 0);
}

/* ---------------------------------------------------------------------
 * Attaching and detaching
 * ---------------------------------------------------------------------
 */

/* The name of the trigger capturing source into queue, or NULL. */
static char *
capture_trigger(Oid source, Oid queue)
{
	Datum		values[N_CAPTURE_TRIGGER_PARAMS];
	char	   *name = NULL;

	values[P_CAPTURE_TRIGGER_SOURCE] = ObjectIdGetDatum(source);
	values[P_CAPTURE_TRIGGER_QUEUE] = ObjectIdGetDatum(queue);
	dlsm_plan_read_catalog(DLSM_C_CAPTURE_TRIGGER, values, NULL, 1);
	if (SPI_processed == 1)
		name = dlsm_plan_text(0, A_CAPTURE_TRIGGER_NAME);
	SPI_freetuptable(SPI_tuptable);
	return name;
}

/* Is no trigger of any of tables named name? */
static bool
trigger_name_free(List *tables, const char *name)
{
	ListCell   *lc;

	foreach(lc, tables)
	{
		if (OidIsValid(get_trigger_oid(lfirst_oid(lc), name, true)))
			return false;
	}
	return true;
}

/*
 * A trigger name free on source, and on each of its partitions (CREATE
 * TRIGGER gives each a clone of the same name), for a capture into queue:
 * "dlsm_capture_" and the queue's name, cut at a character boundary, and a
 * number when that name is taken.  The caller holds the lock CREATE
 * TRIGGER takes on source, which keeps partitions from being attached.
 */
static char *
choose_trigger_name(Oid source, Oid queue)
{
	const char *base = psprintf("dlsm_capture_%s", dlsm_rel_name(queue));
	List	   *tables = find_all_inheritors(source, NoLock, NULL);

	for (int n = 1;; n++)
	{
		char	   *suffix = n == 1 ? "" : psprintf("_%d", n);
		int			room = NAMEDATALEN - 1 - strlen(suffix);
		int			len = pg_mbcliplen(base, strlen(base), room);
		char	   *name = psprintf("%.*s%s", len, base, suffix);

		if (trigger_name_free(tables, name))
			return name;
	}
}

/* The names of attnums of source as a name[]. */
static ArrayType *
name_array(Oid source, const AttrNumber *attnums, int n)
{
	Datum	   *names = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		names[i] = DirectFunctionCall1(namein,
									   CStringGetDatum(get_attname(source, attnums[i],
																   false)));
	return construct_array(names, n, NAMEOID, NAMEDATALEN, false,
						   TYPALIGN_CHAR);
}

/* The attribute number of column name of source; 42703 if none. */
static AttrNumber
column_of(Oid source, const char *name)
{
	AttrNumber	att = get_attnum(source, name);

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of table \"%s\" does not exist",
						name, dlsm_rel_label(source))));
	return att;
}

/* The entity's columns: entity_column, or the primary key. */
static int
entity_columns(Oid source, const char *entity_column, AttrNumber *entity)
{
	Relation	rel;
	Bitmapset  *pk;
	int			n = 0;
	int			x = -1;

	if (entity_column != NULL)
	{
		entity[0] = column_of(source, entity_column);
		return 1;
	}
	rel = table_open(source, AccessShareLock);
	pk = RelationGetIndexAttrBitmap(rel, INDEX_ATTR_BITMAP_PRIMARY_KEY);
	while ((x = bms_next_member(pk, x)) >= 0)
		entity[n++] = x + FirstLowInvalidHeapAttributeNumber;
	table_close(rel, AccessShareLock);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
				 errmsg("table \"%s\" has no primary key",
						dlsm_rel_label(source)),
				 errhint("Name the column that identifies the entity with entity_column.")));
	return n;
}

/* The watched columns, once each, system columns left out. */
static int
watched_columns(Oid source, ArrayType *columns, AttrNumber *watched)
{
	Datum	   *names;
	bool	   *nulls;
	int			n;
	int			nwatched = 0;
	Bitmapset  *seen = NULL;

	if (columns == NULL)
		return 0;
	deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &names, &nulls, &n);
	for (int i = 0; i < n; i++)
	{
		AttrNumber	att = column_of(source, nulls[i] ? "" :
									NameStr(*DatumGetName(names[i])));

		if (att < 1 || bms_is_member(att, seen))
			continue;			/* a system column never changes; once each */
		seen = bms_add_member(seen, att);
		watched[nwatched++] = att;
	}
	return nwatched;
}

/*
 * Can source be captured into queue by the caller?  Errors if not.  Run
 * before source is locked (a role that may not capture it never queues a
 * lock on it) and again once it is locked.
 */
static void
check_capture(Oid source, Oid queue)
{
	char		relkind;

	(void) dlsm_rel_name(source);
	dlsm_queue_check_owner(source);
	relkind = get_rel_relkind(source);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", dlsm_rel_label(source))));

	/*
	 * PostgreSQL drops a temporary table at commit or at the session's end
	 * without sql_drop: its capture would be left behind
	 */
	if (get_rel_persistence(source) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a temporary table cannot be captured")));
	if (source == queue)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a queue cannot capture its own changes")));
	if (capture_trigger(source, queue) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is captured into queue \"%s\" already",
						dlsm_rel_label(source), dlsm_rel_label(queue)),
				 errhint("Call dlsm_uncapture() first to capture it differently.")));
}

/*
 * dlsm_capture: attach a capture of source into queue.  The entity is
 * entity_column, or the primary key; columns (may be NULL) are the watched
 * columns.  The caller owns source, holds INSERT on queue, and holds an
 * SPI connection.
 */
void
dlsm_capture_attach(Oid source, Oid queue, const char *kind,
					const char *entity_column, ArrayType *columns,
					const char *group_column)
{
	AttrNumber	entity[INDEX_MAX_KEYS];
	AttrNumber *watched = palloc(sizeof(AttrNumber) * MaxAttrNumber);
	int			nentity;
	int			nwatched;
	char	   *trigger;
	Datum		values[N_CAPTURE_ADD_PARAMS];
	char		nulls[N_CAPTURE_ADD_PARAMS];

	/*
	 * every check first (no lock for a stranger to queue behind), then the
	 * lock CREATE TRIGGER takes, and the checks again: source cannot go
	 * meanwhile
	 */
	check_capture(source, queue);
	LockRelationOid(source, ShareRowExclusiveLock);
	check_capture(source, queue);

	/*
	 * then the queue (after the source, as a captured write takes them), as
	 * an enqueue locks it, until commit: a drop of the queue waits for this
	 * capture and then sees it (2BP01); and a queue dropped or unregistered
	 * while this call waited is no queue (42704), one with row-level security
	 * is refused (0A000), and so is one whose table no longer fits
	 */
	LockRelationOid(queue, RowExclusiveLock);
	dlsm_queue_close(dlsm_queue_open(queue, DLSM_QUEUE_WRITE));
	nentity = entity_columns(source, entity_column, entity);
	nwatched = watched_columns(source, columns, watched);
	if (group_column != NULL)
		(void) column_of(source, group_column);
	trigger = choose_trigger_name(source, queue);
	dlsm_plan_capture_trigger(source, trigger);

	values[P_CAPTURE_ADD_SOURCE] = ObjectIdGetDatum(source);
	values[P_CAPTURE_ADD_QUEUE] = ObjectIdGetDatum(queue);
	values[P_CAPTURE_ADD_TRIGGER] = DirectFunctionCall1(namein,
														CStringGetDatum(trigger));
	values[P_CAPTURE_ADD_KIND] = CStringGetTextDatum(kind);
	values[P_CAPTURE_ADD_ENTITY_COLUMNS] =
		PointerGetDatum(name_array(source, entity, nentity));
	values[P_CAPTURE_ADD_COLUMNS] =
		PointerGetDatum(name_array(source, watched, nwatched));
	memset(nulls, ' ', sizeof(nulls));
	values[P_CAPTURE_ADD_GROUP_COLUMN] = group_column == NULL ? (Datum) 0 :
		DirectFunctionCall1(namein, CStringGetDatum(group_column));
	nulls[P_CAPTURE_ADD_GROUP_COLUMN] = group_column == NULL ? 'n' : ' ';
	dlsm_plan_run_catalog(DLSM_C_CAPTURE_ADD, values, nulls, 0);
	CacheInvalidateRelcacheByRelid(source);
}

/*
 * The capture trigger named name on source, or InvalidOid when source has
 * no trigger of that name calling dlsm_capture_trigger (its owner dropped
 * it, and may have given the name to a trigger of its own).  The caller
 * holds a lock on source.
 */
static Oid
capture_trigger_oid(Oid source, const char *name)
{
	Relation	rel = table_open(source, NoLock);
	TriggerDesc *triggers = rel->trigdesc;
	Oid			found = InvalidOid;

	for (int i = 0; triggers != NULL && i < triggers->numtriggers; i++)
	{
		Trigger    *t = &triggers->triggers[i];

		if (strcmp(t->tgname, name) == 0 &&
			strcmp(dlsm_func_name(t->tgfoid), "dlsm_capture_trigger") == 0 &&
			get_func_namespace(t->tgfoid) ==
			get_namespace_oid(dlsm_extension_schema(), false))
			found = t->tgoid;
	}
	table_close(rel, NoLock);
	return found;
}

/* Is there a relation relid? */
static bool
rel_exists(Oid relid)
{
	return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid));
}

/* Does the caller own queue, and is it a dlsm queue?  False if it is gone. */
static bool
owns_queue(Oid queue)
{
	DlsmQueue  *desc;

	if (!rel_exists(queue) || !DLSM_CLASS_OWNERCHECK(queue, GetUserId()))
		return false;
	desc = dlsm_queue_open(queue, DLSM_QUEUE_MISSING_OK |
						   DLSM_QUEUE_ANY_SECURITY | DLSM_QUEUE_ANY_SHAPE);
	if (desc == NULL)
		return false;
	dlsm_queue_close(desc);
	return true;
}

/*
 * May the caller remove the capture of source into queue?  The owner of
 * source may, and so may the owner of queue if it is a dlsm queue (42501
 * otherwise); and the capture must exist (42704).  A capture whose source
 * is gone (dropped where the event trigger did not fire) is the queue's
 * owner's to remove; to anyone else its source does not exist (42P01),
 * as it is to the queue's owner once the capture is removed.
 * Returns the capture trigger's name.  Run before source is locked, so
 * that a role that may not remove the capture never queues a lock on
 * source (the lock waits for every holder, and everyone after waits for
 * it), and again once it is locked.
 */
static char *
check_uncapture(Oid source, Oid queue)
{
	char	   *trigger;

	if (!owns_queue(queue))
	{
		(void) dlsm_rel_name(source);
		dlsm_queue_check_owner(source);
	}
	trigger = capture_trigger(source, queue);
	if (trigger == NULL)
	{
		(void) dlsm_rel_name(source);	/* no table and no capture: 42P01 */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not captured into queue \"%s\"",
						dlsm_rel_label(source), dlsm_rel_label(queue))));
	}
	return trigger;
}

/*
 * dlsm_uncapture: remove the capture of source into queue.  The owner of
 * source may, and so may the owner of queue: a producer's capture must not
 * keep the queue's owner from dropping the queue (DROP ... CASCADE drops
 * another role's foreign key the same way).  The trigger is dropped as
 * DROP TRIGGER would, under the same lock, without its ownership check,
 * and only if it still is a capture trigger.  Everything is checked before
 * the lock is taken, as RangeVarGetRelidExtended's callbacks do, and again
 * after.
 */
void
dlsm_capture_detach(Oid source, Oid queue)
{
	char	   *trigger;
	bool		gone;
	Datum		values[N_CAPTURE_KEY_PARAMS];
	ObjectAddress address;

	(void) check_uncapture(source, queue);
	LockRelationOid(source, AccessExclusiveLock);
	trigger = check_uncapture(source, queue);
	gone = !rel_exists(source); /* only its row is left to remove */
	ObjectAddressSet(address, TriggerRelationId,
					 gone ? InvalidOid : capture_trigger_oid(source, trigger));
	if (OidIsValid(address.objectId))
		performDeletion(&address, DROP_RESTRICT, 0);
	values[P_CAPTURE_KEY_SOURCE] = ObjectIdGetDatum(source);
	values[P_CAPTURE_KEY_TRIGGER] = DirectFunctionCall1(namein,
														CStringGetDatum(trigger));
	dlsm_plan_run_catalog(DLSM_C_CAPTURE_REMOVE, values, NULL, 0);
	if (!gone)
		CacheInvalidateRelcacheByRelid(source);
}

/* ---------------------------------------------------------------------
 * The trigger
 * ---------------------------------------------------------------------
 */

/* The attribute number, in rel, of captured column name; 42703 if gone. */
static AttrNumber
captured_column(Relation rel, const char *name)
{
	AttrNumber	att = get_attnum(RelationGetRelid(rel), name);

	if (att == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" captured from table \"%s\" does not exist",
						name, RelationGetRelationName(rel)),
				 errhint("Capture the table again with dlsm_uncapture() and dlsm_capture().")));
	return att;
}

/*
 * The attribute numbers, in rel, of the names in a name[] column, in the
 * current memory context.
 */
static int
resolve_names(Relation rel, int attno, AttrNumber **out)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, attno, &isnull);
	Datum	   *names;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(d), NAMEOID, NAMEDATALEN, false,
					  TYPALIGN_CHAR, &names, NULL, &n);
	*out = palloc(sizeof(AttrNumber) * Max(n, 1));
	for (int i = 0; i < n; i++)
		(*out)[i] = captured_column(rel, NameStr(*DatumGetName(names[i])));
	return n;
}

/* The attribute number, in rel, of the group column read, or 0 for none. */
static AttrNumber
resolve_group(Relation rel)
{
	bool		isnull;
	Datum		d = dlsm_plan_value(0, A_CAPTURE_READ_GROUP_COLUMN, &isnull);

	return isnull ? 0 : captured_column(rel, NameStr(*DatumGetName(d)));
}

/*
 * Read the capture of trigger on rel from dlsm_captures into desc: the
 * capture of rel by that trigger, or, when rel is a partition and trigger
 * the clone of its parent's, the capture of the parent (of the topmost
 * one, for a partition of a partition).  Columns are found by name in rel,
 * where a partition may number them otherwise.  The new description is
 * built in a context of its own, a child of the caller's until it is
 * complete: an error on the way (a captured column gone) leaves desc as it
 * was, and the half-built one goes with the caller's context.
 */
static void
load_capture(CaptureDesc *desc, Relation rel, Trigger *trigger)
{
	Datum		values[N_CAPTURE_READ_PARAMS];
	bool		isnull;
	MemoryContext context;
	MemoryContext old;
	CaptureDesc fresh;

	values[P_CAPTURE_READ_TRIGGER] = ObjectIdGetDatum(trigger->tgoid);
	dlsm_plan_read_catalog(DLSM_C_CAPTURE_READ, values, NULL, 1);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" on table \"%s\" is not a dlsm capture",
						trigger->tgname, RelationGetRelationName(rel)),
				 errhint("Attach capture triggers with dlsm_capture().")));
	context = AllocSetContextCreate(CurrentMemoryContext, "dlsm capture",
									ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(context);
	fresh.trigger = desc->trigger;
	fresh.context = context;
	fresh.relation = RelationGetRelid(rel);
	fresh.source = DatumGetObjectId(dlsm_plan_value(0, A_CAPTURE_READ_SOURCE,
													&isnull));
	fresh.queue = DatumGetObjectId(dlsm_plan_value(0, A_CAPTURE_READ_QUEUE,
												   &isnull));
	fresh.kind = dlsm_plan_text(0, A_CAPTURE_READ_KIND);
	fresh.nentity = resolve_names(rel, A_CAPTURE_READ_ENTITY_COLUMNS,
								  &fresh.entity);
	fresh.nwatched = resolve_names(rel, A_CAPTURE_READ_COLUMNS, &fresh.watched);
	fresh.group = resolve_group(rel);
	fresh.valid = true;
	MemoryContextSwitchTo(old);
	SPI_freetuptable(SPI_tuptable);

	/* complete: keep it, and drop the description it replaces */
	MemoryContextSetParent(context, capture_context);
	if (desc->context != NULL)
		MemoryContextDelete(desc->context);
	*desc = fresh;
}

/* The capture of the firing trigger, read once and cached. */
static CaptureDesc *
capture_of(TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	CaptureDesc *desc;
	bool		found;

	if (capture_cache == NULL)
	{
		capture_context = AllocSetContextCreate(TopMemoryContext,
												"dlsm captures",
												ALLOCSET_SMALL_SIZES);
		capture_cache = dlsm_cache_create("dlsm captures", sizeof(CaptureDesc),
										  capture_context);
	}
	desc = hash_search(capture_cache, &trigger->tgoid, HASH_ENTER, &found);
	if (!found)
	{
		desc->valid = false;
		desc->context = NULL;
	}
	if (!desc->valid)
		load_capture(desc, trigdata->tg_relation, trigger);
	return desc;
}

/* The text of a column of tuple, or NULL. */
static char *
column_text(HeapTuple tuple, TupleDesc desc, AttrNumber att)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, att, desc, &isnull);
	Oid			out;
	bool		varlena;

	if (isnull)
		return NULL;
	getTypeOutputInfo(TupleDescAttr(desc, att - 1)->atttypid, &out, &varlena);
	return OidOutputFunctionCall(out, d);
}

/* The entity of a row: its key's text, or a JSON array of a composite key. */
static char *
entity_of(HeapTuple tuple, TupleDesc desc, const AttrNumber *atts, int n)
{
	StringInfoData buf;

	if (n == 1)
	{
		char	   *v = column_text(tuple, desc, atts[0]);

		return v ? v : pstrdup("");
	}
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < n; i++)
	{
		char	   *v = column_text(tuple, desc, atts[i]);

		if (i > 0)
			appendStringInfoString(&buf, ", ");
		if (v == NULL)
			appendStringInfoString(&buf, "null");
		else
			escape_json(&buf, v);
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/* Did an UPDATE change none of the watched columns? */
static bool
unchanged(HeapTuple oldtup, HeapTuple newtup, TupleDesc desc,
		  const AttrNumber *atts, int n)
{
	for (int i = 0; i < n; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, atts[i] - 1);
		bool		oldnull;
		bool		newnull;
		Datum		o = heap_getattr(oldtup, atts[i], desc, &oldnull);
		Datum		v = heap_getattr(newtup, atts[i], desc, &newnull);

		if (oldnull != newnull ||
			(!oldnull && !datumIsEqual(o, v, attr->attbyval, attr->attlen)))
			return false;
	}
	return true;
}

static Datum
row_json(HeapTuple tuple, TupleDesc desc)
{
	return DirectFunctionCall1(row_to_json,
							   heap_copy_tuple_as_datum(tuple, desc));
}

/*
 * The captured table's owner, schema and name: rel's own, or, when rel is
 * a partition of the captured table, the captured table's, from the
 * syscache: a writer of the partition need hold no lock on its parent,
 * and must not take one (DROP TABLE of the parent locks it first, then
 * its partitions).
 */
static Oid
captured_table(Relation rel, Oid source, Oid *nspid, char **relname)
{
	HeapTuple	tuple;
	Form_pg_class form;
	Oid			owner;

	if (RelationGetRelid(rel) == source)
	{
		*nspid = RelationGetNamespace(rel);
		*relname = RelationGetRelationName(rel);
		return rel->rd_rel->relowner;
	}
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(source));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", source);
	form = (Form_pg_class) GETSTRUCT(tuple);
	*nspid = form->relnamespace;
	*relname = pstrdup(NameStr(form->relname));
	owner = form->relowner;
	ReleaseSysCache(tuple);
	return owner;
}

/* One captured change, ready to enqueue. */
typedef struct Change
{
	Datum		values[N_CAPTURE_PARAMS];
	char		nulls[N_CAPTURE_PARAMS];
	char	   *old_entity;		/* NULL for an INSERT */
	char	   *new_entity;		/* NULL for a DELETE */
} Change;

/* Describe the firing change; false when watched columns did not change. */
static bool
describe_change(TriggerData *trigdata, CaptureDesc *capture, Change *change)
{
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	oldtup = NULL;
	HeapTuple	newtup = NULL;
	const char *op = "INSERT";
	Oid			nspid;
	char	   *relname;

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		newtup = trigdata->tg_trigtuple;
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		op = "UPDATE";
		oldtup = trigdata->tg_trigtuple;
		newtup = trigdata->tg_newtuple;
		if (capture->nwatched > 0 &&
			unchanged(oldtup, newtup, desc, capture->watched, capture->nwatched))
			return false;
	}
	else
	{
		op = "DELETE";
		oldtup = trigdata->tg_trigtuple;
	}
	memset(change->nulls, ' ', sizeof(change->nulls));
	change->values[P_CAPTURE_KIND] = CStringGetTextDatum(capture->kind);
	change->values[P_CAPTURE_OP] = CStringGetTextDatum(op);
	/* a partition's change is one of the captured table */
	(void) captured_table(rel, capture->source, &nspid, &relname);
	change->values[P_CAPTURE_TABLE] =
		CStringGetTextDatum(quote_qualified_identifier(dlsm_schema_name(nspid),
													   relname));
	change->values[P_CAPTURE_OLD] = oldtup ? row_json(oldtup, desc) : (Datum) 0;
	change->nulls[P_CAPTURE_OLD] = oldtup ? ' ' : 'n';
	change->values[P_CAPTURE_NEW] = newtup ? row_json(newtup, desc) : (Datum) 0;
	change->nulls[P_CAPTURE_NEW] = newtup ? ' ' : 'n';
	change->old_entity = oldtup ?
		entity_of(oldtup, desc, capture->entity, capture->nentity) : NULL;
	change->new_entity = newtup ?
		entity_of(newtup, desc, capture->entity, capture->nentity) : NULL;
	change->values[P_CAPTURE_GROUP] = (Datum) 0;
	change->nulls[P_CAPTURE_GROUP] = 'n';
	if (capture->group != 0)
	{
		/* the new row's group, or the deleted row's */
		char	   *group = column_text(newtup ? newtup : oldtup, desc,
										capture->group);

		change->values[P_CAPTURE_GROUP] =
			group ? CStringGetTextDatum(group) : (Datum) 0;
		change->nulls[P_CAPTURE_GROUP] = group ? ' ' : 'n';
	}
	return true;
}

/*
 * The source table's current owner must still hold INSERT on the queue:
 * the capture writes there on its behalf.  For a partition, that is the
 * owner of the partitioned table captured, who made the capture.
 */
static void
check_source_owner(Relation rel, Oid source, Oid queue)
{
	Oid			nspid;
	char	   *relname;
	Oid			owner = captured_table(rel, source, &nspid, &relname);

	if (pg_class_aclcheck(queue, owner, ACL_INSERT) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to capture changes of table \"%s\" into queue \"%s\"",
						relname, dlsm_rel_label(queue)),
				 errdetail("The owner of table \"%s\", role \"%s\", lacks INSERT on the queue.",
						   relname, GetUserNameFromId(owner, false))));
}

/*
 * The capture's insert runs the queue owner's code (its triggers on the
 * queue, defaults, policies) in the writer's session, and PostgreSQL looks
 * a relation or type name that code leaves unqualified up in the session's
 * temporary schema too: first when search_path does not list pg_temp,
 * where it lists it otherwise (after pg_catalog with the capture's pinned
 * search_path).  A temporary table of the writer's could then take such a
 * name, and its triggers run as the owner.  So, unless both the current
 * and the session user have the owner's privileges, the session must hold
 * no temporary relation nor type (its temporary schema is the
 * referenced object of their pg_depend rows).
 */
static void
check_session_temp(Relation rel, Oid queue, Oid owner)
{
	Oid			temp_ns;
	Oid			temp_toast_ns;
	Relation	depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		holds = false;

	if (DLSM_CLASS_OWNERCHECK(queue, GetUserId()) &&
		DLSM_CLASS_OWNERCHECK(queue, GetSessionUserId()))
		return;
	GetTempNamespaceState(&temp_ns, &temp_toast_ns);
	if (!OidIsValid(temp_ns))
		return;
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(NamespaceRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(temp_ns));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL,
							  lengthof(key), key);
	while (!holds && HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_depend dep = (Form_pg_depend) GETSTRUCT(tup);

		holds = dep->classid == RelationRelationId ||
			dep->classid == TypeRelationId;
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	if (holds)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot capture a change of table \"%s\" into queue \"%s\" in a session holding temporary tables",
						RelationGetRelationName(rel), dlsm_rel_label(queue)),
				 errdetail("The capture runs as role \"%s\", the queue's owner, whose code on the queue could find this session's temporary tables or types by the names it leaves unqualified.",
						   GetUserNameFromId(owner, false)),
				 errhint("Drop them (DISCARD TEMP) before writing table \"%s\", or write it as a role with the privileges of role \"%s\".",
						 RelationGetRelationName(rel),
						 GetUserNameFromId(owner, false))));
}

/* Enqueue change into queue as the queue's owner. */
static void
enqueue_change(DlsmQueue *queue, Change *change)
{
	DlsmIdentity saved;
	const char *entities[2] = {change->new_entity ? change->new_entity :
	change->old_entity, NULL};

	/* an UPDATE that moves the row to another entity changes both */
	if (change->old_entity != NULL && change->new_entity != NULL &&
		strcmp(change->old_entity, change->new_entity) != 0)
		entities[1] = change->old_entity;
	dlsm_identity_switch_pinned(queue->owner, &saved);
	for (int i = 0; i < lengthof(entities) && entities[i] != NULL; i++)
	{
		change->values[P_CAPTURE_ENTITY] = CStringGetTextDatum(entities[i]);
		dlsm_plan_run(&queue->plans, DLSM_Q_CAPTURE, change->values, change->nulls, 0);
	}
	dlsm_identity_restore(&saved);
}

/*
 * The capture trigger: enqueue one request for this row change, unless
 * none of the watched columns changed.  The caller holds an SPI
 * connection.
 */
void
dlsm_capture_row(TriggerData *trigdata)
{
	CaptureDesc *capture = capture_of(trigdata);
	Oid			queue_relid = capture->queue;
	Change		change;
	DlsmQueue  *queue;

	if (!describe_change(trigdata, capture, &change))
		return;
	check_source_owner(trigdata->tg_relation, capture->source, queue_relid);
	/* the insert's own lock first: a weaker one taken before would upgrade */
	queue = dlsm_queue_open(queue_relid, DLSM_QUEUE_WRITE);
	check_session_temp(trigdata->tg_relation, queue_relid, queue->owner);
	enqueue_change(queue, &change);
	dlsm_queue_close(queue);
}
