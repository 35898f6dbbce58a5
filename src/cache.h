/*-------------------------------------------------------------------------
 *
 * cache.h
 *	  How dlsm's per-backend caches are made: a hash keyed by an OID, in a
 *	  memory context of their own.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/cache.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_CACHE_H
#define DLSM_CACHE_H

#include "utils/hsearch.h"
#include "utils/memutils.h"

/*
 * A new hash named name, in context, of entries entrysize bytes long whose
 * first field is the Oid key.
 */
static inline HTAB *
dlsm_cache_create(const char *name, Size entrysize, MemoryContext context)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = entrysize;
	ctl.hcxt = context;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

#endif							/* DLSM_CACHE_H */
