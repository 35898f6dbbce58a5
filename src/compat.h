/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  Shims between the PostgreSQL versions dlsm builds against (15 and up).
 *
 * Every PG_VERSION_NUM test of dlsm lives in this file.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef DLSM_COMPAT_H
#define DLSM_COMPAT_H

#include "catalog/pg_class_d.h"
#include "catalog/pg_database_d.h"
#include "catalog/pg_proc_d.h"
#include "datatype/timestamp.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/varlena.h"
#include "utils/wait_event.h"

#if PG_VERSION_NUM < 150000
#error "dlsm requires PostgreSQL 15 or later"
#endif

/* Intervals gained infinity in PostgreSQL 17. */
#if PG_VERSION_NUM >= 170000
#define DLSM_INTERVAL_IS_INFINITE(i) INTERVAL_NOT_FINITE(i)
#else
#define DLSM_INTERVAL_IS_INFINITE(i) false
#endif

/* Databases left invalid by an interrupted DROP DATABASE (15.4 and up). */
#if PG_VERSION_NUM >= 150004
#define DLSM_DATABASE_IS_INVALID(form) database_is_invalid_form(form)
#else
#define DLSM_DATABASE_IS_INVALID(form) false
#endif

/*
 * Ownership and privilege checks by catalog: PostgreSQL 16 folded
 * pg_class_ownercheck() and its kin into object_ownercheck() and
 * object_aclcheck().
 */
#if PG_VERSION_NUM >= 160000
#define DLSM_CLASS_OWNERCHECK(relid, role) \
	object_ownercheck(RelationRelationId, (relid), (role))
#define DLSM_DATABASE_OWNERCHECK(dboid, role) \
	object_ownercheck(DatabaseRelationId, (dboid), (role))
#define DLSM_PROC_ACLCHECK(proc, role, mode) \
	object_aclcheck(ProcedureRelationId, (proc), (role), (mode))
#else
#define DLSM_CLASS_OWNERCHECK(relid, role) pg_class_ownercheck((relid), (role))
#define DLSM_DATABASE_OWNERCHECK(dboid, role) \
	pg_database_ownercheck((dboid), (role))
#define DLSM_PROC_ACLCHECK(proc, role, mode) \
	pg_proc_aclcheck((proc), (role), (mode))
#endif

/*
 * A qualified name's parts; PostgreSQL 16 added a soft-error context (NULL:
 * errors are thrown, as before).
 */
#if PG_VERSION_NUM >= 160000
#define DLSM_QUALIFIED_NAME_LIST(string) stringToQualifiedNameList((string), NULL)
#else
#define DLSM_QUALIFIED_NAME_LIST(string) stringToQualifiedNameList(string)
#endif

/*
 * PostgreSQL 17: LockHeldByMe() asks whether a stronger mode counts (here
 * it does not: the exact mode), and a backend's number in the PGPROC array
 * is MyProcNumber.
 */
#if PG_VERSION_NUM >= 170000
#define DLSM_LOCK_HELD_BY_ME(tag, mode) LockHeldByMe((tag), (mode), false)
#define DLSM_MY_PROC_NUMBER MyProcNumber
#else
#define DLSM_LOCK_HELD_BY_ME(tag, mode) LockHeldByMe((tag), (mode))
#define DLSM_MY_PROC_NUMBER (MyProc->pgprocno)
#endif

/*
 * A fixed-size shared hash table of nelems entries; PostgreSQL 19 dropped
 * the initial size (it was the maximum here anyway).
 */
#if PG_VERSION_NUM >= 190000
#define DLSM_SHMEM_INIT_HASH(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (info), (flags))
#else
#define DLSM_SHMEM_INIT_HASH(name, nelems, info, flags) \
	ShmemInitHash((name), (nelems), (nelems), (info), (flags))
#endif

/*
 * A wait event of dlsm's own name (17 and up: WaitEventExtensionNew), or
 * the one wait event every extension shared before.
 */
#if PG_VERSION_NUM >= 170000
#define DLSM_WAIT_EVENT_NEW(name) WaitEventExtensionNew(name)
#else
#define DLSM_WAIT_EVENT_NEW(name) ((void) (name), PG_WAIT_EXTENSION)
#endif

/*
 * PostgreSQL 17 added transaction_timeout, which ends the whole process
 * (FATAL) when it fires.
 */
#if PG_VERSION_NUM >= 170000
#define DLSM_HAS_TRANSACTION_TIMEOUT true
#else
#define DLSM_HAS_TRANSACTION_TIMEOUT false
#endif

/*
 * PostgreSQL 18 gave index_beginscan an instrumentation argument (NULL:
 * none), 19 flags (none).
 */
#if PG_VERSION_NUM >= 190000
#define DLSM_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys), 0)
#elif PG_VERSION_NUM >= 180000
#define DLSM_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define DLSM_INDEX_BEGINSCAN(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

#endif							/* DLSM_COMPAT_H */
