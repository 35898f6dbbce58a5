/*-------------------------------------------------------------------------
 *
 * names.c
 *	  Names of catalog objects that may have been dropped meanwhile.
 *
 * get_rel_name, get_namespace_name and get_func_name return NULL for an
 * object that is gone: one dropped by another session after dlsm read its
 * OID from a catalog, or an OID given as a regclass argument that names
 * nothing.  A name that goes into SQL text or into a kept description must
 * exist: dlsm_rel_name, dlsm_schema_name and dlsm_func_name raise the error
 * PostgreSQL raises for such an OID instead.  A name that only goes into a
 * message falls back to the OID (dlsm_rel_label), so that reporting one
 * error never raises another.
 *
 * dlsm_name_clip cuts a name or a message to fit a buffer in shared
 * memory, at a character boundary.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/names.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "utils/lsyscache.h"

#include "names.h"

/* The name of relation relid; 42P01 when there is none. */
char *
dlsm_rel_name(Oid relid)
{
	char	   *name = get_rel_name(relid);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	return name;
}

/* The name of schema nspid; 3F000 when there is none. */
char *
dlsm_schema_name(Oid nspid)
{
	char	   *name = get_namespace_name(nspid);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_SCHEMA),
				 errmsg("schema with OID %u does not exist", nspid)));
	return name;
}

/* The name of function funcid; 42883 when there is none. */
char *
dlsm_func_name(Oid funcid)
{
	char	   *name = get_func_name(funcid);

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", funcid)));
	return name;
}

/* The name of relation relid for a message: its OID when it is gone. */
char *
dlsm_rel_label(Oid relid)
{
	char	   *name = get_rel_name(relid);

	return name != NULL ? name : psprintf("%u", relid);
}

/*
 * Copy the string from into the buffer to, of size bytes: cut at a
 * character boundary when it does not fit, and always terminated.
 */
void
dlsm_name_clip(const char *from, char *to, int size)
{
	int			len = pg_mbcliplen(from, strlen(from), size - 1);

	memcpy(to, from, len);
	to[len] = '\0';
}
