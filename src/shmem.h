/*-------------------------------------------------------------------------
 *
 * shmem.h
 *	  dlsm's shared memory: the hooks that size and create each module's
 *	  shared state (shmem.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/shmem.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_SHMEM_H
#define DLSM_SHMEM_H

extern void dlsm_shmem_init(int max_databases);

#endif							/* DLSM_SHMEM_H */
