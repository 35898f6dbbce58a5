/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The launcher of dlsm's per-database workers (launcher.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/launcher.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_LAUNCHER_H
#define DLSM_LAUNCHER_H

extern void dlsm_launcher_init(void);

PGDLLEXPORT void dlsm_launcher_main(Datum main_arg);

#endif							/* DLSM_LAUNCHER_H */
