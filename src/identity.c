/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  Running a stretch of dlsm's work as another role, safely.
 *
 * dlsm acts as other roles in a few places: as the extension's owner to
 * read and write its own tables, and as a queue table's owner whenever it
 * works on the queue for no caller (the worker's reaping, retention and
 * handlers, monitoring, a capture trigger's insert).  Each switch is a
 * security-restricted operation (no SET ROLE, no temporary tables, as for
 * autovacuum and REFRESH MATERIALIZED VIEW) and opens a GUC nest level:
 * settings the code run as that role changes are undone when dlsm switches
 * back, so they cannot leak into later work done as someone else.  Work
 * done as a role inside another role's session (a capture's insert, a
 * monitoring query) also pins search_path (dlsm_identity_switch_pinned).
 * An error undoes both with the (sub)transaction.  The one exception
 * resumes an identity a caller ran with (dlsm_identity_resume): the claims
 * a transaction did not settle are written at its commit as the session's
 * role that claimed them (pending.c defers no other claims).
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/identity.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/guc.h"

#include "identity.h"

/* Act as role from now on; saved is what dlsm_identity_restore needs. */
void
dlsm_identity_switch(Oid role, DlsmIdentity *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(role, saved->sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	saved->guc_nest_level = NewGUCNestLevel();
}

/*
 * As dlsm_identity_switch, and with search_path pinned to pg_catalog,
 * pg_temp until dlsm_identity_restore (as PostgreSQL 17 does for
 * maintenance commands): for work done as role inside a session of
 * another role, whose settings role did not choose.  Code of role's that
 * the work runs (triggers, defaults, ...) then never resolves a name
 * through the session's search_path.
 */
void
dlsm_identity_switch_pinned(Oid role, DlsmIdentity *saved)
{
	dlsm_identity_switch(role, saved);
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
							 true, 0, false);
}

/*
 * Act as role in security context sec_context from now on: the identity an
 * earlier call ran with (GetUserIdAndSecContext), resumed; saved is what
 * dlsm_identity_restore needs.
 */
void
dlsm_identity_resume(Oid role, int sec_context, DlsmIdentity *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(role, sec_context);
	saved->guc_nest_level = NewGUCNestLevel();
}

/* Back to the identity and settings saved by dlsm_identity_switch. */
void
dlsm_identity_restore(DlsmIdentity *saved)
{
	AtEOXact_GUC(false, saved->guc_nest_level);
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}
