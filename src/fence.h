/*-------------------------------------------------------------------------
 *
 * fence.h
 *	  Fences that never go backwards (fence.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/fence.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_FENCE_H
#define DLSM_FENCE_H

/* Bits of a fence below the timeline's: a timeline's fence space. */
#define DLSM_FENCE_TIMELINE_SHIFT 52

extern void dlsm_fence_prepare(void);
extern int64 dlsm_fence_next(bool as_owner);
extern int64 dlsm_fence_raise(int64 at_least);
extern int64 dlsm_fence_initial(void);

#endif							/* DLSM_FENCE_H */
