/*-------------------------------------------------------------------------
 *
 * fence.c
 *	  Fences that never go backwards: across crashes, failovers, and DROP
 *	  and CREATE EXTENSION.
 *
 * Fences come from one sequence per database, dlsm_fence_seq, whose value
 * lives in the space of a timeline: a server on timeline T hands out
 * fences from T << 52 up.  Each promotion of a standby starts a new
 * timeline, so the first fence of a new primary lies above every fence any
 * earlier primary handed out, even fences whose WAL never reached it.
 * Before the first fence on a timeline, a backend raises the sequence to
 * the timeline's floor (dlsm_fence_prepare); the raise is serialized
 * between backends by a session lock (locks.c) and done by a
 * non-transactional setval, so it never waits for a transaction.
 *
 * CREATE EXTENSION starts the sequence at the timeline's floor plus half
 * the current WAL position in bytes (dlsm_fence_initial).  Every fence taken
 * wrote WAL: the sequence logs a record of more than 64 bytes for every 32
 * values it hands out, so the fences of a dropped extension stayed below
 * half of the WAL written, and the new start lies above them.
 *
 * Bounds: a timeline's space holds 2^52 fences (4.5e15), and the WAL of
 * one timeline may reach 2^53 bytes (8 PiB) before a re-created extension
 * leaves it; timelines up to 2047 fit in a positive bigint.  The sequence
 * itself knows no timeline (its maximum would have to change at each
 * promotion), so every fence is taken by dlsm_fence_next, which refuses
 * one beyond the timeline's space; SQL text never calls nextval.
 *
 * Calls plans.c, locks.c, extension.c and identity.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/fence.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "utils/fmgrprotos.h"

#include "extension.h"
#include "fence.h"
#include "identity.h"
#include "locks.h"
#include "plans.h"

/* The timeline this backend raised the fence floor on, 0: none yet. */
static TimeLineID floored_timeline = 0;

/* The first fence of timeline tli, and one past its last. */
static int64
timeline_floor(TimeLineID tli)
{
	if (tli >= (1 << (63 - DLSM_FENCE_TIMELINE_SHIFT)))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("timeline %u is beyond the fence space of dlsm", tli),
				 errdetail("dlsm's fences hold timelines up to %d.",
						   (1 << (63 - DLSM_FENCE_TIMELINE_SHIFT)) - 1)));
	return (int64) tli << DLSM_FENCE_TIMELINE_SHIFT;
}

/* The last fence of timeline tli. */
static int64
timeline_last(TimeLineID tli)
{
	return timeline_floor(tli) +
		((INT64CONST(1) << DLSM_FENCE_TIMELINE_SHIFT) - 1);
}

/*
 * Refuse a fence beyond the space of timeline tli: the next timeline's
 * primary would hand it out again.
 */
static int64
in_space(int64 fence, TimeLineID tli)
{
	if (fence > timeline_last(tli))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the fence space of timeline %u is exhausted", tli),
				 errdetail("The last fence of timeline %u is %lld.",
						   tli, (long long) timeline_last(tli))));
	return fence;
}

/* Raise the fence sequence to at_least; returns its value. */
static int64
raise_to(int64 at_least)
{
	Datum		values[N_FENCE_FLOOR_PARAMS];
	bool		isnull;
	volatile int64 value = 0;

	values[P_FENCE_FLOOR] = Int64GetDatum(at_least);
	dlsm_lock_fence_floor(false);
	PG_TRY();
	{
		dlsm_plan_run_catalog(DLSM_C_FENCE_FLOOR, values, NULL, 1);
		value = DatumGetInt64(dlsm_plan_one_value(A_FENCE_VALUE, &isnull));
	}
	PG_FINALLY();
	{
		dlsm_lock_fence_floor(true);
	}
	PG_END_TRY();
	return value;
}

/*
 * Call before a statement that takes fences: the first time on a timeline,
 * raise the sequence to the timeline's floor.  The caller holds an SPI
 * connection and is not in recovery.
 */
void
dlsm_fence_prepare(void)
{
	TimeLineID	tli = GetWALInsertionTimeLine();

	if (tli == floored_timeline)
		return;
	(void) raise_to(timeline_floor(tli));
	floored_timeline = tli;
}

/*
 * The next fence (nextval of the fence sequence), as the current user, or
 * as the extension's owner when as_owner (lock grants, which need no right
 * on the sequence); every fence dlsm hands out comes from here.  Raises
 * 54000 rather than hand out a fence beyond this timeline's space.  Call
 * dlsm_fence_prepare first in the transaction.
 */
int64
dlsm_fence_next(bool as_owner)
{
	Oid			seq = dlsm_extension_object(DLSM_OBJ_FENCE_SEQ);
	DlsmIdentity saved;
	int64		fence;

	if (as_owner)
		dlsm_identity_switch(dlsm_extension_owner(), &saved);
	fence = DatumGetInt64(DirectFunctionCall1(nextval_oid,
											  ObjectIdGetDatum(seq)));
	if (as_owner)
		dlsm_identity_restore(&saved);
	return in_space(fence, GetWALInsertionTimeLine());
}

/*
 * dlsm_raise_fence: every later fence exceeds at_least.  Refused when
 * at_least lies beyond this timeline's space (a later promotion would not
 * lift the fences above it).  Returns the sequence's value.
 */
int64
dlsm_fence_raise(int64 at_least)
{
	TimeLineID	tli = GetWALInsertionTimeLine();

	dlsm_fence_prepare();
	if (at_least >= timeline_last(tli))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fence %lld lies beyond the fence space of timeline %u",
						(long long) at_least, tli),
				 errdetail("Fences of timeline %u lie below %llu.", tli,
						   (unsigned long long) timeline_last(tli) + 1)));
	return in_space(raise_to(at_least), tli);
}

/*
 * Where CREATE EXTENSION starts the fence sequence: the timeline's floor
 * plus half the WAL written so far.
 */
int64
dlsm_fence_initial(void)
{
	uint64		half = GetXLogInsertRecPtr() / 2;
	int64		span = INT64CONST(1) << DLSM_FENCE_TIMELINE_SHIFT;

	if (half >= (uint64) span)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the WAL position is beyond the fence space of dlsm")));
	return timeline_floor(GetWALInsertionTimeLine()) + (int64) half;
}
