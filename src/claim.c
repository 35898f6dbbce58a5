/*-------------------------------------------------------------------------
 *
 * claim.c
 *	  Claiming units of work: the algorithm of the article "Implementing a
 *	  Distributed Lock State Machine" (FOR UPDATE SKIP LOCKED, a line in
 *	  the sand, grouped updates) in one call.
 *
 * A claim walks the ready rows in id order from the caller's line in the
 * sand, passing over, within the call, the entities it cannot take: one
 * held by another claim (the entity lock of locks.c is busy), one with a
 * request in progress or an older open request, and an update whose create
 * is not complete, or, on a queue whose updates wait for their create
 * (updates_wait_for_create), not enqueued yet.  At most one unit per
 * entity is in progress at any time.
 * A create never waits behind its own entity's updates: an update enqueued
 * before its create waits for the create instead, so the walk passes over
 * such updates and still looks at the entity's create.
 *
 * Single-request units (every kind but update) found in one scan are
 * claimed together, in one statement; an update is claimed with the
 * entity's ready updates after it, up to its next request of another kind,
 * as one unit under one process id.  Every claim statement runs after the
 * entity locks were granted, with a fresh snapshot, so it sees every claim
 * of the entity that committed before; it checks the rows are in the state
 * it expects ('new', nothing blocking them) and locks them (FOR UPDATE).
 * It writes nothing: each unit gets its process id, fence and lease here,
 * and pending.c keeps them until a settle in the same transaction writes
 * the rows' outcome, or the commit writes them 'in-progress'.
 *
 * A walk starts at the queue's floor rather than at its line in the sand,
 * when that is below: no row under the floor is ready, but those of parked
 * entities and those claimed by transactions in flight (floor.h defines
 * the floor and parked entities).  Each walk that began at the floor moves
 * it to where it met the first row it could not pass over: the first new
 * row, unless that row's entity waits for its create (the walk parks the
 * entity and goes on).  Commits that make rows ready again lower it
 * (wake.c).
 *
 * A claim with a wait sleeps on the condition variable of waits.c and is
 * woken, after their locks are released, by the end of any transaction
 * that made work claimable (wake.c).
 *
 * Calls plans.c, queue.c, locks.c, fence.c, wake.c, pending.c, floor.c,
 * grouplimit.c (the groups' limits, and the groups at the floor), names.c
 * and waits.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/claim.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "claim.h"
#include "fence.h"
#include "floor.h"
#include "grouplimit.h"
#include "guc.h"
#include "locks.h"
#include "names.h"
#include "pending.h"
#include "waits.h"
#include "wake.h"

/*
 * Candidates read per scan.  A pass reads SCAN_WIDE at a time when it
 * claims many units, or once a scan claimed nothing (rows waiting behind a
 * busy entity).
 */
#define SCAN_BATCH 16
#define SCAN_WIDE 128

/*
 * At most this many groups found at their limit are named to a pass's
 * later scans, which leave their rows out; the rows of more are passed
 * over one by one.
 */
#define SCAN_FULL_NAMES 32

/* A waiting claim looks again at least this often, for delayed rows. */
#define WAIT_RECHECK_MS 1000

/*
 * A claim scans from its line in the sand instead of the queue's floor at
 * least this often, to find rows made ready behind dlsm's back (an UPDATE
 * by hand setting a row back to 'new').
 */
#define FLOOR_CHECK_MS 1000

typedef struct Candidate
{
	int64		id;
	char	   *kind;
	char	   *entity;
	char	   *group;			/* its group, or NULL */
	bool		due;			/* its run_at has come */
	bool		blocked;		/* its entity blocks it (limited groups, asked
								 * by admit) */
	bool		in_flight;		/* claimed by a transaction in flight */
	DlsmAdmission admission;	/* what it took of its group's limits */
} Candidate;

/* What a pass knows of an entity it looked at. */
typedef enum EntityState
{
	ENTITY_UNSEEN,				/* not looked at yet */
	ENTITY_DONE,				/* claimed, or busy: pass over its requests */
	ENTITY_WAITS_FOR_CREATE,	/* its updates wait: only its create may go */
	ENTITY_HELD_BY_CREATE		/* its create is in progress: all of it waits */
} EntityState;

/*
 * A pass's walk from the queue's floor: how far it found no row it could
 * claim but those of entities that wait for their create (parked), to
 * move the floor there (floor.c).
 */
typedef struct FloorWalk
{
	DlsmFloorSeen seen;			/* the floor, read before the first scan */
	bool		open;			/* every row so far was passed over */
	int64		line;			/* the last id passed over */
	int			nparked;		/* entities parked by this walk */
	DlsmParked	parked[DLSM_MAX_PARKED];
	List	   *groups;			/* FullGroups parked by it, in walk order */
	List	   *admitted;		/* a check's: groups it admitted (keys) */
} FloorWalk;

/* A group a pass found at its limit, or parked at the floor. */
typedef struct FullGroup
{
	uint64		key;			/* dlsm_limits_group_key of the group */
	bool		parkable;		/* at its concurrency limit: its rows wait for
								 * a unit of it to end (not for time) */
	bool		solid;			/* its units in progress, as committed, fill
								 * it: only their ends unpark it */
	int64		lowest;			/* its first row the walk passed over;
								 * PG_INT64_MAX: none */
} FullGroup;

typedef struct SeenEntity
{
	uint64		key;			/* hash of the entity */
	EntityState state;
	bool		changed;		/* this pass settled some of its rows */
	int64		waits_from;		/* parked: its rows from this id up wait;
								 * PG_INT64_MAX: not parked */
} SeenEntity;

/* One walk over the ready rows. */
typedef struct ClaimPass
{
	DlsmClaimArgs *args;
	DlsmClaimEmit emit;
	void	   *arg;
	HTAB	   *seen;			/* SeenEntity by hash of the entity */
	HTAB	   *full;			/* groups found at their limit, or NULL */
	List	   *full_names;		/* their names, as text Datums */
	FloorWalk	floor;
	bool		wrote;			/* wrote rows (failed updates) */
	TimestampTz rate_due;		/* the soonest a group its rate held back may
								 * be claimed; 0: none */
	int			units;			/* claimed so far */
	Candidate  *singles[SCAN_WIDE]; /* entity locked, to claim together */
	int			nsingles;
} ClaimPass;

/* One locked row of a claim statement. */
typedef struct LockedRow
{
	int64		id;
	HeapTuple	tuple;
} LockedRow;

static int
locked_row_cmp(const void *a, const void *b)
{
	int64		x = ((const LockedRow *) a)->id;
	int64		y = ((const LockedRow *) b)->id;

	return (x > y) - (x < y);
}

/* A fresh process id; its last byte is dlsm.node_id unless that is 0. */
static void
new_process_id(pg_uuid_t *pid)
{
	if (!pg_strong_random(pid->data, UUID_LEN))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random values")));
	pid->data[6] = (pid->data[6] & 0x0f) | 0x40;	/* version 4 */
	pid->data[8] = (pid->data[8] & 0x3f) | 0x80;	/* RFC 4122 variant */
	if (dlsm_node_id != 0)
		pid->data[UUID_LEN - 1] = (unsigned char) dlsm_node_id;
}

/*
 * Give the row of tuple (columns A_LOCK_*) what its unit's claim gives it,
 * claimed, keep it as pending and hand it to the caller.
 */
static void
claim_row(ClaimPass *pass, HeapTuple tuple, DlsmClaimed *claimed)
{
	Datum		values[N_CLAIM - 1];
	bool		nulls[N_CLAIM - 1];

	/* the locked columns are the first ones of the result */
	StaticAssertStmt((int) A_LOCK_ID == (int) A_CLAIM_ID &&
					 (int) A_LOCK_KIND == (int) A_CLAIM_KIND &&
					 (int) A_LOCK_ENTITY == (int) A_CLAIM_ENTITY &&
					 (int) A_LOCK_PAYLOAD == (int) A_CLAIM_PAYLOAD &&
					 (int) N_LOCK == (int) A_CLAIM_PROCESS_ID,
					 "the claim's result begins with the locked row");
	Assert(SPI_tuptable->tupdesc->natts == N_LOCK - 1);
	heap_deform_tuple(tuple, SPI_tuptable->tupdesc, values, nulls);
	claimed->id = DatumGetInt64(values[A_LOCK_ID - 1]);
	/* NULL if so written since the scan (entity keys take NULL as empty) */
	claimed->entity =
		dlsm_floor_entity_key(nulls[A_LOCK_ENTITY - 1] ? NULL :
							  TextDatumGetCString(values[A_LOCK_ENTITY - 1]));
	dlsm_pending_add(pass->args->queue->relid, claimed,
					 pass->args->process_id != NULL);
	values[A_CLAIM_PROCESS_ID - 1] = UUIDPGetDatum(&claimed->process_id);
	values[A_CLAIM_FENCE - 1] = Int64GetDatum(claimed->fence);
	values[A_CLAIM_LEASE_UNTIL - 1] = TimestampTzGetDatum(claimed->lease_until);
	nulls[A_CLAIM_PROCESS_ID - 1] = false;
	nulls[A_CLAIM_FENCE - 1] = false;
	nulls[A_CLAIM_LEASE_UNTIL - 1] = false;
	pass->emit(pass->arg, values, nulls);
}

/*
 * Unit process_id begins at row id: the candidate of that row (among
 * cands) keeps the slot its admission took (grouplimit.c).
 */
static void
unit_claimed(ClaimPass *pass, int64 id, const pg_uuid_t *process_id,
			 Candidate **cands, int ncands)
{
	for (int k = 0; k < ncands; k++)
		if (cands[k]->id == id)
			dlsm_limits_claimed(pass->args->queue, &cands[k]->admission,
								process_id);
}

/*
 * Run a claim statement (it locks the rows it claims) and claim what it
 * locked, oldest first: each row a unit of its own, or all of them one
 * unit when one_unit; cands are the candidates it was run for.  Returns
 * how many rows; they stay in SPI_tuptable.
 */
static uint64
run_claim(ClaimPass *pass, DlsmQueryId query, Datum *values, bool one_unit,
		  Candidate **cands, int ncands)
{
	DlsmClaimArgs *args = pass->args;
	TimestampTz now = GetCurrentTimestamp();
	DlsmClaimed claimed;
	LockedRow  *rows;
	uint64		n;

	values[P_LOCK_NOW] = TimestampTzGetDatum(now);
	n = dlsm_plan_run(&args->queue->plans, query, values, NULL, 0);
	if (n == 0)
		return 0;
	/* a rollback frees the rows */
	dlsm_wake_queue_claimers_at_end(pass->args->queue->relid);
	rows = palloc(sizeof(LockedRow) * n);
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		rows[i].tuple = SPI_tuptable->vals[i];
		rows[i].id = DatumGetInt64(dlsm_plan_value(i, A_LOCK_ID, &isnull));
	}
	qsort(rows, n, sizeof(LockedRow), locked_row_cmp);
	claimed.claimed_at = now;
	claimed.lease_until = now + args->lease_us;
	for (uint64 i = 0; i < n; i++)
	{
		if (i == 0 || !one_unit)
		{
			if (args->process_id != NULL)
				claimed.process_id = *args->process_id;
			else
				new_process_id(&claimed.process_id);
			claimed.fence = dlsm_fence_next(false);
			unit_claimed(pass, rows[i].id, &claimed.process_id, cands, ncands);
		}
		claim_row(pass, rows[i].tuple, &claimed);
	}
	dlsm_pending_to_floor();
	pfree(rows);
	return n;
}

/*
 * An update of entity c was not claimable: when its entity's create ended
 * in error, settle the entity's pending updates as error.  Returns the
 * entity's state for the rest of the pass: waiting for its create (new,
 * so that it may be claimed, or in progress, or, when the queue's updates
 * wait for their create, still to come), unseen when its updates were
 * just settled as error (its next request may go), or done (busy).
 */
static EntityState
check_create(ClaimPass *pass, Candidate *c)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_ENTITY_STATE_PARAMS];
	bool		isnull;
	bool		blocked;
	char	   *status;
	char	   *detail = NULL;
	EntityState state = ENTITY_DONE;

	values[P_ENTITY_STATE_ENTITY] = CStringGetTextDatum(c->entity);
	values[P_ENTITY_STATE_ID] = Int64GetDatum(c->id);
	dlsm_plan_run(&queue->plans, DLSM_Q_ENTITY_STATE, values, NULL, 1);
	status = dlsm_plan_text(0, A_ENTITY_STATE_CREATE_STATUS);
	blocked = DatumGetBool(dlsm_plan_value(0, A_ENTITY_STATE_BLOCKED, &isnull));
	if (!blocked && status != NULL && strcmp(status, "error") == 0)
		detail = psprintf("create request %s of entity \"%s\" ended in error",
						  dlsm_plan_text(0, A_ENTITY_STATE_CREATE_ID),
						  c->entity);
	if (status != NULL && strcmp(status, "new") == 0)
		state = ENTITY_WAITS_FOR_CREATE;
	else if (status == NULL && !blocked && queue->updates_wait_for_create)
		state = ENTITY_WAITS_FOR_CREATE;	/* its create is still to come */
	else if (status != NULL && strcmp(status, "in-progress") == 0)
		state = ENTITY_HELD_BY_CREATE;
	SPI_freetuptable(SPI_tuptable);
	if (detail != NULL)
	{
		values[P_FAIL_UPDATES_ENTITY] = CStringGetTextDatum(c->entity);
		values[P_FAIL_UPDATES_DETAIL] = CStringGetTextDatum(detail);
		dlsm_plan_run(&queue->plans, DLSM_Q_FAIL_UPDATES, values, NULL, 0);
		dlsm_wake_entity_changed_at_commit(queue->relid, c->entity);
		pass->wrote = true;
		return ENTITY_UNSEEN;
	}
	return state;
}

static SeenEntity *seen_entity(ClaimPass *pass, Candidate *c);

/* Does its entity block candidate c (DLSM_Q_BLOCKED)? */
static bool
candidate_blocked(ClaimPass *pass, Candidate *c)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_BLOCKED_PARAMS];
	bool		isnull;
	bool		blocked;

	values[P_BLOCKED_ID] = Int64GetDatum(c->id);
	values[P_BLOCKED_ENTITY] = CStringGetTextDatum(c->entity);
	values[P_BLOCKED_KIND] = CStringGetTextDatum(c->kind);
	values[P_BLOCKED_WAIT_FOR_CREATE] =
		BoolGetDatum(queue->updates_wait_for_create);
	dlsm_plan_run(&queue->plans, DLSM_Q_BLOCKED, values, NULL, 1);
	blocked = DatumGetBool(dlsm_plan_one_value(A_BLOCKED_ANY, &isnull));
	return blocked;
}

/*
 * May candidate c be claimed under its group's limits?  A group refused
 * is passed over for the rest of the pass, as a busy entity is.  A
 * candidate its entity blocks is refused without asking: its claim would
 * fail, and the slot it took meanwhile would keep a claimable unit of its
 * group out of this pass.  (Whether it is blocked is asked only of a
 * candidate of a limited group, and of a single only when its group is not
 * known to be at its limit: it is passed over either way.)
 */
static bool
admit(ClaimPass *pass, Candidate *c)
{
	DlsmQueue  *queue = pass->args->queue;
	uint64		key;
	DlsmAdmit	why;
	FullGroup  *full;
	bool		known_full;
	bool		parked = false;

	c->admission.group = NULL;
	if (pass->full == NULL || c->group == NULL ||
		!dlsm_limits_limited(queue, c->group, &key))
		return true;
	known_full = hash_search(pass->full, &key, HASH_FIND, NULL) != NULL;

	/*
	 * A group parked at the floor is at its limit until a unit of it ends,
	 * which unparks it; a check asks again (changes made by hand).
	 */
	if (!known_full && pass->floor.seen.may_park &&
		!pass->floor.seen.check)
		parked = dlsm_limits_parked(queue, key);
	if ((!known_full && !parked) || strcmp(c->kind, "update") == 0)
	{
		c->blocked = candidate_blocked(pass, c);
		if (c->blocked && !seen_entity(pass, c)->changed)
			return false;
	}
	if (known_full)
		return false;
	if (parked)
		why = DLSM_AT_CONCURRENCY;
	else
		why = dlsm_limits_admit(queue, c->group, pass->floor.seen.may_park,
								c->id, &c->admission);
	if (why == DLSM_ADMITTED)
	{
		/* a check unparks a group it finds with room */
		if (pass->floor.seen.check)
			pass->floor.admitted = lappend(pass->floor.admitted,
										   memcpy(palloc(sizeof(uint64)),
												  &key, sizeof(uint64)));
		return true;
	}
	if (why == DLSM_AT_RATE)
	{
		TimestampTz due = dlsm_limits_next_claim(queue, c->group);

		/* (not when its spacing is not known: no entry was free for it) */
		if (due > GetCurrentTimestamp() &&
			(pass->rate_due == 0 || due < pass->rate_due))
			pass->rate_due = due;
	}
	full = hash_search(pass->full, &key, HASH_ENTER, NULL);
	full->parkable = why != DLSM_AT_RATE;
	/* filled by its units in progress: parked already (grouplimit.c) */
	full->solid = why == DLSM_FULL_IN_PROGRESS;
	full->lowest = PG_INT64_MAX;
	/* later scans of the pass leave its rows out: see scan() */
	if (list_length(pass->full_names) < SCAN_FULL_NAMES)
		pass->full_names =
			lappend(pass->full_names,
					DatumGetPointer(CStringGetTextDatum(c->group)));
	return false;
}

/*
 * Try to claim the group of updates that starts at candidate c.  On
 * success the entity lock stays held until the transaction ends; otherwise
 * it is released.  Returns the entity's state for the rest of the pass.
 */
static EntityState
try_group(ClaimPass *pass, Candidate *c)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_LOCK_GROUP_PARAMS];
	EntityState state;

	if (!dlsm_lock_entity_try(queue->relid, c->entity))
		return ENTITY_DONE;
	if (!admit(pass, c))
	{
		/* blocked: its create may have failed, which check_create settles */
		state = c->blocked ? check_create(pass, c) : ENTITY_DONE;
		dlsm_lock_entity_release(queue->relid, c->entity);
		return state;
	}
	values[P_LOCK_ID] = Int64GetDatum(c->id);
	values[P_LOCK_ENTITY] = CStringGetTextDatum(c->entity);
	values[P_LOCK_WAIT_FOR_CREATE] =
		BoolGetDatum(queue->updates_wait_for_create);
	if (run_claim(pass, DLSM_Q_LOCK_GROUP, values, true, &c, 1) > 0)
	{
		SPI_freetuptable(SPI_tuptable);
		pass->units++;
		return ENTITY_DONE;
	}
	SPI_freetuptable(SPI_tuptable);
	dlsm_limits_give_back(queue, &c->admission);

	/* busy, waiting for its create, or taken by a client locking by hand */
	state = check_create(pass, c);
	dlsm_lock_entity_release(queue->relid, c->entity);
	return state;
}

/*
 * Claim, in one statement, the single-request units gathered so far, whose
 * entity locks are held; release the locks of those that turned out not
 * claimable.
 */
static void
claim_singles(ClaimPass *pass)
{
	DlsmQueue  *queue = pass->args->queue;
	Datum		values[N_LOCK_SINGLES_PARAMS];
	Datum	   *ids;
	uint64		claimed;

	if (pass->nsingles == 0)
		return;
	ids = palloc(sizeof(Datum) * pass->nsingles);
	for (int i = 0; i < pass->nsingles; i++)
		ids[i] = Int64GetDatum(pass->singles[i]->id);
	values[P_LOCK_ID] = pass->nsingles == 1 ? ids[0] :
		PointerGetDatum(construct_array(ids, pass->nsingles, INT8OID, 8,
										FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	claimed = run_claim(pass, pass->nsingles == 1 ?
						DLSM_Q_LOCK_ONE : DLSM_Q_LOCK_SINGLES, values, false,
						pass->singles, pass->nsingles);

	/* busy, or taken by a client locking by hand: give the entity back */
	for (int i = 0; i < pass->nsingles; i++)
	{
		bool		found = false;

		for (uint64 r = 0; r < claimed && !found; r++)
		{
			bool		isnull;

			found = DatumGetInt64(dlsm_plan_value(r, A_LOCK_ID, &isnull)) ==
				pass->singles[i]->id;
		}
		if (!found)
		{
			dlsm_limits_give_back(queue, &pass->singles[i]->admission);
			dlsm_lock_entity_release(queue->relid, pass->singles[i]->entity);
		}
	}
	SPI_freetuptable(SPI_tuptable);
	pass->units += (int) claimed;
	pass->nsingles = 0;
}

/*
 * The pass's record of candidate c's entity.  A parked entity waits from
 * its waiting row up; a row below it (an older one whose insert committed
 * after the entity was parked) is looked at as any other.
 */
static SeenEntity *
seen_entity(ClaimPass *pass, Candidate *c)
{
	uint64		key = dlsm_floor_entity_key(c->entity);
	bool		found;
	SeenEntity *seen = hash_search(pass->seen, &key, HASH_ENTER, &found);

	if (!found)
	{
		seen->state = ENTITY_UNSEEN;
		seen->changed = false;
		seen->waits_from = PG_INT64_MAX;
	}
	if (c->id >= seen->waits_from && seen->state == ENTITY_UNSEEN)
		seen->state = ENTITY_WAITS_FOR_CREATE;
	return seen;
}

/* Look at one candidate of a scan. */
static void
look_at(ClaimPass *pass, Candidate *c)
{
	SeenEntity *seen;
	bool		is_update;

	/* a row without an entity or a kind (a NULL in an adopted table) */
	if (c->entity == NULL || c->kind == NULL)
		return;
	is_update = strcmp(c->kind, "update") == 0;
	if (!c->due)
	{
		/*
		 * Its turn has not come.  An update that waits so holds its entity's
		 * later requests back, but for the entity's create, which goes first
		 * as for any update enqueued before its create.
		 */
		seen = is_update ? seen_entity(pass, c) : NULL;
		if (seen != NULL && seen->state == ENTITY_UNSEEN)
			seen->state = ENTITY_WAITS_FOR_CREATE;
		return;
	}
	seen = seen_entity(pass, c);
	if (seen->state == ENTITY_DONE || seen->state == ENTITY_HELD_BY_CREATE ||
		(seen->state == ENTITY_WAITS_FOR_CREATE &&
		 strcmp(c->kind, "create") != 0))
		return;
	if (dlsm_pending_holds_entity(pass->args->queue->relid, seen->key))
	{
		/* claimed by this transaction: in progress, as it will read */
		seen->state = ENTITY_DONE;
		return;
	}
	if (!is_update)
	{
		/* claimed or not, an entity is looked at once per pass */
		seen->state = ENTITY_DONE;
		if (!dlsm_lock_entity_try(pass->args->queue->relid, c->entity))
		{
			/* the walk passes over it if another claim of it is in flight */
			c->in_flight = dlsm_floor_in_flight(&pass->floor.seen, c->id);
			return;
		}
		if (admit(pass, c))
			pass->singles[pass->nsingles++] = c;
		else
			dlsm_lock_entity_release(pass->args->queue->relid, c->entity);
		return;
	}
	/* an older single goes first: claim those gathered so far */
	claim_singles(pass);
	if (pass->units < pass->args->units)
	{
		seen->state = try_group(pass, c);
		/* its failed create's updates were settled: the scan is stale */
		seen->changed = seen->changed || seen->state == ENTITY_UNSEEN;
	}
}

/*
 * The groups the pass found at their limit, for its next scans to leave
 * out (*isnull when none).  Each was met in a row the walk from the floor
 * looked at first (walk_past): it parked the group, whose rows from there
 * up wait, or ended the walk.  So the rows a scan leaves out never move
 * the floor past a row that might be claimable.
 */
static Datum
full_groups_param(ClaimPass *pass, char *isnull)
{
	int			n = list_length(pass->full_names);
	Datum	   *names;
	ListCell   *lc;
	int			i = 0;

	*isnull = n == 0 ? 'n' : ' ';
	if (n == 0)
		return (Datum) 0;
	names = palloc(sizeof(Datum) * n);
	foreach(lc, pass->full_names)
		names[i++] = PointerGetDatum(lfirst(lc));
	return PointerGetDatum(construct_array(names, n, TEXTOID, -1, false,
										   TYPALIGN_INT));
}

/* Read up to limit candidates after line into batch; returns how many. */
static int
scan(ClaimPass *pass, int64 line, int limit, Candidate *batch)
{
	Datum		values[N_SCAN_LIMITED_PARAMS];
	char		nulls[N_SCAN_LIMITED_PARAMS];
	int			n;

	memset(nulls, ' ', sizeof(nulls));
	values[P_SCAN_AFTER] = Int64GetDatum(line);
	values[P_SCAN_LIMIT] = Int64GetDatum(limit);
	values[P_SCAN_FULL_GROUPS] = full_groups_param(pass, &nulls[P_SCAN_FULL_GROUPS]);
	dlsm_plan_run(&pass->args->queue->plans,
				  pass->full ? DLSM_Q_SCAN_LIMITED : DLSM_Q_SCAN, values, nulls, 0);
	n = (int) SPI_processed;
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		batch[i].id = DatumGetInt64(dlsm_plan_value(i, A_SCAN_ID, &isnull));
		batch[i].kind = dlsm_plan_text(i, A_SCAN_KIND);
		batch[i].entity = dlsm_plan_text(i, A_SCAN_ENTITY);
		batch[i].due = DatumGetBool(dlsm_plan_value(i, A_SCAN_DUE, &isnull));
		batch[i].group = dlsm_plan_text(i, A_SCAN_GROUP);
		batch[i].blocked = false;
		batch[i].in_flight = false;
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * Where the pass starts: its line in the sand, or the queue's floor above
 * it (floor.c), read before the first scan's snapshot.  A transaction that
 * wrote already (a write of its own would read as done to it, and might
 * roll back) neither uses nor moves the floor.
 */
static void
read_floor(ClaimPass *pass)
{
	FloorWalk  *walk = &pass->floor;

	walk->seen.line = pass->args->after;
	walk->seen.publish = false;
	walk->seen.may_park = false;
	walk->seen.check = false;
	walk->seen.nin_flight = 0;
	if (!TransactionIdIsValid(GetTopTransactionIdIfAny()))
		dlsm_floor_read(pass->args->queue->relid, pass->args->after,
						FLOOR_CHECK_MS, &walk->seen);
	walk->open = walk->seen.publish;
	walk->line = walk->seen.line;
	walk->nparked = 0;
	walk->groups = NIL;
	walk->admitted = NIL;

	/*
	 * The rows of a parked entity above its waiting update wait too, behind
	 * it; its create, when still to come, may go (the walk, starting above
	 * that update, does not see it to tell it so).  Its rows below that
	 * update, whose inserts committed after it was parked, may go.
	 */
	for (int i = 0; i < walk->seen.nparked; i++)
	{
		bool		found;
		SeenEntity *seen = hash_search(pass->seen,
									   &walk->seen.parked[i].key,
									   HASH_ENTER, &found);

		seen->state = ENTITY_UNSEEN;
		seen->waits_from = walk->seen.parked[i].lowest;
		if (!found)
			seen->changed = false;
	}
}

/*
 * The group candidate c waits for, at its concurrency limit, or NULL.
 * (Rows of a group at its rate limit wait for time, which unparks
 * nothing.)
 */
static FullGroup *
group_parks(ClaimPass *pass, Candidate *c)
{
	uint64		key;
	FullGroup  *full;

	if (pass->full == NULL || c->group == NULL)
		return NULL;
	key = dlsm_limits_group_key(c->group);
	full = hash_search(pass->full, &key, HASH_FIND, NULL);
	return full != NULL && full->parkable ? full : NULL;
}

/*
 * The walk from the floor met candidate c, which the pass looked at: pass
 * over it if another transaction's claim of it is in flight, or if it
 * waits for its entity's create (parking the entity), or stop the walk
 * before it.
 */
static void
walk_past(ClaimPass *pass, Candidate *c)
{
	FloorWalk  *walk = &pass->floor;
	SeenEntity *seen;
	FullGroup  *full;
	uint64		key;
	bool		parked = false;
	int			k = 0;

	if (!walk->open)
		return;
	if (c->in_flight)
	{
		/* its claim lowers the floor again if it rolls back (pending.c) */
		walk->line = c->id;
		return;
	}
	if (c->entity == NULL || c->kind == NULL)
	{
		/* never claimed: the walk stops before it (look_at) */
		walk->line = c->id - 1;
		walk->open = false;
		return;
	}
	seen = c->due ? seen_entity(pass, c) : NULL;
	key = dlsm_floor_entity_key(c->entity);
	if (walk->seen.may_park && seen != NULL &&
		(full = group_parks(pass, c)) != NULL)
	{
		/* its group is at its limit: park the group, not the entity */
		if (full->lowest == PG_INT64_MAX)
		{
			full->lowest = c->id;
			walk->groups = lappend(walk->groups, full);
		}
		walk->line = c->id;
		return;
	}
	if (walk->seen.may_park && seen != NULL &&
		(seen->state == ENTITY_HELD_BY_CREATE ||
		 (seen->state == ENTITY_WAITS_FOR_CREATE &&
		  strcmp(c->kind, "update") == 0)))
	{
		for (int i = 0; i < walk->seen.nparked && !parked; i++)
			parked = walk->seen.parked[i].key == key;
		while (k < walk->nparked && walk->parked[k].key != key)
			k++;
		if (k == walk->nparked &&
			walk->seen.nparked + walk->nparked < DLSM_MAX_PARKED)
		{
			walk->parked[walk->nparked].key = key;
			walk->parked[walk->nparked++].lowest = c->id;
		}
		parked = parked || k < walk->nparked;
	}
	if (parked)
		walk->line = c->id;
	else
	{
		walk->line = c->id - 1;
		walk->open = false;
	}
}

/*
 * The pass is over: move the floor to where its walk stopped, parking the
 * groups it passed over.  A check unparks the groups it found with room.
 */
static void
publish_floor(ClaimPass *pass)
{
	FloorWalk  *walk = &pass->floor;
	Oid			relid = pass->args->queue->relid;
	int			ngroups = list_length(walk->groups);
	DlsmParked *groups = palloc(sizeof(DlsmParked) * Max(ngroups, 1));
	uint64	   *admitted;
	ListCell   *lc;
	int			i = 0;

	foreach(lc, walk->groups)
	{
		FullGroup  *full = lfirst(lc);

		groups[i].key = full->key;
		groups[i].solid = full->solid;
		groups[i++].lowest = full->lowest;
	}
	if (walk->seen.publish && !pass->wrote)
		dlsm_floor_publish(relid, &walk->seen, walk->line,
						   walk->parked, walk->nparked, groups, ngroups);
	if (walk->admitted == NIL)
		return;
	admitted = palloc(sizeof(uint64) * list_length(walk->admitted));
	i = 0;
	foreach(lc, walk->admitted)
		admitted[i++] = *(uint64 *) lfirst(lc);
	dlsm_limits_found_room(relid, admitted, i);
}

/*
 * One walk over the ready rows from the line in the sand, in pass_context;
 * returns the number of units claimed.
 */
static int
claim_pass(ClaimPass *pass, MemoryContext pass_context)
{
	DlsmClaimArgs *args = pass->args;
	int64		line;
	int			limit = args->units > SCAN_BATCH ? SCAN_WIDE : SCAN_BATCH;
	HASHCTL		ctl;
	MemoryContext oldcontext = MemoryContextSwitchTo(pass_context);

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(SeenEntity);
	ctl.hcxt = pass_context;
	pass->seen = hash_create("dlsm claim entities", 64, &ctl,
							 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	pass->full = NULL;
	pass->full_names = NIL;
	if (dlsm_limits_get(args->queue) != NULL)
	{
		ctl.entrysize = sizeof(FullGroup);
		pass->full = hash_create("dlsm claim full groups", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	pass->units = 0;
	pass->nsingles = 0;
	pass->wrote = false;
	pass->rate_due = 0;
	read_floor(pass);
	line = pass->floor.seen.line;
	for (;;)
	{
		Candidate	batch[SCAN_WIDE];
		int			before = pass->units;
		int			n = scan(pass, line, limit, batch);
		int			i;

		for (i = 0; i < n && pass->units + pass->nsingles < args->units; i++)
		{
			line = batch[i].id;
			look_at(pass, &batch[i]);
			walk_past(pass, &batch[i]);
		}
		claim_singles(pass);
		/* the walk stops at the first row not looked at */
		if (i < n)
			walk_past(pass, &batch[i]);
		/* done when enough, or every ready row was looked at */
		if (pass->units >= args->units || (n < limit && i == n))
			break;
		if (pass->units == before)
			limit = Min(limit * 2, SCAN_WIDE);
	}
	publish_floor(pass);
	MemoryContextSwitchTo(oldcontext);
	MemoryContextReset(pass_context);
	return pass->units;
}

/*
 * dlsm_claim: claim up to args->units units, waiting up to args->wait_us
 * for work when there is none.  Each claimed row is passed to emit.
 * Returns the number of units.  The caller holds an SPI connection and a
 * pin on args->queue.
 */
int
dlsm_claim_units(DlsmClaimArgs *args, DlsmClaimEmit emit, void *arg)
{
	ClaimPass	pass = {args, emit, arg};
	MemoryContext pass_context;
	TimestampTz deadline = 0;
	bool		waiting = args->wait_us != 0;
	int			units;

	dlsm_fence_prepare();
	pass_context = AllocSetContextCreate(CurrentMemoryContext,
										 "dlsm claim pass",
										 ALLOCSET_DEFAULT_SIZES);
	if (waiting)
	{
		if (args->wait_us > 0)
			deadline = GetCurrentTimestamp() + args->wait_us;
		dlsm_wait_prepare(args->queue->relid);
	}
	for (;;)
	{
		long		timeout = WAIT_RECHECK_MS;

		units = claim_pass(&pass, pass_context);
		if (units > 0 || !waiting)
			break;
		if (args->wait_us > 0)
		{
			long		left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
															   deadline);

			if (left <= 0)
				break;
			timeout = Min(timeout, left);
		}
		/* a group its rate held back may be claimed then: look again */
		if (pass.rate_due != 0)
			timeout = Min(timeout,
						  Max(1, TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
																 pass.rate_due)));
		dlsm_wait_sleep(timeout, dlsm_wait_event(DLSM_WAIT_CLAIM));
	}
	if (waiting)
		dlsm_wait_cancel();
	MemoryContextDelete(pass_context);

	/*
	 * claims made in another identity than the session's, or of a table whose
	 * UPDATE runs a user's code, are written now
	 */
	if (units > 0 && !dlsm_pending_deferrable(args->queue))
		dlsm_pending_write_own(args->queue);
	return units;
}

/* Why dlsm_group_updates finds an entity busy: one errdetail each. */
typedef enum BusyReason
{
	BUSY_CLAIMING,				/* another transaction holds the entity lock */
	BUSY_IN_PROGRESS,			/* requests in progress under another pid */
	BUSY_CREATE_OPEN,			/* its create request is not complete */
	BUSY_CREATE_MISSING,		/* its create request is not enqueued */
	BUSY_GROUP_FULL				/* its group is at its limit */
} BusyReason;

/* The errdetail of report_busy, for why (and group, for BUSY_GROUP_FULL). */
static int
busy_detail(BusyReason why, const char *group)
{
	switch (why)
	{
		case BUSY_CLAIMING:
			return errdetail("Another transaction is claiming requests of this entity.");
		case BUSY_IN_PROGRESS:
			return errdetail("Requests of this entity are in progress under another process id.");
		case BUSY_CREATE_OPEN:
			return errdetail("The create request of this entity is not complete.");
		case BUSY_CREATE_MISSING:
			return errdetail("The create request of this entity has not been enqueued.");
		case BUSY_GROUP_FULL:
			return errdetail("Group \"%s\" of the entity is at its limit.", group);
	}
	return 0;
}

/* Raise 55P03: entity of queue is busy, for the reason why. */
static void
report_busy(DlsmQueue *queue, const char *entity, BusyReason why,
			const char *group)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("entity \"%s\" of queue \"%s\" is busy",
					entity, dlsm_rel_label(queue->relid)),
			 busy_detail(why, group)));
}

/* Has entity of queue a create request, in any state? */
static bool
create_arrived(DlsmQueue *queue, const char *entity)
{
	Datum		values[N_CREATE_ARRIVED_PARAMS];
	bool		isnull;
	bool		arrived;

	values[P_CREATE_ARRIVED_ENTITY] = CStringGetTextDatum(entity);
	dlsm_plan_run(&queue->plans, DLSM_Q_CREATE_ARRIVED, values, NULL, 1);
	arrived = DatumGetBool(dlsm_plan_one_value(A_CREATE_ARRIVED_ANY, &isnull));
	return arrived;
}

/*
 * The updates of entity that dlsm_group_updates would move make a new
 * unit of their group: admit it under the group's limits (admission), or
 * raise 55P03.  Updates joining a unit process_id holds already are in.
 */
static void
admit_group_updates(DlsmQueue *queue, const char *entity,
					pg_uuid_t *process_id, DlsmAdmission *admission)
{
	Datum		values[N_UPDATES_GROUP_PARAMS];
	bool		isnull;
	char	   *group;
	bool		held;

	admission->group = NULL;
	if (dlsm_limits_get(queue) == NULL)
		return;
	values[P_GROUP_ENTITY] = CStringGetTextDatum(entity);
	values[P_GROUP_PROCESS_ID] = UUIDPGetDatum(process_id);
	dlsm_plan_run(&queue->plans, DLSM_Q_UPDATES_GROUP, values, NULL, 1);
	group = dlsm_plan_text(0, A_UPDATES_GROUP_GROUP);
	held = DatumGetBool(dlsm_plan_value(0, A_UPDATES_GROUP_HELD, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (group != NULL && !held &&
		dlsm_limits_admit(queue, group, false, 0, admission) != DLSM_ADMITTED)
		report_busy(queue, entity, BUSY_GROUP_FULL, group);
}

/*
 * dlsm_group_updates: move the entity's open updates to in-progress under
 * process_id.  Raises 55P03 and changes nothing when another transaction
 * or process holds the entity or one of the rows, or when its create is
 * not complete (or, on a queue whose updates wait for their create, not
 * enqueued).  The caller holds an SPI connection and a pin on queue.
 */
int64
dlsm_claim_group(DlsmQueue *queue, const char *entity, pg_uuid_t *process_id,
				 int64 lease_us)
{
	Interval   *lease = palloc0(sizeof(Interval));
	Datum		values[N_GROUP_PARAMS];
	DlsmAdmission admission;
	bool		isnull;
	bool		held;
	bool		create_open;

	if (!dlsm_lock_entity_try(queue->relid, entity))
		report_busy(queue, entity, BUSY_CLAIMING, NULL);
	/* this transaction's claims read as they will after its commit */
	dlsm_pending_write(queue, NULL, 0);
	values[P_GROUP_ENTITY] = CStringGetTextDatum(entity);
	values[P_GROUP_PROCESS_ID] = UUIDPGetDatum(process_id);
	dlsm_plan_run(&queue->plans, DLSM_Q_GROUP_BUSY, values, NULL, 1);
	held = DatumGetBool(dlsm_plan_value(0, A_GROUP_BUSY_HELD, &isnull));
	create_open = DatumGetBool(dlsm_plan_value(0, A_GROUP_BUSY_CREATE_OPEN,
											   &isnull));
	if (held)
		report_busy(queue, entity, BUSY_IN_PROGRESS, NULL);
	if (create_open)
		report_busy(queue, entity, BUSY_CREATE_OPEN, NULL);
	if (queue->updates_wait_for_create && !create_arrived(queue, entity))
		report_busy(queue, entity, BUSY_CREATE_MISSING, NULL);

	admit_group_updates(queue, entity, process_id, &admission);
	lease->time = lease_us;
	values[P_GROUP_LEASE] = IntervalPGetDatum(lease);
	values[P_GROUP_NOW] = TimestampTzGetDatum(GetCurrentTimestamp());
	dlsm_fence_prepare();
	values[P_GROUP_FENCE] = Int64GetDatum(dlsm_fence_next(false));
	dlsm_plan_run(&queue->plans, DLSM_Q_GROUP, values, NULL, 0);
	if (SPI_processed == 0)
		dlsm_limits_give_back(queue, &admission);
	else
		dlsm_limits_claimed(queue, &admission, process_id);
	dlsm_wake_entity_changed_at_commit(queue->relid, entity);
	dlsm_wake_queue_claimers_at_end(queue->relid);
	return (int64) SPI_processed;
}
