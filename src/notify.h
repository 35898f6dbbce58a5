/*-------------------------------------------------------------------------
 *
 * notify.h
 *	  NOTIFY and LISTEN for dlsm (notify.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/notify.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_NOTIFY_H
#define DLSM_NOTIFY_H

#include "nodes/nodes.h"

extern void dlsm_notify_init(void);
extern void dlsm_notify_client_listens(Node *stmt);
extern void dlsm_notify_send(const char *channel);

#endif							/* DLSM_NOTIFY_H */
