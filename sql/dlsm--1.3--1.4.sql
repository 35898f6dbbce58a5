/* sql/dlsm--1.3--1.4.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.4'" to load this file. \quit

/*
 * 1.4: a capture may write a column of its source table into the queue's
 * group column (dlsm_capture's group_column, kept by name in
 * dlsm_captures.group_column).
 */

ALTER TABLE @extschema@.dlsm_captures ADD COLUMN group_column pg_catalog.name;

DROP FUNCTION @extschema@.dlsm_capture(pg_catalog.regclass, pg_catalog.regclass,
	pg_catalog.text, pg_catalog.name, pg_catalog.name[]);
CREATE FUNCTION @extschema@.dlsm_capture(
	source pg_catalog.regclass,
	queue pg_catalog.regclass,
	kind pg_catalog.text DEFAULT 'update',
	entity_column pg_catalog.name DEFAULT NULL,
	columns pg_catalog.name[] DEFAULT NULL,
	group_column pg_catalog.name DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_capture'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_capture(pg_catalog.regclass, pg_catalog.regclass, pg_catalog.text, pg_catalog.name, pg_catalog.name[], pg_catalog.name) IS
'enqueue every INSERT, UPDATE and DELETE of a table, in the writer''s transaction';
