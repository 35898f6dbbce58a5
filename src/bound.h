/*-------------------------------------------------------------------------
 *
 * bound.h
 *	  The time bound on each step of the worker (bound.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/bound.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_BOUND_H
#define DLSM_BOUND_H

extern void dlsm_bound_init(void);
extern void dlsm_bound_begin(Oid relid, const char *queue, const char *step);
#define DLSM_BOUND_STEP 0		/* own_ms: bounded by dlsm.step_timeout */

extern void dlsm_bound_enter(const char *step, int own_ms);
extern bool dlsm_bound_end(void);
extern bool dlsm_bound_abandoned(Oid *relid, const char **queue,
								 const char **step);
extern const char *dlsm_bound_step(void);
extern void dlsm_bound_context(void *arg);

#endif							/* DLSM_BOUND_H */
