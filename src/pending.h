/*-------------------------------------------------------------------------
 *
 * pending.h
 *	  Claims of this transaction whose rows still read 'new' (pending.c).
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/pending.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_PENDING_H
#define DLSM_PENDING_H

#include "datatype/timestamp.h"
#include "utils/uuid.h"

#include "queue.h"

/* What a claim gave a row, to be written by a settle or at commit. */
typedef struct DlsmClaimed
{
	int64		id;
	uint64		entity;			/* dlsm_floor_entity_key of its entity */
	pg_uuid_t	process_id;
	int64		fence;
	TimestampTz claimed_at;
	TimestampTz lease_until;
} DlsmClaimed;

/*
 * The pending claims of one queue held by some process ids, as the
 * parameters of a statement that writes them (P_CLAIMED_*, below).
 */
typedef struct DlsmPendingSet
{
	int			n;				/* rows */
	Datum		ids;			/* int8[] */
	Datum		process_ids;	/* uuid[] */
	Datum		fences;			/* int8[] */
	Datum		claimed_at;		/* timestamptz[] */
	Datum		lease_until;	/* timestamptz[] */
	DlsmClaimed first;			/* the first row */
	bool		complete;		/* the process ids hold nothing else */
	int		   *entries;		/* private to pending.c */
} DlsmPendingSet;

extern void dlsm_pending_init(void);
extern bool dlsm_pending_deferrable(DlsmQueue *queue);
extern void dlsm_pending_add(Oid relid, const DlsmClaimed *row,
							 bool given_process_id);
extern void dlsm_pending_to_floor(void);
extern bool dlsm_pending_holds_entity(Oid relid, uint64 entity);
extern bool dlsm_pending_holds_row(Oid relid, int64 id);
extern bool dlsm_pending_select(Oid relid, const pg_uuid_t *process_ids,
								int n, DlsmPendingSet *set);
extern void dlsm_pending_written(DlsmPendingSet *set);
extern void dlsm_pending_write(DlsmQueue *queue, const pg_uuid_t *process_ids,
							   int n);
extern void dlsm_pending_write_own(DlsmQueue *queue);

#endif							/* DLSM_PENDING_H */
