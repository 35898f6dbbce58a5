/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The dlsm.* settings (guc.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/guc.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_GUC_H
#define DLSM_GUC_H

extern int	dlsm_default_lease; /* seconds */
extern char *dlsm_databases;
extern int	dlsm_reap_interval; /* milliseconds */
extern int	dlsm_retention_batch;
extern int	dlsm_handler_batch;
extern int	dlsm_handler_timeout;	/* milliseconds */
extern int	dlsm_max_handler_timeout;	/* milliseconds */
extern int	dlsm_lock_timeout;	/* milliseconds */
extern int	dlsm_step_timeout;	/* milliseconds */
extern int	dlsm_node_id;
extern int	dlsm_max_workers;
extern int	dlsm_max_databases;
extern bool dlsm_log_statements;
extern bool dlsm_notify_relay;
extern int	dlsm_max_relays;
extern int	dlsm_relay_idle_timeout;

extern void dlsm_guc_init(void);

#endif							/* DLSM_GUC_H */
