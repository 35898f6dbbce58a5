/*-------------------------------------------------------------------------
 *
 * capacity.h
 *	  dlsm's fixed-size shared tables, all of them (capacity.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/capacity.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_CAPACITY_H
#define DLSM_CAPACITY_H

#include "usage.h"

/* The most tables of all owners (five of them). */
#define DLSM_MAX_TABLES (5 * DLSM_MAX_OWNER_TABLES)

extern int	dlsm_capacity_tables(DlsmTableUsage *out);
extern void dlsm_capacity_say_full(void);

#endif							/* DLSM_CAPACITY_H */
