/* sql/dlsm--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.1'" to load this file. \quit

/*
 * 1.1: dlsm_queue_stats gains oldest_claim_age, how long the oldest
 * in-progress claim of each queue has been held.  A function's result
 * columns cannot be changed in place, so the view and the function are
 * dropped and created again, with the same comments and privileges as a
 * fresh install of 1.1.  The library serves both versions of the function.
 */

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
	OUT oldest_claim_age pg_catalog.interval)
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
