/*-------------------------------------------------------------------------
 *
 * dedup.h
 *	  The dedup key look-up by a direct scan of the key's index (dedup.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/dedup.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_DEDUP_H
#define DLSM_DEDUP_H

#include "plans.h"

/* What a probe found. */
typedef enum DlsmDedupProbe
{
	DLSM_DEDUP_UNUSABLE,		/* cannot probe: run DEDUP_LOOKUP instead */
	DLSM_DEDUP_MISS,			/* no request holds the key */
	DLSM_DEDUP_HIT,				/* one does: its id is returned */
} DlsmDedupProbe;

extern DlsmDedupProbe dlsm_dedup_probe(const DlsmPlanSet *set, Datum key,
									   bool has_window, Datum window,
									   int64 *id);

#endif							/* DLSM_DEDUP_H */
