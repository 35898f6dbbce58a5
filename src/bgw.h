/*-------------------------------------------------------------------------
 *
 * bgw.h
 *	  The description of dlsm's background workers (bgw.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bgw.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_BGW_H
#define DLSM_BGW_H

#include "postmaster/bgworker.h"

extern void dlsm_bgw_fill(BackgroundWorker *bgw, const char *type,
						  const char *function, const char *dbname,
						  Datum main_arg, int restart_time,
						  pid_t notify_pid);

#endif							/* DLSM_BGW_H */
