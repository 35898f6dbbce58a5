/*-------------------------------------------------------------------------
 *
 * grouplimit.c
 *	  Concurrency and rate limits of groups of a queue's requests.
 *
 * A request may carry a group (the queue's group column); a queue may
 * limit its groups (dlsm_group_limits, set by dlsm_set_limit): a limit for
 * one group, or a default for every group without one of its own.
 * Requests without a group are never limited.  A claim asks here before it
 * claims a unit of a limited group, and passes over the unit when refused,
 * as it passes over a busy entity.
 *
 * Concurrency: at most n units of the group in progress, whether their
 * claims are written or still pending in a live transaction.  Pending
 * claims cannot be read from the queue, so each claim of a unit holds one
 * of the group's n slots (locks.c) until its transaction ends; the units
 * in progress are then those written in progress by committed
 * transactions (read from the queue, with a snapshot taken after the slot
 * was taken) and those whose transaction holds a slot.  A unit settled in
 * the transaction that claimed it gives its slot back at once: whether
 * that transaction commits (the unit is settled) or not (it is new
 * again), the unit is no longer in progress.  A transaction that
 * commits a claim releases its slot only after its rows read in progress
 * to every later snapshot, so a unit is never missed; it may be counted
 * twice for a moment (a claim then passes over a group with room), and a
 * transaction's own written claims count twice until it ends.  Both err on
 * the side of the limit.  A slot taken only to find the group without room
 * is given back at once, and its group comes free (floor.c): another claim
 * may have counted it.  A group whose units in progress, as committed,
 * alone fill it is parked at its queue's floor when a claim finds it so:
 * claims pass over its rows without counting again until one of its units
 * ends.  A group whose slot this transaction took, or one of whose units
 * it settled, comes free when the transaction ends, however it ends (wake.c
 * calls groups_end then, after the locks are released).  This file alone
 * calls the floors' group functions: claims and settles ask here.
 *
 * Rate: at most r claims of the group in any window of the given length:
 * claims of a group are spaced by per / r at least (the generic cell rate
 * algorithm without a burst), in shared memory (rate.c).  A claim that
 * takes its turn and then claims nothing gives it back; a claim rolled
 * back keeps it used.  A restart of the server forgets the spacing.  The
 * table of spacings is bounded per queue owner and per database: a group
 * that finds no entry for it is admitted, its rate not kept, and the
 * backend warns (once a minute at most), so that a full table never holds
 * back the groups of another tenant.
 *
 * Calls plans.c, locks.c, floor.c, rate.c, waits.c, wake.c and
 * duration.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/grouplimit.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "duration.h"
#include "floor.h"
#include "grouplimit.h"
#include "locks.h"
#include "plans.h"
#include "queue.h"
#include "waits.h"
#include "wake.h"

/*
 * A slot this transaction holds: taken by an admission, kept by the unit
 * claimed under it (process_id), given back when the unit is settled in
 * this transaction or the subtransaction that took it rolls back.  A unit
 * settled in a subtransaction keeps its slot from other transactions until
 * the settle is the transaction's own (its subtransactions released): a
 * rollback to a savepoint puts the unit back in progress.  Meanwhile this
 * transaction may claim another unit of the group under it: the new entry
 * borrows the slot (lender), and a rollback of the settle rolls the
 * borrower's claim back too (it came later, in the same subtransaction or
 * one below).
 */
typedef struct HeldSlot
{
	Oid			relid;
	char	   *group;
	uint64		key;			/* the group's dlsm_floor_group_key */
	int			slot;
	SubTransactionId subid;		/* who holds it */
	uint64		since;			/* the floors' clock before it was taken */
	bool		claimed;		/* a unit was claimed under it ... */
	pg_uuid_t	process_id;		/* ... this one */
	SubTransactionId settled;	/* the unit settled in this subtransaction; 0:
								 * not settled */
	bool		lent;			/* a later entry borrows the slot */
	struct HeldSlot *lender;	/* the entry whose slot this one borrows */
} HeldSlot;

/* This transaction's slots, in TopTransactionContext; NIL outside one. */
static List *held_slots = NIL;
static bool held_callbacks = false;

/*
 * A group of a queue whose slot this transaction took, or whose unit it
 * changed, and whether it comes free when the transaction ends.  A group
 * is listed when its slot is taken, so that an error that gives the slot
 * back (a cancel in the count) marks it without allocating.
 */
typedef struct EndingGroup
{
	Oid			relid;			/* InvalidOid: told to its floor already */
	uint64		key;			/* dlsm_floor_group_key */
	bool		free;			/* comes free at the end */
} EndingGroup;

/*
 * This transaction's groups (nending, room for maxending), and room for
 * as many keys to tell a floor at its end; in TopTransactionContext.
 */
static EndingGroup *ending = NULL;
static uint64 *ending_keys = NULL;
static int	nending = 0;
static int	maxending = 0;

/* A limit read from the registry, before sorting. */
typedef struct LimitRow
{
	char	   *group;
	DlsmLimit	limit;
} LimitRow;

static int
limit_row_cmp(const void *a, const void *b)
{
	return strcmp(((const LimitRow *) a)->group, ((const LimitRow *) b)->group);
}

/* The limit of result row i of DLSM_C_LIMITS_READ. */
static void
limit_from_row(uint64 i, DlsmLimit *limit)
{
	bool		isnull;
	Datum		d;

	d = dlsm_plan_value(i, A_LIMITS_CONCURRENCY, &isnull);
	/* (written by dlsm_set_limit, which checks it; a hand's write is cut) */
	limit->concurrency = isnull ? 0 :
		Min(Max(DatumGetInt32(d), 1), DLSM_MAX_SLOTS);
	d = dlsm_plan_value(i, A_LIMITS_RATE, &isnull);
	limit->rate = isnull ? 0 : DatumGetInt32(d);
	d = dlsm_plan_value(i, A_LIMITS_PER, &isnull);
	limit->per_us = 0;
	if (!isnull)
		limit->per_us = dlsm_duration_stored_usecs(DatumGetIntervalP(d));
}

/*
 * The limits of queue relid, in a new child of context, or NULL when it
 * has none.  The caller holds an SPI connection.
 */
static DlsmLimits *
limits_read(Oid relid, MemoryContext parent)
{
	Datum		values[N_LIMITS_READ_PARAMS];
	MemoryContext old = CurrentMemoryContext;
	MemoryContext context;
	DlsmLimits *limits;
	LimitRow   *rows;
	uint64		n;
	int			k = 0;

	values[P_LIMIT_QUEUE] = ObjectIdGetDatum(relid);
	n = dlsm_plan_read_catalog(DLSM_C_LIMITS_READ, values, NULL, 0);
	if (n == 0)
	{
		SPI_freetuptable(SPI_tuptable);
		MemoryContextSwitchTo(old);
		return NULL;
	}
	/* made under the caller's context: an error while filling frees it */
	context = AllocSetContextCreate(old, "dlsm queue limits",
									ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(context);
	limits = palloc0(sizeof(DlsmLimits));
	limits->context = context;
	rows = palloc(sizeof(LimitRow) * n);
	for (uint64 i = 0; i < n; i++)
	{
		char	   *group = dlsm_plan_text(i, A_LIMITS_GROUP);

		if (group == NULL)
		{
			limits->has_default = true;
			limit_from_row(i, &limits->dflt);
			continue;
		}
		rows[k].group = group;
		limit_from_row(i, &rows[k++].limit);
	}
	SPI_freetuptable(SPI_tuptable);
	qsort(rows, k, sizeof(LimitRow), limit_row_cmp);
	limits->ngroups = k;
	limits->groups = palloc(sizeof(char *) * Max(k, 1));
	limits->limits = palloc(sizeof(DlsmLimit) * Max(k, 1));
	for (int i = 0; i < k; i++)
	{
		limits->groups[i] = rows[i].group;
		limits->limits[i] = rows[i].limit;
	}
	pfree(rows);
	MemoryContextSwitchTo(old);
	MemoryContextSetParent(context, parent);
	return limits;
}

/*
 * The limits of queue (NULL: none), read on first use after the queue's
 * descriptor was made or found current again.  The caller holds an SPI
 * connection and a pin on queue.
 */
DlsmLimits *
dlsm_limits_get(DlsmQueue *queue)
{
	if (!queue->limits_known)
	{
		DlsmLimits *old = queue->limits;

		/* an error in the read leaves none, to be read again */
		queue->limits = NULL;
		if (old != NULL)
			MemoryContextDelete(old->context);
		queue->limits = limits_read(queue->relid, queue->context);
		queue->limits_known = true;
	}
	return queue->limits;
}

/* The limit group is under, or NULL when it has none. */
const DlsmLimit *
dlsm_limits_of(const DlsmLimits *limits, const char *group)
{
	int			lo = 0;

	if (limits == NULL || group == NULL)
		return NULL;
	for (int hi = limits->ngroups - 1; lo <= hi;)
	{
		int			mid = lo + (hi - lo) / 2;
		int			cmp = strcmp(group, limits->groups[mid]);

		if (cmp == 0)
			return &limits->limits[mid];
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return limits->has_default ? &limits->dflt : NULL;
}

/*
 * The units of group of queue in progress, as committed transactions
 * left them.  The caller holds an SPI connection and may read the queue.
 */
int64
dlsm_limits_in_progress(DlsmQueue *queue, const char *group)
{
	Datum		values[N_GROUP_LOAD_PARAMS];
	bool		isnull;
	int64		units;

	values[P_GROUP_LOAD_GROUP] = CStringGetTextDatum(group);
	dlsm_plan_run(&queue->plans, DLSM_Q_GROUP_LOAD, values, NULL, 1);
	units = DatumGetInt64(dlsm_plan_one_value(A_GROUP_LOAD_UNITS, &isnull));
	return units;
}

static void hold_slot(Oid relid, const char *group, uint64 key, int slot,
					  uint64 since);
static void release_slot(Oid relid, const char *group, int slot);
static HeldSlot *settled_slot(Oid relid, const char *group, int slot);
static void borrow_slot(HeldSlot *lender);
static void give_back_slot(Oid relid, const char *group,
						   DlsmAdmission *admission);
static bool groups_end(void);

/*
 * Free the groups this file marks at the end of every transaction (wake.c
 * calls groups_end); called once from _PG_init.
 */
void
dlsm_limits_init(void)
{
	dlsm_wake_at_end(groups_end);
}

/*
 * Is group (NULL: none) of queue under a limit?  If so, its key in the
 * floors (floor.c) and in a claim's pass is in *key.  The caller holds an
 * SPI connection.
 */
bool
dlsm_limits_limited(DlsmQueue *queue, const char *group, uint64 *key)
{
	if (dlsm_limits_of(dlsm_limits_get(queue), group) == NULL)
		return false;
	*key = dlsm_floor_group_key(group);
	return true;
}

/* The key of group in the floors (floor.c) and in a claim's pass. */
uint64
dlsm_limits_group_key(const char *group)
{
	return dlsm_floor_group_key(group);
}

/*
 * Is the group of queue whose key is given parked at the queue's floor, at
 * its limit until a unit of it ends?  For a claim that meets a unit of it.
 */
bool
dlsm_limits_parked(DlsmQueue *queue, uint64 key)
{
	return dlsm_floor_group_parked(queue->relid, key);
}

/*
 * A claim that checked its queue's floor found groups of queue relid (n
 * keys) with room: claims passing over their rows look again (floor.c).
 */
void
dlsm_limits_found_room(Oid relid, const uint64 *groups, int n)
{
	dlsm_floor_groups(relid, groups, n);
}

/* List the group of queue relid whose key is given for this transaction's end. */
static void
list_group(Oid relid, uint64 key)
{
	for (int i = 0; i < nending; i++)
		if (ending[i].relid == relid && ending[i].key == key)
			return;
	if (nending == maxending)
	{
		/* twice the room; the old arrays go with the transaction */
		int			max = Max(8, maxending * 2);
		EndingGroup *more = MemoryContextAlloc(TopTransactionContext,
											   sizeof(EndingGroup) * max);

		if (nending > 0)
			memcpy(more, ending, sizeof(EndingGroup) * nending);
		ending = more;
		ending_keys = MemoryContextAlloc(TopTransactionContext,
										 sizeof(uint64) * max);
		maxending = max;
	}
	ending[nending].relid = relid;
	ending[nending].key = key;
	ending[nending++].free = false;
}

/*
 * The group of queue relid whose key is given, listed already, comes free
 * when this transaction ends.  NB: runs in the transaction callbacks of an
 * abort, so allocates nothing.
 */
static void
mark_free(Oid relid, uint64 key)
{
	for (int i = 0; i < nending; i++)
		if (ending[i].relid == relid && ending[i].key == key)
			ending[i].free = true;
}

/*
 * This transaction took a slot of the group of queue relid whose key is
 * given, or changed a unit of the group: when it ends, however it ends,
 * the group may have room, and claims passing over its rows (parked:
 * floor.c) look again.
 */
static void
free_at_end(Oid relid, uint64 key)
{
	list_group(relid, key);
	mark_free(relid, key);
}

/*
 * A unit of group (NULL: none) of queue left 'in-progress' (a settle, a
 * reap): claims passing over the group's rows look again when this
 * transaction ends.  Runs no statement: the caller reads the result of
 * its own.
 */
void
dlsm_limits_group_changed(DlsmQueue *queue, const char *group)
{
	if (group != NULL)
		free_at_end(queue->relid, dlsm_floor_group_key(group));
}

/*
 * The transaction ended, its locks released (wake.c calls this): the
 * groups marked come free, each queue's told to its floor at once.  True
 * when there were any.
 */
static bool
groups_end(void)
{
	bool		freed = false;

	for (int i = 0; i < nending; i++)
	{
		Oid			relid = ending[i].relid;
		int			n = 0;

		for (int j = i; j < nending && relid != InvalidOid; j++)
		{
			if (ending[j].relid != relid)
				continue;
			if (ending[j].free)
				ending_keys[n++] = ending[j].key;
			ending[j].relid = InvalidOid;
		}
		if (n == 0)
			continue;
		dlsm_floor_groups(relid, ending_keys, n);
		freed = true;
	}
	/* they lived in TopTransactionContext */
	ending = NULL;
	ending_keys = NULL;
	nending = 0;
	maxending = 0;
	return freed;
}

/*
 * A slot of the group of queue relid whose key is given, taken after the
 * floors' clock read since, was given back before the transaction's end:
 * another claim may have counted it and found the group without room, so
 * the group comes free (floor.c).
 */
static void
slot_given_back(Oid relid, uint64 key, uint64 since)
{
	dlsm_floor_group_probed(relid, key, since);
}

/*
 * Take a slot of group's n for a unit, if the units in progress leave
 * room for one more: DLSM_ADMITTED when taken (admission->slot).  When
 * the units in progress, as committed, fill the group, and may_park, the
 * group is parked at the queue's floor from row up.
 */
static DlsmAdmit
take_slot(DlsmQueue *queue, const char *group, int n, bool may_park,
		  int64 row, DlsmAdmission *admission)
{
	int			held = 0;		/* by this transaction or others */
	int			taken = -1;
	bool		passed = false; /* took and gave back another slot */
	uint64		since = dlsm_floor_clock();
	uint64		key = dlsm_floor_group_key(group);
	int64		in_progress = 0;

	HeldSlot   *lender = NULL;

	for (int i = 0; i < n; i++)
	{
		DlsmSlotState state = dlsm_lock_slot_try(queue->relid, group, i);

		/* a slot of a unit settled in a subtransaction is free to us */
		if (state == DLSM_SLOT_MINE && lender == NULL &&
			(lender = settled_slot(queue->relid, group, i)) != NULL)
			continue;
		if (state != DLSM_SLOT_TAKEN)
			held++;
		else if (taken < 0 && lender == NULL)
			taken = i;
		else
		{
			dlsm_lock_slot_release(queue->relid, group, i);
			passed = true;
		}
	}
	if (lender != NULL && taken >= 0)
	{
		dlsm_lock_slot_release(queue->relid, group, taken);
		passed = true;
	}
	/* another claim may have counted a slot taken and given back */
	if (passed)
		slot_given_back(queue->relid, key, since);
	if (lender != NULL)
	{
		taken = lender->slot;
		borrow_slot(lender);
	}
	else if (taken < 0)
		return DLSM_AT_CONCURRENCY;
	else
	{
		/*
		 * Held from here, so that an error (a cancel in the count) gives it
		 * back with its subtransaction, and the abort marks the group to come
		 * free at the transaction's end (another claim may have parked it,
		 * counting this slot).
		 */
		hold_slot(queue->relid, group, key, taken, since);
	}
	admission->slot = taken;
	admission->borrowed = lender != NULL;
	/* read after the slot was taken: see the file's header */
	in_progress = dlsm_limits_in_progress(queue, group);
	if (in_progress + held + 1 > n)
	{
		/* no room: the slot comes free at once (see floor.c) */
		give_back_slot(queue->relid, group, admission);
		if (in_progress < n)
			return DLSM_AT_CONCURRENCY;
		/* filled by its units in progress: parked now, for every claim */
		if (may_park)
			dlsm_floor_group_park(queue->relid, key, row, since);
		return DLSM_FULL_IN_PROGRESS;
	}
	/* whichever way this ends, the transaction's end unparks the group */
	free_at_end(queue->relid, key);
	return DLSM_ADMITTED;
}

/*
 * The least time between two claims of a group under limit's rate: per /
 * rate rounded up (rounded down, rate + 1 claims would fit in one window),
 * and at least a microsecond.
 */
static int64
rate_spacing(const DlsmLimit *limit)
{
	return Max(1, (limit->per_us + limit->rate - 1) / limit->rate);
}

/* When this backend last warned of rates not kept; 0: never. */
static TimestampTz rates_warned_at = 0;

/*
 * A claim of a group was admitted without its rate (why: which share of
 * the table of rate limits is full); warn, unless this backend did less
 * than a minute ago.
 */
static void
warn_rate_not_kept(DlsmRateAnswer why, const DlsmRateTaken *taken)
{
	TimestampTz now = GetCurrentTimestamp();

	if (rates_warned_at != 0 &&
		!TimestampDifferenceExceeds(rates_warned_at, now, 60 * 1000))
		return;
	rates_warned_at = now;
	ereport(WARNING,
			(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
			 errmsg("rate limits of some groups are not kept"),
			 why == DLSM_RATE_OWNER_FULL ?
			 errdetail_plural("The queue owner's share of dlsm's table of rate limits (%d groups) is full; %lld claim was admitted without its rate since the server started.",
							  "The queue owner's share of dlsm's table of rate limits (%d groups) is full; %lld claims were admitted without their rate since the server started.",
							  (unsigned long) taken->not_kept,
							  DLSM_RATES_PER_OWNER, (long long) taken->not_kept) :
			 why == DLSM_RATE_DATABASE_FULL ?
			 errdetail_plural("The database's share of dlsm's table of rate limits (%d groups) is full; %lld claim was admitted without its rate since the server started.",
							  "The database's share of dlsm's table of rate limits (%d groups) is full; %lld claims were admitted without their rate since the server started.",
							  (unsigned long) taken->not_kept,
							  DLSM_RATES_PER_DATABASE, (long long) taken->not_kept) :
			 errdetail_plural("dlsm's table of rate limits (%d groups) is full where the group would go; %lld claim was admitted without its rate since the server started.",
							  "dlsm's table of rate limits (%d groups) is full where the group would go; %lld claims were admitted without their rate since the server started.",
							  (unsigned long) taken->not_kept,
							  DLSM_MAX_RATES, (long long) taken->not_kept),
			 errhint("Use shorter windows (per) or fewer rate-limited groups; a group's entry is free once its next claim is due.")));
}

/*
 * May a unit of group (NULL: none) of queue be claimed now?  If so, what
 * the claim takes of the group's limits is in admission, to give back
 * with dlsm_limits_give_back if the unit is not claimed after all; the
 * slot is held until the transaction ends otherwise.  A group found
 * filled by its units in progress, as committed, is parked at the queue's
 * floor from the unit's row up, when may_park (the claim read the floor
 * and may park there: floor.c).  The caller holds an SPI connection.
 */
DlsmAdmit
dlsm_limits_admit(DlsmQueue *queue, const char *group, bool may_park,
				  int64 row, DlsmAdmission *admission)
{
	const DlsmLimit *limit = dlsm_limits_of(dlsm_limits_get(queue), group);
	DlsmAdmit	why;

	admission->group = NULL;
	admission->slot = -1;
	admission->borrowed = false;
	admission->rate_taken = false;
	if (limit == NULL)
		return DLSM_ADMITTED;
	if (limit->concurrency > 0 &&
		(why = take_slot(queue, group, limit->concurrency, may_park, row,
						 admission)) != DLSM_ADMITTED)
		return why;
	if (limit->rate > 0)
	{
		DlsmRateAnswer rate = dlsm_rate_take(queue->relid, queue->owner,
											 dlsm_floor_group_key(group),
											 rate_spacing(limit),
											 &admission->rate);

		if (rate != DLSM_RATE_TAKEN && rate != DLSM_RATE_HELD)
		{
			/* no entry for the group: admitted, its rate not kept */
			warn_rate_not_kept(rate, &admission->rate);
			admission->group = group;
			return DLSM_ADMITTED;
		}
		if (rate == DLSM_RATE_HELD)
		{
			give_back_slot(queue->relid, group, admission);
			return DLSM_AT_RATE;
		}
		admission->rate_taken = true;
	}
	admission->group = group;
	return DLSM_ADMITTED;
}

/* The unit admitted was not claimed: give back what its admission took. */
void
dlsm_limits_give_back(DlsmQueue *queue, DlsmAdmission *admission)
{
	if (admission->group == NULL)
		return;
	give_back_slot(queue->relid, admission->group, admission);
	if (admission->rate_taken)
		dlsm_rate_give_back(queue->relid,
							dlsm_floor_group_key(admission->group),
							&admission->rate);
	admission->group = NULL;
}

/*
 * Set the limits of group (NULL: the default of every group) of queue,
 * with the rate's window per as given, or remove them when limit is NULL.
 * Every backend reads the queue's limits again.  The caller checked the
 * values and holds an SPI connection.
 */
void
dlsm_limits_set(DlsmQueue *queue, const char *group, const DlsmLimit *limit,
				Interval *per)
{
	Datum		values[N_LIMIT_SET_PARAMS];
	char		nulls[N_LIMIT_SET_PARAMS];

	memset(nulls, ' ', sizeof(nulls));
	values[P_LIMIT_QUEUE] = ObjectIdGetDatum(queue->relid);
	values[P_LIMIT_GROUP] = group ? CStringGetTextDatum(group) : (Datum) 0;
	nulls[P_LIMIT_GROUP] = group ? ' ' : 'n';
	if (limit == NULL)
		dlsm_plan_run_catalog(DLSM_C_LIMIT_REMOVE, values, nulls, 0);
	else
	{
		values[P_LIMIT_CONCURRENCY] = Int32GetDatum(limit->concurrency);
		nulls[P_LIMIT_CONCURRENCY] = limit->concurrency > 0 ? ' ' : 'n';
		values[P_LIMIT_RATE] = Int32GetDatum(limit->rate);
		nulls[P_LIMIT_RATE] = limit->rate > 0 ? ' ' : 'n';
		values[P_LIMIT_PER] = IntervalPGetDatum(per);
		nulls[P_LIMIT_PER] = limit->rate > 0 ? ' ' : 'n';
		dlsm_plan_run_catalog(DLSM_C_LIMIT_SET, values, nulls, 0);
	}
	CacheInvalidateRelcacheByRelid(queue->relid);
	/* groups passed over may have room now: claims look at every row */
	dlsm_wake_queue_changed_at_commit(queue->relid);
}

/* When group's rate limit lets its next claim go (now, if it does). */
TimestampTz
dlsm_limits_next_claim(DlsmQueue *queue, const char *group)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz next_at = dlsm_rate_next(queue->relid,
										 dlsm_floor_group_key(group));

	return Max(next_at, now);
}

/*
 * The transaction ended: its slots went with it.  A rollback may have
 * interrupted a count (an error after a slot was taken): the groups of the
 * slots it held come free at its end.
 */
static void
held_xact_end(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT)
	{
		foreach(lc, held_slots)
		{
			HeldSlot   *held = (HeldSlot *) lfirst(lc);

			mark_free(held->relid, held->key);
		}
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		held_slots = NIL;		/* freed with TopTransactionContext */
}

/*
 * The unit of held was settled, for this transaction's end: its slot goes
 * to its borrower if any, else back to its group.  The caller drops held.
 */
static void
settle_done(HeldSlot *held)
{
	/* a lender's settle came first: it is the transaction's own already */
	Assert(held->lender == NULL);
	if (held->lent)
	{
		ListCell   *bc;

		foreach(bc, held_slots)
		{
			HeldSlot   *borrower = (HeldSlot *) lfirst(bc);

			if (borrower->lender == held)
				borrower->lender = NULL;
		}
	}
	else
	{
		dlsm_lock_slot_release(held->relid, held->group, held->slot);
		/* claims passing over the group look again now */
		dlsm_floor_groups(held->relid, &held->key, 1);
		dlsm_wait_wake_all();
	}
}

/*
 * A subtransaction ended: its slots go to its parent, or when it rolled
 * back (its claims are forgotten), back to their groups.
 */
static void
held_subxact_end(SubXactEvent event, SubTransactionId mySubid,
				 SubTransactionId parentSubid, void *arg)
{
	ListCell   *lc;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	foreach(lc, held_slots)
	{
		HeldSlot   *held = (HeldSlot *) lfirst(lc);

		if (event == SUBXACT_EVENT_COMMIT_SUB)
		{
			if (held->subid == mySubid)
				held->subid = parentSubid;
			if (held->settled != mySubid)
				continue;
			held->settled = parentSubid;
			/* the settle is the transaction's own now */
			if (parentSubid == TopSubTransactionId)
			{
				settle_done(held);
				held_slots = foreach_delete_current(held_slots, lc);
			}
			continue;
		}
		/* rolled back: a unit settled in it is in progress again */
		if (held->settled == mySubid)
			held->settled = InvalidSubTransactionId;
		if (held->subid != mySubid)
			continue;
		if (held->lender != NULL)
			held->lender->lent = false;
		else
		{
			dlsm_lock_slot_release(held->relid, held->group, held->slot);
			/* a claim may have counted it, at any time since it was taken */
			slot_given_back(held->relid, held->key, 0);
			/* as after an admission (a cancel in the count left it unmarked) */
			mark_free(held->relid, held->key);
		}
		held_slots = foreach_delete_current(held_slots, lc);
	}
}

/*
 * This transaction took slot of group (its key given) of queue relid
 * after the floors' clock read since.
 */
static void
hold_slot(Oid relid, const char *group, uint64 key, int slot, uint64 since)
{
	MemoryContext old;
	HeldSlot   *held;

	if (!held_callbacks)
	{
		RegisterXactCallback(held_xact_end, NULL);
		RegisterSubXactCallback(held_subxact_end, NULL);
		held_callbacks = true;
	}
	/* listed now: an abort marks it without allocating */
	list_group(relid, key);
	old = MemoryContextSwitchTo(TopTransactionContext);
	held = palloc0(sizeof(HeldSlot));
	held->relid = relid;
	held->group = pstrdup(group);
	held->key = key;
	held->slot = slot;
	held->subid = GetCurrentSubTransactionId();
	held->since = since;
	held_slots = lappend(held_slots, held);
	MemoryContextSwitchTo(old);
}

/*
 * Give back slot of group of queue relid, which this transaction holds:
 * another claim may have counted it (slot_given_back).
 */
static void
release_slot(Oid relid, const char *group, int slot)
{
	ListCell   *lc;
	HeldSlot   *found = NULL;

	foreach(lc, held_slots)
	{
		HeldSlot   *held = (HeldSlot *) lfirst(lc);

		if (held->relid == relid && held->slot == slot &&
			strcmp(held->group, group) == 0)
		{
			found = held;
			held_slots = foreach_delete_current(held_slots, lc);
			break;
		}
	}
	dlsm_lock_slot_release(relid, group, slot);
	/* (not found, it cannot be: then any park since it was taken) */
	if (found != NULL)
		slot_given_back(relid, found->key, found->since);
	else
		slot_given_back(relid, dlsm_floor_group_key(group), 0);
}

/*
 * The entry of slot of group of queue relid when its unit was settled in a
 * subtransaction and no later claim borrows it, else NULL.
 */
static HeldSlot *
settled_slot(Oid relid, const char *group, int slot)
{
	ListCell   *lc;

	foreach(lc, held_slots)
	{
		HeldSlot   *held = (HeldSlot *) lfirst(lc);

		if (held->settled != InvalidSubTransactionId && !held->lent &&
			held->relid == relid && held->slot == slot &&
			strcmp(held->group, group) == 0)
			return held;
	}
	return NULL;
}

/* A claim of this transaction takes the slot of lender's settled unit. */
static void
borrow_slot(HeldSlot *lender)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	HeldSlot   *held = palloc0(sizeof(HeldSlot));

	held->relid = lender->relid;
	held->group = lender->group;
	held->key = lender->key;
	held->slot = lender->slot;
	held->subid = GetCurrentSubTransactionId();
	held->since = lender->since;
	held->lender = lender;
	lender->lent = true;
	held_slots = lappend(held_slots, held);
	MemoryContextSwitchTo(old);
}

/*
 * The unit admitted was not claimed: give back the slot its admission took
 * of group of queue relid, or the one it borrowed.
 */
static void
give_back_slot(Oid relid, const char *group, DlsmAdmission *admission)
{
	ListCell   *lc;

	if (admission->slot < 0)
		return;
	if (!admission->borrowed)
		release_slot(relid, group, admission->slot);
	else
	{
		foreach(lc, held_slots)
		{
			HeldSlot   *held = (HeldSlot *) lfirst(lc);

			if (held->lender != NULL && !held->claimed &&
				held->relid == relid && held->slot == admission->slot &&
				strcmp(held->group, group) == 0)
			{
				held->lender->lent = false;
				held_slots = foreach_delete_current(held_slots, lc);
				break;
			}
		}
	}
	admission->slot = -1;
	admission->borrowed = false;
}

/*
 * Unit process_id of queue was claimed under admission: its slot stays
 * taken until the unit is settled in this transaction, or it ends.
 */
void
dlsm_limits_claimed(DlsmQueue *queue, const DlsmAdmission *admission,
					const pg_uuid_t *process_id)
{
	ListCell   *lc;

	if (admission->group == NULL || admission->slot < 0)
		return;
	foreach(lc, held_slots)
	{
		HeldSlot   *held = (HeldSlot *) lfirst(lc);

		if (!held->claimed && held->relid == queue->relid &&
			held->slot == admission->slot &&
			strcmp(held->group, admission->group) == 0)
		{
			held->claimed = true;
			held->process_id = *process_id;
		}
	}
}

/*
 * Unit process_id of queue was settled: if this transaction claimed it,
 * its slot is free again.
 */
void
dlsm_limits_settled(DlsmQueue *queue, const pg_uuid_t *process_id)
{
	ListCell   *lc;

	foreach(lc, held_slots)
	{
		HeldSlot   *held = (HeldSlot *) lfirst(lc);

		if (!held->claimed || held->settled != InvalidSubTransactionId ||
			held->relid != queue->relid ||
			memcmp(&held->process_id, process_id, UUID_LEN) != 0)
			continue;

		/*
		 * A settle in a subtransaction may be rolled back, its unit in
		 * progress again: the slot is this transaction's to claim under until
		 * the settle is its own (see HeldSlot).
		 */
		held->settled = GetCurrentSubTransactionId();
		if (GetCurrentTransactionNestLevel() == 1)
		{
			settle_done(held);
			held_slots = foreach_delete_current(held_slots, lc);
		}
	}
}
