/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Running a step in a subtransaction and keeping its error, and a
 *	  background process's recovery from an error (subxact.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/subxact.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_SUBXACT_H
#define DLSM_SUBXACT_H

typedef void (*DlsmStep) (void *arg);

extern ErrorData *dlsm_subxact_run(DlsmStep step, void *arg);
extern ErrorData *dlsm_error_recover(MemoryContext context);

#endif							/* DLSM_SUBXACT_H */
