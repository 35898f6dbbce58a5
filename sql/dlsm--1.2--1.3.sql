/* sql/dlsm--1.2--1.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.3'" to load this file. \quit

/*
 * 1.3: groups with limits, deduplication, dead letters.
 *
 * - dlsm_enqueue gains group_key, dedup_key and dedup_window.
 * - Deduplication: the registry's dedup_column names a queue's dedup key
 *   column, dlsm_register_queue's dedup_key sets it for an adopted table,
 *   dlsm_enqueue_deduplicated() tells whether a row was added.  Queues
 *   created before keep their table and have no dedup column (README,
 *   "Deduplication", says how to give them one).
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
	dedup_key pg_catalog.name DEFAULT NULL)
RETURNS pg_catalog.regclass
AS 'MODULE_PATHNAME', 'dlsm_register_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_register_queue(pg_catalog.regclass, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.name, pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.name) IS
'adopt an existing table as a queue, through a column map';

CREATE FUNCTION @extschema@.dlsm_enqueue_deduplicated()
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'dlsm_enqueue_deduplicated'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue_deduplicated() IS
'whether this session''s last dlsm_enqueue returned an existing request (NULL before the first)';
