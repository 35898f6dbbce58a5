/*-------------------------------------------------------------------------
 *
 * namedlock.h
 *	  Named locks: dlsm_try_lock, dlsm_unlock, dlsm_refresh_lock
 *	  (namedlock.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/namedlock.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_NAMEDLOCK_H
#define DLSM_NAMEDLOCK_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

#include "usage.h"

/* The most transaction-scope holders and waiters of named locks shown. */
#define DLSM_MAX_NAMED 256

/* Bytes of a lock name kept in shared memory, with its terminator. */
#define DLSM_NAMED_LEN 128

/* A transaction holding or waiting for a named lock, for dlsm_locks. */
typedef struct DlsmNamedEntry
{
	pid_t		pid;			/* 0: entry free */
	Oid			dboid;			/* database of the transaction */
	bool		waiting;		/* false: holds it */
	bool		lease;			/* asked for a lease */
	int64		fence;			/* when holding */
	TimestampTz since;			/* when it came (waiting) or got it */
	char		name[DLSM_NAMED_LEN];	/* the name, maybe cut short */
} DlsmNamedEntry;

extern void dlsm_named_init(void);
extern bool dlsm_named_try(const char *name, int64 wait_us, int64 lease_us,
						   int64 *fence);
extern bool dlsm_named_unlock(const char *name, int64 fence);
extern TimestampTz dlsm_named_refresh(const char *name, int64 fence,
									  int64 lease_us);
extern int64 dlsm_named_purge(void);

/* the entries in shared memory, for dlsm_locks */
extern Size dlsm_named_shmem_size(void);
extern void dlsm_named_shmem_init(LWLock *lock);
extern int	dlsm_named_copy_entries(DlsmNamedEntry *out);
extern int	dlsm_named_usage(DlsmTableUsage *out);

#endif							/* DLSM_NAMEDLOCK_H */
