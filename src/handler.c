/*-------------------------------------------------------------------------
 *
 * handler.c
 *	  A queue's handler, run by the worker: claim a unit, call, settle.
 *
 * The claim, the handler's effects and the settle share one transaction,
 * the worker's: a unit's effects commit exactly once, together with its
 * 'complete'.  The handler runs in a subtransaction, under the queue's
 * handler_timeout (or dlsm.handler_timeout), at most
 * dlsm.max_handler_timeout, as a statement timeout (bound.c arms it); when
 * it raises an error or runs out of time (even if it caught the cancel, or
 * returned before the cancel was served: the cancel is raised as it
 * returns, still in its subtransaction) its effects are rolled back and
 * the unit is settled 'retry' (or 'error' once its attempts are spent)
 * with the error message as detail.  The claim (with its write) and the
 * settle, where the owner's triggers run, are steps of the worker of their
 * own, each under dlsm.step_timeout (bound.c); the call has its timeout
 * (and the worker ends if the call goes on one dlsm.step_timeout after its
 * cancel).  A step that runs out of time rolls the whole unit back.
 *
 * Everything runs as the queue table's current owner, as a
 * security-restricted operation (identity.c): the claim and the settle run
 * the owner's triggers on the owner's table, and the handler runs with the
 * owner's rights, which must include EXECUTE on it.  The handler is found
 * by its qualified name and signature at every run, so that a redeployed
 * function (DROP and CREATE) is the one called; a handler that does not
 * exist stops the queue's handling, with an error, before anything is
 * claimed.  The handler and its timeout are the registry's as the claim
 * saw it: a unit enqueued after dlsm_set_handler committed runs under the
 * new handler, even when the queue was opened before that commit.
 *
 * Calls claim.c, state.c, pending.c, queue.c, queuehandler.c, subxact.c,
 * bound.c, names.c and identity.c.
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
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "parser/parse_func.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/regproc.h"
#include "utils/varlena.h"

#include "bound.h"
#include "claim.h"
#include "compat.h"
#include "guc.h"
#include "handler.h"
#include "identity.h"
#include "names.h"
#include "pending.h"
#include "queuehandler.h"
#include "state.h"
#include "subxact.h"

/* The arguments of every handler. */
enum
{
	HANDLER_ARG_ENTITY, HANDLER_ARG_KIND, HANDLER_ARG_IDS,
	HANDLER_ARG_PAYLOADS, HANDLER_NARGS
};

static const Oid handler_argtypes[HANDLER_NARGS] = {
	[HANDLER_ARG_ENTITY] = TEXTOID,
	[HANDLER_ARG_KIND] = TEXTOID,
	[HANDLER_ARG_IDS] = INT8ARRAYOID,
	[HANDLER_ARG_PAYLOADS] = JSONBARRAYOID,
};

/* The unit being handled, as dlsm_claim_units emits it. */
typedef struct HandlerUnit
{
	MemoryContext context;		/* where the fields live */
	Oid			handler;		/* the function */
	int			timeout_ms;		/* its statement timeout */
	char	   *entity;
	char	   *kind;
	pg_uuid_t	process_id;
	ArrayBuildState *ids;
	ArrayBuildState *payloads;
	int			rows;
} HandlerUnit;

static void
collect_row(void *arg, Datum *values, bool *nulls)
{
	HandlerUnit *unit = (HandlerUnit *) arg;
	MemoryContext old;

	old = MemoryContextSwitchTo(unit->context);
	if (unit->rows++ == 0)
	{
		/* NULL only if written so since the claim's scan (claim.c) */
		unit->kind = nulls[A_CLAIM_KIND - 1] ? "" :
			TextDatumGetCString(values[A_CLAIM_KIND - 1]);
		unit->entity = nulls[A_CLAIM_ENTITY - 1] ? "" :
			TextDatumGetCString(values[A_CLAIM_ENTITY - 1]);
		memcpy(&unit->process_id,
			   DatumGetUUIDP(values[A_CLAIM_PROCESS_ID - 1]), UUID_LEN);
	}
	unit->ids = accumArrayResult(unit->ids, values[A_CLAIM_ID - 1], false,
								 INT8OID, unit->context);
	unit->payloads = accumArrayResult(unit->payloads,
									  values[A_CLAIM_PAYLOAD - 1],
									  nulls[A_CLAIM_PAYLOAD - 1],
									  JSONBOID, unit->context);
	MemoryContextSwitchTo(old);
}

/*
 * The call itself, a step of dlsm_subxact_run, under its statement timeout
 * (bound.c).  A call past its timeout fails in its subtransaction, even
 * when it caught the cancel, or returned before the cancel was served.
 */
static void
call_step(void *arg)
{
	LOCAL_FCINFO(fcinfo, HANDLER_NARGS);
	HandlerUnit *unit = (HandlerUnit *) arg;
	FmgrInfo	flinfo;

	fmgr_info(unit->handler, &flinfo);
	InitFunctionCallInfoData(*fcinfo, &flinfo, HANDLER_NARGS, InvalidOid,
							 NULL, NULL);
	fcinfo->args[HANDLER_ARG_ENTITY].value = CStringGetTextDatum(unit->entity);
	fcinfo->args[HANDLER_ARG_KIND].value = CStringGetTextDatum(unit->kind);
	fcinfo->args[HANDLER_ARG_IDS].value = makeArrayResult(unit->ids,
														  CurrentMemoryContext);
	fcinfo->args[HANDLER_ARG_PAYLOADS].value =
		makeArrayResult(unit->payloads, CurrentMemoryContext);
	for (int i = 0; i < HANDLER_NARGS; i++)
		fcinfo->args[i].isnull = false;
	/* the handler's own lock waits are bounded by its timeout alone */
	(void) set_config_option("lock_timeout", "0", PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	PG_TRY();
	{
		(void) FunctionCallInvoke(fcinfo);
	}
	PG_CATCH();
	{
		/* its error says why it failed; a cancel still pending goes */
		dlsm_bound_failed();
		PG_RE_THROW();
	}
	PG_END_TRY();
	/* past its timeout it fails here: it caught the cancel, or beat it */
	dlsm_bound_check();
}

/* Call the handler; on error return its message, its effects undone. */
static char *
call_handler(HandlerUnit *unit)
{
	ErrorData  *edata = dlsm_subxact_run(call_step, unit);
	char	   *message;

	if (edata == NULL)
		return NULL;
	message = pstrdup(edata->message);
	FreeErrorData(edata);
	return message;
}

/*
 * The queue's handler function, found by name: one the queue's owner
 * trusts (dlsm_queue_trust_handler), which the current user (the queue's
 * owner) may execute.
 */
static Oid
find_handler(DlsmQueue *queue)
{
	List	   *names = DLSM_QUALIFIED_NAME_LIST(queue->handler);
	Oid			handler = LookupFuncName(names, HANDLER_NARGS, handler_argtypes,
										 true);

	if (!OidIsValid(handler))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("handler %s(text, text, bigint[], jsonb[]) of queue \"%s\" does not exist",
						queue->handler, dlsm_rel_label(queue->relid)),
				 errhint("Create the function again, or set another handler with dlsm_set_handler().")));
	dlsm_queue_trust_handler(queue->relid, queue->owner, handler);
	if (DLSM_PROC_ACLCHECK(handler, GetUserId(), ACL_EXECUTE) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_FUNCTION,
					   dlsm_func_name(handler));
	return handler;
}

/* The bound on a call of queue's handler: the owner's, up to the server's. */
static int
call_timeout(DlsmQueue *queue)
{
	return Min(queue->handler_timeout_ms > 0 ?
			   queue->handler_timeout_ms : dlsm_handler_timeout,
			   dlsm_max_handler_timeout);
}

/*
 * The queue's registry entry as the claim may have seen it: queue was
 * opened before the claim's snapshot was taken, and a change of the
 * registry that committed in between (dlsm_set_handler, then an enqueue
 * the claim found) had its invalidation delivered by no lock since.  Those
 * sent before the claim's snapshot are delivered now; when one marked
 * queue stale, its entry is read again and returned, pinned (NULL: queue
 * is current).  A queue that lost its handler (or its owner) meanwhile is
 * an error: the claim is rolled back, and the next pass follows the
 * registry.
 */
static DlsmQueue *
reread_after_claim(DlsmQueue *queue)
{
	DlsmQueue  *fresh;

	AcceptInvalidationMessages();
	if (!queue->stale)
		return NULL;
	fresh = dlsm_queue_open(queue->relid,
							DLSM_QUEUE_WRITE | DLSM_QUEUE_MISSING_OK);
	if (fresh == NULL || fresh->handler == NULL ||
		fresh->owner != queue->owner)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("queue \"%s\" changed its handler while a unit was being claimed",
						dlsm_rel_label(queue->relid)),
				 errdetail("The claim is rolled back.")));
	return fresh;
}

/*
 * Claim one unit of the queue and run its handler on it, in the current
 * transaction, as the queue's owner.  Returns false when there was nothing
 * to claim; *failure is the handler's error message, or NULL when it
 * succeeded.  The caller holds an SPI connection, an active snapshot and
 * a pin on queue, whose handler is set.
 */
bool
dlsm_handler_run_one(DlsmQueue *queue, char **failure)
{
	DlsmClaimArgs args = {0};
	HandlerUnit unit = {0};
	DlsmSettle	settle = {DLSM_OUTCOME_COMPLETE, NULL, NULL};
	DlsmIdentity saved;
	DlsmQueue  *fresh;

	unit.context = CurrentMemoryContext;
	unit.timeout_ms = call_timeout(queue);
	args.queue = queue;
	args.lease_us = (int64) dlsm_default_lease * USECS_PER_SEC;
	args.units = 1;

	dlsm_identity_switch(queue->owner, &saved);
	unit.handler = find_handler(queue);
	dlsm_bound_enter(DLSM_STEP_CLAIM_UNIT, DLSM_BOUND_STEP);
	if (dlsm_claim_units(&args, collect_row, &unit) == 0)
	{
		dlsm_identity_restore(&saved);
		return false;
	}
	/* the handler and its bound the registry gave when the unit was claimed */
	fresh = reread_after_claim(queue);
	if (fresh != NULL)
	{
		unit.handler = find_handler(fresh);
		unit.timeout_ms = call_timeout(fresh);
	}
	/* the handler reads its rows in progress, with their fence */
	dlsm_pending_write(queue, &unit.process_id, 1);
	dlsm_bound_enter(DLSM_STEP_CALL_HANDLER, unit.timeout_ms);	/* its own */
	*failure = call_handler(&unit);
	if (*failure != NULL)
	{
		settle.outcome = DLSM_OUTCOME_RETRY;
		settle.detail = *failure;
	}
	dlsm_bound_enter(DLSM_STEP_SETTLE_UNIT, DLSM_BOUND_STEP);
	(void) dlsm_state_settle(queue, &unit.process_id, &settle);
	if (fresh != NULL)
		dlsm_queue_close(fresh);
	dlsm_identity_restore(&saved);
	return true;
}
