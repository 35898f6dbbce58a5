/*-------------------------------------------------------------------------
 *
 * dedup.c
 *	  The dedup key look-up of dlsm_enqueue, by a direct scan of the key's
 *	  index instead of a statement.
 *
 * Why SQL is bypassed here: the look-up runs once per enqueue with a key,
 * and a kept plan still pays the executor's start and end at every run
 * (expression set-up, the plan's validity check, the GUC save and restore
 * around it): about 4.5 us of an enqueue's 22, more than the scan itself.
 * So when the queue has an index that can answer it alone, this file
 * scans that index in C; the statement DEDUP_LOOKUP in querytext.c stays
 * the reference, and the path run whenever this one cannot be
 * (DLSM_DEDUP_UNUSABLE).  It saves what bench/README.md's Deduplication
 * section measures (0.82 of an enqueue without a key against 0.69 with
 * the statement alone); test/t/115_dedup_agreement.pl checks that both
 * ways answer alike.  Both must find the same row:
 *
 *	SELECT {id}::int8 FROM {q} WHERE {dedup} = $1
 *	 AND ({status} = ANY ('{new,in-progress}')
 *	  OR ({status} = ANY ('{complete,error}')
 *	   AND settled_at > clock_timestamp() - $2))
 *	 ORDER BY {id} DESC LIMIT 1
 *
 * run as the current user under the latest snapshot, after a command
 * counter increment (what SPI_execute_snapshot does; state.c holds the
 * key's lock).  The probe keeps that meaning: it scans the index of
 * ({dedup}, {id}, ...) backwards for the key under the same kind of
 * snapshot and returns the first row whose status and settled_at pass the
 * same test, read from the heap.  It is used only where it cannot differ:
 * a plain table (a partitioned one has no storage of its own to scan, and
 * its index is a partitioned index); a valid btree index without
 * expressions whose first two keys are the dedup key (text, compared by
 * texteq under the column's collation) and the id (an integer in its
 * default ascending order), with no predicate but "{dedup} IS NOT NULL";
 * a text status column of a deterministic
 * collation (so that equality is equality of bytes); settled_at of type
 * timestamptz; and a caller who could run the statement as it is: SELECT
 * on the whole table, no row-level security on it, no executor permission
 * hook loaded.  Anything else runs the statement.  Each queue's index and
 * columns are found once and kept until a relation cache invalidation of
 * the table or the index.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/dedup.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/primnodes.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "dedup.h"

/* What a queue's probe needs, found once (the key: the queue's relid). */
typedef struct DedupTarget
{
	Oid			relid;			/* the queue table: hash key */
	bool		valid;			/* false once invalidated: find again */
	bool		usable;			/* the queue has an index fit to probe */
	Oid			index;			/* that index */
	AttrNumber	id;				/* the columns read from the heap */
	AttrNumber	status;
	AttrNumber	settled_at;
	Oid			id_type;		/* int2, int4 or int8 */
} DedupTarget;

static HTAB *targets = NULL;

/* Forget the targets of relid, or of every queue (InvalidOid). */
static void
dedup_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	DedupTarget *target;

	hash_seq_init(&status, targets);
	while ((target = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || target->relid == relid ||
			target->index == relid)
			target->valid = false;
}

/* The attribute of heap named name (quoted, as in DlsmQueueNames), or 0. */
static AttrNumber
column(Relation heap, const char *name, Oid *type, Oid *collation)
{
	TupleDesc	desc = RelationGetDescr(heap);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (!att->attisdropped &&
			strcmp(quote_identifier(NameStr(att->attname)), name) == 0)
		{
			*type = att->atttypid;
			*collation = att->attcollation;
			return att->attnum;
		}
	}
	return InvalidAttrNumber;
}

/* Is index's predicate none, or "dedup IS NOT NULL"? */
static bool
predicate_fits(Relation index, AttrNumber dedup)
{
	List	   *predicate = RelationGetIndexPredicate(index);
	NullTest   *test;

	if (predicate == NIL)
		return true;
	if (list_length(predicate) != 1 || !IsA(linitial(predicate), NullTest))
		return false;
	test = linitial_node(NullTest, predicate);
	return test->nulltesttype == IS_NOT_NULL && !test->argisrow &&
		IsA(test->arg, Var) && ((Var *) test->arg)->varattno == dedup;
}

/*
 * Can index answer the look-up (see the file header)?  dedup and id are
 * the heap's attributes, of types text (collation key_collation) and
 * id_type.
 */
static bool
index_fits(Relation index, AttrNumber dedup, Oid key_collation,
		   AttrNumber id, Oid id_type)
{
	Form_pg_index form = index->rd_index;

	return index->rd_rel->relkind == RELKIND_INDEX &&
		index->rd_rel->relam == BTREE_AM_OID &&
		form->indisvalid && form->indisready && form->indislive &&
		form->indnkeyatts >= 2 &&
		form->indkey.values[0] == dedup && form->indkey.values[1] == id &&
		index->rd_indoption[0] == 0 && index->rd_indoption[1] == 0 &&
		index->rd_opcintype[0] == TEXTOID &&
		index->rd_indcollation[0] == key_collation &&
		get_opfamily_member(index->rd_opfamily[0], TEXTOID, TEXTOID,
							BTEqualStrategyNumber) == TextEqualOperator &&
		index->rd_opfamily[1] ==
		get_opclass_family(GetDefaultOpClass(id_type, BTREE_AM_OID)) &&
		RelationGetIndexExpressions(index) == NIL &&
		predicate_fits(index, dedup);
}

/* Find target's index and columns in heap, a queue with names. */
static void
find_target(DedupTarget *target, Relation heap, const DlsmQueueNames *names)
{
	Oid			type;
	Oid			status_type;
	Oid			settled_type;
	Oid			key_collation;
	Oid			status_collation;
	AttrNumber	dedup;
	List	   *indexes;
	ListCell   *lc;

	target->usable = false;
	target->index = InvalidOid;
	target->valid = true;
	/* a partitioned table: nothing to scan but its partitions */
	if (names->dedup == NULL || heap->rd_rel->relkind != RELKIND_RELATION)
		return;
	dedup = column(heap, names->dedup, &type, &key_collation);
	if (dedup == InvalidAttrNumber || type != TEXTOID)
		return;
	target->id = column(heap, names->id, &target->id_type, &type);
	target->status = column(heap, names->status, &status_type,
							&status_collation);
	target->settled_at = column(heap, "settled_at", &settled_type, &type);
	if (target->id == InvalidAttrNumber ||
		(target->id_type != INT8OID && target->id_type != INT4OID &&
		 target->id_type != INT2OID) ||
		target->status == InvalidAttrNumber || status_type != TEXTOID ||
		!OidIsValid(status_collation) ||
		!get_collation_isdeterministic(status_collation) ||
		target->settled_at == InvalidAttrNumber ||
		settled_type != TIMESTAMPTZOID)
		return;
	indexes = RelationGetIndexList(heap);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		fits = index_fits(index, dedup, key_collation,
									  target->id, target->id_type);

		index_close(index, NoLock);
		if (fits)
		{
			target->index = lfirst_oid(lc);
			target->usable = true;
			break;
		}
	}
	list_free(indexes);
}

/* The target of the queue of set, found if need be; heap is its table. */
static DedupTarget *
get_target(const DlsmPlanSet *set, Relation heap)
{
	DedupTarget *target;
	bool		found;

	if (targets == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(DedupTarget);
		ctl.hcxt = CacheMemoryContext;
		targets = hash_create("dlsm dedup probes", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(dedup_invalidate, (Datum) 0);
	}
	target = hash_search(targets, &set->relid, HASH_ENTER, &found);
	if (!found || !target->valid)
		find_target(target, heap, &set->names);
	return target;
}

/* Is the text d the bytes of s? */
static bool
text_is(Datum d, const char *s)
{
	text	   *t = DatumGetTextPP(d);
	size_t		n = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == n && memcmp(VARDATA_ANY(t), s, n) == 0;
}

/*
 * Does the row in slot hold the key: new or in progress, or settled after
 * the clock less window (has_window; *bound caches that instant, read at
 * the first settled row, *has_bound says whether it has been)?
 */
static bool
holds_key(DedupTarget *target, TupleTableSlot *slot, bool has_window,
		  Datum window, TimestampTz *bound, bool *has_bound)
{
	bool		isnull;
	Datum		status = slot_getattr(slot, target->status, &isnull);
	Datum		settled;

	if (isnull)
		return false;
	if (text_is(status, "new") || text_is(status, "in-progress"))
		return true;
	if (!has_window || !(text_is(status, "complete") ||
						 text_is(status, "error")))
		return false;
	settled = slot_getattr(slot, target->settled_at, &isnull);
	if (isnull)
		return false;
	if (!*has_bound)
	{
		*bound = DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
														 TimestampTzGetDatum(GetCurrentTimestamp()),
														 window));
		*has_bound = true;
	}
	return timestamp_cmp_internal(DatumGetTimestampTz(settled), *bound) > 0;
}

/* The id of the row in slot, as DEDUP_LOOKUP's {id}::int8 gives it. */
static int64
row_id(DedupTarget *target, TupleTableSlot *slot)
{
	bool		isnull;
	Datum		d = slot_getattr(slot, target->id, &isnull);

	if (isnull)
		return 0;
	switch (target->id_type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* May the current user run DEDUP_LOOKUP on heap as the probe would? */
static bool
caller_fits(Relation heap)
{
	return ExecutorCheckPerms_hook == NULL &&
		!heap->rd_rel->relrowsecurity &&
		pg_class_aclcheck(RelationGetRelid(heap), GetUserId(),
						  ACL_SELECT) == ACLCHECK_OK;
}

/*
 * Look up the request of the queue of set that holds the text key (new,
 * in progress, or settled within window when has_window), as DEDUP_LOOKUP
 * would: DLSM_DEDUP_HIT with its id in *id, DLSM_DEDUP_MISS, or
 * DLSM_DEDUP_UNUSABLE when the caller must run DEDUP_LOOKUP instead.  The
 * caller holds the key's lock.
 */
DlsmDedupProbe
dlsm_dedup_probe(const DlsmPlanSet *set, Datum key, bool has_window,
				 Datum window, int64 *id)
{
	Relation	heap = table_open(set->relid, AccessShareLock);
	DedupTarget *target = get_target(set, heap);
	Relation	index;
	Snapshot	snapshot;
	TupleTableSlot *slot;
	IndexScanDesc scan;
	ScanKeyData skey;
	TimestampTz bound = 0;
	bool		has_bound = false;
	DlsmDedupProbe result = DLSM_DEDUP_MISS;

	if (!target->usable || !caller_fits(heap))
	{
		table_close(heap, NoLock);
		return DLSM_DEDUP_UNUSABLE;
	}
	index = index_open(target->index, AccessShareLock);
	/* as SPI_execute_snapshot: this command's own writes are seen too */
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	slot = table_slot_create(heap, NULL);
	scan = DLSM_INDEX_BEGINSCAN(heap, index, snapshot, 1, 0);
	ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, key);
	index_rescan(scan, &skey, 1, NULL, 0);
	/* backwards: the newest ids of the key first, as ORDER BY id DESC */
	while (index_getnext_slot(scan, BackwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		if (holds_key(target, slot, has_window, window, &bound, &has_bound))
		{
			*id = row_id(target, slot);
			result = DLSM_DEDUP_HIT;
			break;
		}
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	return result;
}
