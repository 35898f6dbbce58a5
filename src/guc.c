/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  The dlsm.* settings.
 *
 * Every setting is defined here, with its global; the prefix "dlsm" is
 * reserved so that a misspelt dlsm setting is reported, not kept.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/guc.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "utils/guc.h"

#include "dlsm.h"

/* Lease of a claim made without one, in seconds. */
int			dlsm_default_lease = 300;

/* Define the settings; called once from _PG_init. */
void
dlsm_guc_init(void)
{
	DefineCustomIntVariable("dlsm.default_lease",
							"Sets the lease of claims made without one.",
							"A claim not settled within its lease is returned to new by the reaper.",
							&dlsm_default_lease,
							300,
							1,
							INT_MAX / 2,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("dlsm");
}
