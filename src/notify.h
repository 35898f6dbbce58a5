/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY and LISTEN for dlsm (notify.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/notify.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_NOTIFY_H
#define DLSM_NOTIFY_H

#include "nodes/nodes.h"
#include "storage/lwlock.h"

#include "usage.h"

extern void dlsm_notify_init(void);
extern void dlsm_notify_client_listens(Node *stmt);
extern void dlsm_notify_send(const char *channel);
extern void dlsm_notify_committed(bool committed);
extern void dlsm_notify_producer_counts(Oid dboid, int64 *total,
										int64 *crowded);

/* the relay of a database's notifications (relay.c), and DROP DATABASE */
extern bool dlsm_notify_relay_attach(Oid dboid);
extern int	dlsm_notify_relay_take(int *marks, char (*channels)[NAMEDATALEN],
								   int max);
extern void dlsm_notify_relay_untake(const int *marks, int n);
extern bool dlsm_notify_relay_leave(void);
extern bool dlsm_notify_relay_stop(void);
extern bool dlsm_notify_relay_within_cap(void);
extern bool dlsm_notify_relay_allowed(Oid dboid);
extern pid_t dlsm_notify_relay_pause(Oid dboid, int pause_ms);
extern bool dlsm_notify_relay_gone(Oid dboid, pid_t pid);

/* client backends that LISTEN, counted in shared memory */
extern Size dlsm_notify_shmem_size(void);
extern void dlsm_notify_shmem_init(LWLock *lock);
extern int	dlsm_notify_usage(DlsmTableUsage *out);

#endif							/* DLSM_NOTIFY_H */
