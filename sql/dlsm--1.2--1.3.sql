/* sql/dlsm--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.3'" to load this file. \quit

/*
 * 1.3: groups with limits, deduplication, dead letters.
 *
 * - dlsm_enqueue gains group_key, dedup_key and dedup_window.
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
