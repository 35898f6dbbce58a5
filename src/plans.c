/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  All SQL text dlsm runs, prepared once and kept.
 *
 * Statements against a queue are written as templates with placeholders
 * for the queue's quoted name, its mapped column names and dlsm's own
 * objects; each is expanded, prepared and kept (SPI_keepplan) the first
 * time a backend runs it for that queue, and stays until the queue's
 * descriptor is invalidated (queue.c).  Between invalidations the plan
 * cache revalidates the kept plans by itself.
 *
 * Every template is search_path proof: the queue is schema-qualified,
 * dlsm's objects carry the extension's schema, functions carry pg_catalog
 * and operators are written {=}, {<} ... which expand to
 * OPERATOR(pg_catalog.=) and so on.  State names are literals, not
 * parameters, so that generic plans can use the partial indexes.  Values
 * always travel as parameters.
 *
 * Placeholders: {q} queue, {id} {status} {kind} {entity} {pid} mapped
 * columns, {pidin} {pidarr} {pidout} the casts between a process id
 * column of type text (an adopted table) and uuid values (empty for uuid), {fence_seq} the fence sequence's OID, {registry} the registry table,
 * and the operators {=} {<>} {<} {<=} {>} {>=} {+} {-} {*}.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "dlsm.h"

/* The claim's process id, fence and clock, computed once per statement. */
#define CLAIM_UNIT \
	"WITH u AS MATERIALIZED (" \
	" SELECT COALESCE($2, pg_catalog.gen_random_uuid()) AS pid," \
	"  pg_catalog.nextval({fence_seq}::pg_catalog.oid::pg_catalog.regclass)" \
	"   AS fence," \
	"  pg_catalog.clock_timestamp() AS now) "

#define CLAIM_SET \
	" SET {status} = 'in-progress', {pid} = u.pid{pidin}, fence = u.fence," \
	" attempts = t.attempts {+} 1, claimed_at = u.now," \
	" lease_until = u.now {+} $3, settled_at = NULL, detail = NULL" \
	" FROM u "

#define CLAIM_RETURNING \
	" RETURNING t.{id}, t.{kind}, t.{entity}, t.payload, u.pid, u.fence," \
	" t.lease_until"

/*
 * The entity ($4) of a candidate ($1) has no request in progress and no
 * open request older than the candidate (rules 3 and 5 of DESIGN.md).
 */
#define ENTITY_FREE \
	"NOT EXISTS (SELECT 1 FROM {q} o WHERE o.{entity} {=} $4" \
	"   AND o.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])" \
	"   AND (o.{status} {=} 'in-progress' OR o.{id} {<} $1))"

/* Ready rows after the line in the sand ($1), oldest first, up to a limit. */
#define SCAN_READY \
	"SELECT {id}, {kind}, {entity} FROM {q}" \
	" WHERE {status} {=} 'new' AND {id} {>} $1" \
	" AND run_at {<=} pg_catalog.clock_timestamp()" \
	" ORDER BY {id} LIMIT "

/* Exponential backoff for retries: 1 s, 2 s, 4 s ... at most an hour. */
#define RETRY_BACKOFF \
	"LEAST('1 second'::pg_catalog.interval {*}" \
	" pg_catalog.power(2::pg_catalog.float8," \
	"  LEAST(t.attempts {-} 1, 12)::pg_catalog.float8)," \
	" '1 hour'::pg_catalog.interval)"

typedef struct DlsmQueryDef
{
	const char *text;
	int			nargs;
	Oid			argtypes[10];
} DlsmQueryDef;

static const DlsmQueryDef queue_queries[DLSM_NUM_QUERIES] = {
	[DLSM_Q_SCAN] = {
		/* $1 line in the sand */
		SCAN_READY "16",
		1, {INT8OID}
	},
	[DLSM_Q_SCAN_WIDE] = {
		/* $1 line in the sand: for many units, or past busy rows */
		SCAN_READY "128",
		1, {INT8OID}
	},
	[DLSM_Q_ENTITY_STATE] = {
		/* $1 entity, $2 candidate id: its create, and is it blocked? */
		"SELECT c.st, c.cid, EXISTS (SELECT 1 FROM {q} o"
		"  WHERE o.{entity} {=} $1"
		"  AND o.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		"  AND (o.{status} {=} 'in-progress' OR o.{id} {<} $2))"
		" FROM (VALUES (1)) v LEFT JOIN LATERAL ("
		"  SELECT {status} AS st, {id} AS cid FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'create'"
		"  ORDER BY {id} LIMIT 1) c ON true",
		2, {TEXTOID, INT8OID}
	},
	[DLSM_Q_CLAIM_MANY] = {
		/*
		 * $1 ids, $2 process id or NULL, $3 lease: single-request units, one
		 * per row, each with its own process id (unless $2) and fence.  Read
		 * after the entity locks were granted: each candidate is still new
		 * and due, its entity has nothing in progress and no older open
		 * request.
		 */
		"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now)"
		" UPDATE {q} t SET {status} = 'in-progress',"
		" {pid} = (COALESCE($2, pg_catalog.gen_random_uuid())){pidin},"
		" fence = pg_catalog.nextval({fence_seq}::pg_catalog.oid::pg_catalog.regclass),"
		" attempts = t.attempts {+} 1, claimed_at = u.now,"
		" lease_until = u.now {+} $3, settled_at = NULL, detail = NULL"
		" FROM u"
		" WHERE t.{id} {=} ANY (SELECT c.{id} FROM {q} c, u"
		"  WHERE c.{id} {=} ANY ($1) AND c.{status} {=} 'new'"
		"  AND c.run_at {<=} u.now"
		"  AND NOT EXISTS (SELECT 1 FROM {q} o WHERE o.{entity} {=} c.{entity}"
		"   AND o.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		"   AND (o.{status} {=} 'in-progress' OR o.{id} {<} c.{id}))"
		"  FOR UPDATE OF c SKIP LOCKED)"
		" RETURNING t.{id}, t.{kind}, t.{entity}, t.payload, t.{pid}{pidout},"
		" t.fence, t.lease_until",
		3, {INT8ARRAYOID, UUIDOID, INTERVALOID}
	},
	[DLSM_Q_CLAIM_GROUP] = {
		/*
		 * $1 first update's id, $2 process id or NULL, $3 lease, $4 entity.
		 * As DLSM_Q_CLAIM_MANY, and the entity's create, if any, is complete.
		 * The first update is locked first: when another transaction holds
		 * it, nothing is claimed.  The group is the updates from the first
		 * up to the entity's next new request that is not a due update.
		 */
		CLAIM_UNIT
		", first AS MATERIALIZED (SELECT f.{id} FROM {q} f, u"
		"  WHERE f.{id} {=} $1 AND f.{status} {=} 'new' AND f.run_at {<=} u.now"
		"  AND " ENTITY_FREE
		"  AND NOT EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} $4"
		"   AND c.{kind} {=} 'create' AND c.{status} {<>} 'complete')"
		"  FOR UPDATE OF f SKIP LOCKED) "
		"UPDATE {q} t" CLAIM_SET
		" WHERE EXISTS (SELECT 1 FROM first) AND t.{id} {=} ANY ("
		"  SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $4 AND {kind} {=} 'update'"
		"  AND {status} {=} 'new' AND {id} {>=} $1"
		"  AND {id} {<} COALESCE((SELECT pg_catalog.min(n.{id}) FROM {q} n, u"
		"   WHERE n.{entity} {=} $4 AND n.{status} {=} 'new' AND n.{id} {>} $1"
		"   AND (n.{kind} {<>} 'update' OR n.run_at {>} u.now)),"
		"   9223372036854775807)"
		"  ORDER BY {id} FOR UPDATE SKIP LOCKED)"
		CLAIM_RETURNING,
		4, {INT8OID, UUIDOID, INTERVALOID, TEXTOID}
	},
	[DLSM_Q_FAIL_UPDATES] = {
		/* $1 entity, $2 detail */
		"UPDATE {q} SET {status} = 'error',"
		" settled_at = pg_catalog.clock_timestamp(), detail = $2"
		" WHERE {id} {=} ANY (SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'update'"
		"  AND {status} {=} 'new' FOR UPDATE SKIP LOCKED)",
		2, {TEXTOID, TEXTOID}
	},
	[DLSM_Q_GROUP_BUSY] = {
		/*
		 * $1 entity, $2 process id: why the entity's updates cannot be
		 * grouped under $2 now, or NULL.
		 */
		"SELECT CASE"
		" WHEN EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {status} {=} 'in-progress' AND {pid} {<>} $2{pidin})"
		" THEN 'Requests of this entity are in progress under another process id.'"
		" WHEN EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {kind} {=} 'create' AND {status} {<>} 'complete')"
		" THEN 'The create request of this entity is not complete.'"
		" END",
		2, {TEXTOID, UUIDOID}
	},
	[DLSM_Q_GROUP] = {
		/*
		 * $1 entity, $2 process id, $3 lease: the entity's new updates, and
		 * those $2 holds already, up to its next new request of another kind.
		 */
		CLAIM_UNIT
		"UPDATE {q} t SET {status} = 'in-progress', {pid} = u.pid{pidin},"
		" fence = u.fence, attempts = t.attempts {+}"
		"  CASE WHEN t.{status} {=} 'new' THEN 1 ELSE 0 END,"
		" claimed_at = u.now, lease_until = u.now {+} $3,"
		" settled_at = NULL, detail = NULL"
		" FROM u"
		" WHERE t.{id} {=} ANY (SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'update'"
		"  AND ({status} {=} 'new'"
		"   OR ({status} {=} 'in-progress' AND {pid} {=} $2{pidin}))"
		"  AND {id} {<} COALESCE((SELECT pg_catalog.min({id}) FROM {q}"
		"   WHERE {entity} {=} $1 AND {status} {=} 'new'"
		"   AND {kind} {<>} 'update'), 9223372036854775807)"
		"  ORDER BY {id} FOR UPDATE NOWAIT)",
		3, {TEXTOID, UUIDOID, INTERVALOID}
	},
	[DLSM_Q_SETTLE_FINAL] = {
		/* $1 process ids, $2 final status, $3 detail */
		"UPDATE {q} t SET {status} = $2,"
		" settled_at = pg_catalog.clock_timestamp(), detail = $3"
		" WHERE {pid} {=} ANY ($1{pidarr}) AND {status} {=} 'in-progress'"
		" RETURNING {pid}{pidout}",
		3, {UUIDARRAYOID, TEXTOID, TEXTOID}
	},
	[DLSM_Q_SETTLE_RETRY] = {
		/*
		 * $1 process ids, $2 detail, $3 retry_after or NULL, $4 max attempts.
		 * One clock for the statement: a unit comes back as one unit.
		 */
		"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now)"
		" UPDATE {q} t SET"
		" {status} = CASE WHEN t.attempts {>=} $4 THEN 'error' ELSE 'new' END,"
		" settled_at = CASE WHEN t.attempts {>=} $4 THEN u.now END,"
		" run_at = u.now {+} COALESCE($3, " RETRY_BACKOFF "),"
		" detail = CASE WHEN t.attempts {>=} $4"
		"  THEN pg_catalog.format('retries exhausted after %s attempts: %s',"
		"   t.attempts, $2) ELSE $2 END"
		" FROM u"
		" WHERE {pid} {=} ANY ($1{pidarr}) AND {status} {=} 'in-progress'"
		" RETURNING {pid}{pidout}",
		4, {UUIDARRAYOID, TEXTOID, INTERVALOID, INT4OID}
	},
	[DLSM_Q_HEARTBEAT] = {
		/* $1 process id, $2 lease */
		"WITH u AS MATERIALIZED"
		" (SELECT pg_catalog.clock_timestamp() {+} $2 AS until)"
		" UPDATE {q} SET lease_until = u.until FROM u"
		" WHERE {pid} {=} $1{pidin} AND {status} {=} 'in-progress'"
		" RETURNING u.until",
		2, {UUIDOID, INTERVALOID}
	},
	[DLSM_Q_REAP] = {
		/*
		 * $1 max attempts.  Whole units only: a process id whose rows are
		 * all expired and none held by a live transaction (a late settle
		 * in progress keeps its whole unit).  One clock for the statement.
		 */
		"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now),"
		" expired AS MATERIALIZED (SELECT e.{id}, e.{pid} FROM {q} e, u"
		"  WHERE e.{status} {=} 'in-progress' AND e.lease_until {<} u.now"
		"  FOR UPDATE OF e SKIP LOCKED),"
		" whole AS MATERIALIZED (SELECT x.{pid} FROM expired x"
		"  GROUP BY x.{pid} HAVING pg_catalog.count(*) {=}"
		"  (SELECT pg_catalog.count(*) FROM {q} a"
		"   WHERE a.{pid} {=} x.{pid} AND a.{status} {=} 'in-progress'))"
		" UPDATE {q} t SET"
		" {status} = CASE WHEN t.attempts {>=} $1 THEN 'error' ELSE 'new' END,"
		" settled_at = CASE WHEN t.attempts {>=} $1 THEN u.now END,"
		" detail = pg_catalog.format(CASE WHEN t.attempts {>=} $1"
		"  THEN 'lease of process %s expired at %s; retries exhausted after %s attempts'"
		"  ELSE 'lease of process %s expired at %s after %s attempts' END,"
		"  t.{pid}, t.lease_until, t.attempts)"
		" FROM u"
		" WHERE t.{id} {=} ANY (SELECT {id} FROM expired"
		"  WHERE {pid} {=} ANY (SELECT {pid} FROM whole))"
		" RETURNING t.{status}",
		1, {INT4OID}
	},
	[DLSM_Q_PURGE] = {
		/* $1 retention, $2 batch: oldest settled rows first */
		"DELETE FROM {q} WHERE {id} {=} ANY (ARRAY(SELECT {id} FROM {q}"
		" WHERE {status} {=} ANY ('{complete,error}'::pg_catalog.text[])"
		" AND settled_at {<} (pg_catalog.clock_timestamp() {-} $1)"
		" ORDER BY {id} LIMIT $2 FOR UPDATE SKIP LOCKED))",
		2, {INTERVALOID, INT4OID}
	},
	[DLSM_Q_STATS] = {
		/* $1 the queue's OID: the row of dlsm_queue_stats */
		"SELECT"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'in-progress'),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'complete'),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'error'),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'"
		"  AND run_at {<=} pg_catalog.now()),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'"
		"  AND run_at {>} pg_catalog.now()),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new' AND {kind} {=} 'update'"
		"  AND EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} t.{entity}"
		"   AND c.{kind} {=} 'create'"
		"   AND c.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[]))),"
		" pg_catalog.now() {-} pg_catalog.min(enqueued_at)"
		"  FILTER (WHERE {status} {=} 'new' AND run_at {<=} pg_catalog.now()),"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'in-progress'"
		"  AND lease_until {<} pg_catalog.clock_timestamp()),"
		" pg_catalog.pg_stat_get_dead_tuples($1),"
		" pg_catalog.pg_stat_get_last_autovacuum_time($1),"
		" pg_catalog.now() {-} pg_catalog.min(claimed_at)"
		"  FILTER (WHERE {status} {=} 'in-progress')"
		" FROM {q} t",
		1, {OIDOID}
	},
	[DLSM_Q_CAPTURE] = {
		/* $1 entity, $2 kind, $3 operation, $4 table, $5 old row, $6 new row */
		"INSERT INTO {q} ({entity}, {kind}, payload)"
		" VALUES ($1, $2, pg_catalog.jsonb_build_object('op', $3, 'table', $4,"
		"  'old', $5::pg_catalog.jsonb, 'new', $6::pg_catalog.jsonb))",
		6, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONOID, JSONOID}
	},
	[DLSM_Q_ENQUEUE] = {
		/* $1 entity, $2 kind, $3 payload, $4 run_at */
		"INSERT INTO {q} ({entity}, {kind}, payload, run_at)"
		" VALUES ($1, $2, $3, COALESCE($4, pg_catalog.now()))"
		" RETURNING {id}",
		4, {TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID}
	},
};

static const DlsmQueryDef catalog_queries[DLSM_NUM_CATALOG_QUERIES] = {
	[DLSM_C_LOOKUP] = {
		/* $1 queue */
		"SELECT channel, max_attempts, id_column, status_column, kind_column,"
		" entity_column, process_id_column, retention, handler, handler_role"
		" FROM {registry} WHERE queue {=} $1",
		1, {REGCLASSOID}
	},
	[DLSM_C_REGISTER] = {
		/*
		 * $1 queue, $2 channel, $3 max attempts, $4 retention, $5 role,
		 * $6 .. $10 the id, status, kind, entity and process id columns
		 */
		"INSERT INTO {registry}"
		" (queue, channel, max_attempts, retention, registered_by,"
		"  id_column, status_column, kind_column, entity_column,"
		"  process_id_column)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
		10, {REGCLASSOID, TEXTOID, INT4OID, INTERVALOID, REGROLEOID,
		NAMEOID, NAMEOID, NAMEOID, NAMEOID, NAMEOID}
	},
	[DLSM_C_UNREGISTER] = {
		/* $1 queue */
		"DELETE FROM {registry} WHERE queue {=} $1",
		1, {REGCLASSOID}
	},
	[DLSM_C_SET_HANDLER] = {
		/* $1 queue, $2 handler or NULL, $3 its role or NULL */
		"UPDATE {registry} SET handler = $2, handler_role = $3"
		" WHERE queue {=} $1",
		3, {REGCLASSOID, REGPROCOID, REGROLEOID}
	},
	[DLSM_C_LEASE_READ] = {
		/* $1 name: its lease, and has it expired? */
		"SELECT fence, lease_until,"
		" lease_until {<} pg_catalog.clock_timestamp()"
		" FROM {leases} WHERE name {=} $1",
		1, {TEXTOID}
	},
	[DLSM_C_LEASE_TAKE] = {
		/* $1 name, $2 holder, $3 lease: take it unless a live lease holds it */
		"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now)"
		" INSERT INTO {leases} AS l (name, fence, holder, acquired_at, lease_until)"
		" SELECT $1, pg_catalog.nextval({fence_seq}::pg_catalog.oid::pg_catalog.regclass),"
		"  $2, u.now, u.now {+} $3 FROM u"
		" ON CONFLICT (name) DO UPDATE SET fence = excluded.fence,"
		"  holder = excluded.holder, acquired_at = excluded.acquired_at,"
		"  lease_until = excluded.lease_until"
		"  WHERE l.lease_until {<} excluded.acquired_at"
		" RETURNING fence",
		3, {TEXTOID, TEXTOID, INTERVALOID}
	},
	[DLSM_C_LEASE_RELEASE] = {
		/* $1 name, $2 fence */
		"DELETE FROM {leases} WHERE name {=} $1 AND fence {=} $2",
		2, {TEXTOID, INT8OID}
	},
	[DLSM_C_LEASE_REFRESH] = {
		/* $1 name, $2 fence, $3 lease */
		"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now)"
		" UPDATE {leases} SET lease_until = u.now {+} $3 FROM u"
		" WHERE name {=} $1 AND fence {=} $2 RETURNING lease_until",
		3, {TEXTOID, INT8OID, INTERVALOID}
	},
	[DLSM_C_LEASE_PURGE] = {
		/* the worker: expired leases go */
		"DELETE FROM {leases} WHERE lease_until {<} pg_catalog.clock_timestamp()",
		0, {InvalidOid}
	},
	[DLSM_C_LEASE_LIST] = {
		/* every lease, for dlsm_locks */
		"SELECT name, fence, holder, acquired_at, lease_until FROM {leases}"
		" ORDER BY name",
		0, {InvalidOid}
	},
	[DLSM_C_FENCE] = {
		/* a fence for a transaction-scope grant */
		"SELECT pg_catalog.nextval({fence_seq}::pg_catalog.oid::pg_catalog.regclass)",
		0, {InvalidOid}
	},
	[DLSM_C_LIST] = {
		/* every queue of this database */
		"SELECT queue FROM {registry} ORDER BY queue",
		0, {InvalidOid}
	},
};

/*
 * DDL of a created queue: {q} the new table, {ready} {creates} {open}
 * {held} index names, {ext} the extension's schema.  Run once, not kept.
 */
static const char *const create_table_text =
"CREATE TABLE {q} ("
" id pg_catalog.int8 GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
" status pg_catalog.text NOT NULL DEFAULT 'new' CHECK (status {=} ANY"
"  ('{new,in-progress,complete,error}'::pg_catalog.text[])),"
" kind pg_catalog.text NOT NULL DEFAULT 'create',"
" entity pg_catalog.text NOT NULL,"
" payload pg_catalog.jsonb,"
" process_id pg_catalog.uuid,"
" fence pg_catalog.int8,"
" attempts pg_catalog.int4 NOT NULL DEFAULT 0,"
" run_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),"
" enqueued_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),"
" claimed_at pg_catalog.timestamptz,"
" lease_until pg_catalog.timestamptz,"
" settled_at pg_catalog.timestamptz,"
" detail pg_catalog.text"
") WITH (fillfactor = 70,"
" autovacuum_vacuum_scale_factor = 0.01,"
" autovacuum_vacuum_threshold = 1000,"
" autovacuum_vacuum_insert_scale_factor = 0.05,"
" autovacuum_analyze_scale_factor = 0.02,"
" autovacuum_vacuum_cost_delay = 0);"
"CREATE INDEX {ready} ON {q} (id) WHERE status {=} 'new';"
"CREATE UNIQUE INDEX {creates} ON {q} (entity) WHERE kind {=} 'create';"
"CREATE INDEX {open} ON {q} (entity, id)"
" WHERE status {=} ANY ('{new,in-progress}'::pg_catalog.text[]);"
"CREATE INDEX {held} ON {q} (process_id) WHERE status {=} 'in-progress';"
"CREATE TRIGGER dlsm_wake AFTER INSERT ON {q}"
" FOR EACH STATEMENT EXECUTE FUNCTION {ext}.dlsm_wake();";

/*
 * Adopting a table: {q} the table, {id} {status} {entity} {pid} its mapped
 * columns, {ready} {open} {held} {creates} index names, {ext} the
 * extension's schema.  Adds only what is missing; {creates_index} is empty
 * when the table has an index led by its entity column already.
 */
static const char *const register_table_text =
"ALTER TABLE {q}"
" ALTER COLUMN {status} SET DEFAULT 'new',"
" ADD COLUMN IF NOT EXISTS payload pg_catalog.jsonb,"
" ADD COLUMN IF NOT EXISTS fence pg_catalog.int8,"
" ADD COLUMN IF NOT EXISTS attempts pg_catalog.int4 NOT NULL DEFAULT 0,"
" ADD COLUMN IF NOT EXISTS run_at pg_catalog.timestamptz NOT NULL"
"  DEFAULT pg_catalog.now(),"
" ADD COLUMN IF NOT EXISTS enqueued_at pg_catalog.timestamptz NOT NULL"
"  DEFAULT pg_catalog.now(),"
" ADD COLUMN IF NOT EXISTS claimed_at pg_catalog.timestamptz,"
" ADD COLUMN IF NOT EXISTS lease_until pg_catalog.timestamptz,"
" ADD COLUMN IF NOT EXISTS settled_at pg_catalog.timestamptz,"
" ADD COLUMN IF NOT EXISTS detail pg_catalog.text;"
"CREATE INDEX {ready} ON {q} ({id}) WHERE {status} {=} 'new';"
"CREATE INDEX {open} ON {q} ({entity}, {id})"
" WHERE {status} {=} ANY ('{new,in-progress}'::pg_catalog.text[]);"
"CREATE INDEX {held} ON {q} ({pid}) WHERE {status} {=} 'in-progress';"
"{creates_index}"
"CREATE TRIGGER dlsm_wake AFTER INSERT ON {q}"
" FOR EACH STATEMENT EXECUTE FUNCTION {ext}.dlsm_wake();";

static const char *const creates_index_text =
"CREATE INDEX {creates} ON {q} ({entity}) WHERE {kind} {=} 'create';";

/*
 * Change capture: {src} the source, {trigger} the trigger's name, {ext}
 * the extension's schema, {args} its quoted arguments.
 */
static const char *const capture_text =
"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE ON {src}"
" FOR EACH ROW EXECUTE FUNCTION {ext}.dlsm_capture_trigger({args})";
static const char *const uncapture_text = "DROP TRIGGER {trigger} ON {src}";

/* Unregistering a queue: {q} the table. */
static const char *const drop_table_text = "DROP TABLE {q}";
static const char *const drop_trigger_text =
"DROP TRIGGER IF EXISTS dlsm_wake ON {q}";

static SPIPlanPtr catalog_plans[DLSM_NUM_CATALOG_QUERIES];
static uint64 catalog_generation = 0;	/* dlsm_extension_generation() seen */

/*
 * Append template to buf, replacing each {name} by the value paired with it
 * in subst (a NULL-terminated list of name, value pairs).  Unknown names
 * are left as they are, so literals such as '{new,in-progress}' pass.
 */
static void
expand_template(StringInfo buf, const char *template, const char *const *subst)
{
	const char *p = template;

	while (*p)
	{
		const char *close;
		bool		done = false;

		if (*p != '{' || (close = strchr(p, '}')) == NULL)
		{
			appendStringInfoChar(buf, *p++);
			continue;
		}
		for (int i = 0; subst[i] != NULL; i += 2)
		{
			size_t		len = strlen(subst[i]);

			if (close - p - 1 == len && strncmp(p + 1, subst[i], len) == 0)
			{
				appendStringInfoString(buf, subst[i + 1]);
				p = close + 1;
				done = true;
				break;
			}
		}
		if (!done)
			appendStringInfoChar(buf, *p++);
	}
}

#define OPERATOR_SUBSTITUTIONS \
	"=", "OPERATOR(pg_catalog.=)", \
	"<>", "OPERATOR(pg_catalog.<>)", \
	"<", "OPERATOR(pg_catalog.<)", \
	"<=", "OPERATOR(pg_catalog.<=)", \
	">", "OPERATOR(pg_catalog.>)", \
	">=", "OPERATOR(pg_catalog.>=)", \
	"+", "OPERATOR(pg_catalog.+)", \
	"-", "OPERATOR(pg_catalog.-)", \
	"*", "OPERATOR(pg_catalog.*)"

static SPIPlanPtr
prepare_kept(const char *text, const DlsmQueryDef *def)
{
	SPIPlanPtr	plan;

	/*
	 * Generic plans: parameters only pick rows, never a better plan, so
	 * planning once saves replanning every call (custom plans would be
	 * tried first and often kept, at the cost of a plan per execution).
	 */
	plan = SPI_prepare_cursor(text, def->nargs, (Oid *) def->argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 text, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

static SPIPlanPtr
queue_plan(DlsmQueue *queue, DlsmQueryId query)
{
	if (queue->plans[query] == NULL)
	{
		StringInfoData buf;
		const char *subst[] = {
			"q", queue->relname,
			"id", queue->col_id,
			"status", queue->col_status,
			"kind", queue->col_kind,
			"entity", queue->col_entity,
			"pid", queue->col_process_id,
			"pidin", queue->pid_is_text ? "::pg_catalog.text" : "",
			"pidarr", queue->pid_is_text ? "::pg_catalog.text[]" : "",
			"pidout", queue->pid_is_text ? "::pg_catalog.uuid" : "",
			"fence_seq", psprintf("%u", dlsm_fence_sequence()),
			OPERATOR_SUBSTITUTIONS,
			NULL
		};

		initStringInfo(&buf);
		expand_template(&buf, queue_queries[query].text, subst);
		queue->plans[query] = prepare_kept(buf.data, &queue_queries[query]);
		pfree(buf.data);
	}
	return queue->plans[query];
}

static int
execute(SPIPlanPtr plan, Datum *values, const char *nulls, bool read_only,
		long count)
{
	int			rc;

	rc = SPI_execute_plan(plan, values, nulls, read_only, count);
	if (rc < 0)
		elog(ERROR, "SPI_execute_plan failed: %s", SPI_result_code_string(rc));
	return rc;
}

/* Run DDL built from a template; not kept, it runs once. */
static void
execute_utility(const char *text)
{
	int			rc = SPI_execute(text, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
}

/*
 * Run one of a queue's statements; the caller holds an SPI connection.
 * Returns the SPI result code; rows are in SPI_tuptable.
 *
 * NB: even the pure reads run with read_only = false, which gives each
 * statement a fresh snapshot in READ COMMITTED: a claim must see what
 * committed before it took an entity lock, and a waiting claim must see
 * rows enqueued while it slept.
 */
int
dlsm_plan_execute(DlsmQueue *queue, DlsmQueryId query, Datum *values,
				  const char *nulls, long count)
{
	return execute(queue_plan(queue, query), values, nulls, false, count);
}

static SPIPlanPtr catalog_plan(DlsmCatalogQueryId query);

/* Run one of the statements on dlsm's own tables. */
int
dlsm_plan_execute_catalog(DlsmCatalogQueryId query, Datum *values,
						  const char *nulls, bool read_only, long count)
{
	return execute(catalog_plan(query), values, nulls, read_only, count);
}

/*
 * Run a read of dlsm's own tables with the latest snapshot, whatever the
 * transaction's isolation: it must see what committed a moment ago.
 */
int
dlsm_plan_read_catalog_latest(DlsmCatalogQueryId query, Datum *values,
							  const char *nulls, long count)
{
	int			rc;

	rc = SPI_execute_snapshot(catalog_plan(query), values, nulls,
							  GetLatestSnapshot(), InvalidSnapshot,
							  true, false, count);
	if (rc < 0)
		elog(ERROR, "SPI_execute_snapshot failed: %s",
			 SPI_result_code_string(rc));
	return rc;
}

static SPIPlanPtr
catalog_plan(DlsmCatalogQueryId query)
{
	uint64		current = dlsm_extension_generation();

	/*
	 * The extension was created again: its objects are new ones.  NB: the
	 * old plans are dropped, not freed, as one may be running in an outer
	 * call; a few plans per re-creation of the extension stay behind.
	 */
	if (current != catalog_generation)
	{
		memset(catalog_plans, 0, sizeof(catalog_plans));
		catalog_generation = current;
	}
	if (catalog_plans[query] == NULL)
	{
		StringInfoData buf;
		const char *subst[] = {
			"registry", quote_qualified_identifier(dlsm_extension_schema(),
												   "dlsm_queues"),
			"leases", quote_qualified_identifier(dlsm_extension_schema(),
												 "dlsm_leases"),
			"fence_seq", psprintf("%u", dlsm_fence_sequence()),
			OPERATOR_SUBSTITUTIONS,
			NULL
		};

		initStringInfo(&buf);
		expand_template(&buf, catalog_queries[query].text, subst);
		catalog_plans[query] = prepare_kept(buf.data, &catalog_queries[query]);
		pfree(buf.data);
	}
	return catalog_plans[query];
}

/*
 * Run one of the statements on dlsm's own tables as the extension's owner:
 * they are written only through dlsm's functions, which checked the
 * caller's rights first.
 */
int
dlsm_plan_execute_catalog_as_owner(DlsmCatalogQueryId query, Datum *values,
								   const char *nulls)
{
	DlsmIdentity saved;
	int			rc;

	dlsm_identity_switch(dlsm_extension_owner(), &saved);
	rc = dlsm_plan_execute_catalog(query, values, nulls, false, 0);
	dlsm_identity_restore(&saved);
	return rc;
}

/*
 * Create a queue table named relname (already quoted and qualified) with its
 * indexes and wake trigger.  index_names are the four index names, quoted,
 * in the order ready, creates, open, held.  Runs as the caller.
 */
void
dlsm_plan_create_table(const char *relname, const char *const *index_names)
{
	StringInfoData buf;
	const char *subst[] = {
		"q", relname,
		"ready", index_names[0],
		"creates", index_names[1],
		"open", index_names[2],
		"held", index_names[3],
		"ext", quote_identifier(dlsm_extension_schema()),
		OPERATOR_SUBSTITUTIONS,
		NULL
	};

	initStringInfo(&buf);
	expand_template(&buf, create_table_text, subst);
	execute_utility(buf.data);
	pfree(buf.data);
}

/*
 * Add to an adopted table what dlsm needs and it lacks.  columns are the
 * quoted id, status, kind, entity and process id columns; index_names the
 * quoted ready, open, held and creates index names; creates_index whether
 * to build the last.  Runs as the caller.
 */
void
dlsm_plan_adopt_table(const char *relname, const char *const *columns,
					  const char *const *index_names, bool creates_index)
{
	StringInfoData creates;
	StringInfoData buf;
	const char *subst[] = {
		"q", relname,
		"id", columns[0],
		"status", columns[1],
		"kind", columns[2],
		"entity", columns[3],
		"pid", columns[4],
		"ready", index_names[0],
		"open", index_names[1],
		"held", index_names[2],
		"creates", index_names[3],
		"creates_index", "",
		"ext", quote_identifier(dlsm_extension_schema()),
		OPERATOR_SUBSTITUTIONS,
		NULL
	};

	initStringInfo(&creates);
	if (creates_index)
		expand_template(&creates, creates_index_text, subst);
	subst[21] = creates.data;
	initStringInfo(&buf);
	expand_template(&buf, register_table_text, subst);
	execute_utility(buf.data);
	pfree(buf.data);
	pfree(creates.data);
}

/*
 * Drop a queue table (relname quoted and qualified), or when !drop_table
 * only the wake trigger dlsm put on it.  Runs as the caller.
 */
void
dlsm_plan_drop_table(const char *relname, bool drop_table)
{
	StringInfoData buf;
	const char *subst[] = {"q", relname, NULL};

	initStringInfo(&buf);
	expand_template(&buf, drop_table ? drop_table_text : drop_trigger_text,
					subst);
	execute_utility(buf.data);
	pfree(buf.data);
}

/*
 * Attach (attach) or remove the capture trigger named trigger on source; args
 * are its four arguments.  Runs as the caller.
 */
void
dlsm_plan_capture_trigger(Oid source, const char *trigger,
						  const char *const *args, bool attach)
{
	StringInfoData buf;
	StringInfoData arglist;
	const char *subst[] = {
		"src", quote_qualified_identifier(get_namespace_name(get_rel_namespace(source)),
										  get_rel_name(source)),
		"trigger", quote_identifier(trigger),
		"ext", quote_identifier(dlsm_extension_schema()),
		"args", NULL,
		NULL
	};

	initStringInfo(&arglist);
	for (int i = 0; attach && i < 4; i++)
		appendStringInfo(&arglist, "%s%s", i ? ", " : "",
						 quote_literal_cstr(args[i]));
	subst[7] = arglist.data;
	initStringInfo(&buf);
	expand_template(&buf, attach ? capture_text : uncapture_text, subst);
	execute_utility(buf.data);
	pfree(buf.data);
}
