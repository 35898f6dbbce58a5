/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  dlsm's background workers: the launcher (launcher.c) and one worker
 *	  per database (worker.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/worker.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_WORKER_H
#define DLSM_WORKER_H

#include "postmaster/bgworker.h"

extern void dlsm_launcher_init(void);
extern void dlsm_worker_fill(BackgroundWorker *bgw, const char *function,
							 const char *type);

PGDLLEXPORT void dlsm_launcher_main(Datum main_arg);
PGDLLEXPORT void dlsm_worker_main(Datum main_arg);

#endif							/* DLSM_WORKER_H */
