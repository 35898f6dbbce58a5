/* sql/dlsm--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.3'" to load this file. \quit

/*
 * 1.3: groups with limits, deduplication, dead letters.
 *
 * - dlsm_enqueue gains group_key, dedup_key and dedup_window.
 * - dlsm_requeue and dlsm_cancel: dead letters.
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
