/*-------------------------------------------------------------------------
 *
 * usercode.h
 *	  Does an UPDATE of a table run code that is not PostgreSQL's own?
 *	  (usercode.c)
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/usercode.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_USERCODE_H
#define DLSM_USERCODE_H

extern bool dlsm_update_runs_user_code(Oid relid);

#endif							/* DLSM_USERCODE_H */
