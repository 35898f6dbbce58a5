/*-------------------------------------------------------------------------
 *
 * duration.c
 *	  Intervals as microseconds.
 *
 * dlsm counts the durations it is given (leases, waits, retry delays,
 * retention, handler timeouts, the periods of rate limits) in
 * microseconds, as PostgreSQL counts time.  An interval is months, days
 * and microseconds; it is converted here, once, counting a month as 30
 * days and a day as 24 hours, as PostgreSQL's interval comparisons do.
 * An interval too long for 64 bits of microseconds (a little under
 * 300,000 years), or infinite, has no such count: the arguments of dlsm's
 * functions are refused when they are 100 years or longer.  The durations
 * read from dlsm's own tables, where a hand may have written anything, are
 * cut to just under 100 years instead (and a negative one to 0), as an
 * error there would stop every use of the queue, the worker's passes over
 * all its database's queues included, until the row was mended.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/duration.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/int.h"

#include "compat.h"
#include "duration.h"

/*
 * Interval iv in microseconds, into result; false if it is infinite or
 * does not fit in an int64.
 */
bool
dlsm_interval_usecs(const Interval *iv, int64 *result)
{
	int64		days;
	int64		us;

	if (DLSM_INTERVAL_IS_INFINITE(iv))
		return false;
	days = (int64) iv->month * DAYS_PER_MONTH + iv->day;
	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &us) ||
		pg_add_s64_overflow(us, iv->time, &us))
		return false;
	*result = us;
	return true;
}

/*
 * Interval iv in microseconds, as a duration dlsm accepts: finite and
 * shorter than 100 years, or an error naming it as name (an argument, or
 * a column of dlsm's tables).  A negative one is the caller's to refuse.
 */
int64
dlsm_duration_usecs(const Interval *iv, const char *name)
{
	int64		us;

	if (!dlsm_interval_usecs(iv, &us) || us >= DLSM_FOREVER_US)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s is out of range", name),
				 errdetail("It must be shorter than 100 years.")));
	return us;
}

/*
 * Interval iv, read from dlsm's own tables, in microseconds: cut to
 * [0, DLSM_FOREVER_US - 1], never an error (see the header).
 */
int64
dlsm_duration_stored_usecs(const Interval *iv)
{
	int64		us;

	/* past 64 bits, or infinite: only its sign matters */
	if (!dlsm_interval_usecs(iv, &us))
		us = ((double) iv->month * DAYS_PER_MONTH + iv->day) * USECS_PER_DAY +
			iv->time < 0 ? 0 : DLSM_FOREVER_US;
	return Min(Max(us, 0), DLSM_FOREVER_US - 1);
}
