/* sql/dlsm--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.3'" to load this file. \quit

/*
 * 1.3: groups with limits, deduplication, dead letters.
 *
 * - dlsm_enqueue gains group_key, dedup_key and dedup_window.
 * - the queue option updates_wait_for_create (see the block below).
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
