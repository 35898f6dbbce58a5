/*-------------------------------------------------------------------------
 *
 * queuehandler.c
 *	  A queue's handler: setting it, and whether its owner trusts it.
 *
 * A queue may name a handler, a function the worker runs on the queue's
 * units as the queue's owner.  dlsm_set_handler sets it, after checking
 * that the function can be a handler and that the caller may run it; the
 * worker checks again before each run that the queue's owner trusts the
 * function's owner, as the function found by the name kept may not be the
 * one that was set.
 *
 * Calls queue.c, plans.c and names.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/queuehandler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "compat.h"
#include "names.h"
#include "plans.h"
#include "queue.h"
#include "queuehandler.h"

/* Can handler be a queue's handler, run by the caller?  Errors if not. */
static void
check_handler(Oid handler)
{
	Oid			argtypes[4] = {TEXTOID, TEXTOID, INT8ARRAYOID, JSONBARRAYOID};
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(handler));
	Form_pg_proc proc;
	bool		ok;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", handler)));
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	ok = proc->pronargs == lengthof(argtypes) &&
		proc->prokind == PROKIND_FUNCTION && !proc->proretset &&
		memcmp(proc->proargtypes.values, argtypes, sizeof(argtypes)) == 0;
	ReleaseSysCache(tuple);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("function %s cannot be a dlsm handler",
						format_procedure(handler)),
				 errhint("A handler is a function taking (entity text, kind text, ids bigint[], payloads jsonb[]).")));
	if (DLSM_PROC_ACLCHECK(handler, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION,
					   dlsm_func_name(handler));
}

/*
 * May the worker run handler, as owner, for queue relid?  It finds the
 * handler by name and runs it as the queue's owner, so the function must
 * be one the owner trusts: its own, a role's whose privileges the owner
 * has, or a superuser's; and not in a temporary schema, whose name passes
 * to other sessions.  Otherwise whoever can create a function of that name
 * (a role with CREATE on the database, once the handler's schema is gone;
 * the function's owner, by CREATE OR REPLACE) would run code as the
 * owner.  Errors if not.
 */
void
dlsm_queue_trust_handler(Oid relid, Oid owner, Oid handler)
{
	HeapTuple	tuple = SearchSysCache1(PROCOID, ObjectIdGetDatum(handler));
	Form_pg_proc proc;
	Oid			proowner;
	Oid			pronamespace;
	char	   *proname;
	char	   *nspname;

	if (!HeapTupleIsValid(tuple))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("function with OID %u does not exist", handler)));
	proc = (Form_pg_proc) GETSTRUCT(tuple);
	proowner = proc->proowner;
	pronamespace = proc->pronamespace;
	proname = pstrdup(NameStr(proc->proname));
	ReleaseSysCache(tuple);
	if (isAnyTempNamespace(pronamespace))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a function in a temporary schema cannot be a dlsm handler"),
				 errdetail("The worker finds a handler by its name, and the name of a temporary schema passes to other sessions.")));
	/* (a superuser has every role's privileges: not a reason to trust) */
	if (proowner == owner || superuser_arg(proowner) ||
		(!superuser_arg(owner) && has_privs_of_role(owner, proowner)))
		return;
	nspname = get_namespace_name(pronamespace);
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("handler %s of queue \"%s\" is owned by role \"%s\", which the queue's owner \"%s\" does not trust",
					quote_qualified_identifier(nspname ? nspname : "?", proname),
					dlsm_rel_label(relid),
					GetUserNameFromId(proowner, false),
					GetUserNameFromId(owner, false)),
			 errdetail("The worker runs a queue's handler as the queue's owner: the function must belong to that owner, to a role whose privileges it has, or to a superuser."),
			 errhint("Change the function's owner with ALTER FUNCTION ... OWNER TO.")));
}

/*
 * Make the worker run handler (InvalidOid: no handler) for the queue's
 * units.  The handler is kept by its qualified name and found again by
 * name at every run, so that it survives a dump and restore and a
 * redeploy (DROP and CREATE FUNCTION).  The caller must own the table and
 * holds an SPI connection.
 */
void
dlsm_queue_set_handler(Oid relid, Oid handler)
{
	Datum		values[N_SET_HANDLER_PARAMS];
	char		nulls[N_SET_HANDLER_PARAMS] = {' ', ' '};
	DlsmQueue  *queue = dlsm_queue_open(relid, DLSM_QUEUE_ANY_SECURITY |
										DLSM_QUEUE_ANY_SHAPE);
	Oid			owner = queue->owner;

	dlsm_queue_close(queue);
	dlsm_queue_check_owner(relid);
	if (OidIsValid(handler))
	{
		check_handler(handler);
		dlsm_queue_trust_handler(relid, owner, handler);
	}
	values[P_SET_HANDLER_QUEUE] = ObjectIdGetDatum(relid);
	values[P_SET_HANDLER_HANDLER] = OidIsValid(handler) ?
		CStringGetTextDatum(quote_qualified_identifier(dlsm_schema_name(get_func_namespace(handler)),
													   dlsm_func_name(handler))) :
		(Datum) 0;
	nulls[P_SET_HANDLER_HANDLER] = OidIsValid(handler) ? ' ' : 'n';
	dlsm_queue_write_registry(DLSM_C_SET_HANDLER, relid, values, nulls);
}
