/*-------------------------------------------------------------------------
 *
 * capture.c
 *	  Change capture: a row trigger that enqueues each change of a table.
 *
 * dlsm_capture attaches to a source table an AFTER INSERT OR UPDATE OR
 * DELETE row trigger, dlsm_capture_<queue name>, whose arguments carry what
 * it needs: the queue's qualified name (names, unlike OIDs, survive a dump
 * and restore), the kind to enqueue, the attribute numbers of the entity's
 * columns and of the watched columns.
 * For each change it enqueues, in the writer's own transaction (a rolled
 * back change leaves no request), one request whose entity is the row's
 * key and whose payload is {op, table, old, new}.  When watched columns are
 * given, an UPDATE changing none of them enqueues nothing; an UPDATE that
 * changes the entity enqueues the change for the new entity and the old.
 *
 * The request is inserted as the source table's owner (who attached the
 * capture, and was checked then for INSERT on the queue), as a
 * security-restricted operation, so that writers need no privilege on the
 * queue.  Nothing in the trigger's arguments is trusted as an identity:
 * anyone may attach dlsm_capture_trigger to a table of their own, and
 * then it acts as them.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/capture.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/relcache.h"

#include "dlsm.h"

/*
 * The name of the trigger capturing into queue: from the queue's name, not
 * its OID, so that it survives a dump and restore.
 */
static char *
trigger_name(Oid queue)
{
	char		name[NAMEDATALEN];

	snprintf(name, sizeof(name), "dlsm_capture_%s", get_rel_name(queue));
	return pstrdup(name);
}

/* A list of attribute numbers, as a trigger argument: "1,3". */
static char *
attnums_arg(const AttrNumber *attnums, int n)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < n; i++)
		appendStringInfo(&buf, "%s%d", i ? "," : "", attnums[i]);
	return buf.data;
}

static int
parse_attnums(const char *arg, AttrNumber *out, int max)
{
	int			n = 0;
	const char *p = arg;

	while (*p && n < max)
	{
		out[n++] = (AttrNumber) strtol(p, (char **) &p, 10);
		if (*p == ',')
			p++;
	}
	return n;
}

/*
 * dlsm_capture: attach the capture trigger of queue to source.  The entity
 * is entity_column, or the primary key; columns (may be NULL) are the
 * watched columns.  The caller owns source and holds an SPI connection.
 */
void
dlsm_capture_attach(Oid source, DlsmQueue *queue, const char *kind,
					const char *entity_column, ArrayType *columns)
{
	AttrNumber	entity[INDEX_MAX_KEYS];
	AttrNumber	watched[MaxAttrNumber];
	int			nentity = 0;
	int			nwatched = 0;
	char	   *args[4];
	Bitmapset  *seen = NULL;

	if (!pg_class_ownercheck(source, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(source));
	if (get_rel_relkind(source) != RELKIND_RELATION &&
		get_rel_relkind(source) != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(source))));
	if (source == queue->relid)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a queue cannot capture its own changes")));
	if (OidIsValid(get_trigger_oid(source, trigger_name(queue->relid), true)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("table \"%s\" is captured into queue \"%s\" already",
						get_rel_name(source), get_rel_name(queue->relid)),
				 errhint("Call dlsm_uncapture() first to capture it differently.")));

	if (entity_column != NULL)
	{
		entity[0] = get_attnum(source, entity_column);
		if (entity[0] == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s\" does not exist",
							entity_column, get_rel_name(source))));
		nentity = 1;
	}
	else
	{
		Relation	rel = table_open(source, AccessShareLock);
		Bitmapset  *pk = RelationGetIndexAttrBitmap(rel,
												   INDEX_ATTR_BITMAP_PRIMARY_KEY);
		int			x = -1;

		while ((x = bms_next_member(pk, x)) >= 0)
			entity[nentity++] = x + FirstLowInvalidHeapAttributeNumber;
		table_close(rel, AccessShareLock);
		if (nentity == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("table \"%s\" has no primary key",
							get_rel_name(source)),
					 errhint("Name the column that identifies the entity with entity_column.")));
	}

	if (columns != NULL)
	{
		Datum	   *names;
		bool	   *nulls;
		int			n;

		deconstruct_array(columns, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
						  &names, &nulls, &n);
		for (int i = 0; i < n; i++)
		{
			char	   *name = nulls[i] ? "" : NameStr(*DatumGetName(names[i]));
			AttrNumber	att = get_attnum(source, name);

			if (att == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of table \"%s\" does not exist",
								name, get_rel_name(source))));
			if (att < 1 || bms_is_member(att, seen))
				continue;		/* a system column never changes; once each */
			seen = bms_add_member(seen, att);
			watched[nwatched++] = att;
		}
	}

	args[0] = pstrdup(queue->relname);	/* qualified: survives a restore */
	args[1] = pstrdup(kind);
	args[2] = attnums_arg(entity, nentity);
	args[3] = attnums_arg(watched, nwatched);
	dlsm_plan_capture_trigger(source, trigger_name(queue->relid),
							  (const char *const *) args, true);
}

/* dlsm_uncapture: remove the capture trigger of queue from source. */
void
dlsm_capture_detach(Oid source, Oid queue)
{
	if (!pg_class_ownercheck(source, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_TABLE, get_rel_name(source));
	if (!OidIsValid(get_trigger_oid(source, trigger_name(queue), true)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("table \"%s\" is not captured into queue \"%s\"",
						get_rel_name(source), get_rel_name(queue))));
	dlsm_plan_capture_trigger(source, trigger_name(queue), NULL, false);
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
 * The capture trigger: enqueue one request for this row change, unless
 * none of the watched columns changed.
 */
void
dlsm_capture_row(TriggerData *trigdata)
{
	Trigger    *trigger = trigdata->tg_trigger;
	Relation	rel = trigdata->tg_relation;
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	oldtup = NULL;
	HeapTuple	newtup = NULL;
	AttrNumber	entity[INDEX_MAX_KEYS];
	AttrNumber	watched[MaxAttrNumber];
	int			nentity;
	int			nwatched;
	const char *op;
	DlsmQueue  *queue;
	Datum		values[6];
	char		nulls[6] = {' ', ' ', ' ', ' ', ' ', ' '};
	DlsmIdentity saved;
	Oid			queue_relid;
	char	   *old_entity;
	char	   *new_entity;

	if (trigger->tgnargs != 4)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("trigger \"%s\" is not a dlsm capture trigger",
						trigger->tgname),
				 errhint("Attach capture triggers with dlsm_capture().")));
	nentity = parse_attnums(trigger->tgargs[2], entity, INDEX_MAX_KEYS);
	nwatched = parse_attnums(trigger->tgargs[3], watched, MaxAttrNumber);
	for (int i = 0; i < nentity; i++)
		if (entity[i] < 1 || entity[i] > desc->natts)
			elog(ERROR, "dlsm capture trigger \"%s\" names column %d, which does not exist",
				 trigger->tgname, entity[i]);
	for (int i = 0; i < nwatched; i++)
		if (watched[i] < 1 || watched[i] > desc->natts)
			elog(ERROR, "dlsm capture trigger \"%s\" names column %d, which does not exist",
				 trigger->tgname, watched[i]);

	if (TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
	{
		op = "INSERT";
		newtup = trigdata->tg_trigtuple;
	}
	else if (TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event))
	{
		op = "UPDATE";
		oldtup = trigdata->tg_trigtuple;
		newtup = trigdata->tg_newtuple;
		if (nwatched > 0 && unchanged(oldtup, newtup, desc, watched, nwatched))
			return;
	}
	else
	{
		op = "DELETE";
		oldtup = trigdata->tg_trigtuple;
	}

	values[1] = CStringGetTextDatum(trigger->tgargs[1]);
	values[2] = CStringGetTextDatum(op);
	values[3] = CStringGetTextDatum(quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
															   RelationGetRelationName(rel)));
	values[4] = oldtup ? row_json(oldtup, desc) : (Datum) 0;
	nulls[4] = oldtup ? ' ' : 'n';
	values[5] = newtup ? row_json(newtup, desc) : (Datum) 0;
	nulls[5] = newtup ? ' ' : 'n';

	queue_relid = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(trigger->tgargs[0])),
								   NoLock, true);
	queue = OidIsValid(queue_relid) ? dlsm_queue_find(queue_relid) : NULL;
	if (queue == NULL)
	{
		/* the queue was dropped or unregistered: nothing to capture into */
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("change of table \"%s\" not captured: its queue is no longer a dlsm queue",
						RelationGetRelationName(rel)),
				 errhint("Remove the capture with DROP TRIGGER %s ON %s.",
						 quote_identifier(trigger->tgname),
						 RelationGetRelationName(rel))));
		return;
	}
	dlsm_identity_switch(rel->rd_rel->relowner, &saved);

	/*
	 * An UPDATE that moves the row to another entity changes both: each gets
	 * the request.
	 */
	old_entity = oldtup ? entity_of(oldtup, desc, entity, nentity) : NULL;
	new_entity = newtup ? entity_of(newtup, desc, entity, nentity) : NULL;
	for (int i = 0; i < 2; i++)
	{
		char	   *e = i == 0 ? (new_entity ? new_entity : old_entity) : old_entity;

		if (i == 1 && (old_entity == NULL || new_entity == NULL ||
					   strcmp(old_entity, new_entity) == 0))
			break;
		values[0] = CStringGetTextDatum(e);
		if (dlsm_plan_execute(queue, DLSM_Q_CAPTURE, values, nulls, 0) !=
			SPI_OK_INSERT)
			elog(ERROR, "unexpected result from a captured change");
	}
	dlsm_identity_restore(&saved);
}
