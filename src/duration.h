/*-------------------------------------------------------------------------
 *
 * duration.h
 *	  Intervals as microseconds (duration.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/duration.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_DURATION_H
#define DLSM_DURATION_H

#include "datatype/timestamp.h"

/* A duration at least this long is without end, or too long (100 years). */
#define DLSM_FOREVER_US (INT64CONST(100) * 365 * USECS_PER_DAY)

extern bool dlsm_interval_usecs(const Interval *iv, int64 *result);
extern int64 dlsm_duration_usecs(const Interval *iv, const char *name);
extern int64 dlsm_duration_stored_usecs(const Interval *iv);

#endif							/* DLSM_DURATION_H */
