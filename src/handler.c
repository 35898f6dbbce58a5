/*-------------------------------------------------------------------------
 *
 * handler.c
 *	  A queue's handler, run by the worker: claim a unit, call, settle.
 *
 * The claim, the handler's effects and the settle share one transaction,
 * the worker's: a unit's effects commit exactly once, together with its
 * 'complete'.  The handler runs in a subtransaction; when it raises an
 * error its effects are rolled back and the unit is settled 'retry' (or
 * 'error' once its attempts are spent) with the error message as detail.
 * Everything runs as the role that set the handler, so that role's
 * privileges and row-level security apply, as a security-restricted
 * operation whose setting changes are undone afterwards (identity.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/handler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "dlsm.h"

/* The unit being handled, as dlsm_state_claim emits it. */
typedef struct HandlerUnit
{
	MemoryContext context;		/* where the fields live */
	char	   *entity;
	char	   *kind;
	pg_uuid_t	process_id;
	ArrayBuildState *ids;
	ArrayBuildState *payloads;
	int			rows;
} HandlerUnit;

static void
collect_row(void *arg, HeapTuple tuple, TupleDesc desc)
{
	HandlerUnit *unit = (HandlerUnit *) arg;
	Datum		values[7];
	bool		nulls[7];
	MemoryContext old;

	heap_deform_tuple(tuple, desc, values, nulls);
	old = MemoryContextSwitchTo(unit->context);
	if (unit->rows++ == 0)
	{
		unit->kind = TextDatumGetCString(values[1]);
		unit->entity = TextDatumGetCString(values[2]);
		memcpy(&unit->process_id, DatumGetUUIDP(values[4]), UUID_LEN);
	}
	unit->ids = accumArrayResult(unit->ids, values[0], false, INT8OID,
								 unit->context);
	unit->payloads = accumArrayResult(unit->payloads, values[3], nulls[3],
									  JSONBOID, unit->context);
	MemoryContextSwitchTo(old);
}

/* Call the handler; on error return its message, its effects undone. */
static char *
call_handler(Oid handler, HandlerUnit *unit)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	char	   *volatile message = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		LOCAL_FCINFO(fcinfo, 4);
		FmgrInfo	flinfo;

		fmgr_info(handler, &flinfo);
		InitFunctionCallInfoData(*fcinfo, &flinfo, 4, InvalidOid, NULL, NULL);
		fcinfo->args[0].value = CStringGetTextDatum(unit->entity);
		fcinfo->args[0].isnull = false;
		fcinfo->args[1].value = CStringGetTextDatum(unit->kind);
		fcinfo->args[1].isnull = false;
		fcinfo->args[2].value = makeArrayResult(unit->ids, oldcontext);
		fcinfo->args[2].isnull = false;
		fcinfo->args[3].value = makeArrayResult(unit->payloads, oldcontext);
		fcinfo->args[3].isnull = false;
		(void) FunctionCallInvoke(fcinfo);

		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		message = pstrdup(edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return message;
}

/*
 * Claim one unit of the queue and run its handler on it, in the current
 * transaction.  Returns false when there was nothing to claim; *failure
 * is the handler's error message, or NULL when it succeeded.  The caller holds an SPI
 * connection and an active snapshot.
 */
bool
dlsm_handler_run_one(DlsmQueue *queue, char **failure)
{
	DlsmClaimArgs args;
	HandlerUnit unit;
	DlsmIdentity saved;
	Oid			handler = queue->handler;
	char	   *message;

	memset(&unit, 0, sizeof(unit));
	unit.context = CurrentMemoryContext;
	args.queue = queue;
	args.lease_us = (int64) dlsm_default_lease * USECS_PER_SEC;
	args.process_id = NULL;
	args.after = 0;
	args.wait_us = 0;
	args.units = 1;

	dlsm_identity_switch(queue->handler_role, &saved);
	if (dlsm_state_claim(&args, collect_row, &unit) == 0)
	{
		dlsm_identity_restore(&saved);
		return false;
	}
	message = call_handler(handler, &unit);
	*failure = message;
	(void) dlsm_state_settle(queue, &unit.process_id,
							 message ? DLSM_OUTCOME_RETRY : DLSM_OUTCOME_COMPLETE,
							 message, NULL);
	dlsm_identity_restore(&saved);
	return true;
}
