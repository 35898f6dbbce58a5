/*-------------------------------------------------------------------------
 *
 * handler.h
 *	  A queue's handler, run by the worker (handler.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/handler.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_HANDLER_H
#define DLSM_HANDLER_H

#include "queue.h"

extern bool dlsm_handler_run_one(DlsmQueue *queue, char **failure);

#endif							/* DLSM_HANDLER_H */
