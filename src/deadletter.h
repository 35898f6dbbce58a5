/*-------------------------------------------------------------------------
 *
 * deadletter.h
 *	  Dead letters: requeue failed requests, cancel waiting ones
 *	  (deadletter.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/deadletter.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_DEADLETTER_H
#define DLSM_DEADLETTER_H

#include "utils/array.h"

#include "queue.h"

extern int64 dlsm_deadletter_requeue(DlsmQueue *queue, ArrayType *ids);
extern int64 dlsm_deadletter_cancel(DlsmQueue *queue, ArrayType *ids);

#endif							/* DLSM_DEADLETTER_H */
