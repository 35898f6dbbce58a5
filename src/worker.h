/*-------------------------------------------------------------------------
 *
 * worker.h
 *	  dlsm's per-database worker (worker.c), started by the launcher.
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

PGDLLEXPORT void dlsm_worker_main(Datum main_arg);
PGDLLEXPORT void dlsm_reaper_main(Datum main_arg);

#endif							/* DLSM_WORKER_H */
