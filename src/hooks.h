/*-------------------------------------------------------------------------
 *
 * hooks.h
 *	  dlsm's utility hook (hooks.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/hooks.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_HOOKS_H
#define DLSM_HOOKS_H

extern void dlsm_hooks_init(void);

#endif							/* DLSM_HOOKS_H */
