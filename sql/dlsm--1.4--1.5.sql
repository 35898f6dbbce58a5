/* sql/dlsm--1.4--1.5.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.5'" to load this file. \quit

/*
 * 1.5: the view dlsm_shared_tables shows how full each fixed-size table of
 * dlsm's shared memory is, and how many times it had no room.
 */

-- Shared tables (1.5): how full each fixed-size table of dlsm's shared
-- memory is, and how many times it had no room; for pg_monitor.
CREATE FUNCTION @extschema@.dlsm_shared_tables(
	OUT name pg_catalog.text,
	OUT capacity pg_catalog.int8,
	OUT used pg_catalog.int8,
	OUT times_full pg_catalog.int8)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlsm_shared_tables'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_shared_tables() IS
'how full dlsm''s fixed-size shared tables are';

CREATE VIEW @extschema@.dlsm_shared_tables AS
	SELECT * FROM @extschema@.dlsm_shared_tables();
COMMENT ON VIEW @extschema@.dlsm_shared_tables IS
'one row per fixed-size table of dlsm''s shared memory: capacity, entries in use, times it had no room';

REVOKE ALL ON @extschema@.dlsm_shared_tables FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_shared_tables TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_shared_tables() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_shared_tables() TO pg_monitor;
