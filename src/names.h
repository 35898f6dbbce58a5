/*-------------------------------------------------------------------------
 *
 * names.h
 *	  Names of catalog objects that may have been dropped meanwhile
 *	  (names.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/names.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_NAMES_H
#define DLSM_NAMES_H

extern char *dlsm_rel_name(Oid relid);
extern char *dlsm_schema_name(Oid nspid);
extern char *dlsm_func_name(Oid funcid);
extern char *dlsm_rel_label(Oid relid);
extern void dlsm_name_clip(const char *from, char *to, int size);

#endif							/* DLSM_NAMES_H */
