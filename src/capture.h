/*-------------------------------------------------------------------------
 *
 * capture.h
 *	  Change capture into a queue (capture.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/capture.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_CAPTURE_H
#define DLSM_CAPTURE_H

#include "commands/trigger.h"
#include "utils/array.h"

extern void dlsm_capture_init(void);
extern void dlsm_capture_attach(Oid source, Oid queue, const char *kind,
								const char *entity_column,
								ArrayType *columns, const char *group_column);
extern void dlsm_capture_detach(Oid source, Oid queue);
extern void dlsm_capture_row(TriggerData *trigdata);

#endif							/* DLSM_CAPTURE_H */
