/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  dlsm and NOTIFY: the notifications dlsm sends, and NOTIFY dlsm,
 *	  'reap'.
 *
 * dlsm's workers do not listen: they are woken through shared memory, by
 * the commit of an enqueue into a handler queue, of a change of the
 * registry, or of NOTIFY dlsm, 'reap' (wake.c, pool.c), as autoprewarm and
 * the logical replication launcher are.  NOTIFY dlsm, 'reap' is seen by
 * the utility hook (hooks.c), as the statement it is; it is a NOTIFY like
 * any other for the clients that listen.  (pg_notify('dlsm', 'reap'), a
 * function call, is not seen.)
 *
 * dlsm's own NOTIFYs (a queue's channel, at the commit of an enqueue or a
 * reap, wake.c) are sent only while some client backend of the database
 * listens.  Backends are counted as listeners (in shared memory, below) as
 * a LISTEN they ran commits, and uncounted when an UNLISTEN * committed or
 * they exit: a LISTEN or UNLISTEN rolled back changes nothing.
 *
 * A NOTIFY holds PostgreSQL's notify lock, one for the whole cluster,
 * across its transaction's commit and WAL flush: many producers that
 * notified would commit one at a time.  So, while preloaded, they do not
 * notify: the database's relay (relay.c, a background worker of its own,
 * started by the first LISTEN or producer that finds none) does, for them.
 * A producer that would notify a channel marks it in shared memory once
 * its commit is visible to all (dlsm_notify_committed), and sets the
 * relay's latch; the relay takes the marks (clearing them) and sends one
 * NOTIFY per marked channel in a transaction of its own.  No wake-up is
 * lost: the relay clears a mark before it sends, and a producer marks after
 * its commit, so the relay's NOTIFY commits after every commit whose mark
 * it took, and a mark set after the relay took it is taken again.  A
 * listener that LISTENed, then looked at the queue, either saw the row or
 * listened before it committed, and so before the NOTIFY that follows.  A
 * producer that finds no running relay, or no room for its channel,
 * notifies in its own transaction, as without preloading.  Marks are kept
 * while no relay runs: the next one to start sends them, and a producer
 * that marked a channel after its commit and finds no relay running starts
 * one.
 *
 * A relay is a server process that a LISTEN or an enqueue starts, so it is
 * bounded (doc/security.md, "The relay"): none starts in a database that is
 * a template or does not allow connections (its producers notify, as with
 * the relay off); one runs per database, and at most relay_cap() over the
 * cluster, so that relays never take the background worker processes of
 * dlsm's launcher and workers; a producer that finds no room notifies, and
 * the log says so once per database until a relay runs there again.  A
 * relay exits once it had nothing to notify for dlsm.relay_idle_timeout,
 * and on SIGTERM (pg_terminate_backend); the postmaster never restarts it:
 * the next producer that needs one starts it.  A relay leaves of itself
 * only while no producer is between leaving a channel to it and marking
 * it (the entry's marking count, taken under the lock as the producer
 * sees it running), and no mark of its database is set: so none is left
 * behind with no relay to send it.
 *
 * A producer that notifies in its own commit while a client listens (the
 * relay off, or not running) is counted, in its database's relay entry:
 * in flight until its commit ended, and since the server started; when it
 * finds NOTIFY_CROWD such commits in flight, they take turns on the notify
 * lock, and the first time, with the relay off, it says so in a WARNING.
 * dlsm_worker_status shows the counts.
 *
 * Its shared state, the listener counts, the relays and the marks, is its
 * own: created by shmem.c's hooks (dlsm_notify_shmem_init), under a lock
 * shmem.c gives it.  The lock guards every field but the atomics: the
 * marks, set by producers without it and taken by the relay, and the
 * counts of producers' notifying commits.
 *
 * Locking: DlsmListenShared.lock (of the LWLock tranche "dlsm") is taken
 * exclusively by a backend that starts or stops listening (its count), by
 * a relay that attaches, detaches, leaves or pauses, by a backend that
 * starts a relay or marks a channel for the first time; shared by a
 * producer that asks whether anyone listens (and counts itself in the
 * relay's marking), wakes the relay after its commit or counts its own
 * notifying commit (exclusive the database's first time), by the relay
 * taking the marks or counting the relays and by the views.  It is a leaf
 * lock: taken after any heavyweight lock, for a few field reads or writes,
 * never across SPI, a wait or a signal that could block.
 *
 * Calls bgw.c (to describe a relay); reads dlsm.notify_relay (guc.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/notify.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/async.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "replication/logicallauncher.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "bgw.h"
#include "guc.h"
#include "notify.h"

/* This backend's standing as a listener, and the change its transaction makes. */
static bool counted_as_listener = false;
static bool exit_callback_registered = false;
static enum
{
	LISTEN_UNCHANGED, LISTEN_START, LISTEN_STOP
}			pending = LISTEN_UNCHANGED;

/*
 * The most databases whose clients that LISTEN are counted; the databases
 * the workers serve are dlsm.max_databases.
 */
#define DLSM_MAX_DATABASES 64

/* The most channels that can be marked for the relays, over all databases. */
#define DLSM_MAX_CHANNELS 512

/* The channels a transaction may leave to the relay; more are notified. */
#define MAX_MARKS_PER_XACT 16

/*
 * How long a relay that was asked to start may take to run, and how long
 * producers notify themselves after one could not start before they ask
 * again.
 */
#define RELAY_START_MS 10000

/*
 * Notifying commits of one database in flight at once (between dlsm's
 * NOTIFY and the end of the commit) that make a crowd: they queue for
 * PostgreSQL's notify lock, each behind the WAL flush of the one before.
 */
#define NOTIFY_CROWD 4

/* Where a database's relay stands. */
typedef enum DlsmRelayState
{
	DLSM_RELAY_NONE,			/* none runs: producers notify */
	DLSM_RELAY_STARTING,		/* asked for: producers notify meanwhile */
	DLSM_RELAY_RUNNING,			/* producers mark, it notifies */
	DLSM_RELAY_REFUSED			/* none may start (no room, a template):
								 * producers notify, and ask again once
								 * RELAY_START_MS passed */
} DlsmRelayState;

/* A database's relay. */
typedef struct DlsmRelay
{
	Oid			dboid;			/* its database; InvalidOid: free */
	DlsmRelayState state;
	pid_t		pid;			/* while running */
	Latch	   *latch;			/* while running: set by a first mark */
	TimestampTz since;			/* asked for, or refused, at */
	TimestampTz stopped_until;	/* none starts before (DROP DATABASE) */
	bool		refusal_said;	/* the log said none could start */
	/* atomics, moved without the lock: */
	pg_atomic_uint32 marking;	/* producers that saw it running and have not
								 * marked yet (counted under the lock) */
	pg_atomic_uint32 committing;	/* producers' notifying commits in flight */
	pg_atomic_uint64 producer_notifies; /* commits that notified a listener */
	pg_atomic_uint64 crowded_notifies;	/* of them, in a crowd (NOTIFY_CROWD) */
	pg_atomic_uint32 crowd_said;	/* 1: the WARNING about a crowd was sent */
} DlsmRelay;

/* A channel of a database, marked for its relay. */
typedef struct DlsmMark
{
	Oid			dboid;			/* set once, under the lock */
	char		channel[NAMEDATALEN];	/* set once, under the lock */
	pg_atomic_uint32 marked;	/* 1: a commit wants it notified */
} DlsmMark;

/* The databases whose client backends LISTEN, their relays, the marks. */
typedef struct DlsmListenShared
{
	LWLock	   *lock;			/* guards the fields below, not marked */
	Oid			listen_db[DLSM_MAX_DATABASES];	/* databases with... */
	int			listeners[DLSM_MAX_DATABASES];	/* ...clients that LISTEN */
	bool		listeners_lost; /* a listener found no free entry */
	DlsmRelay	relays[DLSM_MAX_DATABASES]; /* never freed */
	int			nmarks;			/* entries of marks in use, never freed */
	int64		marks_full;		/* channels that found no entry */
	DlsmMark	marks[DLSM_MAX_CHANNELS];
} DlsmListenShared;

static DlsmListenShared *shared = NULL;

/* The marks this transaction sets once it committed (dlsm_notify_committed). */
static int	xact_marks[MAX_MARKS_PER_XACT];
static int	nxact_marks = 0;

/* This backend's relay, when it is one (dlsm_notify_relay_attach). */
static DlsmRelay *my_relay = NULL;

/* The entry whose committing this transaction counts in, if any. */
static DlsmRelay *my_commit = NULL;

/* The entry whose marking this transaction counts in, if any. */
static DlsmRelay *my_marking = NULL;

/* This backend's database's name, once looked up (relay_database_ok). */
static char my_dbname[NAMEDATALEN];

static void count_listener(Oid dboid, int delta);
static bool anyone_listens(Oid dboid, DlsmRelayState *relay, bool mark);
static int	channel_mark(Oid dboid, const char *channel);
static void start_relay(Oid dboid, bool in_xact);
static void count_producer_notify(Oid dboid);
static DlsmRelay *relay_of(Oid dboid, bool add);
static bool relay_retry_due(DlsmRelay *relay);
static bool relay_database_ok(Oid dboid);

static void
uncount_listener(int code, Datum arg)
{
	if (counted_as_listener)
		count_listener(MyDatabaseId, -1);
	counted_as_listener = false;
}

/*
 * Apply a LISTEN of the transaction just before it commits (before
 * PostgreSQL registers the listener: a producer committing meanwhile then
 * counts it), an UNLISTEN * once it committed.  Counting too early or too
 * long only costs a NOTIFY nobody reads.
 */
static void
notify_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT && pending == LISTEN_START &&
		!counted_as_listener)
	{
		if (!exit_callback_registered)
			before_shmem_exit(uncount_listener, (Datum) 0);
		exit_callback_registered = true;
		counted_as_listener = true;
		count_listener(MyDatabaseId, 1);
		if (dlsm_notify_relay)
			start_relay(MyDatabaseId, true);
	}
	else if (event == XACT_EVENT_COMMIT && pending == LISTEN_STOP)
		uncount_listener(0, (Datum) 0);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE)
		pending = LISTEN_UNCHANGED;
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		nxact_marks = 0;
}

/* Register the transaction-end hook; called once from _PG_init. */
void
dlsm_notify_init(void)
{
	RegisterXactCallback(notify_xact_callback, NULL);
}

/*
 * The utility hook saw stmt: a LISTEN counts this backend as a listener,
 * an UNLISTEN * uncounts it, both when the transaction commits.  (An
 * UNLISTEN of one channel keeps it counted: dlsm may notify once too
 * often, never too rarely.)
 */
void
dlsm_notify_client_listens(Node *stmt)
{
	if (IsA(stmt, ListenStmt))
		pending = LISTEN_START;
	else if (IsA(stmt, UnlistenStmt) &&
			 ((UnlistenStmt *) stmt)->conditionname == NULL)
		pending = LISTEN_STOP;
}

/*
 * NOTIFY channel when the transaction commits, if anyone may listen: let
 * the database's relay send it, when one runs, or else send it in this
 * transaction.  Called as the transaction commits (XACT_EVENT_PRE_COMMIT).
 */
void
dlsm_notify_send(const char *channel)
{
	DlsmRelayState relay;
	int			mark;

	if (!anyone_listens(MyDatabaseId, &relay, dlsm_notify_relay))
		return;
	/* counted in the relay's marking when running: it stays for the mark */
	if (relay == DLSM_RELAY_RUNNING && dlsm_notify_relay &&
		nxact_marks < MAX_MARKS_PER_XACT &&
		(mark = channel_mark(MyDatabaseId, channel)) >= 0)
	{
		/* the name for a relay this backend may start after its commit */
		if (my_dbname[0] == '\0')
			(void) relay_database_ok(MyDatabaseId);
		xact_marks[nxact_marks++] = mark;
		return;
	}
	Async_Notify(channel, "");
	if (my_commit == NULL)
		count_producer_notify(MyDatabaseId);
	if (relay == DLSM_RELAY_NONE && dlsm_notify_relay)
		start_relay(MyDatabaseId, true);
}

/*
 * The transaction ended (committed: its changes are visible to all, and
 * its locks released): mark the channels dlsm_notify_send left to the
 * relay, and wake it when a mark is new; when no relay runs any more (it
 * was terminated), start one to send the marks.
 */
void
dlsm_notify_committed(bool committed)
{
	bool		orphaned = false;

	for (int i = 0; i < nxact_marks && committed; i++)
	{
		DlsmMark   *mark = &shared->marks[xact_marks[i]];

		/* read after the commit: a mark seen set is taken after it */
		pg_memory_barrier();
		if (pg_atomic_read_u32(&mark->marked) == 0 &&
			pg_atomic_exchange_u32(&mark->marked, 1) == 0)
		{
			Latch	   *latch = NULL;

			LWLockAcquire(shared->lock, LW_SHARED);
			for (int r = 0; r < DLSM_MAX_DATABASES && latch == NULL; r++)
				if (shared->relays[r].dboid == mark->dboid)
					latch = shared->relays[r].latch;
			LWLockRelease(shared->lock);
			if (latch != NULL)
				SetLatch(latch);
			else
				orphaned = true;
		}
	}
	nxact_marks = 0;
	/* after the marks: a relay that sees none marking sees them set */
	if (my_marking != NULL)
	{
		pg_atomic_fetch_sub_u32(&my_marking->marking, 1);
		my_marking = NULL;
	}
	if (my_commit != NULL)
	{
		pg_atomic_fetch_sub_u32(&my_commit->committing, 1);
		my_commit = NULL;
	}
	if (orphaned)
		start_relay(MyDatabaseId, false);
}

/* Shared memory for the listener counts. */
Size
dlsm_notify_shmem_size(void)
{
	return MAXALIGN(sizeof(DlsmListenShared));
}

/* Create or attach to the counts, guarded by lock; AddinShmemInitLock held. */
void
dlsm_notify_shmem_init(LWLock *lock)
{
	bool		found;

	shared = ShmemInitStruct("dlsm listeners", sizeof(DlsmListenShared),
							 &found);
	if (!found)
	{
		memset(shared, 0, sizeof(DlsmListenShared));
		shared->lock = lock;
		for (int i = 0; i < DLSM_MAX_DATABASES; i++)
		{
			pg_atomic_init_u32(&shared->relays[i].committing, 0);
			pg_atomic_init_u32(&shared->relays[i].marking, 0);
			pg_atomic_init_u64(&shared->relays[i].producer_notifies, 0);
			pg_atomic_init_u64(&shared->relays[i].crowded_notifies, 0);
			pg_atomic_init_u32(&shared->relays[i].crowd_said, 0);
		}
	}
}

/*
 * Take the lock in mode, if there is shared state; false when there is
 * none (the library was not preloaded).
 */
static bool
lock_listeners(LWLockMode mode)
{
	if (shared == NULL)
		return false;
	LWLockAcquire(shared->lock, mode);
	return true;
}

/* ---------------------------------------------------------------------
 * Listeners
 * ---------------------------------------------------------------------
 */

/*
 * A client backend of database dboid started (delta 1) or stopped (-1)
 * listening.  The counts only let dlsm skip a NOTIFY nobody would read.
 */
static void
count_listener(Oid dboid, int delta)
{
	int			entry = -1;

	if (!lock_listeners(LW_EXCLUSIVE))
		return;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (shared->listen_db[i] == dboid)
		{
			entry = i;
			break;
		}
		if (entry < 0 && shared->listeners[i] == 0)
			entry = i;			/* free: take it unless dboid has one */
	}
	if (entry < 0)
		shared->listeners_lost = true;	/* full: from now on, unsure */
	else
	{
		shared->listen_db[entry] = dboid;
		shared->listeners[entry] = Max(shared->listeners[entry] + delta, 0);
	}
	LWLockRelease(shared->lock);
}

/*
 * May a client backend of dboid be listening?  True when unsure (dlsm not
 * preloaded, or a listener that found no free entry).  *relay: where the
 * database's relay stands (none without preloading).  With mark, a running
 * relay counts this transaction in its marking, until it ends
 * (dlsm_notify_committed): it may mark a channel for it.
 */
static bool
anyone_listens(Oid dboid, DlsmRelayState *relay, bool mark)
{
	DlsmRelay  *entry;
	bool		listens;

	*relay = DLSM_RELAY_NONE;
	if (!lock_listeners(LW_SHARED))
		return true;
	listens = shared->listeners_lost;
	for (int i = 0; i < DLSM_MAX_DATABASES && !listens; i++)
		listens = shared->listen_db[i] == dboid && shared->listeners[i] > 0;
	entry = relay_of(dboid, false);
	if (entry != NULL)
		*relay = entry->state;
	if (entry != NULL && relay_retry_due(entry))
		*relay = DLSM_RELAY_NONE;	/* ask again */
	if (listens && mark && *relay == DLSM_RELAY_RUNNING && my_marking == NULL)
	{
		pg_atomic_fetch_add_u32(&entry->marking, 1);
		my_marking = entry;
	}
	LWLockRelease(shared->lock);
	return listens;
}

/*
 * How full the listener counts and the relay's channel marks are: out
 * (DLSM_MAX_OWNER_TABLES entries) gets two entries; returns how many.  Once
 * a listener found no room, every NOTIFY dlsm would skip is sent (full: 1);
 * a channel that finds no mark is notified by its producers.
 */
int
dlsm_notify_usage(DlsmTableUsage *out)
{
	int64		used = 0;

	if (!lock_listeners(LW_SHARED))
		return 0;
	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
		used += shared->listeners[i] > 0;
	out[0] = (DlsmTableUsage)
	{
		"listening databases", DLSM_MAX_DATABASES, used,
			shared->listeners_lost ? 1 : 0
	};
	out[1] = (DlsmTableUsage)
	{
		"channel marks", DLSM_MAX_CHANNELS, shared->nmarks,
			shared->marks_full
	};
	LWLockRelease(shared->lock);
	return 2;
}

/* ---------------------------------------------------------------------
 * Producers that notify
 * ---------------------------------------------------------------------
 */

/*
 * This transaction of a producer of dboid notifies a listener in its own
 * commit, which holds PostgreSQL's notify lock (for the whole cluster)
 * across its WAL flush: count it, in flight until dlsm_notify_committed.
 * When it finds a crowd of such commits in flight, count that too, and
 * the first time for the database, with the relay off, say so.  Costs a
 * shared lock of dlsm's shared state at commit (exclusive the database's
 * first time), only where the notify lock is taken anyway; the counts are
 * atomics of the database's entry, which is never freed.
 */
static void
count_producer_notify(Oid dboid)
{
	DlsmRelay  *entry;
	uint32		committing;
	int			crowd = 0;

	if (!lock_listeners(LW_SHARED))
		return;
	entry = relay_of(dboid, false);
	LWLockRelease(shared->lock);
	if (entry == NULL)
	{
		(void) lock_listeners(LW_EXCLUSIVE);
		entry = relay_of(dboid, true);
		LWLockRelease(shared->lock);
		if (entry == NULL)
			return;
	}
	my_commit = entry;
	committing = pg_atomic_add_fetch_u32(&entry->committing, 1);
	pg_atomic_fetch_add_u64(&entry->producer_notifies, 1);
	if (committing >= NOTIFY_CROWD)
	{
		pg_atomic_fetch_add_u64(&entry->crowded_notifies, 1);
		if (!dlsm_notify_relay &&
			pg_atomic_read_u32(&entry->crowd_said) == 0 &&
			pg_atomic_exchange_u32(&entry->crowd_said, 1) == 0)
			crowd = (int) committing;
	}
	if (crowd > 0)
	{
		char	   *dbname = get_database_name(dboid);

		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("producers of database \"%s\" take turns to notify listeners as they commit",
						dbname ? dbname : "?"),
				 errdetail("%d transactions were committing with a NOTIFY at once: PostgreSQL's notify lock lets one commit at a time through, across its WAL flush.",
						   crowd),
				 errhint("Set \"dlsm.notify_relay\" to on: the database's relay then notifies for the producers.")));
	}
}

/*
 * The producers of dboid that notified listeners in their own commits
 * since the server started: *total of them, *crowded in a crowd of such
 * commits.  Zero without preloading.
 */
void
dlsm_notify_producer_counts(Oid dboid, int64 *total, int64 *crowded)
{
	DlsmRelay  *entry;

	*total = 0;
	*crowded = 0;
	if (!lock_listeners(LW_SHARED))
		return;
	entry = relay_of(dboid, false);
	if (entry != NULL)
	{
		*total = (int64) pg_atomic_read_u64(&entry->producer_notifies);
		*crowded = (int64) pg_atomic_read_u64(&entry->crowded_notifies);
	}
	LWLockRelease(shared->lock);
}

/* ---------------------------------------------------------------------
 * Relays and marks
 * ---------------------------------------------------------------------
 */

/* The relay entry of dboid, taken when add and free; the lock held. */
static DlsmRelay *
relay_of(Oid dboid, bool add)
{
	DlsmRelay  *free_entry = NULL;

	for (int i = 0; i < DLSM_MAX_DATABASES; i++)
	{
		if (shared->relays[i].dboid == dboid)
			return &shared->relays[i];
		if (free_entry == NULL && !OidIsValid(shared->relays[i].dboid))
			free_entry = &shared->relays[i];
	}
	if (!add || free_entry == NULL)
		return NULL;
	free_entry->dboid = dboid;
	return free_entry;
}

/*
 * Was the relay asked for, or refused, longer ago than RELAY_START_MS (it
 * did not start: ask again)?  The lock held.
 */
static bool
relay_retry_due(DlsmRelay *relay)
{
	return (relay->state == DLSM_RELAY_STARTING ||
			relay->state == DLSM_RELAY_REFUSED) &&
		TimestampDifferenceExceeds(relay->since, GetCurrentTimestamp(),
								   RELAY_START_MS);
}

/*
 * The most relays that may run at once: dlsm.max_relays, and never more
 * than the background worker processes left after dlsm's launcher, its
 * dlsm.max_workers workers and PostgreSQL's logical replication launcher,
 * so that relays never keep dlsm's workers from starting.
 */
static int
relay_cap(void)
{
	int			reserved = 1 + dlsm_max_workers +
	(max_logical_replication_workers > 0 ? 1 : 0);

	return Max(Min(dlsm_max_relays, max_worker_processes - reserved), 0);
}

/* The relays running or starting, of entries below limit; the lock held. */
static int
relays_in_use(int limit)
{
	int			n = 0;

	for (int i = 0; i < limit; i++)
	{
		DlsmRelay  *relay = &shared->relays[i];

		n += relay->state == DLSM_RELAY_RUNNING ||
			(relay->state == DLSM_RELAY_STARTING && !relay_retry_due(relay));
	}
	return n;
}

/*
 * May database dboid have a relay: it allows connections and is no
 * template?  Remembers its name when it is this backend's.  In a
 * transaction.
 */
static bool
relay_database_ok(Oid dboid)
{
	HeapTuple	tuple = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	Form_pg_database db;
	bool		ok;

	if (!HeapTupleIsValid(tuple))
		return false;
	db = (Form_pg_database) GETSTRUCT(tuple);
	ok = db->datallowconn && !db->datistemplate;
	if (dboid == MyDatabaseId)
		strlcpy(my_dbname, NameStr(db->datname), NAMEDATALEN);
	ReleaseSysCache(tuple);
	return ok;
}

/*
 * The relay of dboid could not start (no room, or the database may have
 * none): producers notify themselves, and ask again once RELAY_START_MS
 * passed.  Returns whether to say so (not said since a relay last ran
 * there); the lock held.
 */
static bool
relay_refused(DlsmRelay *relay, bool quiet)
{
	bool		say = !quiet && !relay->refusal_said;

	relay->state = DLSM_RELAY_REFUSED;
	relay->since = GetCurrentTimestamp();
	relay->refusal_said |= say;
	return say;
}

/*
 * Start a relay for dboid (this backend's database), unless one runs or
 * starts, a DROP DATABASE keeps it away, or a refusal is younger than
 * RELAY_START_MS.  None starts in a database that is a template or does
 * not allow connections (checked when in_xact; the relay checks too), nor
 * past relay_cap() or without a free background worker process: producers
 * notify in their transactions, as with the relay off, and the log says
 * so once.  The postmaster never restarts a relay: the next producer that
 * needs one starts it.
 */
static void
start_relay(Oid dboid, bool in_xact)
{
	BackgroundWorker bgw;
	DlsmRelay  *relay;
	bool		allowed = !in_xact || relay_database_ok(dboid);
	const char *dbname = my_dbname[0] != '\0' ? my_dbname : "?";
	int			running = 0;
	int			cap = relay_cap();
	bool		say;

	if (!lock_listeners(LW_EXCLUSIVE))
		return;
	relay = relay_of(dboid, true);
	if (relay == NULL || relay->state == DLSM_RELAY_RUNNING ||
		((relay->state == DLSM_RELAY_STARTING ||
		  relay->state == DLSM_RELAY_REFUSED) && !relay_retry_due(relay)) ||
		GetCurrentTimestamp() < relay->stopped_until)
	{
		LWLockRelease(shared->lock);
		return;
	}
	if (allowed)
		running = relays_in_use(DLSM_MAX_DATABASES);
	if (!allowed || running >= cap)
	{
		say = relay_refused(relay, !allowed);
		LWLockRelease(shared->lock);
		if (say)
			ereport(LOG,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start the dlsm relay for database \"%s\"",
							dbname),
					 errdetail("%d relays run or start, and \"dlsm.max_relays\" and the background worker processes left to dlsm's workers allow %d. Producers send the notifications of queue channels in their own transactions.",
							   running, cap),
					 errhint("You may need to increase \"dlsm.max_relays\" or \"max_worker_processes\".")));
		return;
	}
	relay->state = DLSM_RELAY_STARTING;
	relay->since = GetCurrentTimestamp();
	LWLockRelease(shared->lock);

	dlsm_bgw_fill(&bgw, "dlsm relay", "dlsm_relay_main", dbname,
				  ObjectIdGetDatum(dboid), BGW_NEVER_RESTART, 0);
	if (RegisterDynamicBackgroundWorker(&bgw, NULL))
		return;
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	say = relay->state == DLSM_RELAY_STARTING && relay_refused(relay, false);
	LWLockRelease(shared->lock);
	if (say)
		ereport(LOG,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not start the dlsm relay for database \"%s\"",
						dbname),
				 errdetail("Producers send the notifications of queue channels in their own transactions until it starts."),
				 errhint("You may need to increase \"max_worker_processes\".")));
}

/*
 * The mark of channel in dboid, added if new; -1 when every entry is
 * taken.  Entries are never freed, so that a backend may keep the ones it
 * found (they never move): once a cluster's databases notified
 * DLSM_MAX_CHANNELS channels through their relays, the channels after them
 * are notified in their producers' transactions, as with the relay off,
 * and counted in dlsm_shared_tables ('channel marks').
 */
static int
channel_mark(Oid dboid, const char *channel)
{
	static int	known[MAX_MARKS_PER_XACT];
	static int	nknown = 0;
	int			found = -1;

	for (int i = 0; i < nknown; i++)
		if (shared->marks[known[i]].dboid == dboid &&
			strcmp(shared->marks[known[i]].channel, channel) == 0)
			return known[i];
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	for (int i = 0; i < shared->nmarks && found < 0; i++)
		if (shared->marks[i].dboid == dboid &&
			strcmp(shared->marks[i].channel, channel) == 0)
			found = i;
	if (found < 0 && shared->nmarks < DLSM_MAX_CHANNELS)
	{
		found = shared->nmarks++;
		shared->marks[found].dboid = dboid;
		strlcpy(shared->marks[found].channel, channel, NAMEDATALEN);
		pg_atomic_init_u32(&shared->marks[found].marked, 0);
	}
	else if (found < 0)
		shared->marks_full++;	/* its producers notify themselves */
	LWLockRelease(shared->lock);
	if (found >= 0)
	{
		/* the oldest known one makes room */
		if (nknown == MAX_MARKS_PER_XACT)
			memmove(known, known + 1, sizeof(int) * --nknown);
		known[nknown++] = found;
	}
	return found;
}

/* This relay is its database's no more; the lock held exclusively. */
static void
relay_forget(void)
{
	if (my_relay->pid == MyProcPid)
	{
		my_relay->state = DLSM_RELAY_NONE;
		my_relay->pid = 0;
		my_relay->latch = NULL;
	}
}

/* The relay of this backend's database stopped. */
static void
relay_detach(int code, Datum arg)
{
	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	relay_forget();
	LWLockRelease(shared->lock);
	my_relay = NULL;
}

/*
 * This background worker becomes the relay of database dboid; false when
 * it may not (another runs, a DROP DATABASE keeps it away, no entry, no
 * shared state).  Called before it connects to the database.
 */
bool
dlsm_notify_relay_attach(Oid dboid)
{
	DlsmRelay  *relay;
	bool		ok;

	if (!lock_listeners(LW_EXCLUSIVE))
		return false;
	relay = relay_of(dboid, true);
	ok = relay != NULL && relay->state != DLSM_RELAY_RUNNING &&
		GetCurrentTimestamp() >= relay->stopped_until;
	if (ok)
	{
		relay->state = DLSM_RELAY_RUNNING;
		relay->pid = MyProcPid;
		relay->latch = MyLatch;
		relay->refusal_said = false;
		my_relay = relay;
	}
	LWLockRelease(shared->lock);
	if (ok)
		before_shmem_exit(relay_detach, (Datum) 0);
	return ok;
}

/*
 * The relay takes the marks of its database, clearing them: up to max of
 * them, their entries in marks and channels in channels.  Returns how many.
 */
int
dlsm_notify_relay_take(int *marks, char (*channels)[NAMEDATALEN], int max)
{
	int			n = 0;
	int			nmarks;

	LWLockAcquire(shared->lock, LW_SHARED);
	nmarks = shared->nmarks;
	LWLockRelease(shared->lock);
	for (int i = 0; i < nmarks && n < max; i++)
	{
		DlsmMark   *mark = &shared->marks[i];

		/* dboid and channel were set before nmarks counted them */
		if (mark->dboid != my_relay->dboid ||
			pg_atomic_read_u32(&mark->marked) == 0 ||
			pg_atomic_exchange_u32(&mark->marked, 0) == 0)
			continue;
		marks[n] = i;
		strlcpy(channels[n], mark->channel, NAMEDATALEN);
		n++;
	}
	return n;
}

/*
 * The relay leaves of itself (idle, or past relay_cap()): true when it is
 * its database's relay no more, so that producers notify themselves; false
 * while a producer may still mark a channel for it or a mark of its
 * database is set (it has work).
 */
bool
dlsm_notify_relay_leave(void)
{
	bool		busy;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	busy = pg_atomic_read_u32(&my_relay->marking) > 0;
	for (int i = 0; i < shared->nmarks && !busy; i++)
		busy = shared->marks[i].dboid == my_relay->dboid &&
			pg_atomic_read_u32(&shared->marks[i].marked) != 0;
	if (!busy)
		relay_forget();
	LWLockRelease(shared->lock);
	return !busy;
}

/*
 * The relay stops (SIGTERM, or its database may have none): it is its
 * database's relay no more.  Returns whether it should send the marks
 * left (false when a DROP DATABASE stops it).
 */
bool
dlsm_notify_relay_stop(void)
{
	bool		dropped;

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	relay_forget();
	dropped = GetCurrentTimestamp() < my_relay->stopped_until;
	LWLockRelease(shared->lock);
	return !dropped;
}

/* Is this relay within relay_cap(), counting the relays before its entry? */
bool
dlsm_notify_relay_within_cap(void)
{
	bool		within;

	LWLockAcquire(shared->lock, LW_SHARED);
	within = relays_in_use(my_relay - shared->relays) < relay_cap();
	LWLockRelease(shared->lock);
	return within;
}

/* May database dboid have a relay?  In a transaction. */
bool
dlsm_notify_relay_allowed(Oid dboid)
{
	return relay_database_ok(dboid);
}

/* The relay could not notify these n marks: they wait for its next pass. */
void
dlsm_notify_relay_untake(const int *marks, int n)
{
	for (int i = 0; i < n; i++)
		pg_atomic_write_u32(&shared->marks[marks[i]].marked, 1);
}

/*
 * Stop the relay of dboid and keep another from starting for pause_ms
 * (DROP DATABASE): a running relay is sent SIGTERM under the lock, so that
 * the pid is still its own; returns that pid, or 0 when none runs.
 */
pid_t
dlsm_notify_relay_pause(Oid dboid, int pause_ms)
{
	DlsmRelay  *relay;
	pid_t		pid = 0;

	if (!lock_listeners(LW_EXCLUSIVE))
		return 0;
	relay = relay_of(dboid, false);
	if (relay != NULL)
	{
		relay->stopped_until =
			TimestampTzPlusMilliseconds(GetCurrentTimestamp(), pause_ms);
		pid = relay->state == DLSM_RELAY_RUNNING ? relay->pid : 0;
		if (pid != 0)
			kill(pid, SIGTERM);
	}
	LWLockRelease(shared->lock);
	return pid;
}

/* Is the relay pid of dboid gone? */
bool
dlsm_notify_relay_gone(Oid dboid, pid_t pid)
{
	DlsmRelay  *relay;
	bool		gone;

	if (!lock_listeners(LW_SHARED))
		return true;
	relay = relay_of(dboid, false);
	gone = relay == NULL || relay->pid != pid;
	LWLockRelease(shared->lock);
	return gone;
}
