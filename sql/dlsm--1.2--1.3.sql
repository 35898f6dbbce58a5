/* sql/dlsm--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.3'" to load this file. \quit

/*
 * 1.3: groups with limits, deduplication, dead letters.
 *
 * - dlsm_enqueue gains group_key, dedup_key and dedup_window.
 * - Groups: the registry names a queue's group column (group_column),
 *   dlsm_register_queue takes it (group_key); limits per group live in
 *   dlsm_group_limits, set by dlsm_set_limit, shown by dlsm_limits;
 *   dlsm_queue_stats counts requests held back by limits.  Queues created
 *   before 1.3 have no group column.
 * - the queue option updates_wait_for_create (see the block below).
 * - dlsm_requeue and dlsm_cancel: dead letters.
 * - Deduplication: the registry's dedup_column names a queue's dedup key
 *   column, dlsm_register_queue's dedup_key sets it for an adopted table,
 *   dlsm_enqueue_deduplicated() tells whether a row was added.  Queues
 *   created before keep their table and have no dedup column (README,
 *   "Deduplication", says how to give them one).
 * - dlsm_worker_status gains state and last_pass_age (a pool of workers
 *   that take turns).
 */

DROP FUNCTION @extschema@.dlsm_enqueue(pg_catalog.regclass, pg_catalog.text,
	pg_catalog.text, pg_catalog.jsonb, pg_catalog.timestamptz);
CREATE FUNCTION @extschema@.dlsm_enqueue(
	queue pg_catalog.regclass,
	entity pg_catalog.text,
	kind pg_catalog.text DEFAULT 'create',
	payload pg_catalog.jsonb DEFAULT NULL,
	run_at pg_catalog.timestamptz DEFAULT NULL,
	group_key pg_catalog.text DEFAULT NULL,
	dedup_key pg_catalog.text DEFAULT NULL,
	dedup_window pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_enqueue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue(pg_catalog.regclass, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'add a request to a queue and return its id';

-- Groups and their limits.
ALTER TABLE @extschema@.dlsm_queues ADD COLUMN group_column pg_catalog.name;
-- Deduplication
ALTER TABLE @extschema@.dlsm_queues ADD COLUMN dedup_column pg_catalog.name;

DROP FUNCTION @extschema@.dlsm_register_queue(pg_catalog.regclass,
	pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.name,
	pg_catalog.name, pg_catalog.text, pg_catalog.int4, pg_catalog.interval);
CREATE FUNCTION @extschema@.dlsm_register_queue(
	queue pg_catalog.regclass,
	id pg_catalog.name DEFAULT 'id',
	status pg_catalog.name DEFAULT 'status',
	kind pg_catalog.name DEFAULT 'kind',
	entity pg_catalog.name DEFAULT 'entity',
	process_id pg_catalog.name DEFAULT 'process_id',
	channel pg_catalog.text DEFAULT NULL,
	max_attempts pg_catalog.int4 DEFAULT 5,
	retention pg_catalog.interval DEFAULT NULL,
	group_key pg_catalog.name DEFAULT NULL,
	dedup_key pg_catalog.name DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'dlsm_register_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_register_queue(pg_catalog.regclass, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.name, pg_catalog.name) IS
'adopt an existing table as a queue, through a column map';
/*
 * The queue option updates_wait_for_create: a registry column at the end
 * of dlsm_queues, an argument at the end of dlsm_create_queue and
 * dlsm_alter_queue, and dlsm_queue_stats gains waiting_for_create_to_arrive.
 * Functions whose arguments or result columns change are dropped and
 * created again, with the comments and privileges of a fresh install.
 */
ALTER TABLE @extschema@.dlsm_queues
	ADD COLUMN updates_wait_for_create pg_catalog.bool NOT NULL DEFAULT false;

DROP FUNCTION @extschema@.dlsm_create_queue(pg_catalog.text, pg_catalog.text,
	pg_catalog.int4, pg_catalog.interval);
CREATE FUNCTION @extschema@.dlsm_create_queue(
	queue pg_catalog.text,
	channel pg_catalog.text DEFAULT NULL,
	max_attempts pg_catalog.int4 DEFAULT 5,
	retention pg_catalog.interval DEFAULT NULL,
	updates_wait_for_create pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'dlsm_create_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_create_queue(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.bool) IS
'create a queue table and register it with dlsm';

DROP FUNCTION @extschema@.dlsm_alter_queue(pg_catalog.regclass, pg_catalog.text,
	pg_catalog.int4, pg_catalog.interval, pg_catalog.interval);
CREATE FUNCTION @extschema@.dlsm_alter_queue(
	queue pg_catalog.regclass,
	channel pg_catalog.text DEFAULT NULL,
	max_attempts pg_catalog.int4 DEFAULT NULL,
	retention pg_catalog.interval DEFAULT NULL,
	handler_timeout pg_catalog.interval DEFAULT NULL,
	updates_wait_for_create pg_catalog.bool DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_alter_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_alter_queue(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.interval, pg_catalog.bool) IS
'change a queue''s channel, max_attempts, retention, handler timeout or updates_wait_for_create (NULL: unchanged)';

DROP VIEW @extschema@.dlsm_queue_stats;
DROP FUNCTION @extschema@.dlsm_queue_stats();
CREATE FUNCTION @extschema@.dlsm_queue_stats(
	OUT queue pg_catalog.regclass,
	OUT new pg_catalog.int8,
	OUT in_progress pg_catalog.int8,
	OUT complete pg_catalog.int8,
	OUT error pg_catalog.int8,
	OUT ready pg_catalog.int8,
	OUT delayed pg_catalog.int8,
	OUT waiting_on_create pg_catalog.int8,
	OUT oldest_ready_age pg_catalog.interval,
	OUT expired_leases pg_catalog.int8,
	OUT dead_tuples pg_catalog.int8,
	OUT last_autovacuum pg_catalog.timestamptz,
	OUT oldest_claim_age pg_catalog.interval,
	OUT held_by_limits pg_catalog.int8,
	OUT waiting_for_create_to_arrive pg_catalog.int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlsm_queue_stats'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_queue_stats() IS
'per queue: requests by state, ready, delayed, waiting, claims, expired leases, vacuum';

CREATE VIEW @extschema@.dlsm_queue_stats AS
	SELECT * FROM @extschema@.dlsm_queue_stats();
COMMENT ON VIEW @extschema@.dlsm_queue_stats IS
'one row per queue the caller may read';

REVOKE ALL ON @extschema@.dlsm_queue_stats FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_queue_stats TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_queue_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_queue_stats() TO pg_monitor;

-- Limits per group (1.3): one row per limit; group_key NULL is the
-- queue's default for every group.  Written by dlsm_set_limit only.
CREATE TABLE @extschema@.dlsm_group_limits (
	queue		pg_catalog.regclass NOT NULL
		REFERENCES @extschema@.dlsm_queues ON DELETE CASCADE,
	group_key	pg_catalog.text,
	concurrency pg_catalog.int4,
	rate		pg_catalog.int4,
	per			pg_catalog.interval,
	CONSTRAINT dlsm_group_limits_key UNIQUE NULLS NOT DISTINCT (queue, group_key)
);
COMMENT ON TABLE @extschema@.dlsm_group_limits IS
'concurrency and rate limits of groups of a queue''s requests';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_group_limits', '');
REVOKE ALL ON @extschema@.dlsm_group_limits FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_group_limits TO PUBLIC;

CREATE FUNCTION @extschema@.dlsm_set_limit(
	queue pg_catalog.regclass,
	group_key pg_catalog.text DEFAULT NULL,
	concurrency pg_catalog.int4 DEFAULT NULL,
	rate pg_catalog.int4 DEFAULT NULL,
	per pg_catalog.interval DEFAULT '1 second')
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_set_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_set_limit(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.int4, pg_catalog.interval) IS
'set or remove the concurrency and rate limits of a group (NULL: every group)';

CREATE FUNCTION @extschema@.dlsm_group_state(
	queue pg_catalog.regclass,
	group_key pg_catalog.text,
	OUT in_progress pg_catalog.int8,
	OUT next_claim_at pg_catalog.timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'dlsm_group_state'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_group_state(pg_catalog.regclass, pg_catalog.text) IS
'units of a group in progress, and when its rate limit lets the next claim go';

CREATE VIEW @extschema@.dlsm_limits AS
	SELECT l.queue, l.group_key, l.concurrency, l.rate, l.per,
		   s.in_progress,
		   CASE WHEN l.rate IS NULL OR l.group_key IS NULL THEN NULL
				WHEN s.next_claim_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp()
				THEN 1 ELSE 0 END AS tokens_left,
		   s.next_claim_at
	  FROM @extschema@.dlsm_group_limits l
	  LEFT JOIN LATERAL @extschema@.dlsm_group_state(l.queue, l.group_key) s ON true;
COMMENT ON VIEW @extschema@.dlsm_limits IS
'each limit of a group, its units in progress and whether its rate lets a claim go now';
GRANT SELECT ON @extschema@.dlsm_limits TO PUBLIC;
-- Dead letters

CREATE FUNCTION @extschema@.dlsm_requeue(
	queue pg_catalog.regclass,
	ids pg_catalog.int8[])
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_requeue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_requeue(pg_catalog.regclass, pg_catalog.int8[]) IS
'return requests in error to new, with their attempts reset';

CREATE FUNCTION @extschema@.dlsm_cancel(
	queue pg_catalog.regclass,
	ids pg_catalog.int8[])
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_cancel'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_cancel(pg_catalog.regclass, pg_catalog.int8[]) IS
'settle new requests as error without handing them out';

CREATE FUNCTION @extschema@.dlsm_enqueue_deduplicated()
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'dlsm_enqueue_deduplicated'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue_deduplicated() IS
'whether this session''s last dlsm_enqueue returned an existing request (NULL before the first)';

-- dlsm_worker_status gains state and last_pass_age.
DROP VIEW @extschema@.dlsm_worker_status;
DROP FUNCTION @extschema@.dlsm_worker_status();
CREATE FUNCTION @extschema@.dlsm_worker_status(
	OUT database pg_catalog.name,
	OUT pid pg_catalog.int4,
	OUT started_at pg_catalog.timestamptz,
	OUT last_reap_at pg_catalog.timestamptz,
	OUT reaped pg_catalog.int8,
	OUT handled pg_catalog.int8,
	OUT errors pg_catalog.int8,
	OUT last_error pg_catalog.text,
	OUT deleted pg_catalog.int8,
	OUT wakeups pg_catalog.int8,
	OUT skipped pg_catalog.int8,
	OUT state pg_catalog.text,
	OUT last_pass_age pg_catalog.interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlsm_worker_status'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_worker_status() IS
'the state of dlsm''s background workers';
CREATE VIEW @extschema@.dlsm_worker_status AS
	SELECT * FROM @extschema@.dlsm_worker_status();
COMMENT ON VIEW @extschema@.dlsm_worker_status IS
'one row per database a dlsm worker serves';
REVOKE ALL ON @extschema@.dlsm_worker_status FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_worker_status TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_worker_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_worker_status() TO pg_monitor;
