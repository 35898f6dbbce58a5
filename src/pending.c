/*-------------------------------------------------------------------------
 *
 * pending.c
 *	  Claims of this transaction whose rows still read 'new': written by
 *	  their settle, or as 'in-progress' when the transaction commits.
 *
 * A claim (claim.c) locks its rows (FOR UPDATE) and its entity (locks.c)
 * and writes nothing: what it gave each row (process id, fence, clock,
 * lease) is kept here, in the transaction's memory.  Other sessions cannot
 * tell the difference: they never saw an uncommitted 'in-progress', and
 * the row and entity locks keep other claims away as before.  A settle in
 * the same transaction (state.c) then writes each row once, from 'new'
 * straight to its outcome: one row version per request instead of two.
 * The claims still unsettled when the transaction commits are written as
 * 'in-progress', with what the claim returned, by a pre-commit callback,
 * as the user who claimed, in one statement per queue.  A statement that
 * must see them as 'in-progress' (a heartbeat, dlsm_group_updates) writes
 * them first (dlsm_pending_write).
 *
 * No code of a user runs in that callback: only a claim of a table whose
 * UPDATE runs nothing but PostgreSQL's own code waits for the commit
 * (usercode.c: no trigger fires on an UPDATE of it, no rule, no policy,
 * no user's function in a constraint or an index, no user's type); the
 * write then queues no trigger and calls nothing a user wrote.  Any other
 * claim is written at once, inside the claim, where its triggers fire as
 * any statement's do.  The claim holds the table's RowExclusiveLock (it
 * opened the queue to write), so no other transaction can add such code
 * before this one ends; one that this transaction adds itself after its
 * claims, or that came with a weaker lock (a table made to inherit from
 * the queue), makes the commit fail, with nothing written.
 *
 * Only a claim made in the session's own identity waits for the commit:
 * as the session's current role, in no security context, with no
 * function's settings in force (dlsm_pending_deferrable).  The write then
 * runs as that role under the session's own settings at commit: the same
 * principal chose both.  A claim made anywhere else (a SECURITY DEFINER function, a
 * function with SET clauses, a security-restricted operation such as the
 * worker's or an index expression's) is written at once, inside that call,
 * under the identity and settings it ran with (dlsm_pending_write_own):
 * PostgreSQL does not let such contexts queue work for the commit either,
 * as the commit runs outside their sandbox.
 *
 * Subtransactions: a claim made in a subtransaction that rolls back is
 * forgotten (its row and entity locks are gone, its rows unchanged); a
 * row written in one that rolls back is pending again.  PREPARE
 * TRANSACTION is refused while a claim is pending: the callback that
 * would write it does not run for a prepared transaction.
 *
 * The queue's floor (floor.c) is told of each claimed row (a claim
 * statement's rows together, dlsm_pending_to_floor), so that the walks of
 * other claims pass over it while this transaction is in flight,
 * and told when the claim ends: a claim that rolls back (with its
 * subtransaction, or its transaction) leaves its row ready again, below
 * the floor those walks moved; the floor goes back below it.
 *
 * Calls plans.c, queue.c, wake.c, identity.c, floor.c, names.c and
 * usercode.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/pending.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "floor.h"
#include "identity.h"
#include "names.h"
#include "pending.h"
#include "usercode.h"
#include "wake.h"

/* One claimed row of this transaction. */
typedef struct PendingClaim
{
	Oid			relid;			/* the queue */
	DlsmClaimed row;
	bool		given;			/* the caller gave the process id */
	Oid			userid;			/* who claimed: the row is written as them... */
	int			sec_context;	/* ...in the security context of the claim */
	SubTransactionId made;		/* the subtransaction that claimed */
	SubTransactionId written;	/* the one that wrote it, or Invalid */
	bool		to_floor;		/* the floor is still to be told of it */
	bool		in_floor;		/* the queue's floor knows it in flight */
} PendingClaim;

/* The most rows told to a floor at once (dlsm_floor_claimed, unclaimed). */
#define FLOOR_BATCH 64

/* This transaction's claims, in TopTransactionContext; none outside one. */
static PendingClaim *claims = NULL;
static int	nclaims = 0;
static int	maxclaims = 0;

/*
 * Is claim c of relid, unwritten, held by one of process_ids (any if NULL)
 * and made with the identity of like (any if NULL)?
 */
static bool
matches(PendingClaim *c, Oid relid, const pg_uuid_t *process_ids, int n,
		PendingClaim *like)
{
	if (c->relid != relid || c->written != InvalidSubTransactionId ||
		(like != NULL && (c->userid != like->userid ||
						  c->sec_context != like->sec_context)))
		return false;
	if (process_ids == NULL)
		return true;
	for (int i = 0; i < n; i++)
		if (memcmp(&c->row.process_id, &process_ids[i], UUID_LEN) == 0)
			return true;
	return false;
}

/*
 * Does an UPDATE of queue's table run a user's code?  Looked up once per
 * descriptor, by a caller that holds the table's write lock: a lock of
 * the table taken before it would deadlock with DDL waiting for the claim
 * (isolation spec pending).
 */
static bool
runs_user_code(DlsmQueue *queue)
{
	if (!queue->user_code_known)
	{
		queue->update_runs_user_code = dlsm_update_runs_user_code(queue->relid);
		queue->user_code_known = true;
	}
	return queue->update_runs_user_code;
}

/*
 * May claims of queue made now wait for the commit to be written?  Only
 * when an UPDATE of its table runs no user's code (see the file's header),
 * and only in the session's own identity: the current role is the session's (SET ROLE
 * included), no security context is in force (SECURITY DEFINER, a
 * security-restricted operation, ...), and no function's SET clause is:
 * the GUC nest level is the one the transaction's own (sub)transactions
 * opened, one each.
 */
bool
dlsm_pending_deferrable(DlsmQueue *queue)
{
	Oid			userid;
	int			sec_context;
	int			level;

	if (runs_user_code(queue))
		return false;
	GetUserIdAndSecContext(&userid, &sec_context);
	if (sec_context != 0 || userid != GetOuterUserId())
		return false;
	/* the current nest level: open one and close it again */
	level = NewGUCNestLevel();
	AtEOXact_GUC(true, level);
	return level - 1 == GetCurrentTransactionNestLevel();
}

/* Record a row claimed by this transaction in relid. */
void
dlsm_pending_add(Oid relid, const DlsmClaimed *row, bool given_process_id)
{
	PendingClaim *c;

	if (nclaims == maxclaims)
	{
		maxclaims = Max(16, maxclaims * 2);
		claims = claims == NULL ?
			MemoryContextAlloc(TopTransactionContext,
							   sizeof(PendingClaim) * maxclaims) :
			repalloc(claims, sizeof(PendingClaim) * maxclaims);
	}
	c = &claims[nclaims++];
	c->relid = relid;
	c->row = *row;
	c->given = given_process_id;
	GetUserIdAndSecContext(&c->userid, &c->sec_context);
	c->made = GetCurrentSubTransactionId();
	c->written = InvalidSubTransactionId;
	c->to_floor = true;
	c->in_floor = false;
}

/*
 * Tell the floors of the rows claimed since the last call (the rows of a
 * claim statement, dlsm_pending_add), a queue's rows together: one lock
 * of its floor per statement, not per row.  Until then other claims'
 * walks stop at these rows, as at any they cannot claim.
 */
void
dlsm_pending_to_floor(void)
{
	int64		ids[FLOOR_BATCH];
	bool		taken[FLOOR_BATCH];
	int			first = nclaims;

	/* the rows still to tell are the latest claimed */
	while (first > 0 && claims[first - 1].to_floor)
		first--;
	while (first < nclaims)
	{
		int			n = 0;
		int			end;
		Oid			relid = claims[first].relid;

		for (end = first; end < nclaims && n < FLOOR_BATCH &&
			 claims[end].relid == relid; end++)
			if (claims[end].to_floor)
				ids[n++] = claims[end].row.id;
		dlsm_floor_claimed(relid, ids, n, taken);
		n = 0;
		for (int i = first; i < end; i++)
			if (claims[i].to_floor)
			{
				claims[i].in_floor = taken[n++];
				claims[i].to_floor = false;
			}
		first = end;
	}
}

/*
 * Tell the floors that the claims they know in flight ended (those made
 * by subtransaction made, or all when it is Invalid); ready: by a
 * rollback.  A queue's rows together, as dlsm_pending_to_floor.
 */
static void
unclaim_in_floor(SubTransactionId made, bool ready)
{
	int64		ids[FLOOR_BATCH];
	int			n = 0;
	Oid			relid = InvalidOid;

	for (int i = 0; i < nclaims; i++)
	{
		if (!claims[i].in_floor ||
			(made != InvalidSubTransactionId && claims[i].made != made))
			continue;
		if (n == FLOOR_BATCH || (n > 0 && claims[i].relid != relid))
		{
			dlsm_floor_unclaimed(relid, ids, n, ready);
			n = 0;
		}
		relid = claims[i].relid;
		ids[n++] = claims[i].row.id;
		claims[i].in_floor = false;
	}
	dlsm_floor_unclaimed(relid, ids, n, ready);
}

/*
 * Does this transaction hold a row of entity (dlsm_floor_entity_key) of
 * relid by a claim not yet written?  The entity is in progress to it.
 */
bool
dlsm_pending_holds_entity(Oid relid, uint64 entity)
{
	for (int i = 0; i < nclaims; i++)
		if (claims[i].row.entity == entity && claims[i].relid == relid &&
			claims[i].written == InvalidSubTransactionId)
			return true;
	return false;
}

/*
 * Does this transaction hold row id of relid by a claim not yet written?
 * The row reads 'new', and is in progress to it.
 */
bool
dlsm_pending_holds_row(Oid relid, int64 id)
{
	for (int i = 0; i < nclaims; i++)
		if (claims[i].row.id == id && claims[i].relid == relid &&
			claims[i].written == InvalidSubTransactionId)
			return true;
	return false;
}

/* One of the arrays of a DlsmPendingSet, from values (n of type). */
static Datum
make_array(Datum *values, int n, Oid type)
{
	int16		typlen;
	bool		typbyval;
	char		typalign;

	get_typlenbyvalalign(type, &typlen, &typbyval, &typalign);
	return PointerGetDatum(construct_array(values, n, type, typlen, typbyval,
										   typalign));
}

/*
 * Fill set with the unwritten claims of relid held by process_ids (n of
 * them; all the queue's when NULL); false when there are none.
 * set->complete tells whether those process ids hold nothing else: each
 * holds a pending claim and none was given by the caller (a given process
 * id may hold rows that an earlier transaction wrote).
 */
static bool
select_claims(Oid relid, const pg_uuid_t *process_ids, int n,
			  PendingClaim *like, DlsmPendingSet *set)
{
	Datum	   *ids;
	Datum	   *pids;
	Datum	   *fences;
	Datum	   *claimed;
	Datum	   *leases;
	bool	   *held;
	int			k = 0;

	set->n = 0;
	set->complete = false;
	if (nclaims == 0)
		return false;
	ids = palloc(sizeof(Datum) * nclaims);
	pids = palloc(sizeof(Datum) * nclaims);
	fences = palloc(sizeof(Datum) * nclaims);
	claimed = palloc(sizeof(Datum) * nclaims);
	leases = palloc(sizeof(Datum) * nclaims);
	set->entries = palloc(sizeof(int) * nclaims);
	held = palloc0(sizeof(bool) * Max(n, 1));
	set->complete = true;
	for (int i = 0; i < nclaims; i++)
	{
		PendingClaim *c = &claims[i];

		if (!matches(c, relid, process_ids, n, like))
			continue;
		set->entries[k] = i;
		if (k == 0)
			set->first = c->row;
		ids[k] = Int64GetDatum(c->row.id);
		pids[k] = UUIDPGetDatum(&c->row.process_id);
		fences[k] = Int64GetDatum(c->row.fence);
		claimed[k] = TimestampTzGetDatum(c->row.claimed_at);
		leases[k] = TimestampTzGetDatum(c->row.lease_until);
		k++;
		if (c->given)
			set->complete = false;
		for (int p = 0; process_ids != NULL && p < n; p++)
			if (memcmp(&c->row.process_id, &process_ids[p], UUID_LEN) == 0)
				held[p] = true;
	}
	for (int p = 0; process_ids != NULL && p < n; p++)
		if (!held[p])
			set->complete = false;
	set->n = k;
	if (k == 0)
		return false;
	set->ids = make_array(ids, k, INT8OID);
	set->process_ids = make_array(pids, k, UUIDOID);
	set->fences = make_array(fences, k, INT8OID);
	set->claimed_at = make_array(claimed, k, TIMESTAMPTZOID);
	set->lease_until = make_array(leases, k, TIMESTAMPTZOID);
	return true;
}

bool
dlsm_pending_select(Oid relid, const pg_uuid_t *process_ids, int n,
					DlsmPendingSet *set)
{
	return select_claims(relid, process_ids, n, NULL, set);
}

/* The rows of set were written by a statement of this subtransaction. */
void
dlsm_pending_written(DlsmPendingSet *set)
{
	for (int k = 0; k < set->n; k++)
		claims[set->entries[k]].written = GetCurrentSubTransactionId();
}

/* Write the claims of set, of queue, as 'in-progress'. */
static void
write_claims(DlsmQueue *queue, DlsmPendingSet *set)
{
	Datum		values[N_CLAIMED_PARAMS];

	values[P_CLAIMED_IDS] = set->ids;
	values[P_CLAIMED_PROCESS_IDS] = set->process_ids;
	values[P_CLAIMED_FENCES] = set->fences;
	values[P_CLAIMED_AT] = set->claimed_at;
	values[P_CLAIMED_LEASE_UNTIL] = set->lease_until;
	dlsm_plan_run(&queue->plans, DLSM_Q_WRITE_CLAIMS, values, NULL, 0);
	for (uint64 r = 0; r < SPI_processed; r++)
		dlsm_wake_entity_changed_at_commit(queue->relid,
										   dlsm_plan_text(r, A_WRITE_CLAIMS_ENTITY));
	SPI_freetuptable(SPI_tuptable);
	dlsm_pending_written(set);
}

/*
 * Write the pending claims of queue held by process_ids (n of them; every
 * pending claim of the queue when NULL) as 'in-progress', for a statement
 * that must see them so.  The caller holds an SPI connection and a pin on
 * queue.
 */
void
dlsm_pending_write(DlsmQueue *queue, const pg_uuid_t *process_ids, int n)
{
	DlsmPendingSet set;

	if (dlsm_pending_select(queue->relid, process_ids, n, &set))
		write_claims(queue, &set);
}

/*
 * Write the pending claims of queue made with the current identity, now:
 * for a claim made where it may not wait for the commit.  The caller holds
 * an SPI connection and a pin on queue.
 */
void
dlsm_pending_write_own(DlsmQueue *queue)
{
	PendingClaim like;
	DlsmPendingSet set;

	GetUserIdAndSecContext(&like.userid, &like.sec_context);
	if (select_claims(queue->relid, NULL, 0, &like, &set))
		write_claims(queue, &set);
}

/* The first unwritten claim, or NULL. */
static PendingClaim *
first_unwritten(void)
{
	for (int i = 0; i < nclaims; i++)
		if (claims[i].written == InvalidSubTransactionId)
			return &claims[i];
	return NULL;
}

/*
 * The claims of queue cannot be written at commit: an UPDATE of its table
 * runs a user's code since they were made.  The commit fails instead.
 */
static void
refuse_commit(DlsmQueue *queue)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot commit unsettled claims of dlsm queue \"%s\"",
					dlsm_rel_label(queue->relid)),
			 errdetail("The table was altered after the claims were made: an UPDATE of it now runs code that is not PostgreSQL's own, which dlsm does not run while the transaction commits."),
			 errhint("Settle the claims before the commit, or alter the table in a transaction that holds no claim of it.")));
}

/*
 * At commit: write every unwritten claim, one statement per queue and
 * claiming role, as the claim ran: in the session's own identity (the
 * others were written at once).  A queue that is no longer one (dropped
 * in this transaction) has nothing to write.  A queue whose table now
 * runs a user's code on an UPDATE makes the commit fail (see the file's
 * header): the invalidations of the changes other transactions committed
 * are read first.
 */
static void
write_at_commit(void)
{
	PendingClaim *c;

	if (first_unwritten() == NULL)
		return;
	AcceptInvalidationMessages();
	dlsm_plan_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	while ((c = first_unwritten()) != NULL)
	{
		PendingClaim like = *c;
		DlsmPendingSet set;
		DlsmIdentity saved;
		DlsmQueue  *queue;

		(void) select_claims(like.relid, NULL, 0, &like, &set);
		dlsm_identity_resume(like.userid, like.sec_context, &saved);
		queue = dlsm_queue_open(like.relid, DLSM_QUEUE_MISSING_OK |
								DLSM_QUEUE_ANY_SECURITY);
		if (queue != NULL)
		{
			if (runs_user_code(queue))
				refuse_commit(queue);
			write_claims(queue, &set);
			dlsm_queue_close(queue);
		}
		else
			dlsm_pending_written(&set);
		dlsm_identity_restore(&saved);
	}
	PopActiveSnapshot();
	dlsm_plan_finish();
}

/* PREPARE TRANSACTION: refused while a claim is not written. */
static void
refuse_prepare(void)
{
	PendingClaim *c = first_unwritten();

	if (c == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot prepare a transaction that holds unsettled claims of dlsm queue \"%s\"",
					dlsm_rel_label(c->relid)),
			 errdetail("dlsm writes a claim that its own transaction did not settle when that transaction commits."),
			 errhint("Settle the claims before PREPARE TRANSACTION, or claim in a transaction that is not prepared.")));
}

static void
pending_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (nclaims > 0)
				write_at_commit();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (nclaims > 0)
				refuse_prepare();
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:

			/*
			 * committed, the rows are in progress or settled; rolled back,
			 * ready again (prepared: whichever comes, so taken as ready)
			 */
			unclaim_in_floor(InvalidSubTransactionId,
							 event != XACT_EVENT_COMMIT &&
							 event != XACT_EVENT_PARALLEL_COMMIT);
			claims = NULL;		/* lived in TopTransactionContext */
			nclaims = 0;
			maxclaims = 0;
			break;
		default:
			break;
	}
}

/*
 * A subtransaction ended: forget the claims it made if it rolled back, and
 * what it wrote; hand both to its parent if it committed.
 */
static void
pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			keep = 0;

	if (nclaims == 0)
		return;
	if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		for (int i = 0; i < nclaims; i++)
		{
			if (claims[i].made == mySubid)
				claims[i].made = parentSubid;
			if (claims[i].written == mySubid)
				claims[i].written = parentSubid;
		}
	}
	else if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		unclaim_in_floor(mySubid, true);
		for (int i = 0; i < nclaims; i++)
		{
			if (claims[i].made == mySubid)
				continue;
			if (claims[i].written == mySubid)
				claims[i].written = InvalidSubTransactionId;
			claims[keep++] = claims[i];
		}
		nclaims = keep;
	}
}

/* Register the transaction callbacks; called once from _PG_init. */
void
dlsm_pending_init(void)
{
	RegisterXactCallback(pending_xact_callback, NULL);
	RegisterSubXactCallback(pending_subxact_callback, NULL);
}
