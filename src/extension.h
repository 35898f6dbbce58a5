/*-------------------------------------------------------------------------
 *
 * extension.h
 *	  Where dlsm is installed: its schema, owner and own objects
 *	  (extension.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/extension.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_EXTENSION_H
#define DLSM_EXTENSION_H

#include "fmgr.h"

/* The version of the SQL objects this library serves. */
#define DLSM_SQL_VERSION "1.6"

/* dlsm's own relations, found in the extension's schema. */
typedef enum DlsmObject
{
	DLSM_OBJ_QUEUES,			/* dlsm_queues, the registry of queues */
	DLSM_OBJ_CAPTURES,			/* dlsm_captures, the registry of captures */
	DLSM_OBJ_LEASES,			/* dlsm_leases, the named locks' leases */
	DLSM_OBJ_FENCE_SEQ,			/* dlsm_fence_seq */
	DLSM_OBJ_GROUP_LIMITS,		/* dlsm_group_limits, the limits of groups */
	DLSM_NUM_OBJECTS
} DlsmObject;

extern void dlsm_extension_init(void);
extern void dlsm_extension_check_call(FunctionCallInfo fcinfo, int nargs);
extern bool dlsm_extension_exists(void);
extern bool dlsm_extension_current(void);
extern const char *dlsm_extension_schema(void);
extern Oid	dlsm_extension_owner(void);
extern Oid	dlsm_extension_object(DlsmObject object);
extern const char *dlsm_extension_object_name(DlsmObject object);
extern uint64 dlsm_extension_generation(void);
extern bool dlsm_extension_is_registry(Oid relid);

#endif							/* DLSM_EXTENSION_H */
