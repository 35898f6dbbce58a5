/* sql/dlsm--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm UPDATE TO '1.2'" to load this file. \quit

/*
 * 1.2: what dlsm stores survives a dump and restore, renames and
 * redeploys, and fences never go back.
 *
 * - A queue's handler is kept by its qualified name (text), found again by
 *   name and signature at every run; the handler's role is gone (the
 *   worker acts as the queue's owner); a queue gains handler_timeout.
 * - Captures are kept in dlsm_captures, with column names instead of the
 *   attribute numbers the 1.1 triggers carried as arguments; the triggers
 *   are attached again without arguments.
 * - A lease remembers the role that took it (holder_role).
 * - Fences live in the space of the server's timeline: the sequence is
 *   raised above it, and is no longer dumped.
 * - dlsm_worker_status gains skipped; dlsm_alter_queue, dlsm_raise_fence
 *   and dlsm_fence_start are new.
 */

-- The registry: handler by name, no handler_role, handler_timeout.
ALTER TABLE @extschema@.dlsm_queues ADD COLUMN handler_name pg_catalog.text;
UPDATE @extschema@.dlsm_queues q
   SET handler_name = pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.'
	   OPERATOR(pg_catalog.||) pg_catalog.quote_ident(p.proname)
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
 WHERE p.oid OPERATOR(pg_catalog.=) q.handler::pg_catalog.oid;
ALTER TABLE @extschema@.dlsm_queues DROP COLUMN handler;
ALTER TABLE @extschema@.dlsm_queues DROP COLUMN handler_role;
ALTER TABLE @extschema@.dlsm_queues RENAME COLUMN handler_name TO handler;
ALTER TABLE @extschema@.dlsm_queues ADD COLUMN handler_timeout pg_catalog.interval;

-- Leases remember their role.
ALTER TABLE @extschema@.dlsm_leases ADD COLUMN holder_role pg_catalog.regrole;

-- Change captures: one row per capture trigger dlsm_capture attached.
CREATE TABLE @extschema@.dlsm_captures (
	source		pg_catalog.regclass NOT NULL,
	queue		pg_catalog.regclass NOT NULL,
	trigger_name pg_catalog.name NOT NULL,
	kind		pg_catalog.text NOT NULL,
	entity_columns pg_catalog.name[] NOT NULL,
	columns		pg_catalog.name[] NOT NULL,
	PRIMARY KEY (source, trigger_name)
);
COMMENT ON TABLE @extschema@.dlsm_captures IS
'tables whose changes dlsm enqueues, and into which queues';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_captures', '');
REVOKE ALL ON @extschema@.dlsm_captures FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_captures TO PUBLIC;

-- The 1.1 capture triggers carried (queue, kind, entity attnums, watched
-- attnums) as arguments: record them by name, attach them without.
DO $dlsm$
DECLARE
	t record;
	rest pg_catalog.bytea;
	args pg_catalog.text[];
	i pg_catalog.int4;
	queue pg_catalog.regclass;
BEGIN
	FOR t IN SELECT g.tgrelid, g.tgname, g.tgargs
			   FROM pg_catalog.pg_trigger g
			  WHERE g.tgfoid OPERATOR(pg_catalog.=)
					'@extschema@.dlsm_capture_trigger()'::pg_catalog.regprocedure
				AND g.tgnargs OPERATOR(pg_catalog.=) 4
	LOOP
		args := '{}';
		rest := t.tgargs;
		WHILE pg_catalog.length(rest) OPERATOR(pg_catalog.>) 0 LOOP
			-- POSITION is SQL syntax: it always means pg_catalog's
			i := position('\x00'::pg_catalog.bytea IN rest);
			args := args OPERATOR(pg_catalog.||) pg_catalog.convert_from(
				pg_catalog.substr(rest, 1, i OPERATOR(pg_catalog.-) 1),
				pg_catalog.current_setting('server_encoding'));
			rest := pg_catalog.substr(rest, i OPERATOR(pg_catalog.+) 1);
		END LOOP;
		queue := pg_catalog.to_regclass(args[1]);
		IF queue IS NULL THEN
			RAISE WARNING 'capture trigger % on table % names queue %, which does not exist',
				t.tgname, t.tgrelid::pg_catalog.regclass, args[1]
				USING HINT = 'Writes to the table fail until the trigger is dropped.';
		ELSE
			INSERT INTO @extschema@.dlsm_captures
				(source, queue, trigger_name, kind, entity_columns, columns)
			SELECT t.tgrelid, queue, t.tgname, args[2],
				   ARRAY(SELECT a.attname
						   FROM pg_catalog.unnest(pg_catalog.string_to_array(args[3], ',')::pg_catalog.int2[])
								WITH ORDINALITY AS u(n, o)
						   JOIN pg_catalog.pg_attribute a
							 ON a.attrelid OPERATOR(pg_catalog.=) t.tgrelid
							AND a.attnum OPERATOR(pg_catalog.=) u.n
						  ORDER BY u.o),
				   ARRAY(SELECT a.attname
						   FROM pg_catalog.unnest(pg_catalog.string_to_array(args[4], ',')::pg_catalog.int2[])
								WITH ORDINALITY AS u(n, o)
						   JOIN pg_catalog.pg_attribute a
							 ON a.attrelid OPERATOR(pg_catalog.=) t.tgrelid
							AND a.attnum OPERATOR(pg_catalog.=) u.n
						  ORDER BY u.o);
		END IF;
		EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', t.tgname,
								  t.tgrelid::pg_catalog.regclass);
		EXECUTE pg_catalog.format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %s'
								  ' FOR EACH ROW EXECUTE FUNCTION %s.dlsm_capture_trigger()',
								  t.tgname, t.tgrelid::pg_catalog.regclass,
								  '@extschema@');
	END LOOP;
END
$dlsm$;

-- Forget queues and captures whose table is dropped with a plain DROP
-- TABLE; refuse to drop a queue that a table still captures into.
CREATE OR REPLACE FUNCTION @extschema@.dlsm_forget_dropped()
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
COMMENT ON FUNCTION @extschema@.dlsm_forget_dropped() IS
'event trigger: unregister queues and captures whose table was dropped';

CREATE FUNCTION @extschema@.dlsm_alter_queue(
	queue pg_catalog.regclass,
	channel pg_catalog.text DEFAULT NULL,
	max_attempts pg_catalog.int4 DEFAULT NULL,
	retention pg_catalog.interval DEFAULT NULL,
	handler_timeout pg_catalog.interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'dlsm_alter_queue'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlsm_alter_queue(pg_catalog.regclass, pg_catalog.text, pg_catalog.int4, pg_catalog.interval, pg_catalog.interval) IS
'change a queue''s channel, max_attempts, retention or handler timeout (NULL: unchanged)';

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

-- Fences: raised into the timeline's space, and no longer dumped.
SELECT pg_catalog.setval('@extschema@.dlsm_fence_seq',
	GREATEST(s.last_value, @extschema@.dlsm_fence_start()))
  FROM @extschema@.dlsm_fence_seq s;
UPDATE pg_catalog.pg_extension e
   SET extconfig = x.cfg, extcondition = x.cond
  FROM (SELECT pg_catalog.array_agg(u.c ORDER BY u.o) AS cfg,
			   pg_catalog.array_agg(u.w ORDER BY u.o) AS cond
		  FROM pg_catalog.pg_extension e2,
			   ROWS FROM (pg_catalog.unnest(e2.extconfig),
						  pg_catalog.unnest(e2.extcondition))
				 WITH ORDINALITY AS u(c, w, o)
		 WHERE e2.extname OPERATOR(pg_catalog.=) 'dlsm'
		   AND u.c OPERATOR(pg_catalog.<>)
			   '@extschema@.dlsm_fence_seq'::pg_catalog.regclass::pg_catalog.oid) x
 WHERE e.extname OPERATOR(pg_catalog.=) 'dlsm';

-- dlsm_worker_status gains skipped.
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
	OUT skipped pg_catalog.int8)
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
