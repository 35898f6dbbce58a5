/*-------------------------------------------------------------------------
 *
 * locks.c
 *	  Lock-manager locks on (queue, entity), the exclusion between claims.
 *
 * Whether an uncommitted claim holds an entity cannot be read from the
 * queue's rows: its rows still read 'new' to everyone else.  So every claim
 * of an entity, by dlsm_claim or dlsm_group_updates, first takes an
 * exclusive lock-manager lock keyed by (database, queue, entity) for its
 * transaction, and a claimer that does not get it at once skips the entity.
 *
 * Lock order: these locks are only ever taken conditionally (never waited
 * for), so they cannot take part in a deadlock, whatever order they are
 * taken in.  They are transaction locks: released at commit or rollback,
 * or at once with dlsm_lock_entity_release when a candidate is skipped.
 *
 * dlsm's locks fall in five key spaces, each an advisory tag whose field4
 * has one mark bit as its highest (the DLSM_LOCKTAG_* values below, in the
 * order described here): entities, named locks, the fence floor,
 * deduplication keys and group slots.  The SQL advisory functions use
 * field4 1 and 2 only: users' pg_advisory_* keys cannot collide with ours.
 *
 * The first, entity locks, have field4's top bit set.  field2 is the
 * queue's OID; field3 and the low 15 bits of field4 carry 47 bits of a
 * hash of the entity, seeded with the queue's OID: the key must be the
 * same in every backend and after a restart (a prepared transaction keeps
 * its locks).  Two entities with equal hashes merely exclude each other; a
 * claimer can compute such a name (test/t/047_entity_collision.pl), but
 * only holds the other entity busy for as long as its own transaction, as
 * a claim of that entity would.
 *
 * Named locks (dlsm_try_lock) use the second key space: field4 is 0x4000,
 * field2 and field3 a 64-bit hash of the name.  They are waited for, in
 * the lock manager's queue (first come, first served), with a bound taken
 * from lock_timeout's machinery; the deadlock detector covers them.
 *
 * The fence floor (fence.c) is raised under the third key space, field4
 * 0x2000, held as a session lock for a moment: it is the only lock of dlsm
 * that is waited for without a bound, and it is never held while waiting
 * for another lock, so it cannot deadlock either.
 *
 * Deduplication keys (dlsm_enqueue's dedup_key) use the fourth key space:
 * field4 is 0x1000 plus 12 bits of a hash of the key, field3 32 more bits
 * of it (seeded with the queue's OID, as for entities), field2 the queue.
 * A producer takes its key's lock for its transaction, waiting in the lock
 * manager's queue, before it looks the key up and inserts: producers of
 * one key serialise, each sees what the one before it committed.  One
 * that finds the key held by a committed row adds nothing and gives the
 * lock back at once (unless its transaction held it before).  The wait
 * is covered by the deadlock detector and bounded by lock_timeout if the
 * caller set one; it can deadlock only with a transaction that holds
 * another key (or a row) the waiter holds and waits for in turn, as
 * inserts into a unique index can.  Two keys with equal hashes merely
 * serialise their producers.
 *
 * A group's concurrency limit of n is n slots, each a lock of the fifth key
 * space: field4 0x0800 plus the slot (below DLSM_MAX_SLOTS), field2 the
 * queue's OID, field3 32 bits of a hash of the group.  A claim holds a slot
 * of its unit's group until its transaction ends (or its unit is settled
 * in it); like entity locks they are only taken conditionally, and two
 * groups with equal hashes merely share their slots.  They belong to the
 * top transaction's resource owner, not to the statement's, so that a
 * later statement (the settle) can give one back; grouplimit.c gives back
 * those of a subtransaction that rolls back.
 *
 * Calls subxact.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/locks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "compat.h"
#include "locks.h"
#include "subxact.h"

#define DLSM_LOCKTAG_ENTITY		0x8000	/* field4 mark of entity locks */
#define DLSM_LOCKTAG_NAMED		0x4000	/* field4 of named locks */
#define DLSM_LOCKTAG_FENCE		0x2000	/* field4 of the fence floor */
#define DLSM_LOCKTAG_DEDUP		0x1000	/* field4 mark of dedup keys */
#define DLSM_LOCKTAG_SLOT		0x0800	/* field4 mark of group slots */

/* An entity's lock; a NULL entity (a row written by hand) is the empty one. */
static void
entity_tag(LOCKTAG *tag, Oid queue, const char *entity)
{
	const char *name = entity != NULL ? entity : "";
	uint64		h = hash_bytes_extended((const unsigned char *) name,
										strlen(name), queue);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, queue, (uint32) h,
						 (uint16) (DLSM_LOCKTAG_ENTITY | ((h >> 32) & 0x7FFF)));
}

/*
 * Take the entity's lock for this transaction if nobody else holds it;
 * true when taken (or already held by this transaction).
 */
bool
dlsm_lock_entity_try(Oid queue, const char *entity)
{
	LOCKTAG		tag;

	entity_tag(&tag, queue, entity);
	return LockAcquire(&tag, ExclusiveLock, false, true) !=
		LOCKACQUIRE_NOT_AVAIL;
}

/* Give back one dlsm_lock_entity_try that succeeded. */
void
dlsm_lock_entity_release(Oid queue, const char *entity)
{
	LOCKTAG		tag;

	entity_tag(&tag, queue, entity);
	LockRelease(&tag, ExclusiveLock, false);
}

static void
slot_tag(LOCKTAG *tag, Oid queue, const char *group, int slot)
{
	uint32		h = hash_bytes((const unsigned char *) group, strlen(group));

	Assert(slot >= 0 && slot < DLSM_MAX_SLOTS);
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, queue, h,
						 (uint16) (DLSM_LOCKTAG_SLOT | slot));
}

/*
 * Look at slot of group in queue: DLSM_SLOT_MINE when this transaction
 * holds it, DLSM_SLOT_TAKEN when it took it just now, DLSM_SLOT_BUSY when
 * another transaction holds it.
 */
DlsmSlotState
dlsm_lock_slot_try(Oid queue, const char *group, int slot)
{
	LOCKTAG		tag;
	ResourceOwner owner = CurrentResourceOwner;
	LockAcquireResult result;

	slot_tag(&tag, queue, group, slot);
	if (DLSM_LOCK_HELD_BY_ME(&tag, ExclusiveLock))
		return DLSM_SLOT_MINE;
	/* the transaction's own: released by a later statement, or at its end */
	CurrentResourceOwner = TopTransactionResourceOwner;
	result = LockAcquire(&tag, ExclusiveLock, false, true);
	CurrentResourceOwner = owner;
	return result == LOCKACQUIRE_NOT_AVAIL ? DLSM_SLOT_BUSY : DLSM_SLOT_TAKEN;
}

/* Give back one slot this transaction holds. */
void
dlsm_lock_slot_release(Oid queue, const char *group, int slot)
{
	LOCKTAG		tag;
	ResourceOwner owner = CurrentResourceOwner;

	slot_tag(&tag, queue, group, slot);
	CurrentResourceOwner = TopTransactionResourceOwner;
	LockRelease(&tag, ExclusiveLock, false);
	CurrentResourceOwner = owner;
}

static void
named_tag(LOCKTAG *tag, const char *name)
{
	uint64		h = hash_bytes_extended((const unsigned char *) name,
										strlen(name), 0);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (h >> 32), (uint32) h,
						 DLSM_LOCKTAG_NAMED);
}

/* A bounded wait for a named lock's lock-manager lock (a step). */
typedef struct NamedWait
{
	LOCKTAG		tag;
	long		wait_ms;		/* -1: without end */
} NamedWait;

/*
 * Wait for the lock with lock_timeout set to the wait, at a GUC nest level
 * of its own: the caller's setting is back when the step ends, and if it
 * fails, the subtransaction's abort restores it.
 */
static void
named_wait_step(void *arg)
{
	NamedWait  *wait = (NamedWait *) arg;
	int			nest_level = NewGUCNestLevel();
	char		timeout[32];

	snprintf(timeout, sizeof(timeout), "%d",
			 wait->wait_ms < 0 ? 0 : (int) Min(wait->wait_ms, INT_MAX));
	(void) set_config_option("lock_timeout", timeout, PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	(void) LockAcquire(&wait->tag, ExclusiveLock, false, false);
	/* a timeout that fired as the lock came must be served here */
	CHECK_FOR_INTERRUPTS();
	AtEOXact_GUC(true, nest_level);
}

/*
 * Take the lock-manager lock of a named lock for this transaction, waiting
 * in line up to wait_ms (0: not at all, -1: without end).  True when
 * granted.  A bounded wait runs in a subtransaction: the lock timeout it
 * uses is an error, caught there.
 */
bool
dlsm_lock_named_acquire(const char *name, long wait_ms)
{
	ResourceOwner oldowner = CurrentResourceOwner;
	NamedWait	wait;
	ErrorData  *edata;

	named_tag(&wait.tag, name);
	if (wait_ms == 0)
	{
		LockAcquireResult result;

		/* held by the (sub)transaction, not by the calling portal */
		CurrentResourceOwner = CurTransactionResourceOwner;
		result = LockAcquire(&wait.tag, ExclusiveLock, false, true);
		CurrentResourceOwner = oldowner;
		return result != LOCKACQUIRE_NOT_AVAIL;
	}

	/* the subtransaction hands the lock to this (sub)transaction's owner */
	wait.wait_ms = wait_ms;
	edata = dlsm_subxact_run(named_wait_step, &wait);
	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/*
 * Give back a named lock's lock-manager lock before the transaction ends;
 * owner is the resource owner that holds it (the (sub)transaction that
 * took it, or the one it was handed to).  False if it holds none.
 */
bool
dlsm_lock_named_release(const char *name, ResourceOwner owner)
{
	LOCKTAG		tag;
	ResourceOwner oldowner = CurrentResourceOwner;
	bool		released;

	named_tag(&tag, name);
	CurrentResourceOwner = owner;
	released = LockRelease(&tag, ExclusiveLock, false);
	CurrentResourceOwner = oldowner;
	return released;
}

/*
 * Serialize the raising of this database's fence floor between backends:
 * a session lock, taken (waiting) and released around a non-transactional
 * setval, so it never waits for another transaction to end.  Call with
 * release false to take it, true to give it back.
 */
void
dlsm_lock_fence_floor(bool release)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, DLSM_LOCKTAG_FENCE);
	if (release)
		LockRelease(&tag, ExclusiveLock, true);
	else
		(void) LockAcquire(&tag, ExclusiveLock, true, false);
}

static void
dedup_tag(LOCKTAG *tag, Oid queue, const char *key)
{
	uint64		h = hash_bytes_extended((const unsigned char *) key,
										strlen(key), queue);

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, queue, (uint32) h,
						 (uint16) (DLSM_LOCKTAG_DEDUP | ((h >> 32) & 0x0FFF)));
}

/*
 * Take the lock of dedup key key of queue for this transaction, waiting
 * for the transaction that holds it to end (the caller's lock_timeout
 * bounds the wait).  Released when the (sub)transaction ends, or by
 * dlsm_lock_dedup_key_release.  True when this transaction did not hold
 * it already.
 */
bool
dlsm_lock_dedup_key(Oid queue, const char *key)
{
	LOCKTAG		tag;
	ResourceOwner oldowner = CurrentResourceOwner;
	LockAcquireResult result;

	dedup_tag(&tag, queue, key);
	/* held by the (sub)transaction, not by the calling portal */
	CurrentResourceOwner = CurTransactionResourceOwner;
	PG_TRY();
	{
		result = LockAcquire(&tag, ExclusiveLock, false, false);
	}
	PG_FINALLY();
	{
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	return result != LOCKACQUIRE_ALREADY_HELD;
}

/* Give back a dlsm_lock_dedup_key of this (sub)transaction at once. */
void
dlsm_lock_dedup_key_release(Oid queue, const char *key)
{
	LOCKTAG		tag;
	ResourceOwner oldowner = CurrentResourceOwner;

	dedup_tag(&tag, queue, key);
	CurrentResourceOwner = CurTransactionResourceOwner;
	LockRelease(&tag, ExclusiveLock, false);
	CurrentResourceOwner = oldowner;
}
