/*-------------------------------------------------------------------------
 *
 * namedlock.h
 *	  Named locks: dlsm_try_lock, dlsm_unlock, dlsm_refresh_lock
 *	  (namedlock.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/namedlock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_NAMEDLOCK_H
#define DLSM_NAMEDLOCK_H

#include "datatype/timestamp.h"

extern void dlsm_named_init(void);
extern bool dlsm_named_try(const char *name, int64 wait_us, int64 lease_us,
						   int64 *fence);
extern bool dlsm_named_unlock(const char *name, int64 fence);
extern TimestampTz dlsm_named_refresh(const char *name, int64 fence,
									  int64 lease_us);
extern int64 dlsm_named_purge(void);

#endif							/* DLSM_NAMEDLOCK_H */
