/* sql/dlsm--1.6.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION dlsm" to load this file. \quit

/*
 * Everything below is qualified with @extschema@ or pg_catalog, operators
 * included, so that objects planted in other schemas are never picked up.
 */

-- Fences of claims and lock grants come from this one sequence.  It is
-- not dumped: a restored database starts it afresh (see dlsm_fence_start).
CREATE SEQUENCE @extschema@.dlsm_fence_seq AS bigint;
GRANT USAGE ON SEQUENCE @extschema@.dlsm_fence_seq TO PUBLIC;

-- The registry: one row per table dlsm serves as a queue.
CREATE TABLE @extschema@.dlsm_queues (
	queue		pg_catalog.regclass PRIMARY KEY,
	channel		pg_catalog.text NOT NULL,
	max_attempts pg_catalog.int4 NOT NULL
		CHECK (max_attempts OPERATOR(pg_catalog.>) 0),
	retention	pg_catalog.interval,
	id_column	pg_catalog.name NOT NULL DEFAULT 'id',
	status_column pg_catalog.name NOT NULL DEFAULT 'status',
	kind_column	pg_catalog.name NOT NULL DEFAULT 'kind',
	entity_column pg_catalog.name NOT NULL DEFAULT 'entity',
	process_id_column pg_catalog.name NOT NULL DEFAULT 'process_id',
	registered_by pg_catalog.regrole NOT NULL,
	registered_at pg_catalog.timestamptz NOT NULL
		DEFAULT pg_catalog.now(),
	handler		pg_catalog.text,
	handler_timeout pg_catalog.interval,
	group_column pg_catalog.name,
	dedup_column pg_catalog.name,
	updates_wait_for_create pg_catalog.bool NOT NULL DEFAULT false
);
COMMENT ON TABLE @extschema@.dlsm_queues IS
'tables registered with dlsm as queues';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_queues', '');
-- Anyone may read the registry; it is written by dlsm's C functions only.
REVOKE ALL ON @extschema@.dlsm_queues FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_queues TO PUBLIC;

-- Named locks held with a lease: one row per name, written by dlsm only.
CREATE TABLE @extschema@.dlsm_leases (
	name		pg_catalog.text PRIMARY KEY,
	fence		pg_catalog.int8 NOT NULL,
	holder		pg_catalog.text,
	acquired_at pg_catalog.timestamptz NOT NULL,
	lease_until pg_catalog.timestamptz NOT NULL,
	holder_role pg_catalog.regrole
);
COMMENT ON TABLE @extschema@.dlsm_leases IS
'named locks held with a lease';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_leases', '');
REVOKE ALL ON @extschema@.dlsm_leases FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_leases TO PUBLIC;

-- Change captures: one row per capture trigger dlsm_capture attached.
CREATE TABLE @extschema@.dlsm_captures (
	source		pg_catalog.regclass NOT NULL,
	queue		pg_catalog.regclass NOT NULL,
	trigger_name pg_catalog.name NOT NULL,
	kind		pg_catalog.text NOT NULL,
	entity_columns pg_catalog.name[] NOT NULL,
	columns		pg_catalog.name[] NOT NULL,
	group_column pg_catalog.name,
	PRIMARY KEY (source, trigger_name)
);
COMMENT ON TABLE @extschema@.dlsm_captures IS
'tables whose changes dlsm enqueues, and into which queues';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_captures', '');
REVOKE ALL ON @extschema@.dlsm_captures FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_captures TO PUBLIC;

-- Queue administration

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

CREATE FUNCTION @extschema@.dlsm_drop_queue(
	queue pg_catalog.regclass,
	drop_table pg_catalog.bool DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_drop_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_drop_queue(pg_catalog.regclass, pg_catalog.bool) IS
'unregister a queue, and drop its table when drop_table is true';

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

-- Producing and consuming

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

CREATE FUNCTION @extschema@.dlsm_enqueue_deduplicated()
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'dlsm_enqueue_deduplicated'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue_deduplicated() IS
'whether this session''s last dlsm_enqueue returned an existing request (NULL before the first)';

CREATE FUNCTION @extschema@.dlsm_claim(
	queue pg_catalog.regclass,
	lease pg_catalog.interval DEFAULT NULL,
	process_id pg_catalog.uuid DEFAULT NULL,
	after pg_catalog.int8 DEFAULT 0,
	wait pg_catalog.interval DEFAULT '0',
	units pg_catalog.int4 DEFAULT 1)
RETURNS TABLE (
	id pg_catalog.int8,
	kind pg_catalog.text,
	entity pg_catalog.text,
	payload pg_catalog.jsonb,
	process_id pg_catalog.uuid,
	fence pg_catalog.int8,
	lease_until pg_catalog.timestamptz)
AS 'MODULE_PATHNAME', 'dlsm_claim'
LANGUAGE C VOLATILE PARALLEL UNSAFE ROWS 1;
COMMENT ON FUNCTION @extschema@.dlsm_claim(pg_catalog.regclass, pg_catalog.interval, pg_catalog.uuid, pg_catalog.int8, pg_catalog.interval, pg_catalog.int4) IS
'claim the next units of work of a queue';

CREATE FUNCTION @extschema@.dlsm_group_updates(
	queue pg_catalog.regclass,
	entity pg_catalog.text,
	process_id pg_catalog.uuid)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_group_updates'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_group_updates(pg_catalog.regclass, pg_catalog.text, pg_catalog.uuid) IS
'move every open update request of an entity to in-progress under one process id';

CREATE FUNCTION @extschema@.dlsm_settle(
	queue pg_catalog.regclass,
	process_id pg_catalog.uuid,
	outcome pg_catalog.text DEFAULT 'complete',
	detail pg_catalog.text DEFAULT NULL,
	retry_after pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_settle'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_settle(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'settle every request a process id holds as complete, error or retry';

CREATE FUNCTION @extschema@.dlsm_settle_many(
	queue pg_catalog.regclass,
	process_ids pg_catalog.uuid[],
	outcome pg_catalog.text DEFAULT 'complete',
	detail pg_catalog.text DEFAULT NULL,
	retry_after pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
	process_id pg_catalog.uuid,
	settled pg_catalog.int8)
AS 'MODULE_PATHNAME', 'dlsm_settle_many'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_settle_many(pg_catalog.regclass, pg_catalog.uuid[], pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'settle the requests of many process ids in one statement';

CREATE FUNCTION @extschema@.dlsm_heartbeat(
	queue pg_catalog.regclass,
	process_id pg_catalog.uuid,
	lease pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'dlsm_heartbeat'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_heartbeat(pg_catalog.regclass, pg_catalog.uuid, pg_catalog.interval) IS
'extend the lease of a claim';

CREATE FUNCTION @extschema@.dlsm_reap(
	queue pg_catalog.regclass)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_reap'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_reap(pg_catalog.regclass) IS
'return requests whose lease expired to new, or to error when attempts are spent';

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

-- The background worker as a consumer

CREATE FUNCTION @extschema@.dlsm_set_handler(
	queue pg_catalog.regclass,
	handler pg_catalog.regproc)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_set_handler'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_set_handler(pg_catalog.regclass, pg_catalog.regproc) IS
'make the worker run a function for every unit of a queue, or stop (NULL)';

-- Monitoring

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

CREATE FUNCTION @extschema@.dlsm_launcher_wake()
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_launcher_wake'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_launcher_wake() IS
'ask the launcher to start the workers of databases that gained dlsm';

-- Named locks and fences

CREATE FUNCTION @extschema@.dlsm_try_lock(
	name pg_catalog.text,
	wait pg_catalog.interval DEFAULT '0',
	lease pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_try_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_try_lock(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'take a named lock for the transaction or with a lease, waiting in line up to wait; a fence or NULL';

CREATE FUNCTION @extschema@.dlsm_unlock(
	name pg_catalog.text,
	fence pg_catalog.int8)
RETURNS pg_catalog.bool
AS 'MODULE_PATHNAME', 'dlsm_unlock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_unlock(pg_catalog.text, pg_catalog.int8) IS
'release a named lock held with the given fence';

CREATE FUNCTION @extschema@.dlsm_refresh_lock(
	name pg_catalog.text,
	fence pg_catalog.int8,
	lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
AS 'MODULE_PATHNAME', 'dlsm_refresh_lock'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_refresh_lock(pg_catalog.text, pg_catalog.int8, pg_catalog.interval) IS
'extend the lease of a named lock';

CREATE FUNCTION @extschema@.dlsm_raise_fence(
	at_least pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_raise_fence'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_raise_fence(pg_catalog.int8) IS
'make every later fence of this database exceed at_least';
REVOKE ALL ON FUNCTION @extschema@.dlsm_raise_fence(pg_catalog.int8) FROM PUBLIC;

CREATE FUNCTION @extschema@.dlsm_fence_start()
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlsm_fence_start'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_fence_start() IS
'where a new fence sequence starts: above every fence this server handed out';
REVOKE ALL ON FUNCTION @extschema@.dlsm_fence_start() FROM PUBLIC;

CREATE FUNCTION @extschema@.dlsm_locks(
	OUT name pg_catalog.text,
	OUT scope pg_catalog.text,
	OUT fence pg_catalog.int8,
	OUT holder pg_catalog.text,
	OUT acquired_at pg_catalog.timestamptz,
	OUT lease_until pg_catalog.timestamptz,
	OUT waiters pg_catalog.int4,
	OUT "position" pg_catalog.int4,
	OUT age pg_catalog.interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'dlsm_locks'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_locks() IS
'the named locks of this database: leases, holders and waiters in line';

CREATE VIEW @extschema@.dlsm_locks AS
	SELECT * FROM @extschema@.dlsm_locks();
COMMENT ON VIEW @extschema@.dlsm_locks IS
'named locks: one row per lease, transaction holder and waiter (position in line)';

-- Who blocks whom, across every kind of heavyweight lock (named locks
-- included): seed 004's diagnostic query.
CREATE VIEW @extschema@.dlsm_lock_waits AS
	SELECT w.pid AS blocked_pid,
		   w.usename AS blocked_user,
		   w.wait_event_type AS blocked_wait_type,
		   w.wait_event AS blocked_wait_event,
		   w.query AS blocked_query,
		   pg_catalog.now() OPERATOR(pg_catalog.-) w.query_start AS blocked_for,
		   h.pid AS blocking_pid,
		   h.usename AS blocking_user,
		   h.state AS blocking_state,
		   h.query AS blocking_query,
		   pg_catalog.now() OPERATOR(pg_catalog.-) h.xact_start AS blocking_xact_age
	  FROM pg_catalog.pg_stat_activity w
	  CROSS JOIN LATERAL pg_catalog.unnest(pg_catalog.pg_blocking_pids(w.pid)) AS b(pid)
	  JOIN pg_catalog.pg_stat_activity h ON h.pid OPERATOR(pg_catalog.=) b.pid;
COMMENT ON VIEW @extschema@.dlsm_lock_waits IS
'who blocks whom right now, with queries and durations';

-- Change capture

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

CREATE FUNCTION @extschema@.dlsm_uncapture(
	source pg_catalog.regclass,
	queue pg_catalog.regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_uncapture'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_uncapture(pg_catalog.regclass, pg_catalog.regclass) IS
'stop capturing a table''s changes into a queue';

CREATE FUNCTION @extschema@.dlsm_capture_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'dlsm_capture_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_capture_trigger() IS
'trigger: enqueue a row change (attached by dlsm_capture)';

-- Statement trigger on every queue: wakes waiting claimers at commit.
CREATE FUNCTION @extschema@.dlsm_wake()
RETURNS trigger
AS 'MODULE_PATHNAME', 'dlsm_wake'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_wake() IS
'trigger: notify a queue''s channel and wake waiting claimers at commit';

-- Forget queues and captures whose table is dropped with a plain DROP
-- TABLE; refuse to drop a queue that a table still captures into.
CREATE FUNCTION @extschema@.dlsm_forget_dropped()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	c record;
BEGIN
	FOR c IN SELECT k.source, d.object_identity AS queue
			   FROM @extschema@.dlsm_captures k
			   JOIN pg_catalog.pg_event_trigger_dropped_objects() d
				 ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
				AND d.objsubid OPERATOR(pg_catalog.=) 0
				AND d.objid OPERATOR(pg_catalog.=) k.queue::pg_catalog.oid
			  WHERE k.source::pg_catalog.oid OPERATOR(pg_catalog.<>) ALL (
					SELECT e.objid FROM pg_catalog.pg_event_trigger_dropped_objects() e
					 WHERE e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
					   AND e.objsubid OPERATOR(pg_catalog.=) 0)
	LOOP
		RAISE EXCEPTION 'cannot drop queue % because table % is captured into it', c.queue, c.source
			USING ERRCODE = 'dependent_objects_still_exist',
				  HINT = 'Remove the capture with dlsm_uncapture() first.';
	END LOOP;
	DELETE FROM @extschema@.dlsm_captures k
	 USING pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0
	   AND d.objid OPERATOR(pg_catalog.=) k.source::pg_catalog.oid;
	DELETE FROM @extschema@.dlsm_queues q
	 USING pg_catalog.pg_event_trigger_dropped_objects() d
	 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
	   AND d.objsubid OPERATOR(pg_catalog.=) 0
	   AND d.objid OPERATOR(pg_catalog.=) q.queue::pg_catalog.oid;
END
$$;
REVOKE ALL ON FUNCTION @extschema@.dlsm_forget_dropped() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlsm_forget_dropped() IS
'event trigger: unregister queues and captures whose table was dropped';

CREATE EVENT TRIGGER dlsm_forget_dropped ON sql_drop
	EXECUTE FUNCTION @extschema@.dlsm_forget_dropped();

-- Locks are everyone's, as pg_locks is
GRANT SELECT ON @extschema@.dlsm_locks, @extschema@.dlsm_lock_waits TO PUBLIC;

-- Monitoring is for pg_monitor (and superusers)
REVOKE ALL ON @extschema@.dlsm_worker_status, @extschema@.dlsm_queue_stats FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_worker_status, @extschema@.dlsm_queue_stats TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_worker_status(), @extschema@.dlsm_queue_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_worker_status(), @extschema@.dlsm_queue_stats() TO pg_monitor;
REVOKE ALL ON FUNCTION @extschema@.dlsm_launcher_wake() FROM PUBLIC;

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

-- Fences start above every fence this server handed out before, also by
-- an earlier installation of dlsm in this database.
SELECT pg_catalog.setval('@extschema@.dlsm_fence_seq', @extschema@.dlsm_fence_start());

-- This database has dlsm now: its worker need not wait for the next look.
SELECT @extschema@.dlsm_launcher_wake();
