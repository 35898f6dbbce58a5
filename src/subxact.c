/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a step in a subtransaction and keeping its error, and a
 *	  background process's recovery from an error.
 *
 * The one place dlsm catches an error and goes on in the same transaction:
 * a handler that fails, a bounded wait for a named lock that times out.
 * The step runs in an internal subtransaction; if it raises an error, its
 * effects are rolled back and the error is returned instead of thrown,
 * with the memory context and resource owner of the caller restored.  A
 * FATAL is not caught (it ends the process); a query cancel is raised as
 * an ERROR, and caught as one.
 *
 * And the one way a background process's loop goes on after an error
 * (dlsm_error_recover, autovacuum's): the error is reported, the
 * transaction aborted and the error forgotten, with interrupts held.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/subxact.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * Run step(arg) in a subtransaction: NULL when it succeeded (its effects
 * kept), else its error, copied into the caller's memory context, with its
 * effects undone.
 */
ErrorData *
dlsm_subxact_run(DlsmStep step, void *arg)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		step(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcontext);
	CurrentResourceOwner = oldowner;
	return edata;
}

/*
 * In a background process's PG_CATCH: report the error being handled,
 * abort the transaction (if any) and forget the error, with interrupts
 * held throughout (the caller holds them too if it has more to do before
 * its loop goes on).  Returns a copy of the error in context, which is
 * current on return.
 */
ErrorData *
dlsm_error_recover(MemoryContext context)
{
	ErrorData  *edata;

	HOLD_INTERRUPTS();
	MemoryContextSwitchTo(context);
	edata = CopyErrorData();
	EmitErrorReport();
	AbortOutOfAnyTransaction();
	FlushErrorState();
	RESUME_INTERRUPTS();
	return edata;
}
