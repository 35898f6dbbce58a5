/*-------------------------------------------------------------------------
 *
 * locks.h
 *	  Lock-manager locks of entities and named locks (locks.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/locks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_LOCKS_H
#define DLSM_LOCKS_H

#include "utils/resowner.h"

/* The most slots of a group: its highest concurrency limit. */
#define DLSM_MAX_SLOTS 1000

typedef enum DlsmSlotState
{
	DLSM_SLOT_MINE,				/* held by this transaction already */
	DLSM_SLOT_TAKEN,			/* taken now */
	DLSM_SLOT_BUSY				/* held by another transaction */
} DlsmSlotState;

extern bool dlsm_lock_entity_try(Oid queue, const char *entity);
extern DlsmSlotState dlsm_lock_slot_try(Oid queue, const char *group,
										int slot);
extern void dlsm_lock_slot_release(Oid queue, const char *group, int slot);
extern void dlsm_lock_entity_release(Oid queue, const char *entity);
extern bool dlsm_lock_named_acquire(const char *name, long wait_ms);
extern bool dlsm_lock_named_release(const char *name, ResourceOwner owner);
extern void dlsm_lock_fence_floor(bool release);
extern bool dlsm_lock_dedup_key(Oid queue, const char *key);
extern void dlsm_lock_dedup_key_release(Oid queue, const char *key);

#endif							/* DLSM_LOCKS_H */
