/*-------------------------------------------------------------------------
 *
 * relay.h
 *	  The relay of a database's queue notifications (relay.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/relay.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_RELAY_H
#define DLSM_RELAY_H

extern PGDLLEXPORT void dlsm_relay_main(Datum main_arg);

#endif							/* DLSM_RELAY_H */
