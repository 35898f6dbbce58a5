/*-------------------------------------------------------------------------
 *
 * queuehandler.h
 *	  A queue's handler: setting it, and whether its owner trusts it
 *	  (queuehandler.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/queuehandler.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_QUEUEHANDLER_H
#define DLSM_QUEUEHANDLER_H

extern void dlsm_queue_set_handler(Oid relid, Oid handler);
extern void dlsm_queue_trust_handler(Oid relid, Oid owner, Oid handler);

#endif							/* DLSM_QUEUEHANDLER_H */
