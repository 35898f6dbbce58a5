/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  All SQL text dlsm runs, prepared once and kept.
 *
 * Statements against a queue are written as templates with placeholders
 * for the queue's quoted name, its mapped column names and dlsm's own
 * objects; each is expanded, prepared and kept (SPI_keepplan) the first
 * time a backend runs it for that queue, in the queue's DlsmPlanSet, and
 * freed with it (queue.c frees a set only when nothing runs its plans).
 * Between those, the plan cache revalidates the kept plans by itself.
 *
 * Except in a queue's first minute: a table never analysed (or analysed
 * empty) has no statistics, and a plan made then is made for the ten pages
 * the planner assumes of it.  Such a plan stays until the first ANALYZE,
 * and it can be a bad one: for a one-row look-up by id it may read the
 * whole `open` index (id is its second column): 85 buffers a statement
 * where the same statement planned with statistics reads 7.  So a plan
 * made without statistics records the table's size, reads it again every
 * few runs, and once the table has grown to four times that, it is set
 * aside and prepared again, for the size the table has then: a handful of
 * times in a queue's first minute, and never once the queue has
 * statistics (the plan cache replans after an ANALYZE by itself).
 *
 * Statements on dlsm's own tables are kept here, and prepared again only
 * when the extension's schema or objects changed (extension.c's
 * generation); the replaced plans are freed when the transaction ends, as
 * one of them may be running in an outer call until then.  They run as
 * the extension's owner: dlsm's functions check the caller's rights first.
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
 * Calls extension.c and identity.c.
 *
 * Copyright (c) 2026, dlsm developers
 *
 * IDENTIFICATION
 *	  src/plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "extension.h"
#include "guc.h"
#include "identity.h"
#include "names.h"
#include "plans.h"

/* The most parameters of one statement. */
#define MAX_PARAMS 16

/*
 * The size the planner assumes of a table never analysed, in pages, and
 * the growth past the size a plan was made for at which it is made again.
 */
#define UNANALYSED_MIN_BLOCKS 10
#define REPLAN_GROWTH 4

/*
 * Such a plan reads the table's size (a system call) at one run in this
 * many: a bad plan outlives the growth that condemns it by as many runs.
 */
#define SIZE_READ_EVERY 16

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
	"SELECT c.{id}, c.{kind}, c.{entity}, c.payload FROM {q} c" \
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

/* A statement's parameters: their count, and their types in order. */
#define ARGS(...) lengthof(((const Oid[]) {__VA_ARGS__})), {__VA_ARGS__}

typedef struct DlsmQueryDef
{
	const char *text;
	int			nargs;
	Oid			argtypes[MAX_PARAMS];
	int			expected;		/* SPI result code */
	int			ncols;			/* its result's columns, or 0: unchecked */
	const char *what;			/* the statement, in an error */
	bool		no_seqscan;		/* planned with enable_seqscan off */
	bool		no_jit;			/* planned with jit off */
} DlsmQueryDef;

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
	" RETURNING t.{id}, t.{entity}, t.{status}"

static const DlsmQueryDef queue_queries[DLSM_NUM_QUERIES] = {
	[DLSM_Q_SCAN] = {
		/* delayed rows too: the floor of the queue stops at them */
		"SELECT {id}, {kind}, {entity},"
		" run_at {<=} pg_catalog.clock_timestamp(), {group} FROM {q}"
		" WHERE {status} {=} 'new' AND {id} {>} $1"
		" ORDER BY {id} LIMIT $2",
		ARGS(INT8OID, INT8OID),
		SPI_OK_SELECT, 5, "the candidate scan"
	},
	[DLSM_Q_SCAN_LIMITED] = {
		/* SCAN for a queue with limits */
		"SELECT c.{id}, c.{kind}, c.{entity},"
		" c.run_at {<=} pg_catalog.clock_timestamp(), {group}"
		" FROM {q} c WHERE c.{status} {=} 'new' AND c.{id} {>} $1"
		/* groups this pass found at their limit ($3) are left out */
		" AND ($3 IS NULL OR {group} IS NULL OR {group} {<>} ALL ($3))"
		" ORDER BY c.{id} LIMIT $2",
		ARGS(INT8OID, INT8OID, TEXTARRAYOID),

		/*
		 * its generic plan's cost, with LIMIT $2 unknown, passes
		 * jit_above_cost: compiling it would cost more than the scan
		 */
		SPI_OK_SELECT, 5, "the candidate scan", false, true
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
		"  WHERE k.{entity} {=} $2 AND k.{kind} {=} 'create'))",
		ARGS(INT8OID, TEXTOID, TEXTOID, BOOLOID),
		SPI_OK_SELECT, 1, "the blocking check"
	},
	[DLSM_Q_ENTITY_STATE] = {
		"SELECT c.st, c.cid, EXISTS (SELECT 1 FROM {q} o"
		"  WHERE o.{entity} {=} $1 AND " BLOCKS("o", "$2", "'update'") ")"
		" FROM (VALUES (1)) v LEFT JOIN LATERAL ("
		"  SELECT {status} AS st, {id} AS cid FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'create'"
		"  ORDER BY {id} LIMIT 1) c ON true",
		ARGS(TEXTOID, INT8OID),
		SPI_OK_SELECT, 3, "the entity state query"
	},
	[DLSM_Q_LOCK_SINGLES] = {
		/*
		 * Single-request units, one per row.  Read after the entity locks
		 * were granted: each candidate is still new and due, and its entity
		 * has nothing in progress and no older open request blocking it.
		 */
		LOCK_SINGLES("ANY ($1)"),
		ARGS(INT8ARRAYOID, TIMESTAMPTZOID),
		SPI_OK_SELECT, 4, "a claim"
	},
	[DLSM_Q_LOCK_ONE] = {
		/* LOCK_SINGLES for one candidate */
		LOCK_SINGLES("$1"),
		ARGS(INT8OID, TIMESTAMPTZOID),
		SPI_OK_SELECT, 4, "a claim"
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
		"SELECT g.{id}, g.{kind}, g.{entity}, g.payload FROM {q} g"
		" WHERE EXISTS (SELECT 1 FROM first)"
		" AND g.{entity} {=} $3 AND g.{kind} {=} 'update'"
		" AND g.{status} {=} 'new' AND g.{id} {>=} $1"
		" AND g.{id} {<} COALESCE((SELECT pg_catalog.min(n.{id}) FROM {q} n"
		"  WHERE n.{entity} {=} $3 AND n.{status} {=} 'new' AND n.{id} {>} $1"
		"  AND (n.{kind} {<>} 'update' OR n.run_at {>} $2)),"
		"  9223372036854775807)"
		" FOR UPDATE OF g SKIP LOCKED",
		ARGS(INT8OID, TIMESTAMPTZOID, TEXTOID, BOOLOID),
		SPI_OK_SELECT, 4, "a claim"
	},
	[DLSM_Q_WRITE_CLAIMS] = {
		/* pending claims not settled by their transaction, at its commit */
		"UPDATE {q} t SET {status} = 'in-progress'," CLAIMED_SET ","
		" settled_at = NULL, detail = NULL"
		CLAIMED_ROWS CLAIMED_WHERE
		" RETURNING t.{entity}",
		ARGS(INT8ARRAYOID, UUIDARRAYOID, INT8ARRAYOID,
			 TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID),
		SPI_OK_UPDATE_RETURNING, 1, "writing claims"
	},
	[DLSM_Q_SETTLE_CLAIMED_FINAL] = {
		/* as SETTLE_FINAL, for claims of this transaction: one row version */
		"UPDATE {q} t SET {status} = $6," CLAIMED_SET_SETTLED ","
		" settled_at = pg_catalog.clock_timestamp(), detail = $7"
		CLAIMED_ROWS CLAIMED_WHERE
		" RETURNING t.{pid}{pidout}, t.{id}, t.{entity}, {tgroup}",
		ARGS(INT8ARRAYOID, UUIDARRAYOID,
			 INT8ARRAYOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID, TEXTOID,
			 TEXTOID),
		SPI_OK_UPDATE_RETURNING, 4, "a settle"
	},
	[DLSM_Q_SETTLE_ONE_FINAL] = {
		/* SETTLE_CLAIMED_FINAL for one row, its values as scalars */
		"UPDATE {q} t SET {status} = $6,"
		CLAIMED_SET_AS("$2", "$3", "$4", "NULL") ","
		" settled_at = pg_catalog.clock_timestamp(), detail = $7"
		" WHERE t.{id} {=} $1 AND t.{status} {=} 'new'"
		" RETURNING t.{pid}{pidout}, t.{id}, t.{entity}, {tgroup}",
		ARGS(INT8OID, UUIDOID, INT8OID,
			 TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TEXTOID),
		SPI_OK_UPDATE_RETURNING, 4, "a settle"
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
		" RETURNING t.{pid}{pidout}, t.{id}, t.{entity}, {tgroup}",
		ARGS(INT8ARRAYOID, UUIDARRAYOID,
			 INT8ARRAYOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID, TEXTOID,
			 INTERVALOID, INT4OID),
		SPI_OK_UPDATE_RETURNING, 4, "a settle"
	},
	[DLSM_Q_FAIL_UPDATES] = {
		"UPDATE {q} SET {status} = 'error',"
		" settled_at = pg_catalog.clock_timestamp(), detail = $2"
		" WHERE {id} {=} ANY (SELECT {id} FROM {q}"
		"  WHERE {entity} {=} $1 AND {kind} {=} 'update'"
		"  AND {status} {=} 'new' FOR UPDATE SKIP LOCKED)",
		ARGS(TEXTOID, TEXTOID),
		SPI_OK_UPDATE, 0, "failing updates"
	},
	[DLSM_Q_GROUP_BUSY] = {
		"SELECT EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {status} {=} 'in-progress' AND {pid} {<>} $2{pidin}),"
		" EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {kind} {=} 'create' AND {status} {<>} 'complete')",
		ARGS(TEXTOID, UUIDOID),
		SPI_OK_SELECT, 2, "the group check"
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
		ARGS(TEXTOID, UUIDOID, INTERVALOID, INT8OID, TIMESTAMPTZOID),
		SPI_OK_UPDATE, 0, "grouping updates"
	},
	[DLSM_Q_SETTLE_FINAL] = {
		"UPDATE {q} t SET {status} = $2, lease_until = NULL,"
		" settled_at = pg_catalog.clock_timestamp(), detail = $3"
		" WHERE {pid} {=} ANY ($1{pidarr}) AND {status} {=} 'in-progress'"
		" RETURNING {pid}{pidout}, {id}, {entity}, {group}",
		ARGS(UUIDARRAYOID, TEXTOID, TEXTOID),
		SPI_OK_UPDATE_RETURNING, 4, "a settle"
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
		" RETURNING {pid}{pidout}, {id}, {entity}, {group}",
		ARGS(UUIDARRAYOID, TEXTOID, INTERVALOID, INT4OID),
		SPI_OK_UPDATE_RETURNING, 4, "a settle"
	},
	[DLSM_Q_HEARTBEAT] = {
		"WITH u AS MATERIALIZED"
		" (SELECT pg_catalog.clock_timestamp() {+} $2 AS until)"
		" UPDATE {q} SET lease_until = u.until FROM u"
		" WHERE {pid} {=} $1{pidin} AND {status} {=} 'in-progress'"
		" RETURNING u.until",
		ARGS(UUIDOID, INTERVALOID),
		SPI_OK_UPDATE_RETURNING, 1, "a heartbeat"
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
		" RETURNING t.{status}, t.{id}, t.{entity}, {tgroup}",
		ARGS(INT4OID),
		SPI_OK_UPDATE_RETURNING, 4, "the reaper"
	},
	[DLSM_Q_PURGE] = {
		/* oldest settled rows first */
		"DELETE FROM {q} WHERE {id} {=} ANY (ARRAY(SELECT {id} FROM {q}"
		" WHERE {status} {=} ANY ('{complete,error}'::pg_catalog.text[])"
		" AND settled_at {<} (pg_catalog.clock_timestamp() {-} $1)"
		" ORDER BY {id} LIMIT $2 FOR UPDATE SKIP LOCKED))",
		ARGS(INTERVALOID, INT4OID),
		SPI_OK_DELETE, 0, "the retention pass"
	},
	[DLSM_Q_STATS] = {
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
		"  FILTER (WHERE {status} {=} 'in-progress'),"

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
		"    WHERE {group} {=} t.dlsm_group AND " UNIT_HEAD("r") ")),"
		" pg_catalog.count(*) FILTER (WHERE $5 AND {status} {=} 'new'"
		"  AND {kind} {=} 'update'"
		"  AND NOT EXISTS (SELECT 1 FROM {q} c WHERE c.{entity} {=} t.{entity}"
		"   AND c.{kind} {=} 'create'))"
		" FROM (SELECT *, {group} AS dlsm_group FROM {q}) t",
		ARGS(OIDOID, INT4OID, TEXTARRAYOID, INT4ARRAYOID, BOOLOID),
		SPI_OK_SELECT, 14, "the queue statistics"
	},
	[DLSM_Q_CAPTURE] = {
		/* $7, the group, is written only to a queue with a group column */
		"INSERT INTO {q} ({entity}, {kind}, payload{groupcol})"
		" VALUES ($1, $2, pg_catalog.jsonb_build_object('op', $3, 'table', $4,"
		"  'old', $5::pg_catalog.jsonb, 'new', $6::pg_catalog.jsonb){capgroupval})",
		ARGS(TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONOID, JSONOID,
			 TEXTOID),
		SPI_OK_INSERT, 0, "a captured change"
	},
	[DLSM_Q_ENQUEUE] = {
		/* $5, the group, is written only to a queue with a group column */
		"INSERT INTO {q} ({entity}, {kind}, payload, run_at{groupcol})"
		" VALUES ($1, $2, $3, COALESCE($4, pg_catalog.now()){groupval})"
		" RETURNING {id}",
		ARGS(TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID, TEXTOID),
		SPI_OK_INSERT_RETURNING, 1, "an enqueue"
	},
	[DLSM_Q_GROUP_LOAD] = {
		/* committed units in progress whose first request is in group $1 */
		"SELECT pg_catalog.count(*) FROM {q} r"
		" WHERE {group} {=} $1 AND " UNIT_HEAD("r"),
		ARGS(TEXTOID),
		SPI_OK_SELECT, 1, "the group's load"
	},
	[DLSM_Q_UPDATES_GROUP] = {
		/*
		 * the group of the entity's first new update, and whether $2 holds
		 * some of its updates already (a unit counted before)
		 */
		"SELECT (SELECT {group} FROM {q} WHERE {entity} {=} $1"
		"  AND {kind} {=} 'update' AND {status} {=} 'new'"
		"  ORDER BY {id} LIMIT 1),"
		" EXISTS (SELECT 1 FROM {q} WHERE {entity} {=} $1"
		"  AND {status} {=} 'in-progress' AND {pid} {=} $2{pidin})",
		ARGS(TEXTOID, UUIDOID),
		SPI_OK_SELECT, 2, "the group of updates"
	},
	[DLSM_Q_CREATE_ARRIVED] = {
		"SELECT EXISTS (SELECT 1 FROM {q}"
		" WHERE {entity} {=} $1 AND {kind} {=} 'create')",
		ARGS(TEXTOID),
		SPI_OK_SELECT, 1, "the create check"
	},

	/*
	 * Dead letters (deadletter.c).  Each locks the rows it names in id order,
	 * and moves only those still in the state it expects.
	 */
	[DLSM_Q_REQUEUE] = {
		/* the error rows of $1 back to new as if just enqueued; $2: who */
		REQUEUE_TEXT(""),
		ARGS(INT8ARRAYOID, TEXTOID),
		SPI_OK_UPDATE_RETURNING, 3, "a requeue"
	},
	[DLSM_Q_CANCEL_LOCK] = {
		/*
		 * The open rows of $1, locked: a claim in progress in another
		 * transaction is waited for, and its row read as it left it.
		 */
		"SELECT {id}, {entity}, {status} FROM {q}"
		" WHERE {id} {=} ANY ($1)"
		" AND {status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		" ORDER BY {id} FOR UPDATE",
		ARGS(INT8ARRAYOID),
		SPI_OK_SELECT, 3, "a cancel"
	},
	[DLSM_Q_CANCEL] = {
		/* the new rows of $1, locked by CANCEL_LOCK, to error; $2: who */
		"UPDATE {q} SET {status} = 'error',"
		" settled_at = pg_catalog.clock_timestamp(),"
		" detail = pg_catalog.format('cancelled by role \"%s\"', $2)"
		" WHERE {id} {=} ANY ($1) AND {status} {=} 'new'"
		" RETURNING {id}, {entity}, {status}",
		ARGS(INT8ARRAYOID, TEXTOID),
		SPI_OK_UPDATE_RETURNING, 3, "a cancel"
	},
	[DLSM_Q_REQUEUE_KEYS] = {
		/*
		 * The error rows of $1 that hold a dedup key, with their keys, locked
		 * in id order as REQUEUE locks them
		 */
		"SELECT {id}::pg_catalog.int8, {dedup}::pg_catalog.text FROM {q}"
		" WHERE {id} {=} ANY ($1) AND {status} {=} 'error'"
		" AND {dedup} IS NOT NULL"
		" ORDER BY {id} FOR UPDATE",
		ARGS(INT8ARRAYOID),
		SPI_OK_SELECT, 2, "a requeue's dedup keys"
	},
	[DLSM_Q_REQUEUE_HOLDERS] = {
		/*
		 * The oldest new or in-progress request holding one of the keys $1,
		 * with its key.  Run under the keys' locks with the latest snapshot,
		 * without sequential scans, as DEDUP_LOOKUP.
		 */
		"SELECT {id}::pg_catalog.int8, {dedup}::pg_catalog.text FROM {q}"
		" WHERE {dedup} {=} ANY ($1)"
		" AND {status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		" ORDER BY {id} LIMIT 1",
		ARGS(TEXTARRAYOID),
		SPI_OK_SELECT, 2, "a requeue's dedup key lookup", true
	},
	[DLSM_Q_REQUEUE_KEYED] = {
		/*
		 * REQUEUE, where a row holding a dedup key goes back to new only if
		 * it is one of $3, the rows whose keys were checked (REQUEUE_KEYS
		 * read them in error, under an older snapshot): one that reached
		 * error since, its key unchecked, stays there
		 */
		REQUEUE_TEXT(" AND (t.{dedup} IS NULL OR t.{id} {=} ANY ($3))"),
		ARGS(INT8ARRAYOID, TEXTOID, INT8ARRAYOID),
		SPI_OK_UPDATE_RETURNING, 3, "a requeue"
	},
	[DLSM_Q_DEDUP_LOOKUP] = {
		/*
		 * The newest request holding the key $1: new or in progress, or
		 * settled less than $2 ago (NULL: no window).  Run under the key's
		 * lock with the latest snapshot (state.c).  Planned without
		 * sequential scans: a plan made while the queue was analyzed empty
		 * would read the whole table at every enqueue until the next analyze.
		 */
		"SELECT {id}::pg_catalog.int8 FROM {q} WHERE {dedup} {=} $1"
		" AND ({status} {=} ANY ('{new,in-progress}'::pg_catalog.text[])"
		"  OR ({status} {=} ANY ('{complete,error}'::pg_catalog.text[])"
		"   AND settled_at {>} (pg_catalog.clock_timestamp() {-} $2)))"
		" ORDER BY {id} DESC LIMIT 1",
		ARGS(TEXTOID, INTERVALOID),
		SPI_OK_SELECT, 1, "a dedup key lookup", true
	},
	[DLSM_Q_ENQUEUE_DEDUP] = {
		/* ENQUEUE with the key, $6 */
		"INSERT INTO {q} ({entity}, {kind}, payload, run_at{groupcol}, {dedup})"
		" VALUES ($1, $2, $3, COALESCE($4, pg_catalog.now()){groupval}, $6)"
		" RETURNING {id}",
		ARGS(TEXTOID, TEXTOID, JSONBOID, TIMESTAMPTZOID,
			 TEXTOID, TEXTOID),
		SPI_OK_INSERT_RETURNING, 1, "an enqueue"
	},
};

static const DlsmQueryDef catalog_queries[DLSM_NUM_CATALOG_QUERIES] = {
	[DLSM_C_LOOKUP] = {
		"SELECT channel, max_attempts, id_column, status_column, kind_column,"
		" entity_column, process_id_column, retention, handler,"
		" handler_timeout, group_column, updates_wait_for_create, dedup_column"
		" FROM {queues} WHERE queue {=} $1",
		ARGS(REGCLASSOID),
		SPI_OK_SELECT, 13, "the dlsm registry lookup"
	},
	[DLSM_C_REGISTER] = {
		"INSERT INTO {queues}"
		" (queue, channel, max_attempts, retention, registered_by,"
		"  id_column, status_column, kind_column, entity_column,"
		"  process_id_column, dedup_column)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
		ARGS(REGCLASSOID, TEXTOID, INT4OID, INTERVALOID,
			 REGROLEOID, NAMEOID, NAMEOID, NAMEOID, NAMEOID, NAMEOID, NAMEOID),
		SPI_OK_INSERT, 0, "registering a queue"
	},
	[DLSM_C_UNREGISTER] = {
		"DELETE FROM {queues} WHERE queue {=} $1",
		ARGS(REGCLASSOID),
		SPI_OK_DELETE, 0, "unregistering a queue"
	},
	[DLSM_C_SET_HANDLER] = {
		"UPDATE {queues} SET handler = $2 WHERE queue {=} $1",
		ARGS(REGCLASSOID, TEXTOID),
		SPI_OK_UPDATE, 0, "setting a handler"
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
		ARGS(REGCLASSOID, TEXTOID, INT4OID, INTERVALOID,
			 INTERVALOID),
		SPI_OK_UPDATE, 0, "changing a queue"
	},
	[DLSM_C_LIST] = {
		"SELECT queue FROM {queues} ORDER BY queue",
		0, {InvalidOid},
		SPI_OK_SELECT, 1, "the dlsm registry list"
	},
	[DLSM_C_CAPTURE_ADD] = {
		"INSERT INTO {captures}"
		" (source, queue, trigger_name, kind, entity_columns, columns,"
		"  group_column)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7)",
		ARGS(REGCLASSOID, REGCLASSOID, NAMEOID, TEXTOID,
			 NAMEARRAYOID, NAMEARRAYOID, NAMEOID),
		SPI_OK_INSERT, 0, "registering a capture"
	},
	[DLSM_C_CAPTURE_REMOVE] = {
		"DELETE FROM {captures} WHERE source {=} $1 AND trigger_name {=} $2",
		ARGS(REGCLASSOID, NAMEOID),
		SPI_OK_DELETE, 0, "unregistering a capture"
	},
	[DLSM_C_CAPTURE_READ] = {
		"SELECT queue, kind, entity_columns, columns, group_column FROM {captures}"
		" WHERE source {=} $1 AND trigger_name {=} $2",
		ARGS(REGCLASSOID, NAMEOID),
		SPI_OK_SELECT, 5, "reading a capture"
	},
	[DLSM_C_CAPTURE_TRIGGER] = {
		"SELECT trigger_name FROM {captures}"
		" WHERE source {=} $1 AND queue {=} $2",
		ARGS(REGCLASSOID, REGCLASSOID),
		SPI_OK_SELECT, 1, "a capture lookup"
	},
	[DLSM_C_CAPTURED_INTO] = {
		"SELECT source FROM {captures} WHERE queue {=} $1 LIMIT 1",
		ARGS(REGCLASSOID),
		SPI_OK_SELECT, 1, "a capture lookup"
	},
	[DLSM_C_LEASE_READ] = {
		"SELECT fence, lease_until,"
		" lease_until {<} pg_catalog.clock_timestamp(), holder_role"
		" FROM {leases} WHERE name {=} $1",
		ARGS(TEXTOID),
		SPI_OK_SELECT, 4, "reading a lease"
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
		ARGS(TEXTOID, INTERVALOID, TEXTOID, REGROLEOID, INT8OID),
		SPI_OK_INSERT_RETURNING, 1, "taking a lease"
	},
	[DLSM_C_LEASE_RELEASE] = {
		"DELETE FROM {leases} WHERE name {=} $1 AND fence {=} $2",
		ARGS(TEXTOID, INT8OID),
		SPI_OK_DELETE, 0, "releasing a lease"
	},
	[DLSM_C_LEASE_REFRESH] = {
		ONE_CLOCK
		" UPDATE {leases} SET lease_until = u.now {+} $3 FROM u"
		" WHERE name {=} $1 AND fence {=} $2 RETURNING lease_until",
		ARGS(TEXTOID, INT8OID, INTERVALOID),
		SPI_OK_UPDATE_RETURNING, 1, "refreshing a lease"
	},
	[DLSM_C_LEASE_PURGE] = {
		"DELETE FROM {leases} WHERE lease_until {<} pg_catalog.clock_timestamp()",
		0, {InvalidOid},
		SPI_OK_DELETE, 0, "deleting expired leases"
	},
	[DLSM_C_LEASE_LIST] = {
		"SELECT name, fence, holder, acquired_at, lease_until FROM {leases}"
		" ORDER BY name",
		0, {InvalidOid},
		SPI_OK_SELECT, 5, "listing leases"
	},
	[DLSM_C_GROUP_COLUMN] = {
		"UPDATE {queues} SET group_column = $2 WHERE queue {=} $1",
		ARGS(REGCLASSOID, NAMEOID),
		SPI_OK_UPDATE, 0, "naming a queue's group column"
	},
	[DLSM_C_LIMITS_READ] = {
		"SELECT group_key, concurrency, rate, per FROM {limits}"
		" WHERE queue {=} $1",
		ARGS(REGCLASSOID),
		SPI_OK_SELECT, 4, "reading a queue's limits"
	},
	[DLSM_C_LIMIT_SET] = {
		"INSERT INTO {limits} AS l (queue, group_key, concurrency, rate, per)"
		" VALUES ($1, $2, $3, $4, $5)"
		" ON CONFLICT ON CONSTRAINT dlsm_group_limits_key DO UPDATE"
		" SET concurrency = EXCLUDED.concurrency, rate = EXCLUDED.rate,"
		" per = EXCLUDED.per",
		ARGS(REGCLASSOID, TEXTOID, INT4OID, INT4OID,
			 INTERVALOID),
		SPI_OK_INSERT, 0, "setting a limit"
	},
	[DLSM_C_LIMIT_REMOVE] = {
		"DELETE FROM {limits} WHERE queue {=} $1"
		" AND (($2 IS NULL AND group_key IS NULL) OR group_key {=} $2)",
		ARGS(REGCLASSOID, TEXTOID),
		SPI_OK_DELETE, 0, "removing a limit"
	},
	[DLSM_C_FENCE_FLOOR] = {
		/* the sequence's value after raising it to $1 if it was below */
		"SELECT CASE WHEN COALESCE(pg_catalog.pg_sequence_last_value("
		"  {fence_seq}::pg_catalog.oid::pg_catalog.regclass), 0) {<} $1"
		" THEN pg_catalog.setval({fence_seq}::pg_catalog.oid::pg_catalog.regclass, $1)"
		" ELSE pg_catalog.pg_sequence_last_value("
		"  {fence_seq}::pg_catalog.oid::pg_catalog.regclass) END",
		ARGS(INT8OID),
		SPI_OK_SELECT, 1, "raising the fence floor"
	},
	[DLSM_C_SET_WAIT_FOR_CREATE] = {
		"UPDATE {queues} SET updates_wait_for_create = $2"
		" WHERE queue {=} $1",
		ARGS(REGCLASSOID, BOOLOID),
		SPI_OK_UPDATE, 0, "changing a queue"
	},
};

/*
 * DDL of a created queue: {q} the new table, {ready} {creates} {open}
 * {held} {dedupidx} index names, {ext} the extension's schema.  Run once,
 * not kept.  The dedup index serves DEDUP_LOOKUP: the newest rows of a
 * key first, without a sort, and by an index-only scan where the
 * visibility map allows.
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
"{dedup_index}"
"CREATE TRIGGER dlsm_wake AFTER INSERT ON {q}"
" FOR EACH STATEMENT EXECUTE FUNCTION {ext}.dlsm_wake();"
"{drop_duplicates}";

static const char *const creates_index_text =
"CREATE INDEX {creates} ON {q} ({entity}) WHERE {kind} {=} 'create';";

/* The index of an adopted table's dedup key column {dedup}. */
static const char *const dedup_index_text =
"CREATE INDEX {dedupidx} ON {q} ({dedup}, {id}) INCLUDE ({status}, settled_at)"
" WHERE {dedup} IS NOT NULL;";

/*
 * Re-registering a table that was a queue before (dlsm_create_queue, or an
 * earlier registration) finds dlsm's indexes there already: the indexes
 * just made ({new_indexes}, a regclass[] literal) that repeat an older one
 * (same access method, keys, operator classes, uniqueness, expressions and
 * predicate) are dropped again.
 */
static const char *const drop_duplicates_text =
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
static const char *const capture_text =
"CREATE TRIGGER {trigger} AFTER INSERT OR UPDATE OR DELETE ON {src}"
" FOR EACH ROW EXECUTE FUNCTION {ext}.dlsm_capture_trigger()";

/* Unregistering a queue: {q} the table. */
static const char *const drop_table_text = "DROP TABLE {q}";
static const char *const drop_trigger_text =
"DROP TRIGGER IF EXISTS dlsm_wake ON {q}";

/* ---------------------------------------------------------------------
 * Templates
 * ---------------------------------------------------------------------
 */

/* One placeholder of a template and what replaces it. */
typedef struct Subst
{
	const char *name;
	const char *value;
} Subst;

static const Subst operators[] = {
	{"=", "OPERATOR(pg_catalog.=)"},
	{"<>", "OPERATOR(pg_catalog.<>)"},
	{"<", "OPERATOR(pg_catalog.<)"},
	{"<=", "OPERATOR(pg_catalog.<=)"},
	{">", "OPERATOR(pg_catalog.>)"},
	{">=", "OPERATOR(pg_catalog.>=)"},
	{"+", "OPERATOR(pg_catalog.+)"},
	{"-", "OPERATOR(pg_catalog.-)"},
	{"*", "OPERATOR(pg_catalog.*)"},
};

/* The value of placeholder p (len bytes) in subst (n entries), or NULL. */
static const char *
lookup_subst(const char *p, size_t len, const Subst *subst, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(subst[i].name) == len && strncmp(p, subst[i].name, len) == 0)
			return subst[i].value;
	for (int i = 0; i < lengthof(operators); i++)
		if (strlen(operators[i].name) == len &&
			strncmp(p, operators[i].name, len) == 0)
			return operators[i].value;
	return NULL;
}

/*
 * The template with each {name} replaced by its value in subst (n entries)
 * or operators, in the current memory context.  Unknown names are left as
 * they are, so that literals such as '{new,in-progress}' pass.
 */
static char *
expand(const char *template, const Subst *subst, int n)
{
	StringInfoData buf;
	const char *p = template;

	initStringInfo(&buf);
	while (*p)
	{
		const char *close = *p == '{' ? strchr(p, '}') : NULL;
		const char *value = NULL;

		if (close != NULL)
			value = lookup_subst(p + 1, close - p - 1, subst, n);

		if (value == NULL)
			appendStringInfoChar(&buf, *p++);
		else
		{
			appendStringInfoString(&buf, value);
			p = close + 1;
		}
	}
	return buf.data;
}

/* Prepare text (whose parameters def describes) and keep the plan. */
static SPIPlanPtr
prepare_kept(const char *text, const DlsmQueryDef *def)
{
	SPIPlanPtr	plan;

	/* dlsm.log_statements: every statement, as it runs, one line each */
	if (dlsm_log_statements)
		ereport(LOG,
				(errmsg_internal("dlsm prepares %s: %s", def->what, text)));

	/*
	 * Generic plans: parameters only pick rows, never a better plan, so
	 * planning once saves replanning every call (custom plans would be tried
	 * first and often kept, at the cost of a plan per execution).
	 */
	/* (ARGS with more types than argtypes holds is only a warning in C) */
	if (def->nargs > MAX_PARAMS)
		elog(ERROR, "%s takes %d parameters, more than %d", def->what,
			 def->nargs, MAX_PARAMS);
	plan = SPI_prepare_cursor(text, def->nargs, (Oid *) def->argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 text, SPI_result_code_string(SPI_result));
	if (SPI_getargcount(plan) != def->nargs)
		elog(ERROR, "%s takes %d parameters, not %d", def->what,
			 SPI_getargcount(plan), def->nargs);
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/*
 * Check a statement's result against what def expects: its SPI code and,
 * when it returned rows, its result columns.  Returns the rows processed.
 */
static uint64
check(int rc, const DlsmQueryDef *def)
{
	if (rc != def->expected)
		elog(ERROR, "unexpected result from %s: %s", def->what,
			 SPI_result_code_string(rc));
	if (SPI_tuptable != NULL && def->ncols != 0 &&
		SPI_tuptable->tupdesc->natts != def->ncols)
		elog(ERROR, "%s returned %d columns, not %d", def->what,
			 SPI_tuptable->tupdesc->natts, def->ncols);
	return SPI_processed;
}

/* Run DDL built from a template; not kept, it runs once. */
static void
execute_utility(const char *template, const Subst *subst, int n)
{
	char	   *text = expand(template, subst, n);
	int			rc = SPI_execute(text, false, 0);

	if (rc != SPI_OK_UTILITY)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
	pfree(text);
}

/* ---------------------------------------------------------------------
 * Plans set aside
 * ---------------------------------------------------------------------
 */

static List *retired_plans = NIL;	/* replaced, freed at transaction end */
static bool callback_registered = false;

static void
free_retired_plans(XactEvent event, void *arg)
{
	ListCell   *lc;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE)
		return;
	foreach(lc, retired_plans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(retired_plans);
	retired_plans = NIL;
}

/*
 * Set a kept plan aside, replaced: it may be running in an outer call
 * until the transaction ends, when it is freed.
 */
static void
retire_plan(SPIPlanPtr plan)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	if (!callback_registered)
		RegisterXactCallback(free_retired_plans, NULL);
	callback_registered = true;
	retired_plans = lappend(retired_plans, plan);
	MemoryContextSwitchTo(old);
}

/* ---------------------------------------------------------------------
 * A queue's statements
 * ---------------------------------------------------------------------
 */

/* The placeholders of a queue's names, filled into the first entries. */
#define NUM_NAME_SUBSTS 15

static void
name_substs(const DlsmQueueNames *names, Subst *subst)
{
	const Subst fill[NUM_NAME_SUBSTS] = {
		{"q", names->relname},
		{"id", names->id},
		{"status", names->status},
		{"kind", names->kind},
		{"entity", names->entity},
		{"pid", names->process_id},
		{"pidin", names->pid_is_text ? "::pg_catalog.text" : ""},
		{"pidarr", names->pid_is_text ? "::pg_catalog.text[]" : ""},
		{"pidout", names->pid_is_text ? "::pg_catalog.uuid" : ""},
		{"group", names->group ? names->group : "NULL::pg_catalog.text"},
		{"groupcol", names->group ? psprintf(", %s", names->group) : ""},
		{"groupval", names->group ? ", $5" : ""},
		{"capgroupval", names->group ? ", $7" : ""},
		{"tgroup", names->group ? psprintf("t.%s", names->group) : "NULL::pg_catalog.text"},
		{"dedup", names->dedup},	/* NULL: left as it is, never run */
	};

	memcpy(subst, fill, sizeof(fill));
}

/*
 * The size, in pages, the planner assumes of the queue table relid when it
 * has no statistics: never analysed, or analysed empty (relpages 0); 0 when
 * it has statistics, or no storage of its own.  Takes the lock the
 * statement about to run takes anyway.
 */
static BlockNumber
size_without_statistics(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	BlockNumber blocks = 0;

	if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind) &&
		(rel->rd_rel->reltuples < 0 || rel->rd_rel->relpages == 0))
		blocks = Max(RelationGetNumberOfBlocks(rel), UNANALYSED_MIN_BLOCKS);
	table_close(rel, NoLock);
	return blocks;
}

static SPIPlanPtr
queue_plan(DlsmPlanSet *set, DlsmQueryId query)
{
	/* a plan made without statistics, for a table since grown */
	if (set->plans[query] != NULL && set->planned_for[query] != 0 &&
		++set->runs[query] % SIZE_READ_EVERY == 0)
	{
		BlockNumber now = size_without_statistics(set->relid);

		if (now == 0)
		{
			/* analysed: the plan cache makes every plan again by itself */
			memset(set->planned_for, 0, sizeof(set->planned_for));
		}
		else if (now / REPLAN_GROWTH >= set->planned_for[query])
		{
			/* it may run in an outer call: freed when the transaction ends */
			retire_plan(set->plans[query]);
			set->plans[query] = NULL;
		}
	}
	if (set->plans[query] == NULL)
	{
		Subst		subst[NUM_NAME_SUBSTS];
		char	   *text;

		name_substs(&set->names, subst);
		text = expand(queue_queries[query].text, subst, lengthof(subst));

		set->plans[query] = prepare_kept(text, &queue_queries[query]);
		set->planned_for[query] = size_without_statistics(set->relid);
		pfree(text);
	}
	return set->plans[query];
}

/*
 * Run one of a queue's statements as the current user, and check its
 * result; returns the rows processed, which are in SPI_tuptable.  The
 * caller holds an SPI connection.
 *
 * NB: even the pure reads run with read_only = false, which gives each
 * statement a fresh snapshot in READ COMMITTED: a claim must see what
 * committed before it took an entity lock, and a waiting claim must see
 * rows enqueued while it slept.
 */
uint64
dlsm_plan_run(DlsmPlanSet *set, DlsmQueryId query, Datum *values,
			  const char *nulls, long count)
{
	const DlsmQueryDef *def = &queue_queries[query];
	SPIPlanPtr	plan = queue_plan(set, query);
	int			nest_level = 0;
	int			rc;

	/* plans are made as the statement runs: the setting holds for both */
	if (def->no_jit)
	{
		nest_level = NewGUCNestLevel();
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	rc = SPI_execute_plan(plan, values, nulls, false, count);
	if (def->no_jit)
		AtEOXact_GUC(true, nest_level);
	return check(rc, def);
}

/*
 * dlsm_plan_run with the latest snapshot, whatever the transaction's
 * isolation: a statement run after a lock was granted sees what the
 * lock's previous holder committed (as ri_triggers.c does).
 */
uint64
dlsm_plan_run_latest(DlsmPlanSet *set, DlsmQueryId query, Datum *values,
					 const char *nulls, long count)
{
	const DlsmQueryDef *def = &queue_queries[query];
	int			nest_level = 0;
	SPIPlanPtr	plan;
	int			rc;

	/*
	 * the plan is made (or made again, after an invalidation) when it runs:
	 * the setting holds for both; an error undoes it with the
	 * (sub)transaction
	 */
	if (def->no_seqscan)
	{
		nest_level = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET,
								 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0,
								 false);
	}
	plan = queue_plan(set, query);
	rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
							  InvalidSnapshot, false, true, count);
	if (def->no_seqscan)
		AtEOXact_GUC(true, nest_level);
	return check(rc, def);
}

/* Free a queue's kept plans; none of them may be running. */
void
dlsm_plan_free(DlsmPlanSet *set)
{
	for (int i = 0; i < DLSM_NUM_QUERIES; i++)
	{
		if (set->plans[i] != NULL)
			SPI_freeplan(set->plans[i]);
		set->plans[i] = NULL;
	}
}

/* ---------------------------------------------------------------------
 * Statements on dlsm's own tables
 * ---------------------------------------------------------------------
 */

static SPIPlanPtr catalog_plans[DLSM_NUM_CATALOG_QUERIES];
static uint64 catalog_generation = 0;	/* dlsm_extension_generation() seen */

/* The extension was created again: set the old plans aside. */
static void
retire_catalog_plans(void)
{
	for (int i = 0; i < DLSM_NUM_CATALOG_QUERIES; i++)
	{
		if (catalog_plans[i] != NULL)
			retire_plan(catalog_plans[i]);
		catalog_plans[i] = NULL;
	}
}

static SPIPlanPtr
catalog_plan(DlsmCatalogQueryId query)
{
	uint64		current = dlsm_extension_generation();

	if (current != catalog_generation)
	{
		retire_catalog_plans();
		catalog_generation = current;
	}
	if (catalog_plans[query] == NULL)
	{
		const char *schema = dlsm_extension_schema();
		Subst		subst[] = {
			{"queues", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_QUEUES))},
			{"captures", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_CAPTURES))},
			{"leases", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_LEASES))},
			{"limits", quote_qualified_identifier(schema, dlsm_extension_object_name(DLSM_OBJ_GROUP_LIMITS))},
			{"fence_seq", psprintf("%u", dlsm_extension_object(DLSM_OBJ_FENCE_SEQ))},
		};
		char	   *text = expand(catalog_queries[query].text, subst,
								  lengthof(subst));

		catalog_plans[query] = prepare_kept(text, &catalog_queries[query]);
		pfree(text);
	}
	return catalog_plans[query];
}

/*
 * Run one of the statements on dlsm's own tables as the extension's owner,
 * with a fresh snapshot (the latest, when latest: it must see what
 * committed a moment ago, whatever the transaction's isolation), and check
 * its result; returns the rows processed.  The caller holds an SPI
 * connection and checked the caller's rights.
 */
static uint64
run_catalog(DlsmCatalogQueryId query, Datum *values, const char *nulls,
			long count, bool latest)
{
	Oid			owner = dlsm_extension_owner();
	DlsmIdentity saved;
	SPIPlanPtr	plan;
	int			rc;

	/*
	 * prepared as the owner too: the caller may not see dlsm's schema; the
	 * caller's search_path never reaches code on dlsm's tables
	 */
	dlsm_identity_switch_pinned(owner, &saved);
	plan = catalog_plan(query);
	if (latest)
		rc = SPI_execute_snapshot(plan, values, nulls, GetLatestSnapshot(),
								  InvalidSnapshot, true, false, count);
	else
		rc = SPI_execute_plan(plan, values, nulls, false, count);
	dlsm_identity_restore(&saved);
	return check(rc, &catalog_queries[query]);
}

/* Run a statement that writes dlsm's own tables, as their owner. */
uint64
dlsm_plan_run_catalog(DlsmCatalogQueryId query, Datum *values,
					  const char *nulls, long count)
{
	return run_catalog(query, values, nulls, count, false);
}

/* Read dlsm's own tables as their owner, with the latest snapshot. */
uint64
dlsm_plan_read_catalog(DlsmCatalogQueryId query, Datum *values,
					   const char *nulls, long count)
{
	return run_catalog(query, values, nulls, count, true);
}

/* Open the SPI connection of a call into dlsm. */
void
dlsm_plan_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
}

/* Close it. */
void
dlsm_plan_finish(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

/* ---------------------------------------------------------------------
 * Results
 * ---------------------------------------------------------------------
 */

/*
 * A caller's column number past the last result's columns would read as
 * NULL: a caller and a statement that disagree are an error.
 */
static void
check_attno(int attno)
{
	if (attno < 1 || attno > SPI_tuptable->tupdesc->natts)
		elog(ERROR, "result column %d asked of a result of %d columns",
			 attno, SPI_tuptable->tupdesc->natts);
}

/* Column attno of row of the last result. */
Datum
dlsm_plan_value(uint64 row, int attno, bool *isnull)
{
	check_attno(attno);
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 attno, isnull);
}

/* Column attno of row of the last result as text, NULL for NULL. */
char *
dlsm_plan_text(uint64 row, int attno)
{
	check_attno(attno);
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						attno);
}

/* ---------------------------------------------------------------------
 * DDL
 * ---------------------------------------------------------------------
 */

/*
 * Create a queue table named relname (quoted and qualified) with its
 * indexes (index_names, quoted, by DLSM_INDEX_*) and wake trigger.  Runs
 * as the caller.
 */
void
dlsm_plan_create_table(const char *relname, const char *const *index_names)
{
	Subst		subst[] = {
		{"q", relname},
		{"ready", index_names[DLSM_INDEX_READY]},
		{"creates", index_names[DLSM_INDEX_CREATES]},
		{"open", index_names[DLSM_INDEX_OPEN]},
		{"held", index_names[DLSM_INDEX_HELD]},
		{"ext", quote_identifier(dlsm_extension_schema())},
		{"dedupidx", index_names[DLSM_INDEX_DEDUP]},
	};

	execute_utility(create_table_text, subst, lengthof(subst));
}

/* A regclass[] literal of the index names just made, in schema. */
static char *
new_indexes_literal(const char *schema, const char *const *index_names,
					bool creates_index, bool dedup_index)
{
	StringInfoData buf;
	bool		first = true;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "ARRAY[");
	for (int i = 0; i < DLSM_NUM_INDEXES; i++)
	{
		if ((i == DLSM_INDEX_CREATES && !creates_index) ||
			(i == DLSM_INDEX_DEDUP && !dedup_index))
			continue;
		appendStringInfo(&buf, "%s%s", first ? "" : ", ",
						 quote_literal_cstr(psprintf("%s.%s", schema,
													 index_names[i])));
		first = false;
	}
	appendStringInfoChar(&buf, ']');
	return buf.data;
}

/*
 * Add to an adopted table what dlsm needs and it lacks: names are its
 * quoted names, schema its quoted schema, index_names the quoted index
 * names (DLSM_INDEX_*), and creates_index whether to build the creates
 * index; the dedup index is built when names->dedup is set.  Indexes that
 * repeat ones the table has are dropped again.  Runs as the caller.
 */
void
dlsm_plan_adopt_table(const DlsmQueueNames *names, const char *schema,
					  const char *const *index_names, bool creates_index)
{
	enum
	{
		S_READY = NUM_NAME_SUBSTS, S_OPEN, S_HELD, S_CREATES, S_EXT,
		S_DEDUPIDX, S_NEW_INDEXES, S_CREATES_INDEX, S_DEDUP_INDEX,
		S_DROP_DUPLICATES, NUM_SUBSTS
	};
	Subst		subst[NUM_SUBSTS] = {
		[S_READY] = {"ready", index_names[DLSM_INDEX_READY]},
		[S_OPEN] = {"open", index_names[DLSM_INDEX_OPEN]},
		[S_HELD] = {"held", index_names[DLSM_INDEX_HELD]},
		[S_CREATES] = {"creates", index_names[DLSM_INDEX_CREATES]},
		[S_EXT] = {"ext", quote_identifier(dlsm_extension_schema())},
		[S_DEDUPIDX] = {"dedupidx", index_names[DLSM_INDEX_DEDUP]},
		[S_NEW_INDEXES] = {"new_indexes", new_indexes_literal(schema, index_names,
															  creates_index,
															  names->dedup != NULL)},
		[S_CREATES_INDEX] = {"creates_index", ""},
		[S_DEDUP_INDEX] = {"dedup_index", ""},
		[S_DROP_DUPLICATES] = {"drop_duplicates", ""},
	};
	int			nest_level;

	/* the last three are built from the template with the others */
	name_substs(names, subst);
	subst[S_CREATES_INDEX].value = creates_index ?
		expand(creates_index_text, subst, S_CREATES_INDEX) : "";
	subst[S_DEDUP_INDEX].value = names->dedup != NULL ?
		expand(dedup_index_text, subst, S_CREATES_INDEX) : "";
	subst[S_DROP_DUPLICATES].value =
		expand(drop_duplicates_text, subst, S_CREATES_INDEX);

	/* "column ... already exists, skipping" says nothing to the caller */
	nest_level = NewGUCNestLevel();
	(void) set_config_option("client_min_messages", "warning", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	execute_utility(register_table_text, subst, lengthof(subst));
	AtEOXact_GUC(true, nest_level);
}

/*
 * Drop a queue table (relname quoted and qualified), or when !drop_table
 * only the wake trigger dlsm put on it.  Runs as the caller.
 */
void
dlsm_plan_drop_table(const char *relname, bool drop_table)
{
	Subst		subst[] = {{"q", relname}};

	execute_utility(drop_table ? drop_table_text : drop_trigger_text,
					subst, lengthof(subst));
}

/* Attach the capture trigger named trigger to source. */
void
dlsm_plan_capture_trigger(Oid source, const char *trigger)
{
	Subst		subst[] = {
		{"src", quote_qualified_identifier(dlsm_schema_name(get_rel_namespace(source)),
										   dlsm_rel_name(source))},
		{"trigger", quote_identifier(trigger)},
		{"ext", quote_identifier(dlsm_extension_schema())},
	};

	execute_utility(capture_text, subst, lengthof(subst));
}
