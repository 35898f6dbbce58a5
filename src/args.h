/*-------------------------------------------------------------------------
 *
 * args.h
 *	  The arguments of dlsm's SQL-callable functions, read and checked
 *	  (args.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/args.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_ARGS_H
#define DLSM_ARGS_H

#include "fmgr.h"

#include "queue.h"
#include "state.h"

extern void require_arg(FunctionCallInfo fcinfo, int argno, const char *name);
extern void require_process_id(FunctionCallInfo fcinfo, int argno);
extern char *text_arg_or_null(FunctionCallInfo fcinfo, int argno);
extern int64 duration_arg(FunctionCallInfo fcinfo, int argno, const char *name,
						  bool zero_ok);
extern int64 lease_arg(FunctionCallInfo fcinfo, int argno);
extern int64 wait_arg(FunctionCallInfo fcinfo, int argno);
extern void settle_args(FunctionCallInfo fcinfo, int argno,
						DlsmSettle *settle);
extern void queue_options_args(FunctionCallInfo fcinfo, int argno,
							   bool altering, DlsmQueueOptions *opts);

#endif							/* DLSM_ARGS_H */
