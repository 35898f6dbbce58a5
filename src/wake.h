/*-------------------------------------------------------------------------
 *
 * wake.h
 *	  What happens when a transaction that changed work ends (wake.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/wake.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_WAKE_H
#define DLSM_WAKE_H

/*
 * Called at the end of every transaction (dlsm_wake_at_end); true: wake
 * waiting claims if it rolled back.
 */
typedef bool (*DlsmWakeEndHook) (void);

extern void dlsm_wake_init(void);
extern void dlsm_wake_at_end(DlsmWakeEndHook hook);
extern void dlsm_wake_claimers_at_commit(void);
extern void dlsm_wake_worker_request_at_commit(int requests);
extern void dlsm_wake_claimers_at_end(void);
extern void dlsm_wake_queue_claimers_at_commit(Oid relid);
extern void dlsm_wake_queue_claimers_at_end(Oid relid);
extern void dlsm_wake_worker_at_commit(void);
extern void dlsm_wake_launcher_at_commit(void);
extern void dlsm_wake_channel_at_commit(const char *channel);
extern void dlsm_wake_rows_ready_at_commit(Oid relid, int64 lowest);
extern void dlsm_wake_enqueue_inserting(Oid relid, bool own);
extern bool dlsm_wake_is_enqueue_insert(Oid relid);
extern void dlsm_wake_queue_changed_at_commit(Oid relid);
extern void dlsm_wake_queue_dropped_at_commit(Oid relid);
extern void dlsm_wake_queue_truncated_at_commit(Oid relid);
extern void dlsm_wake_queue_new(Oid relid);
extern void dlsm_wake_entity_changed_at_commit(Oid relid, const char *entity);

#endif							/* DLSM_WAKE_H */
