/*-------------------------------------------------------------------------
 *
 * usage.h
 *	  How full a fixed-size shared table is: what each owner of shared
 *	  state (floor.c, rate.c, pool.c, namedlock.c, notify.c) reports of
 *	  its tables, for the view dlsm_shared_tables.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/usage.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_USAGE_H
#define DLSM_USAGE_H

/*
 * One table: its name (as dlsm_shared_tables shows it), how many entries
 * it has (for a table kept per queue or per database, those of one),
 * how many are in use (of such a table, in its fullest one), and how many
 * times since the server started an entry found no room: refused, taken
 * from another, or left out (each table's owner says what it does then).
 */
typedef struct DlsmTableUsage
{
	const char *name;
	int64		capacity;
	int64		used;
	int64		full;
} DlsmTableUsage;

/* The most tables one owner reports. */
#define DLSM_MAX_OWNER_TABLES 4

#endif							/* DLSM_USAGE_H */
