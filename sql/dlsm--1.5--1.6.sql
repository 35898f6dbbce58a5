/* sql/dlsm--1.5--1.6.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.6'" to load this file. \quit

/*
 * 1.6: the monitoring views say where a setup is known to be slow:
 * dlsm_queue_stats gains has_statistics (a queue the planner knows
 * nothing of yet), dlsm_worker_status producer_notifies and
 * crowded_notifies (producers that notify listeners in their own commits,
 * and take turns on PostgreSQL's notify lock).
 */

-- dlsm_queue_stats gains has_statistics.
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
	OUT waiting_for_create_to_arrive pg_catalog.int8,
	OUT has_statistics pg_catalog.bool)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlsm_queue_stats'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_queue_stats() IS
'per queue: requests by state, ready, delayed, waiting, claims, expired leases, vacuum, statistics';
CREATE VIEW @extschema@.dlsm_queue_stats AS
	SELECT * FROM @extschema@.dlsm_queue_stats();
COMMENT ON VIEW @extschema@.dlsm_queue_stats IS
'one row per queue the caller may read';
REVOKE ALL ON @extschema@.dlsm_queue_stats FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_queue_stats TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_queue_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_queue_stats() TO pg_monitor;

-- dlsm_worker_status gains producer_notifies and crowded_notifies.
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
	OUT last_pass_age pg_catalog.interval,
	OUT producer_notifies pg_catalog.int8,
	OUT crowded_notifies pg_catalog.int8)
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
