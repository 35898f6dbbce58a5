/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Shims between the PostgreSQL versions dlsm builds against (15 and up).
 *
 * Every PG_VERSION_NUM test of dlsm lives in this file.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_COMPAT_H
#define DLSM_COMPAT_H

#include "datatype/timestamp.h"

#if PG_VERSION_NUM < 150000
#error "dlsm requires PostgreSQL 15 or later"
#endif

/* Intervals gained infinity in PostgreSQL 17. */
#if PG_VERSION_NUM >= 170000
#define DLSM_INTERVAL_IS_INFINITE(i) INTERVAL_NOT_FINITE(i)
#else
#define DLSM_INTERVAL_IS_INFINITE(i) false
#endif

/* Databases left invalid by an interrupted DROP DATABASE (15.4 and up). */
#if PG_VERSION_NUM >= 150004
#define DLSM_DATABASE_IS_INVALID(form) database_is_invalid_form(form)
#else
#define DLSM_DATABASE_IS_INVALID(form) false
#endif

#endif							/* DLSM_COMPAT_H */
