/*-------------------------------------------------------------------------
 *
 * wake.c
 *	  What happens when a transaction that changed claimable work ends.
 *
 * A transaction that enqueued, settled, reaped or released a lease makes
 * work claimable when it commits; one that claimed makes it claimable
 * again when it rolls back.  Rows that become ready again lower their
 * queue's floor (floor.c) after the commit.  The changes are only noted
 * here; at the end of the transaction, after its locks are released (a
 * commit callback would run before the entity locks are gone, and a woken
 * claimer would find them busy), waiting claims are woken (waits.c), the
 * database's worker when a handler queue got work (or the registry changed,
 * or NOTIFY dlsm, 'reap' was sent), the launcher after CREATE EXTENSION.
 * The groups whose slots the transaction took come free just before the
 * claims are woken: grouplimit.c, a layer above, frees them from the hook
 * it gives dlsm_wake_at_end.
 *
 * Queue channels are notified (NOTIFY, through notify.c) for the clients
 * that LISTEN: which channels is noted during the transaction, and whether
 * to send is decided at its commit, just before PostgreSQL queues the
 * notifications, so that a client that started listening while the
 * transaction ran gets them, as it would a plain NOTIFY.  When the
 * database's relay sends them (notify.c), they are marked for it once the
 * transaction's commit is visible and its locks released.
 *
 * Calls notify.c, floor.c, pool.c, rate.c and waits.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/wake.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "utils/fmgrprotos.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "floor.h"
#include "notify.h"
#include "pool.h"
#include "rate.h"
#include "waits.h"
#include "wake.h"

/* What the transaction changed in a queue, for its floor (floor.c). */
typedef struct QueueChanges
{
	Oid			relid;
	int64		lowest;			/* rows from this id up may be ready again;
								 * PG_INT64_MIN: any, PG_INT64_MAX: none */
	bool		reset;			/* its rules changed: any row, any entity */
	bool		dropped;		/* it is a queue no more */
	bool		truncated;		/* its rows are gone */
	int			nentities;		/* entities whose rows it changed */
	int			maxentities;
	uint64	   *entities;		/* their keys (dlsm_floor_entity_key) */
	bool		wake_at_commit; /* its waiting claims, when it commits */
	bool		wake_at_abort;	/* ...and when it rolls back */
} QueueChanges;

/*
 * What the transaction did that may make work claimable when it ends, in
 * no queue it named (a lease released; on a rollback, groups that came
 * free through end_hook): every waiter is woken.  A queue's own reasons
 * are in its QueueChanges.
 */
static bool wake_at_commit = false;
static bool wake_at_abort = false;
static bool wake_worker = false;	/* enqueued into a queue with a handler */
static bool wake_launcher = false;	/* the extension was created */
static int	worker_requests = 0;	/* DLSM_REQUEST_* for the worker */
static List *channels = NIL;	/* to notify, in TopTransactionContext */
static List *changes = NIL;		/* of QueueChanges, in TopTransactionContext */
static DlsmWakeEndHook end_hook = NULL; /* dlsm_wake_at_end's */

/*
 * The insert dlsm_enqueue runs into this queue, while it runs, and the
 * trigger depth of its statement's own wake trigger: that trigger leaves
 * the floor to the enqueue, which knows the row's id.
 */
static Oid	enqueue_relid = InvalidOid;
static int	enqueue_depth = 0;

/* Wake the claims waiting for the queues this transaction woke. */
static void
wake_queues(bool isCommit)
{
	ListCell   *lc;

	foreach(lc, changes)
	{
		QueueChanges *q = lfirst(lc);

		if (isCommit ? q->wake_at_commit :
			(q->wake_at_commit || q->wake_at_abort))
			dlsm_wait_wake_queue(q->relid);
	}
}

static void
release_callback(ResourceReleasePhase phase, bool isCommit, bool isTopLevel,
				 void *arg)
{
	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	/* visible to all and unlocked: the relay may notify the channels */
	dlsm_notify_committed(isCommit);
	if (isCommit && wake_worker)
		dlsm_pool_wake_worker(MyDatabaseId);
	if (isCommit && wake_launcher)
		dlsm_pool_wake_launcher();
	if (isCommit && worker_requests != 0)
		dlsm_pool_worker_request(MyDatabaseId, worker_requests);
	/* grouplimit.c's groups come free whichever way the transaction ends */
	if (end_hook != NULL && end_hook())
		wake_at_abort = true;
	if (isCommit)
	{
		ListCell   *lc;

		foreach(lc, changes)
		{
			QueueChanges *q = lfirst(lc);

			if (q->reset)
				dlsm_floor_reset(q->relid);
			if (q->dropped || q->truncated)
				dlsm_floor_forget(q->relid);
			if (q->dropped)
				dlsm_rate_forget(q->relid);
			if (q->lowest != PG_INT64_MAX)
				dlsm_floor_lower(q->relid, q->lowest);
			dlsm_floor_entities(q->relid, q->entities, q->nentities);
		}
	}
	/* after the floors learnt of the changes: a woken claim sees them */
	if (isCommit ? wake_at_commit : (wake_at_commit || wake_at_abort))
		dlsm_wait_wake_all();
	else
		wake_queues(isCommit);
	changes = NIL;				/* lived in TopTransactionContext */
	enqueue_relid = InvalidOid;
	wake_at_commit = false;
	wake_at_abort = false;
	wake_worker = false;
	wake_launcher = false;
	worker_requests = 0;
	channels = NIL;				/* lived in TopTransactionContext */
}

/* At commit, before PostgreSQL queues notifications: send ours. */
static void
wake_xact_callback(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_PRE_COMMIT)
		return;
	foreach(lc, channels)
		dlsm_notify_send(lfirst(lc));
}

/*
 * Call hook at the end of every transaction, however it ends, after its
 * locks are released and before waiting claims are woken; when hook
 * returns true, they are woken if the transaction rolled back.  For
 * grouplimit.c, whose groups come free then (a layer above: it cannot be
 * called by name).
 */
void
dlsm_wake_at_end(DlsmWakeEndHook hook)
{
	Assert(end_hook == NULL || end_hook == hook);
	end_hook = hook;
}

/* Register the transaction-end hooks; called once from _PG_init. */
void
dlsm_wake_init(void)
{
	RegisterResourceReleaseCallback(release_callback, NULL);
	RegisterXactCallback(wake_xact_callback, NULL);
}

/*
 * Ask the database's worker, when this transaction commits, to reap at
 * once (NOTIFY dlsm, 'reap') or to read the registry again (requests:
 * DLSM_REQUEST_*).
 */
void
dlsm_wake_worker_request_at_commit(int requests)
{
	worker_requests |= requests;
}

/* Wake every waiting claim and named lock when this transaction commits. */
void
dlsm_wake_claimers_at_commit(void)
{
	wake_at_commit = true;
}

/* Wake every waiting claim and named lock when this transaction ends. */
void
dlsm_wake_claimers_at_end(void)
{
	wake_at_abort = true;
}

/* Wake this database's worker (to run handlers) when this transaction commits. */
void
dlsm_wake_worker_at_commit(void)
{
	wake_worker = true;
}

/* Wake the launcher when this transaction commits (CREATE EXTENSION). */
void
dlsm_wake_launcher_at_commit(void)
{
	wake_launcher = true;
}

/* Notify channel when this transaction commits, if anyone listens then. */
void
dlsm_wake_channel_at_commit(const char *channel)
{
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, channels)
	{
		if (strcmp(lfirst(lc), channel) == 0)
			return;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	channels = lappend(channels, pstrdup(channel));
	MemoryContextSwitchTo(old);
}

/* The changes of this transaction to queue relid. */
static QueueChanges *
queue_changes(Oid relid)
{
	ListCell   *lc;
	QueueChanges *q;

	foreach(lc, changes)
	{
		q = lfirst(lc);
		if (q->relid == relid)
			return q;
	}
	q = MemoryContextAllocZero(TopTransactionContext, sizeof(QueueChanges));
	q->relid = relid;
	q->lowest = PG_INT64_MAX;
	changes = lappend(changes, q);	/* in the context of the list */
	return q;
}

/* Wake the claims waiting for queue relid when this transaction commits. */
void
dlsm_wake_queue_claimers_at_commit(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	queue_changes(relid)->wake_at_commit = true;
	MemoryContextSwitchTo(old);
}

/*
 * Wake the claims waiting for queue relid when this transaction ends,
 * however it ends.
 */
void
dlsm_wake_queue_claimers_at_end(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	queue_changes(relid)->wake_at_abort = true;
	MemoryContextSwitchTo(old);
}

/*
 * Rows of queue relid with ids from lowest up (PG_INT64_MIN: any) become
 * ready when this transaction commits: an insert, a retry, a reap.
 */
void
dlsm_wake_rows_ready_at_commit(Oid relid, int64 lowest)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	QueueChanges *q = queue_changes(relid);

	q->lowest = Min(q->lowest, lowest);
	MemoryContextSwitchTo(old);
}

/* Add key to the n keys of *keys (room for *max), unless it is there. */
static void
add_key(uint64 **keys, int *n, int *max, uint64 key)
{
	for (int i = 0; i < *n; i++)
		if ((*keys)[i] == key)
			return;
	if (*n == *max)
	{
		*max = Max(8, *max * 2);
		*keys = *keys == NULL ? palloc(sizeof(uint64) * *max) :
			repalloc(*keys, sizeof(uint64) * *max);
	}
	(*keys)[(*n)++] = key;
}

/* The trigger depth now (pg_trigger_depth()). */
static int
trigger_depth(void)
{
	LOCAL_FCINFO(fcinfo, 0);

	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	return DatumGetInt32(pg_trigger_depth(fcinfo));
}

/*
 * dlsm_enqueue is about to insert one row into queue relid (own: true),
 * or has inserted it (false).
 */
void
dlsm_wake_enqueue_inserting(Oid relid, bool own)
{
	enqueue_relid = own ? relid : InvalidOid;
	enqueue_depth = own ? trigger_depth() + 1 : 0;
}

/*
 * Is this wake trigger of queue relid the one of dlsm_enqueue's own
 * insert (dlsm_wake_enqueue_inserting)?  Not one of a statement it
 * caused (a trigger's insert into the same queue runs deeper).
 */
bool
dlsm_wake_is_enqueue_insert(Oid relid)
{
	return relid == enqueue_relid && trigger_depth() == enqueue_depth;
}

/*
 * This transaction changed rows of entity in queue relid (a settle, a
 * reap, a claim written): when it commits, rows waiting for the entity may
 * be ready.
 */
void
dlsm_wake_entity_changed_at_commit(Oid relid, const char *entity)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	QueueChanges *q = queue_changes(relid);

	add_key(&q->entities, &q->nentities, &q->maxentities,
			dlsm_floor_entity_key(entity));
	MemoryContextSwitchTo(old);
}

/*
 * The rules by which queue relid's rows wait changed (dlsm_alter_queue):
 * when this transaction commits, any row of any entity may be ready.
 */
void
dlsm_wake_queue_changed_at_commit(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	QueueChanges *q = queue_changes(relid);

	q->reset = true;
	q->wake_at_commit = true;
	MemoryContextSwitchTo(old);
}

/*
 * Queue relid is dropped (unregistered) when this transaction commits: its
 * floor (floor.c) and the spacings of its groups' claims (rate.c) are
 * forgotten then.
 */
void
dlsm_wake_queue_dropped_at_commit(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	QueueChanges *q = queue_changes(relid);

	q->dropped = true;
	MemoryContextSwitchTo(old);
}

/*
 * Table relid was truncated (hooks.c): when this transaction commits, its
 * floor is forgotten (floor.c), with the groups parked there for units
 * that are gone.  Its rate spacings stay: they count time, not rows.
 */
void
dlsm_wake_queue_truncated_at_commit(Oid relid)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	QueueChanges *q = queue_changes(relid);

	q->truncated = true;
	q->wake_at_commit = true;
	MemoryContextSwitchTo(old);
}

/*
 * Table relid becomes a queue (dlsm_create_queue, dlsm_register_queue):
 * whatever the floors and rates kept for its OID belonged to a table gone
 * before, or to its time as a queue before, and is forgotten now.
 */
void
dlsm_wake_queue_new(Oid relid)
{
	dlsm_floor_forget(relid);
	dlsm_rate_forget(relid);
}
