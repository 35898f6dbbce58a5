/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  Where dlsm is installed: its schema, owner and own objects.
 *
 * The C code finds the extension's schema through its pg_extension row,
 * never through search_path, and looks it up once per backend.  A relcache
 * invalidation of the registry table (DROP EXTENSION drops it) or a full
 * reset makes the next call look again, and bumps a generation number
 * that plans.c compares to know when its statements on dlsm's own tables
 * name objects that may be gone.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/extension.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "dlsm.h"

static char *ext_schema = NULL; /* NULL: look it up */
static Oid	ext_schema_oid = InvalidOid;
static Oid	ext_owner = InvalidOid;
static Oid	registry_relid = InvalidOid;
static Oid	fence_seq_relid = InvalidOid;
static bool stale = false;		/* look again at the next call */
static uint64 generation = 0;	/* lookups made so far */

static void
extension_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == registry_relid)
		stale = true;
}

/* Register the invalidation callback; called once from _PG_init. */
void
dlsm_extension_init(void)
{
	CacheRegisterRelcacheCallback(extension_invalidate, (Datum) 0);
}

/* Read the extension's schema, owner and objects from the catalogs. */
static void
lookup_extension(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Form_pg_extension ext;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum("dlsm"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"dlsm\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION dlsm.")));
	ext = (Form_pg_extension) GETSTRUCT(tuple);
	ext_schema_oid = ext->extnamespace;
	ext_owner = ext->extowner;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	ext_schema = MemoryContextStrdup(TopMemoryContext,
									 get_namespace_name(ext_schema_oid));
	registry_relid = get_relname_relid("dlsm_queues", ext_schema_oid);
	fence_seq_relid = get_relname_relid("dlsm_fence_seq", ext_schema_oid);
	generation++;
}

/*
 * The name of the schema dlsm is installed in, found through the
 * extension's catalog row.  The caller is in a transaction.
 */
const char *
dlsm_extension_schema(void)
{
	if (stale && ext_schema != NULL)
	{
		pfree(ext_schema);
		ext_schema = NULL;
	}
	stale = false;
	if (ext_schema == NULL)
		lookup_extension();
	return ext_schema;
}

/* The owner of the extension. */
Oid
dlsm_extension_owner(void)
{
	(void) dlsm_extension_schema();
	return ext_owner;
}

/* The OID of the fence sequence. */
Oid
dlsm_fence_sequence(void)
{
	(void) dlsm_extension_schema();
	return fence_seq_relid;
}

/*
 * The registry table's OID as last looked up, without looking: for
 * invalidation callbacks, which must not read the catalogs.
 */
Oid
dlsm_extension_registry_seen(void)
{
	return registry_relid;
}

/* How many times the extension was looked up in this backend. */
uint64
dlsm_extension_generation(void)
{
	(void) dlsm_extension_schema();
	return generation;
}
