/*-------------------------------------------------------------------------
 *
 * querytext.c
 *	  The text of every statement dlsm runs.
 *
 * All SQL text dlsm runs is here, and only here: each statement on a
 * queue or on dlsm's own tables with its layout (its parameters and
 * result columns, listed next to its name in querytext.h, which plans.c
 * checks it against when it prepares it) and the words an error names it
 * by, and the
 * DDL that makes, adopts and drops a queue's table and captures a table's
 * changes.  plans.c fills in the placeholders, prepares and keeps the
 * statements and runs them; nothing here runs.
 *
 * Every template is search_path proof: the queue is schema-qualified,
 * dlsm's objects carry the extension's schema, functions carry pg_catalog
 * and operators are written {=}, {<} ... which expand to
 * OPERATOR(pg_catalog.=) and so on; nothing that looks an operator up by
 * name (IS DISTINCT FROM, IN, NULLIF, CASE x WHEN) is used, as that lookup
 * follows search_path.  State names are literals, not
 * parameters, so that generic plans can use the partial indexes.  Values
 * always travel as parameters.
 *
 * Placeholders: {q} queue, {id} {status} {kind} {entity} {pid} mapped
 * columns, {dedup} the dedup key column (statements that use it are run
 * only on queues that have one), {pidin} {pidarr} {pidout} the casts
 * between a process id column of type text (an adopted table) and uuid
 * values (empty for uuid), {fence_seq} the fence sequence's OID, {queues}
 * {captures} {leases} dlsm's tables, and the operators {=} {<>} {<} {<=}
 * {>} {>=} {+} {-} {*}.
 * Fences are taken in C (fence.c), which keeps them in the timeline's
 * space, and travel as parameters.
 *
 * Calls nothing of dlsm.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/querytext.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "querytext.h"

/*
 * Request o of candidate c's entity keeps c waiting: it is in progress, or
 * it is an older open request.  A create waits behind older requests only
 * while they can go first: when the entity's oldest open request is an
 * update, that update waits for the create, and every later request waits
 * behind it, so the create goes first (an update enqueued before its
 * create waits for the create, not the other way round).
 */
#define BLOCKS(o, c, ckind) \
	o ".{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])" \
	" AND (" o ".{status} {=} 'in-progress' OR (" o ".{id} {<} " c \
	"  AND (" ckind " {<>} 'create' OR COALESCE((SELECT f.{kind} {<>} 'update'" \
	"   FROM {q} f WHERE f.{entity} {=} " o ".{entity}" \
	"   AND f.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])" \
	"   ORDER BY f.{id} LIMIT 1), true))))"

/*
 * Row r is the first request of a unit in progress: a unit is a process
 * id's rows of one entity (a process id given to several claims holds
 * several), and counts against the group of its first request only.
 */
#define UNIT_HEAD(r) \
	r ".{status} {=} 'in-progress' AND NOT EXISTS (SELECT 1 FROM {q} h" \
	" WHERE h.{pid} {=} " r ".{pid} AND h.{entity} {=} " r ".{entity}" \
	"  AND h.{status} {=} 'in-progress' AND h.{id} {<} " r ".{id})"

/*
 * Lock the single-request units whose ids match ids (candidates read
 * before, $1), when each is still new and due ($2 is now) and nothing of
 * its entity blocks it.
 */
#define LOCK_SINGLES(ids) \
	"SELECT c.{id} AS id, c.{kind} AS kind, c.{entity} AS entity," \
	" c.payload FROM {q} c" \
	" WHERE c.{id} {=} " ids " AND c.{status} {=} 'new'" \
	" AND c.run_at {<=} $2" \
	" AND NOT EXISTS (SELECT 1 FROM {q} o WHERE o.{entity} {=} c.{entity}" \
	"  AND " BLOCKS("o", "c.{id}", "c.{kind}") ")" \
	" FOR UPDATE OF c SKIP LOCKED"

/*
 * Exponential backoff for retries after a attempts: 1 s, 2 s, 4 s ... at
 * most an hour.
 */
#define RETRY_BACKOFF(a) \
	"LEAST('1 second'::pg_catalog.interval {*}" \
	" pg_catalog.power(2::pg_catalog.float8," \
	"  LEAST(" a " {-} 1, 12)::pg_catalog.float8)," \
	" '1 hour'::pg_catalog.interval)"

/*
 * The rows of pending claims (pending.c) and what their claim gave them,
 * $1 to $5 (P_CLAIMED_*), as v; t is the queue.
 */
#define CLAIMED_ROWS \
	" FROM ROWS FROM (pg_catalog.unnest($1::pg_catalog.int8[])," \
	"  pg_catalog.unnest($2::pg_catalog.uuid[])," \
	"  pg_catalog.unnest($3::pg_catalog.int8[])," \
	"  pg_catalog.unnest($4::pg_catalog.timestamptz[])," \
	"  pg_catalog.unnest($5::pg_catalog.timestamptz[]))" \
	"  AS v(id, pid, fence, claimed_at, lease_until)"

/* What a claim writes into a row: from CLAIMED_ROWS, or one row's $2 to $5. */
#define CLAIMED_SET_AS(pid, fence, at, until) \
	" {pid} = " pid "{pidin}, fence = " fence ", attempts = t.attempts {+} 1," \
	" claimed_at = " at ", lease_until = " until
#define CLAIMED_SET CLAIMED_SET_AS("v.pid", "v.fence", "v.claimed_at", "v.lease_until")
/* The same for a claim settled by its own transaction: no lease is left. */
#define CLAIMED_SET_SETTLED CLAIMED_SET_AS("v.pid", "v.fence", "v.claimed_at", "NULL")

/*
 * The detail of a request whose retries are exhausted after attempts a,
 * with the detail d: "1 attempt", "2 attempts".
 */
#define EXHAUSTED_DETAIL(a, d) \
	" pg_catalog.format(CASE WHEN " a " {=} 1" \
	"  THEN 'retries exhausted after %s attempt: %s'" \
	"  ELSE 'retries exhausted after %s attempts: %s' END, " a ", " d ")"

/* A pending claim's row: still new, as its claim locked it. */
#define CLAIMED_WHERE \
	" WHERE t.{id} {=} v.id AND t.{status} {=} 'new'"

/* The clock of a statement, read once. */
#define ONE_CLOCK \
	"WITH u AS MATERIALIZED (SELECT pg_catalog.clock_timestamp() AS now)"

/*
 * A statement's layout, from its lists in querytext.h: its name, its
 * parameters' count, types and constants, and its result columns' count,
 * names and types and constants (each list ends in a sentinel).
 */
#define LIST_LENGTH(list, x) (lengthof(((const int[]) {list(x) -1})) - 1)
#define LAYOUT(q) \
	#q, \
	LIST_LENGTH(q##_PARAMS, DLSM_PARAM_ENUM), \
	{q##_PARAMS(DLSM_PARAM_TYPE) InvalidOid}, \
	{q##_PARAMS(DLSM_PARAM_ENUM) -1}, \
	LIST_LENGTH(q##_COLUMNS, DLSM_COLUMN_ENUM), \
	{q##_COLUMNS(DLSM_COLUMN_DEF) {NULL, InvalidOid}}, \
	{q##_COLUMNS(DLSM_COLUMN_ENUM) -1}

/*
 * A requeue: the error rows of $1 back to new as if just enqueued, their
 * attempts reset and their detail kept behind a note naming $2; extra
 * narrows which rows go.
 */
#define REQUEUE_TEXT(extra) \
	"UPDATE {q} t SET {status} = 'new', attempts = 0," \
	" run_at = pg_catalog.now(), {pid} = NULL, fence = NULL," \
	" claimed_at = NULL, lease_until = NULL, settled_at = NULL," \
	" detail = pg_catalog.format(CASE WHEN t.attempts {=} 1" \
	"  THEN 'requeued by role \"%s\" after %s attempt%s'" \
	"  ELSE 'requeued by role \"%s\" after %s attempts%s' END," \
	"  $2, t.attempts, ': ' OPERATOR(pg_catalog.||) t.detail)" \
	" WHERE t.{id} {=} ANY (ARRAY(SELECT {id} FROM {q}" \
	"  WHERE {id} {=} ANY ($1) AND {status} {=} 'error'" \
	"  ORDER BY {id} FOR UPDATE))" \
	" AND t.{status} {=} 'error'" extra \
	" RETURNING t.{id} AS id, t.{entity} AS entity, t.{status} AS status"

const DlsmQueryDef dlsm_queue_queries[DLSM_NUM_QUERIES] = {
	[DLSM_Q_SCAN] = {
		/* delayed rows too: the floor of the queue stops at them */
		"SELECT {id} AS id, {kind} AS kind, {entity} AS entity,"
		" run_at {<=} pg_catalog.clock_timestamp() AS due, {group} AS group_key"
		" FROM {q}"
		" WHERE {status} {=} 'new' AND {id} {>} $1"
		" ORDER BY {id} LIMIT $2",
		LAYOUT(DLSM_Q_SCAN),
		SPI_OK_SELECT, "the candidate scan"
	},
	[DLSM_Q_SCAN_LIMITED] = {
		/* SCAN for a queue with limits */
		"SELECT c.{id} AS id, c.{kind} AS kind, c.{entity} AS entity,"
		" c.run_at {<=} pg_catalog.clock_timestamp() AS due,"
		" {group} AS group_key"
		" FROM {q} c WHERE c.{status} {=} 'new' AND c.{id} {>} $1"
		/* groups this pass found at their limit ($3) are left out */
		" AND ($3 IS NULL OR {group} IS NULL OR {group} {<>} ALL ($3))"
		" ORDER BY c.{id} LIMIT $2",
		LAYOUT(DLSM_Q_SCAN_LIMITED),

		/*
		 * its generic plan's cost, with LIMIT $2 unknown, passes
		 * jit_above_cost: compiling it would cost more than the scan
		 */
		SPI_OK_SELECT, "the candidate scan", false, true
	},
	[DLSM_Q_BLOCKED] = {
		/*
		 * Does its entity block candidate $1 (entity $2, kind $3): an older
		 * request, one in progress, for an update a create not complete (or,
		 * when $4, not enqueued)?  Such a candidate of a limited group takes
		 * nothing of its group's limits (claim.c).
		 */
		"SELECT EXISTS (SELECT 1 FROM {q} o WHERE o.{entity} {=} $2"
		"  AND " BLOCKS("o", "$1", "$3") ")"
		" OR ($3 {=} 'update' AND EXISTS (SELECT 1 FROM {q} k"
		"  WHERE k.{entity} {=} $2 AND k.{kind} {=} 'create'"
		"  AND k.{status} {<>} 'complete'))"
		" OR ($3 {=} 'update' AND $4 AND NOT EXISTS (SELECT 1 FROM {q} k"
		"  WHERE k.{entity} {=} $2 AND k.{kind} {=} 'create')) AS blocked",
		LAYOUT(DLSM_Q_BLOCKED),
		SPI_OK_SELECT, "the blocking check"
	},
	[DLSM_Q_ENTITY_STATE] = {
		"SELECT c.st AS create_status, c.cid AS create_id,"
		" EXISTS (SELECT 1 FROM {q} o"
		"  WHERE o.{entity} {=} $1 AND " BLOCKS("o", "$2", "'update'") ")"
		"  AS blocked"
		" FROM (VALUES (1)) v LEFT JOIN LATERAL ("
		"  SELECT {status} AS st, {id} AS cid FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'create'"
		"  ORDER BY {id} LIMIT 1) c ON true",
		LAYOUT(DLSM_Q_ENTITY_STATE),
		SPI_OK_SELECT, "the entity state query"
	},
	[DLSM_Q_LOCK_SINGLES] = {
		/*
		 * Single-request units, one per row.  Read after the entity locks
		 * were granted: each candidate is still new and due, and its entity
		 * has nothing in progress and no older open request blocking it.
		 */
		LOCK_SINGLES("ANY ($1)"),
		LAYOUT(DLSM_Q_LOCK_SINGLES),
		SPI_OK_SELECT, "a claim"
	},
	[DLSM_Q_LOCK_ONE] = {
		/* LOCK_SINGLES for one candidate */
		LOCK_SINGLES("$1"),
		LAYOUT(DLSM_Q_LOCK_ONE),
		SPI_OK_SELECT, "a claim"
	},
	[DLSM_Q_LOCK_GROUP] = {
		/*
		 * As LOCK_SINGLES, and the entity's create, if any, is complete; when
		 * the queue's updates wait for their create ($4), there is one.  The
		 * first update is locked first: when another transaction holds it,
		 * nothing is claimed.  The group is the updates from the first up to
		 * the entity's next new request that is not a due update.
		 */
		"WITH first AS MATERIALIZED (SELECT f.{id} FROM {q} f"
		"  WHERE f.{id} {=} $1 AND f.{status} {=} 'new' AND f.run_at {<=} $2"
		"  AND NOT EXISTS (SELECT 1 FROM {q} o WHERE o.{entity} {=} $3"
		"   AND " BLOCKS("o", "$1", "'update'") ")"
		"  AND NOT EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} $3"
		"   AND c.{kind} {=} 'create' AND c.{status} {<>} 'complete')"
		"  AND ($4 IS NOT TRUE OR EXISTS (SELECT 1 FROM {q} a"
		"   WHERE a.{entity} {=} $3 AND a.{kind} {=} 'create'))"
		"  FOR UPDATE OF f SKIP LOCKED) "
		"SELECT g.{id} AS id, g.{kind} AS kind, g.{entity} AS entity, g.payload"
		" FROM {q} g"
		" WHERE EXISTS (SELECT 1 FROM first)"
		" AND g.{entity} {=} $3 AND g.{kind} {=} 'update'"
		" AND g.{status} {=} 'new' AND g.{id} {>=} $1"
		" AND g.{id} {<} COALESCE((SELECT pg_catalog.min(n.{id}) FROM {q} n"
		"  WHERE n.{entity} {=} $3 AND n.{status} {=} 'new' AND n.{id} {>} $1"
		"  AND (n.{kind} {<>} 'update' OR n.run_at {>} $2)),"
		"  9223372036854775807)"
		" FOR UPDATE OF g SKIP LOCKED",
		LAYOUT(DLSM_Q_LOCK_GROUP),
		SPI_OK_SELECT, "a claim"
	},
	[DLSM_Q_WRITE_CLAIMS] = {
		/* pending claims not settled by their transaction, at its commit */
		"UPDATE {q} t SET {status} = 'in-progress'," CLAIMED_SET ","
		" settled_at = NULL, detail = NULL"
		CLAIMED_ROWS CLAIMED_WHERE
		" RETURNING t.{entity} AS entity",
		LAYOUT(DLSM_Q_WRITE_CLAIMS),
		SPI_OK_UPDATE_RETURNING, "writing claims"
	},
	[DLSM_Q_SETTLE_CLAIMED_FINAL] = {
		/* as SETTLE_FINAL, for claims of this transaction: one row version */
		"UPDATE {q} t SET {status} = $6," CLAIMED_SET_SETTLED ","
		" settled_at = pg_catalog.clock_timestamp(), detail = $7"
		CLAIMED_ROWS CLAIMED_WHERE
		" RETURNING t.{pid}{pidout} AS process_id, t.{id} AS id,"
		" t.{entity} AS entity, {tgroup} AS group_key",
		LAYOUT(DLSM_Q_SETTLE_CLAIMED_FINAL),
		SPI_OK_UPDATE_RETURNING, "a settle"
	},
	[DLSM_Q_SETTLE_ONE_FINAL] = {
		/*
		 * SETTLE_CLAIMED_FINAL for one row, its values as scalars; its lease,
		 * $5, is left out: the row is settled
		 */
		"UPDATE {q} t SET {status} = $6,"
		CLAIMED_SET_AS("$2", "$3", "$4", "NULL") ","
		" settled_at = pg_catalog.clock_timestamp(), detail = $7"
		" WHERE t.{id} {=} $1 AND t.{status} {=} 'new'"
		" RETURNING t.{pid}{pidout} AS process_id, t.{id} AS id,"
		" t.{entity} AS entity, {tgroup} AS group_key",
		LAYOUT(DLSM_Q_SETTLE_ONE_FINAL),
		SPI_OK_UPDATE_RETURNING, "a settle", false, false,
		DLSM_PARAM_BIT(P_CLAIMED_LEASE_UNTIL)
	},
	[DLSM_Q_SETTLE_CLAIMED_RETRY] = {
		/* as SETTLE_RETRY, for claims of this transaction */
		ONE_CLOCK
		" UPDATE {q} t SET" CLAIMED_SET_SETTLED ","
		" {status} = CASE WHEN t.attempts {+} 1 {>=} $8 THEN 'error' ELSE 'new' END,"
		" settled_at = CASE WHEN t.attempts {+} 1 {>=} $8 THEN u.now END,"
		" run_at = u.now {+} COALESCE($7, " RETRY_BACKOFF("(t.attempts {+} 1)") "),"
		" detail = CASE WHEN t.attempts {+} 1 {>=} $8"
		"  THEN" EXHAUSTED_DETAIL("(t.attempts {+} 1)", "$6") " ELSE $6 END"
		CLAIMED_ROWS ", u" CLAIMED_WHERE
		" RETURNING t.{pid}{pidout} AS process_id, t.{id} AS id,"
		" t.{entity} AS entity, {tgroup} AS group_key",
		LAYOUT(DLSM_Q_SETTLE_CLAIMED_RETRY),
		SPI_OK_UPDATE_RETURNING, "a settle"
	},
	[DLSM_Q_FAIL_UPDATES] = {
		"UPDATE {q} SET {status} = 'error',"
		" settled_at = pg_catalog.clock_timestamp(), detail = $2"
		" WHERE {id} {=} ANY (SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'update'"
		"  AND {status} {=} 'new' FOR UPDATE SKIP LOCKED)",
		LAYOUT(DLSM_Q_FAIL_UPDATES),
		SPI_OK_UPDATE, "failing updates"
	},
	[DLSM_Q_GROUP_BUSY] = {
		"SELECT EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {status} {=} 'in-progress' AND {pid} {<>} $2{pidin}) AS held,"
		" EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {kind} {=} 'create' AND {status} {<>} 'complete') AS create_open",
		LAYOUT(DLSM_Q_GROUP_BUSY),
		SPI_OK_SELECT, "the group check"
	},
	[DLSM_Q_GROUP] = {
		/*
		 * The entity's new updates that are due ($5 is now), and those $2
		 * holds already, up to its next new request that is not a due update
		 * (as a claim's group).
		 */
		"WITH u AS MATERIALIZED (SELECT $2 AS pid, $4 AS fence, $5 AS now) "
		"UPDATE {q} t SET {status} = 'in-progress', {pid} = u.pid{pidin},"
		" fence = u.fence, attempts = t.attempts {+}"
		"  CASE WHEN t.{status} {=} 'new' THEN 1 ELSE 0 END,"
		" claimed_at = u.now, lease_until = u.now {+} $3,"
		" settled_at = NULL, detail = NULL"
		" FROM u"
		" WHERE t.{id} {=} ANY (SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'update'"
		"  AND (({status} {=} 'new' AND run_at {<=} $5)"
		"   OR ({status} {=} 'in-progress' AND {pid} {=} $2{pidin}))"
		"  AND {id} {<} COALESCE((SELECT pg_catalog.min({id}) FROM {q}"
		"   WHERE {entity} {=} $1 AND {status} {=} 'new'"
		"   AND ({kind} {<>} 'update' OR run_at {>} $5)),"
		"   9223372036854775807)"
		"  ORDER BY {id} FOR UPDATE NOWAIT)",
		LAYOUT(DLSM_Q_GROUP),
		SPI_OK_UPDATE, "grouping updates"
	},
	[DLSM_Q_SETTLE_FINAL] = {
		"UPDATE {q} t SET {status} = $2, lease_until = NULL,"
		" settled_at = pg_catalog.clock_timestamp(), detail = $3"
		" WHERE {pid} {=} ANY ($1{pidarr}) AND {status} {=} 'in-progress'"
		" RETURNING {pid}{pidout} AS process_id, {id} AS id, {entity} AS entity,"
		" {group} AS group_key",
		LAYOUT(DLSM_Q_SETTLE_FINAL),
		SPI_OK_UPDATE_RETURNING, "a settle"
	},
	[DLSM_Q_SETTLE_RETRY] = {
		/* one clock for the statement: a unit comes back as one unit */
		ONE_CLOCK
		" UPDATE {q} t SET lease_until = NULL,"
		" {status} = CASE WHEN t.attempts {>=} $4 THEN 'error' ELSE 'new' END,"
		" settled_at = CASE WHEN t.attempts {>=} $4 THEN u.now END,"
		" run_at = u.now {+} COALESCE($3, " RETRY_BACKOFF("t.attempts") "),"
		" detail = CASE WHEN t.attempts {>=} $4"
		"  THEN" EXHAUSTED_DETAIL("t.attempts", "$2") " ELSE $2 END"
		" FROM u"
		" WHERE {pid} {=} ANY ($1{pidarr}) AND {status} {=} 'in-progress'"
		" RETURNING {pid}{pidout} AS process_id, {id} AS id, {entity} AS entity,"
		" {group} AS group_key",
		LAYOUT(DLSM_Q_SETTLE_RETRY),
		SPI_OK_UPDATE_RETURNING, "a settle"
	},
	[DLSM_Q_HEARTBEAT] = {
		"WITH u AS MATERIALIZED"
		" (SELECT pg_catalog.clock_timestamp() {+} $2 AS until)"
		" UPDATE {q} SET lease_until = u.until FROM u"
		" WHERE {pid} {=} $1{pidin} AND {status} {=} 'in-progress'"
		" RETURNING u.until",
		LAYOUT(DLSM_Q_HEARTBEAT),
		SPI_OK_UPDATE_RETURNING, "a heartbeat"
	},
	[DLSM_Q_REAP] = {
		/*
		 * Whole units only: a process id whose rows are all expired and none
		 * held by a live transaction (a late settle in progress keeps its
		 * whole unit).  One clock for the statement.
		 */
		ONE_CLOCK ","
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
		" detail = pg_catalog.format(CASE"
		"  WHEN t.attempts {>=} $1 AND t.attempts {=} 1"
		"  THEN 'lease of process %s expired at %s; retries exhausted after %s attempt'"
		"  WHEN t.attempts {>=} $1"
		"  THEN 'lease of process %s expired at %s; retries exhausted after %s attempts'"
		"  WHEN t.attempts {=} 1"
		"  THEN 'lease of process %s expired at %s after %s attempt'"
		"  ELSE 'lease of process %s expired at %s after %s attempts' END,"
		"  t.{pid}, t.lease_until, t.attempts)"
		" FROM u"
		" WHERE t.{id} {=} ANY (SELECT {id} FROM expired"
		"  WHERE {pid} {=} ANY (SELECT {pid} FROM whole))"
		" RETURNING t.{status} AS status, t.{id} AS id, t.{entity} AS entity,"
		" {tgroup} AS group_key",
		LAYOUT(DLSM_Q_REAP),
		SPI_OK_UPDATE_RETURNING, "the reaper"
	},
	[DLSM_Q_PURGE] = {
		/* oldest settled rows first */
		"DELETE FROM {q} WHERE {id} {=} ANY (ARRAY(SELECT {id} FROM {q}"
		" WHERE {status} {=} ANY ('{complete,error}'::pg_catalog.text[])"
		" AND settled_at {<} (pg_catalog.clock_timestamp() {-} $1)"
		" ORDER BY {id} LIMIT $2 FOR UPDATE SKIP LOCKED))",
		LAYOUT(DLSM_Q_PURGE),
		SPI_OK_DELETE, "the retention pass"
	},
	[DLSM_Q_STATS] = {
		"SELECT"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new') AS new,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'in-progress')"
		"  AS in_progress,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'complete') AS complete,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'error') AS error,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'"
		"  AND run_at {<=} pg_catalog.now()) AS ready,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'"
		"  AND run_at {>} pg_catalog.now()) AS delayed,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new' AND {kind} {=} 'update'"
		"  AND EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} t.{entity}"
		"   AND c.{kind} {=} 'create'"
		"   AND c.{status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])))"
		"  AS waiting_on_create,"
		" pg_catalog.now() {-} pg_catalog.min(enqueued_at)"
		"  FILTER (WHERE {status} {=} 'new' AND run_at {<=} pg_catalog.now())"
		"  AS oldest_ready_age,"
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'in-progress'"
		"  AND lease_until {<} pg_catalog.clock_timestamp()) AS expired_leases,"
		" pg_catalog.pg_stat_get_dead_tuples($1) AS dead_tuples,"
		" pg_catalog.pg_stat_get_last_autovacuum_time($1) AS last_autovacuum,"
		" pg_catalog.now() {-} pg_catalog.min(claimed_at)"
		"  FILTER (WHERE {status} {=} 'in-progress') AS oldest_claim_age,"

		/*
		 * ready rows of a group with as many units in progress as its limit;
		 * {group} may be NULL::text, so it is not qualified
		 */
		" pg_catalog.count(*) FILTER (WHERE {status} {=} 'new'"
		"  AND run_at {<=} pg_catalog.now() AND t.dlsm_group IS NOT NULL"
		"  AND COALESCE((SELECT COALESCE(o.c, 2147483647)"
		"    FROM ROWS FROM (pg_catalog.unnest($3::pg_catalog.text[]),"
		"     pg_catalog.unnest($4::pg_catalog.int4[])) AS o(g, c)"
		"    WHERE o.g {=} t.dlsm_group), $2)"
		"   {<=} (SELECT pg_catalog.count(*) FROM {q} r"
		"    WHERE {group} {=} t.dlsm_group AND " UNIT_HEAD("r") "))"
		"  AS held_by_limits,"
		" pg_catalog.count(*) FILTER (WHERE $5 AND {status} {=} 'new'"
		"  AND {kind} {=} 'update'"
		"  AND NOT EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} t.{entity}"
		"   AND c.{kind} {=} 'create'))"
		"  AS waiting_for_create_to_arrive"
		" FROM (SELECT *, {group} AS dlsm_group FROM {q}) t",
		LAYOUT(DLSM_Q_STATS),
		SPI_OK_SELECT, "the queue statistics"
	},
	[DLSM_Q_CAPTURE] = {
		/* $7, the group, is written only to a queue with a group column */
		"INSERT INTO {q} ({entity}, {kind}, payload{groupcol})"
		" VALUES ($1, $2, pg_catalog.jsonb_build_object('op', $3, 'table', $4,"
		"  'old', $5::pg_catalog.jsonb, 'new', $6::pg_catalog.jsonb){capgroupval})",
		LAYOUT(DLSM_Q_CAPTURE),
		SPI_OK_INSERT, "a captured change", false, false,
		DLSM_PARAM_BIT(P_CAPTURE_GROUP)
	},
	[DLSM_Q_ENQUEUE] = {
		/* $5, the group, is written only to a queue with a group column */
		"INSERT INTO {q} ({entity}, {kind}, payload, run_at{groupcol})"
		" VALUES ($1, $2, $3, COALESCE($4, pg_catalog.now()){groupval})"
		" RETURNING {id} AS id",
		LAYOUT(DLSM_Q_ENQUEUE),
		SPI_OK_INSERT_RETURNING, "an enqueue", false, false,
		DLSM_PARAM_BIT(P_ENQUEUE_GROUP)
	},
	[DLSM_Q_GROUP_LOAD] = {
		/* committed units in progress whose first request is in group $1 */
		"SELECT pg_catalog.count(*) AS units FROM {q} r"
		" WHERE {group} {=} $1 AND " UNIT_HEAD("r"),
		LAYOUT(DLSM_Q_GROUP_LOAD),
		SPI_OK_SELECT, "the group's load"
	},
	[DLSM_Q_UPDATES_GROUP] = {
		/*
		 * the group of the entity's first new update, and whether $2 holds
		 * some of its updates already (a unit counted before)
		 */
		"SELECT (SELECT {group} FROM {q} WHERE {entity} {=} $1"
		"  AND {kind} {=} 'update' AND {status} {=} 'new'"
		"  ORDER BY {id} LIMIT 1) AS group_key,"
		" EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {status} {=} 'in-progress' AND {pid} {=} $2{pidin}) AS held",
		LAYOUT(DLSM_Q_UPDATES_GROUP),
		SPI_OK_SELECT, "the group of updates"
	},
	[DLSM_Q_CREATE_ARRIVED] = {
		"SELECT EXISTS (SELECT 1 FROM {q}"
		" WHERE {entity} {=} $1 AND {kind} {=} 'create') AS arrived",
		LAYOUT(DLSM_Q_CREATE_ARRIVED),
		SPI_OK_SELECT, "the create check"
	},

	/*
	 * Dead letters (deadletter.c).  Each locks the rows it names in id order,
	 * and moves only those still in the state it expects.
	 */
	[DLSM_Q_REQUEUE] = {
		/* the error rows of $1 back to new as if just enqueued; $2: who */
		REQUEUE_TEXT(""),
		LAYOUT(DLSM_Q_REQUEUE),
		SPI_OK_UPDATE_RETURNING, "a requeue"
	},
	[DLSM_Q_CANCEL_LOCK] = {
		/*
		 * The open rows of $1, locked: a claim in progress in another
		 * transaction is waited for, and its row read as it left it.
		 */
		"SELECT {id} AS id, {entity} AS entity, {status} AS status FROM {q}"
		" WHERE {id} {=} ANY ($1)"
		" AND {status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		" ORDER BY {id} FOR UPDATE",
		LAYOUT(DLSM_Q_CANCEL_LOCK),
		SPI_OK_SELECT, "a cancel"
	},
	[DLSM_Q_CANCEL] = {
		/* the new rows of $1, locked by CANCEL_LOCK, to error; $2: who */
		"UPDATE {q} SET {status} = 'error',"
		" settled_at = pg_catalog.clock_timestamp(),"
		" detail = pg_catalog.format('cancelled by role \"%s\"', $2)"
		" WHERE {id} {=} ANY ($1) AND {status} {=} 'new'"
		" RETURNING {id} AS id, {entity} AS entity, {status} AS status",
		LAYOUT(DLSM_Q_CANCEL),
		SPI_OK_UPDATE_RETURNING, "a cancel"
	},
	[DLSM_Q_REQUEUE_KEYS] = {
		/*
		 * The error rows of $1 that hold a dedup key, with their keys, locked
		 * in id order as REQUEUE locks them
		 */
		"SELECT {id}::pg_catalog.int8 AS id, {dedup}::pg_catalog.text AS dedup_key"
		" FROM {q}"
		" WHERE {id} {=} ANY ($1) AND {status} {=} 'error'"
		" AND {dedup} IS NOT NULL"
		" ORDER BY {id} FOR UPDATE",
		LAYOUT(DLSM_Q_REQUEUE_KEYS),
		SPI_OK_SELECT, "a requeue's dedup keys"
	},
	[DLSM_Q_REQUEUE_HOLDERS] = {
		/*
		 * The oldest new or in-progress request holding one of the keys $1,
		 * with its key.  Run under the keys' locks with the latest snapshot,
		 * without sequential scans, as DEDUP_LOOKUP.
		 */
		"SELECT {id}::pg_catalog.int8 AS id, {dedup}::pg_catalog.text AS dedup_key"
		" FROM {q}"
		" WHERE {dedup} {=} ANY ($1)"
		" AND {status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		" ORDER BY {id} LIMIT 1",
		LAYOUT(DLSM_Q_REQUEUE_HOLDERS),
		SPI_OK_SELECT, "a requeue's dedup key lookup", true
	},
	[DLSM_Q_REQUEUE_KEYED] = {
		/*
		 * REQUEUE, where a row holding a dedup key goes back to new only if
		 * it is one of $3, the rows whose keys were checked (REQUEUE_KEYS
		 * read them in error, under an older snapshot): one that reached
		 * error since, its key unchecked, stays there
		 */
		REQUEUE_TEXT(" AND (t.{dedup} IS NULL OR t.{id} {=} ANY ($3))"),
		LAYOUT(DLSM_Q_REQUEUE_KEYED),
		SPI_OK_UPDATE_RETURNING, "a requeue"
	},
	[DLSM_Q_DEDUP_LOOKUP] = {
		/*
		 * The newest request holding the key $1: new or in progress, or
		 * settled less than $2 ago (NULL: no window).  Run under the key's
		 * lock with the latest snapshot (state.c).  Planned without
		 * sequential scans: a plan made while the queue was analyzed empty
		 * would read the whole table at every enqueue until the next analyze.
		 */
		"SELECT {id}::pg_catalog.int8 AS id FROM {q} WHERE {dedup} {=} $1"
		" AND ({status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		"  OR ({status} {=} ANY ('{complete,error}'::pg_catalog.text[])"
		"   AND settled_at {>} (pg_catalog.clock_timestamp() {-} $2)))"
		" ORDER BY {id} DESC LIMIT 1",
		LAYOUT(DLSM_Q_DEDUP_LOOKUP),
		SPI_OK_SELECT, "a dedup key lookup", true
	},
	[DLSM_Q_ENQUEUE_DEDUP] = {
		/* ENQUEUE with the key, $6 */
		"INSERT INTO {q} ({entity}, {kind}, payload, run_at{groupcol}, {dedup})"
		" VALUES ($1, $2, $3, COALESCE($4, pg_catalog.now()){groupval}, $6)"
		" RETURNING {id} AS id",
		LAYOUT(DLSM_Q_ENQUEUE_DEDUP),
		SPI_OK_INSERT_RETURNING, "an enqueue", false, false,
		DLSM_PARAM_BIT(P_ENQUEUE_GROUP)
	},
};

const DlsmQueryDef dlsm_catalog_queries[DLSM_NUM_CATALOG_QUERIES] = {
	[DLSM_C_LOOKUP] = {
		"SELECT channel, max_attempts, id_column, status_column, kind_column,"
		" entity_column, process_id_column, retention, handler,"
		" handler_timeout, group_column, updates_wait_for_create, dedup_column"
		" FROM {queues} WHERE queue {=} $1",
		LAYOUT(DLSM_C_LOOKUP),
		SPI_OK_SELECT, "the dlsm registry lookup"
	},
	[DLSM_C_REGISTER] = {
		"INSERT INTO {queues}"
		" (queue, channel, max_attempts, retention, registered_by,"
		"  id_column, status_column, kind_column, entity_column,"
		"  process_id_column, dedup_column)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
		LAYOUT(DLSM_C_REGISTER),
		SPI_OK_INSERT, "registering a queue"
	},
	[DLSM_C_UNREGISTER] = {
		/*
		 * and the queue's captures whose source is gone (dropped where the
		 * event trigger did not fire): the caller found no other
		 */
		"WITH gone AS (DELETE FROM {captures} k WHERE k.queue {=} $1"
		" AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_class c"
		"  WHERE c.oid {=} k.source))"
		" DELETE FROM {queues} WHERE queue {=} $1",
		LAYOUT(DLSM_C_UNREGISTER),
		SPI_OK_DELETE, "unregistering a queue"
	},
	[DLSM_C_SET_HANDLER] = {
		"UPDATE {queues} SET handler = $2 WHERE queue {=} $1",
		LAYOUT(DLSM_C_SET_HANDLER),
		SPI_OK_UPDATE, "setting a handler"
	},
	[DLSM_C_ALTER] = {
		/* NULL leaves a setting as it is; a zero interval clears it */
		"UPDATE {queues} SET channel = COALESCE($2, channel),"
		" max_attempts = COALESCE($3, max_attempts),"
		" retention = CASE WHEN $4 IS NULL THEN retention"
		"  WHEN $4 {=} '0'::pg_catalog.interval THEN NULL ELSE $4 END,"
		" handler_timeout = CASE WHEN $5 IS NULL THEN handler_timeout"
		"  WHEN $5 {=} '0'::pg_catalog.interval THEN NULL ELSE $5 END"
		" WHERE queue {=} $1",
		LAYOUT(DLSM_C_ALTER),
		SPI_OK_UPDATE, "changing a queue"
	},
	[DLSM_C_LIST] = {
		"SELECT queue FROM {queues} ORDER BY queue",
		LAYOUT(DLSM_C_LIST),
		SPI_OK_SELECT, "the dlsm registry list"
	},
	[DLSM_C_CAPTURE_ADD] = {
		"INSERT INTO {captures}"
		" (source, queue, trigger_name, kind, entity_columns, columns,"
		"  group_column)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7)",
		LAYOUT(DLSM_C_CAPTURE_ADD),
		SPI_OK_INSERT, "registering a capture"
	},
	[DLSM_C_CAPTURE_REMOVE] = {
		"DELETE FROM {captures} WHERE source {=} $1 AND trigger_name {=} $2",
		LAYOUT(DLSM_C_CAPTURE_REMOVE),
		SPI_OK_DELETE, "unregistering a capture"
	},
	[DLSM_C_CAPTURE_READ] = {
		/*
		 * by the trigger's OID: a partition's trigger is a clone of its
		 * parent's, and the capture is that of the topmost parent trigger
		 */
		"WITH RECURSIVE up (parent, relid, name) AS ("
		" SELECT t.tgparentid, t.tgrelid, t.tgname FROM pg_catalog.pg_trigger t"
		"  WHERE t.oid {=} $1"
		" UNION ALL SELECT t.tgparentid, t.tgrelid, t.tgname"
		"  FROM pg_catalog.pg_trigger t, up WHERE t.oid {=} up.parent)"
		" SELECT k.source, k.queue, k.kind, k.entity_columns, k.columns,"
		" k.group_column FROM {captures} k, up"
		" WHERE up.parent {=} 0 AND k.source {=} up.relid"
		" AND k.trigger_name {=} up.name",
		LAYOUT(DLSM_C_CAPTURE_READ),
		SPI_OK_SELECT, "reading a capture"
	},
	[DLSM_C_CAPTURE_TRIGGER] = {
		"SELECT trigger_name FROM {captures}"
		" WHERE source {=} $1 AND queue {=} $2",
		LAYOUT(DLSM_C_CAPTURE_TRIGGER),
		SPI_OK_SELECT, "a capture lookup"
	},
	[DLSM_C_CAPTURED_INTO] = {
		"SELECT k.source FROM {captures} k WHERE k.queue {=} $1"
		" AND EXISTS (SELECT 1 FROM pg_catalog.pg_class c"
		"  WHERE c.oid {=} k.source) LIMIT 1",
		LAYOUT(DLSM_C_CAPTURED_INTO),
		SPI_OK_SELECT, "a capture lookup"
	},
	[DLSM_C_LEASE_READ] = {
		"SELECT fence, lease_until,"
		" lease_until {<} pg_catalog.clock_timestamp() AS expired, holder_role"
		" FROM {leases} WHERE name {=} $1",
		LAYOUT(DLSM_C_LEASE_READ),
		SPI_OK_SELECT, "reading a lease"
	},
	[DLSM_C_LEASE_TAKE] = {
		/* take it unless a live lease holds it */
		ONE_CLOCK
		" INSERT INTO {leases} AS l"
		"  (name, fence, holder, holder_role, acquired_at, lease_until)"
		" SELECT $1, $5, $3, $4, u.now, u.now {+} $2 FROM u"
		" ON CONFLICT (name) DO UPDATE SET fence = excluded.fence,"
		"  holder = excluded.holder, holder_role = excluded.holder_role,"
		"  acquired_at = excluded.acquired_at,"
		"  lease_until = excluded.lease_until"
		"  WHERE l.lease_until {<} excluded.acquired_at"
		" RETURNING fence",
		LAYOUT(DLSM_C_LEASE_TAKE),
		SPI_OK_INSERT_RETURNING, "taking a lease"
	},
	[DLSM_C_LEASE_RELEASE] = {
		"DELETE FROM {leases} WHERE name {=} $1 AND fence {=} $2",
		LAYOUT(DLSM_C_LEASE_RELEASE),
		SPI_OK_DELETE, "releasing a lease"
	},
	[DLSM_C_LEASE_REFRESH] = {
		ONE_CLOCK
		" UPDATE {leases} SET lease_until = u.now {+} $3 FROM u"
		" WHERE name {=} $1 AND fence {=} $2 RETURNING lease_until",
		LAYOUT(DLSM_C_LEASE_REFRESH),
		SPI_OK_UPDATE_RETURNING, "refreshing a lease"
	},
	[DLSM_C_LEASE_PURGE] = {
		"DELETE FROM {leases} WHERE lease_until {<} pg_catalog.clock_timestamp()",
		LAYOUT(DLSM_C_LEASE_PURGE),
		SPI_OK_DELETE, "deleting expired leases"
	},
	[DLSM_C_LEASE_LIST] = {
		"SELECT name, fence, holder, acquired_at, lease_until FROM {leases}"
		" ORDER BY name",
		LAYOUT(DLSM_C_LEASE_LIST),
		SPI_OK_SELECT, "listing leases"
	},
	[DLSM_C_GROUP_COLUMN] = {
		"UPDATE {queues} SET group_column = $2 WHERE queue {=} $1",
		LAYOUT(DLSM_C_GROUP_COLUMN),
		SPI_OK_UPDATE, "naming a queue's group column"
	},
	[DLSM_C_LIMITS_READ] = {
		"SELECT group_key, concurrency, rate, per FROM {limits}"
		" WHERE queue {=} $1",
		LAYOUT(DLSM_C_LIMITS_READ),
		SPI_OK_SELECT, "reading a queue's limits"
	},
	[DLSM_C_LIMIT_SET] = {
		"INSERT INTO {limits} AS l (queue, group_key, concurrency, rate, per)"
		" VALUES ($1, $2, $3, $4, $5)"
		" ON CONFLICT ON CONSTRAINT dlsm_group_limits_key DO UPDATE"
		" SET concurrency = EXCLUDED.concurrency, rate = EXCLUDED.rate,"
		" per = EXCLUDED.per",
		LAYOUT(DLSM_C_LIMIT_SET),
		SPI_OK_INSERT, "setting a limit"
	},
	[DLSM_C_LIMIT_REMOVE] = {
		"DELETE FROM {limits} WHERE queue {=} $1"
		" AND (($2 IS NULL AND group_key IS NULL) OR group_key {=} $2)",
		LAYOUT(DLSM_C_LIMIT_REMOVE),
		SPI_OK_DELETE, "removing a limit"
	},
	[DLSM_C_FENCE_FLOOR] = {
		/* the sequence's value after raising it to $1 if it was below */
		"SELECT CASE WHEN COALESCE(pg_catalog.pg_sequence_last_value("
		"  {fence_seq}::pg_catalog.oid::pg_catalog.regclass), 0) {<} $1"
		" THEN pg_catalog.setval({fence_seq}::pg_catalog.oid::pg_catalog.regclass, $1)"
		" ELSE pg_catalog.pg_sequence_last_value("
		"  {fence_seq}::pg_catalog.oid::pg_catalog.regclass) END AS fence",
		LAYOUT(DLSM_C_FENCE_FLOOR),
		SPI_OK_SELECT, "raising the fence floor"
	},
	[DLSM_C_SET_WAIT_FOR_CREATE] = {
		"UPDATE {queues} SET updates_wait_for_create = $2"
		" WHERE queue {=} $1",
		LAYOUT(DLSM_C_SET_WAIT_FOR_CREATE),
		SPI_OK_UPDATE, "changing a queue"
	},
};

/*
 * DDL of a created queue: {q} the new table, {ready} {creates} {open}
 * {held} {dedupidx} index names, {ext} the extension's schema.  Run once,
 * not kept.  The dedup index serves DEDUP_LOOKUP: the newest rows of a
 * key first, without a sort, and by an index-only scan where the
 * visibility map allows.
 */
const char *const dlsm_create_table_text =
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
" detail pg_catalog.text,"
" group_key pg_catalog.text,"
" dedup_key pg_catalog.text"
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
"CREATE INDEX ON {q} (group_key) WHERE status {=} 'in-progress'"
" AND group_key IS NOT NULL;"
"CREATE INDEX {dedupidx} ON {q} (dedup_key, id) INCLUDE (status, settled_at)"
" WHERE dedup_key IS NOT NULL;"
"CREATE TRIGGER dlsm_wake AFTER INSERT ON {q}"
" FOR EACH STATEMENT EXECUTE FUNCTION {ext}.dlsm_wake();";

/*
 * Adopting a table: {q} the table, {id} {status} {entity} {pid} its mapped
 * columns, {ready} {open} {held} {creates} index names, {ext} the
 * extension's schema.  Adds only what is missing; {creates_index} is empty
 * when the table has an index led by its entity column already, and
 * {dedup_index} when no dedup key column is named.
 */
const char *const dlsm_register_table_text =
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
"{dedup_index}"
"CREATE TRIGGER dlsm_wake AFTER INSERT ON {q}"
" FOR EACH STATEMENT EXECUTE FUNCTION {ext}.dlsm_wake();"
"{drop_duplicates}";

const char *const dlsm_creates_index_text =
"CREATE INDEX {creates} ON {q} ({entity}) WHERE {kind} {=} 'create';";

/* The index of an adopted table's dedup key column {dedup}. */
const char *const dlsm_dedup_index_text =
"CREATE INDEX {dedupidx} ON {q} ({dedup}, {id}) INCLUDE ({status}, settled_at)"
" WHERE {dedup} IS NOT NULL;";

/*
 * Re-registering a table that was a queue before (dlsm_create_queue, or an
 * earlier registration) finds dlsm's indexes there already: the indexes
 * just made ({new_indexes}, a regclass[] literal) that repeat an older one
 * (same access method, keys, operator classes, uniqueness, expressions and
 * predicate) are dropped again.
 */
const char *const dlsm_drop_duplicates_text =
"DO $dlsm$ DECLARE r pg_catalog.regclass; BEGIN"
" FOR r IN SELECT n.indexrelid::pg_catalog.regclass"
"  FROM pg_catalog.pg_index n"
"  JOIN pg_catalog.pg_class nc ON nc.oid {=} n.indexrelid"
"  WHERE n.indexrelid {=} ANY ({new_indexes}::pg_catalog.regclass[])"
"  AND EXISTS (SELECT 1 FROM pg_catalog.pg_index o"
"   JOIN pg_catalog.pg_class oc ON oc.oid {=} o.indexrelid"
"   WHERE o.indrelid {=} n.indrelid AND o.indexrelid {<>} n.indexrelid"
"   AND o.indexrelid {<>} ALL ({new_indexes}::pg_catalog.regclass[])"
"   AND oc.relam {=} nc.relam"
"   AND o.indkey::pg_catalog.text {=} n.indkey::pg_catalog.text"
"   AND o.indclass::pg_catalog.text {=} n.indclass::pg_catalog.text"
"   AND o.indisunique {=} n.indisunique"
"   AND COALESCE(pg_catalog.pg_get_expr(o.indpred, o.indrelid) {=}"
"    pg_catalog.pg_get_expr(n.indpred, n.indrelid),"
"    o.indpred IS NULL AND n.indpred IS NULL)"
"   AND COALESCE(pg_catalog.pg_get_expr(o.indexprs, o.indrelid) {=}"
"    pg_catalog.pg_get_expr(n.indexprs, n.indrelid),"
"    o.indexprs IS NULL AND n.indexprs IS NULL))"
" LOOP EXECUTE pg_catalog.format('DROP INDEX %s', r); END LOOP; END $dlsm$;";

/*
 * Change capture: {src} the source, {trigger} the trigger's name, {ext}
 * the extension's schema.
 */
const char *const dlsm_capture_text =
"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE ON {src}"
" FOR EACH ROW EXECUTE FUNCTION {ext}.dlsm_capture_trigger()";

/* Unregistering a queue: {q} the table. */
const char *const dlsm_drop_table_text = "DROP TABLE {q}";
const char *const dlsm_drop_trigger_text =
"DROP TRIGGER IF EXISTS dlsm_wake ON {q}";
