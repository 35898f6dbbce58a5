/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  Where dlsm is installed: its schema, owner and own objects.
 *
 * The C code finds the extension's schema through its pg_extension row,
 * never through search_path, and looks it up once per backend.  A relcache
 * invalidation of one of dlsm's tables (DROP EXTENSION drops them), a
 * renamed schema, or a full reset makes the next call look again.  When
 * what it finds differs from what it found before (another schema, new
 * objects), a generation number is bumped: plans.c re-prepares its
 * statements on dlsm's own tables only then, not at every invalidation.
 *
 * The library serves one version of the SQL objects, DLSM_SQL_VERSION:
 * with another version installed every dlsm function stops with an error
 * asking for ALTER EXTENSION dlsm UPDATE, rather than run statements
 * against tables of another shape, or read arguments an older declaration
 * does not pass: each SQL-callable function calls
 * dlsm_extension_check_call before it reads one.  Only dlsm's own
 * CREATE or ALTER EXTENSION script may call them at another version.
 *
 * Calls nothing of dlsm.
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
#include "commands/extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "extension.h"

static const char *const object_names[DLSM_NUM_OBJECTS] = {
	[DLSM_OBJ_QUEUES] = "dlsm_queues",
	[DLSM_OBJ_CAPTURES] = "dlsm_captures",
	[DLSM_OBJ_LEASES] = "dlsm_leases",
	[DLSM_OBJ_FENCE_SEQ] = "dlsm_fence_seq",
	[DLSM_OBJ_GROUP_LIMITS] = "dlsm_group_limits",
};

/* What the last lookup found. */
typedef struct Installed
{
	char		schema[NAMEDATALEN];
	Oid			owner;
	Oid			objects[DLSM_NUM_OBJECTS];
	bool		exact;			/* at the library's version */
} Installed;

static Installed installed;
static bool looked_up = false;	/* installed holds a lookup */
static bool stale = true;		/* look again at the next call */
static uint64 generation = 0;	/* changes of what was found */

static void
extension_relcache_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || dlsm_extension_is_registry(relid))
		stale = true;
}

static void
extension_namespace_invalidate(Datum arg, int cacheid, uint32 hashvalue)
{
	stale = true;
}

/* Register the invalidation callbacks; called once from _PG_init. */
void
dlsm_extension_init(void)
{
	CacheRegisterRelcacheCallback(extension_relcache_invalidate, (Datum) 0);
	CacheRegisterSyscacheCallback(NAMESPACEOID, extension_namespace_invalidate,
								  (Datum) 0);
}

/* Is the extension installed in this database?  The caller is in a transaction. */
bool
dlsm_extension_exists(void)
{
	return OidIsValid(get_extension_oid("dlsm", true));
}

/*
 * Read the extension's row; its version must be the library's, unless
 * any_version.  Returns whether it is.
 */
static bool
lookup(Installed *found, bool any_version)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Form_pg_extension ext;
	bool		isnull;
	char	   *version;
	char	   *schema;
	bool		current;

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
	version = TextDatumGetCString(heap_getattr(tuple, Anum_pg_extension_extversion,
											   RelationGetDescr(rel), &isnull));
	found->exact = strcmp(version, DLSM_SQL_VERSION) == 0;
	current = found->exact ||
		(creating_extension && CurrentExtensionObject == ext->oid);
	if (!current && !any_version)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"dlsm\" is at version %s, but its library serves version %s",
						version, DLSM_SQL_VERSION),
				 errhint("Run ALTER EXTENSION dlsm UPDATE.")));
	schema = get_namespace_name(ext->extnamespace);
	if (schema == NULL)			/* dropped meanwhile, with the extension */
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema with OID %u does not exist",
						ext->extnamespace)));
	strlcpy(found->schema, schema, NAMEDATALEN);
	found->owner = ext->extowner;
	for (int i = 0; i < DLSM_NUM_OBJECTS; i++)
		found->objects[i] = get_relname_relid(object_names[i], ext->extnamespace);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return current;
}

/* Look the extension up again if an invalidation asked for it. */
static void
extension_refresh(void)
{
	Installed	found;

	if (!stale && looked_up)
		return;
	memset(&found, 0, sizeof(found));
	(void) lookup(&found, false);
	/* at another version while dlsm's script runs: look again after it */
	stale = !found.exact;		/* an invalidation from here on counts */
	if (!looked_up || memcmp(&found, &installed, sizeof(found)) != 0)
		generation++;
	installed = found;
	looked_up = true;
}

/*
 * The first thing every SQL-callable function of dlsm does, before it
 * reads an argument: the extension's SQL objects must be at the library's
 * version (55000 otherwise), and the declaration that called it must pass
 * the nargs arguments the library reads.  An older declaration passes
 * fewer, and reading past them would read whatever memory follows.
 */
void
dlsm_extension_check_call(FunctionCallInfo fcinfo, int nargs)
{
	extension_refresh();
	if (PG_NARGS() < nargs)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("function %s passes %d arguments, but the dlsm library reads %d",
						format_procedure(fcinfo->flinfo->fn_oid),
						PG_NARGS(), nargs),
				 errhint("Run ALTER EXTENSION dlsm UPDATE.")));
}

/*
 * Are dlsm's SQL objects at the version this library serves?  For the
 * wake trigger, which must not fail a producer's INSERT while an ALTER
 * EXTENSION dlsm UPDATE is still to come.  The caller is in a transaction.
 */
bool
dlsm_extension_current(void)
{
	Installed	found;

	if (!stale && looked_up)
		return true;
	memset(&found, 0, sizeof(found));
	return lookup(&found, true);
}

/*
 * The name of the schema dlsm is installed in, found through the
 * extension's catalog row.  The caller is in a transaction.
 */
const char *
dlsm_extension_schema(void)
{
	extension_refresh();
	return installed.schema;
}

/* The owner of the extension. */
Oid
dlsm_extension_owner(void)
{
	extension_refresh();
	return installed.owner;
}

/* The OID of one of dlsm's own relations. */
Oid
dlsm_extension_object(DlsmObject object)
{
	extension_refresh();
	return installed.objects[object];
}

/* The name of one of dlsm's own relations, unqualified. */
const char *
dlsm_extension_object_name(DlsmObject object)
{
	return object_names[object];
}

/*
 * A number that changes whenever the extension's schema or objects
 * changed (DROP and CREATE EXTENSION, a renamed schema).
 */
uint64
dlsm_extension_generation(void)
{
	extension_refresh();
	return generation;
}

/*
 * Is relid one of dlsm's own tables, as last looked up?  Does not look:
 * safe in invalidation callbacks, which must not read the catalogs.
 */
bool
dlsm_extension_is_registry(Oid relid)
{
	if (!looked_up)
		return false;
	for (int i = 0; i < DLSM_NUM_OBJECTS; i++)
		if (installed.objects[i] == relid)
			return true;
	return false;
}
