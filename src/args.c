/*-------------------------------------------------------------------------
 *
 * args.c
 *	  The arguments of dlsm's SQL-callable functions, read and checked.
 *
 * Bad input raises an error before anything is changed: each reader here
 * checks one kind of argument that several of api.c's functions take (a
 * required one, a process id, a duration, a lease, a wait, a settle's
 * outcome, a queue's settings) and returns it in the form the modules
 * below want.  Durations are counted in microseconds by duration.c, and
 * refused from 100 years on.
 *
 * Calls duration.c, state.c (the outcomes) and guc.c's settings.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/args.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "args.h"
#include "duration.h"
#include "guc.h"
#include "queue.h"
#include "state.h"

/* Raise 22004 unless argument argno (named name) is given. */
void
dlsm_arg_require(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * Raise 22004 unless the process id, argument argno, is given; the likely
 * cause is a process id read back from the queue in the claiming
 * transaction, where the claim is not written yet.
 */
void
dlsm_arg_require_process_id(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "process_id"),
				 errhint("A claim is written when its transaction commits: until then the queue shows its rows as new, with no process id. Use the process_id that dlsm_claim() returned.")));
}

/* Text argument argno as a C string, or NULL when it is null. */
char *
dlsm_arg_text_or_null(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(argno));
}

/*
 * Interval argument argno (named name) in microseconds: greater than zero
 * (or not negative, when zero_ok) and shorter than 100 years.
 */
int64
dlsm_arg_duration(FunctionCallInfo fcinfo, int argno, const char *name,
				  bool zero_ok)
{
	int64		us = dlsm_duration_usecs(PG_GETARG_INTERVAL_P(argno), name);

	if (us < 0 || (us == 0 && !zero_ok))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 zero_ok ?
				 errmsg("%s must not be negative", name) :
				 errmsg("%s must be greater than zero", name)));
	return us;
}

/* The lease argument argno in microseconds: NULL means dlsm.default_lease. */
int64
dlsm_arg_lease(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		return (int64) dlsm_default_lease * USECS_PER_SEC;
	return dlsm_arg_duration(fcinfo, argno, "lease", false);
}

/* A wait argument in microseconds: -1 for a wait without end. */
int64
dlsm_arg_wait(FunctionCallInfo fcinfo, int argno)
{
	int64		us;

	dlsm_arg_require(fcinfo, argno, "wait");
	/* a wait of 100 years or more is without end */
	if (!dlsm_interval_usecs(PG_GETARG_INTERVAL_P(argno), &us) ||
		us >= DLSM_FOREVER_US)
		return -1;
	if (us < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("wait must not be negative")));
	return us;
}

/* The outcome, detail and retry_after arguments of a settle. */
void
dlsm_arg_settle(FunctionCallInfo fcinfo, int argno, DlsmSettle *settle)
{
	char	   *outcome;

	dlsm_arg_require(fcinfo, argno, "outcome");
	outcome = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (!dlsm_outcome_parse(outcome, &settle->outcome))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized outcome \"%s\"", outcome),
				 errhint("Valid outcomes are \"complete\", \"error\" and \"retry\".")));
	settle->detail = dlsm_arg_text_or_null(fcinfo, argno + 1);
	settle->retry_after = NULL;
	if (PG_ARGISNULL(argno + 2))
		return;
	if (settle->outcome != DLSM_OUTCOME_RETRY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retry_after applies only to the outcome \"retry\"")));
	(void) dlsm_arg_duration(fcinfo, argno + 2, "retry_after", true);
	settle->retry_after = PG_GETARG_INTERVAL_P(argno + 2);
}

/* The channel, max_attempts and retention arguments, from argno on. */
void
dlsm_arg_queue_options(FunctionCallInfo fcinfo, int argno, bool altering,
					   DlsmQueueOptions *opts)
{
	opts->channel = dlsm_arg_text_or_null(fcinfo, argno);
	opts->max_attempts = PG_ARGISNULL(argno + 1) ? 0 : PG_GETARG_INT32(argno + 1);
	opts->retention = NULL;
	opts->handler_timeout = NULL;
	opts->group_column = NULL;
	opts->updates_wait_for_create = -1;
	if (!altering)
		dlsm_arg_require(fcinfo, argno + 1, "max_attempts");
	if (!PG_ARGISNULL(argno + 1) && opts->max_attempts < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("max_attempts must be at least 1")));
	if (opts->channel != NULL &&
		(opts->channel[0] == '\0' || strlen(opts->channel) >= NAMEDATALEN))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid channel name \"%s\"", opts->channel),
				 errdetail("A channel name must be between 1 and %d bytes long.",
						   NAMEDATALEN - 1)));
	if (!PG_ARGISNULL(argno + 2))
	{
		/* when altering, a zero retention clears it */
		(void) dlsm_arg_duration(fcinfo, argno + 2, "retention", altering);
		opts->retention = PG_GETARG_INTERVAL_P(argno + 2);
	}
}
