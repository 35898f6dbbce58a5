/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  Running a stretch of dlsm's work as another role (identity.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/identity.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_IDENTITY_H
#define DLSM_IDENTITY_H

/* Who dlsm was before it switched to another role. */
typedef struct DlsmIdentity
{
	Oid			userid;
	int			sec_context;
	int			guc_nest_level;
} DlsmIdentity;

extern void dlsm_identity_switch(Oid role, DlsmIdentity *saved);
extern void dlsm_identity_switch_pinned(Oid role, DlsmIdentity *saved);
extern void dlsm_identity_resume(Oid role, int sec_context,
								 DlsmIdentity *saved);
extern void dlsm_identity_restore(DlsmIdentity *saved);

#endif							/* DLSM_IDENTITY_H */
