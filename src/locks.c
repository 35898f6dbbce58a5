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
 * The tag is an advisory tag whose field4 has its top bit set, a value the
 * SQL advisory functions (field4 1 and 2) never use: users' pg_advisory_*
 * keys cannot collide with ours.  field2 is the queue's OID; field3 and
 * the low 15 bits of field4 carry 47 bits of a hash of the entity.  Two
 * entities with equal hashes merely exclude each other.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/locks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"

#include "dlsm.h"

#define DLSM_LOCKTAG_ENTITY		0x8000	/* field4 mark of entity locks */

static void
entity_tag(LOCKTAG *tag, Oid queue, const char *entity)
{
	uint64		h = hash_bytes_extended((const unsigned char *) entity,
										strlen(entity), queue);

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
