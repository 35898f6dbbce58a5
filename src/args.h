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

extern void dlsm_arg_require(FunctionCallInfo fcinfo, int argno,
							 const char *name);
extern void dlsm_arg_require_process_id(FunctionCallInfo fcinfo, int argno);
extern char *dlsm_arg_text_or_null(FunctionCallInfo fcinfo, int argno);
extern int64 dlsm_arg_duration(FunctionCallInfo fcinfo, int argno,
							   const char *name, bool zero_ok);
extern int64 dlsm_arg_lease(FunctionCallInfo fcinfo, int argno);
extern int64 dlsm_arg_wait(FunctionCallInfo fcinfo, int argno);
extern void dlsm_arg_settle(FunctionCallInfo fcinfo, int argno,
							DlsmSettle *settle);
extern void dlsm_arg_queue_options(FunctionCallInfo fcinfo, int argno,
								   bool altering, DlsmQueueOptions *opts);

#endif							/* DLSM_ARGS_H */
