/*-------------------------------------------------------------------------
 *
 * capacity.c
 *	  dlsm's fixed-size shared tables, all of them: how full each is
 *	  (the view dlsm_shared_tables), and saying once that one was full.
 *
 * Each owner of shared state (floor.c, rate.c, pool.c, namedlock.c,
 * notify.c) reports its own tables and does what it does when one is full
 * (doc/security.md); this file only gathers them.  The launcher, the one
 * process of the cluster that looks at them all the time, says in the
 * server log when a table first had no room: once per table for as long
 * as the launcher runs, in a WARNING naming the table and its capacity
 * (dlsm_shared_tables counts the times since).  Its flags are the
 * launcher's own memory, so no lock guards them.
 *
 * Calls floor.c, rate.c, pool.c, namedlock.c and notify.c; called by
 * views.c and launcher.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/capacity.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "capacity.h"
#include "floor.h"
#include "namedlock.h"
#include "notify.h"
#include "pool.h"
#include "rate.h"

/* The tables said to have been full, by their place in the list. */
static bool said_full[DLSM_MAX_TABLES];

/*
 * Every shared table: out (DLSM_MAX_TABLES entries) gets one entry for
 * each, always in the same order; returns how many (none without
 * preloading).
 */
int
dlsm_capacity_tables(DlsmTableUsage *out)
{
	int			n = 0;

	n += dlsm_floor_usage(out + n);
	n += dlsm_rate_usage(out + n);
	n += dlsm_pool_usage(out + n);
	n += dlsm_named_usage(out + n);
	n += dlsm_notify_usage(out + n);
	return n;
}

/*
 * Say in the server log, once for each table, that it had no room: for
 * the launcher, at each of its passes.
 */
void
dlsm_capacity_say_full(void)
{
	DlsmTableUsage tables[DLSM_MAX_TABLES];
	int			n = dlsm_capacity_tables(tables);

	for (int i = 0; i < n; i++)
	{
		if (tables[i].full == 0 || said_full[i])
			continue;
		said_full[i] = true;
		ereport(WARNING,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("dlsm's shared table \"%s\" had no room for an entry",
						tables[i].name),
				 errdetail("It holds %lld entries; dlsm_shared_tables counts the times it had no room.",
						   (long long) tables[i].capacity),
				 errhint("See \"A shared table full\" in dlsm's doc/tuning.md for what to do.")));
	}
}
