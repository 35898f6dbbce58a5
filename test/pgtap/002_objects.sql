-- test/pgtap/002_objects.sql
--
-- The objects the extension owns besides its functions: the tables
-- dlsm_queues (the registry), dlsm_captures and dlsm_leases, the fence
-- sequence and the event trigger.  Every object dlsm owns is named dlsm_*,
-- is a member of the extension, and lives in the extension's schema.
--
-- The extension goes into a schema of its own that is not on search_path,
-- so that an object the install script puts anywhere else shows up.

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE SCHEMA dlsm_ext;
CREATE EXTENSION dlsm WITH SCHEMA dlsm_ext;

SELECT plan(34);

-- The extension's members (pg_depend deptype 'e'), as pg_describe_object
-- prints them.
CREATE TEMP VIEW members AS
	SELECT d.classid, d.objid, d.objsubid,
		   pg_describe_object(d.classid, d.objid, d.objsubid) AS member
	  FROM pg_depend d
	 WHERE d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm')
	   AND d.deptype = 'e';

SELECT has_extension('dlsm_ext', 'dlsm', 'dlsm is installed in the schema asked for');

-- Membership: every object of sections 2-4 belongs to the extension.
-- Later sections add members, so this is a subset test; the next one
-- holds every member, present and future, to the naming rule.
SELECT set_has('SELECT member FROM members', $$ VALUES
	('table dlsm_ext.dlsm_queues'),
	('sequence dlsm_ext.dlsm_fence_seq'),
	('event trigger dlsm_forget_dropped'),
	('function dlsm_ext.dlsm_create_queue(text,text,integer,interval,boolean)'),
	('function dlsm_ext.dlsm_drop_queue(regclass,boolean)'),
	('function dlsm_ext.dlsm_enqueue(regclass,text,text,jsonb,timestamp with time zone,text,text,interval)'),
	('function dlsm_ext.dlsm_enqueue_deduplicated()'),
	('function dlsm_ext.dlsm_claim(regclass,interval,uuid,bigint,interval,integer)'),
	('function dlsm_ext.dlsm_group_updates(regclass,text,uuid)'),
	('function dlsm_ext.dlsm_settle(regclass,uuid,text,text,interval)'),
	('function dlsm_ext.dlsm_settle_many(regclass,uuid[],text,text,interval)'),
	('function dlsm_ext.dlsm_heartbeat(regclass,uuid,interval)'),
	('function dlsm_ext.dlsm_reap(regclass)'),
	('function dlsm_ext.dlsm_wake()'),
	('function dlsm_ext.dlsm_forget_dropped()')
	$$, 'the registry, the fence sequence, the event trigger and the functions are members of dlsm');

SELECT is_empty($$
	SELECT m.member
	  FROM members m,
		   pg_identify_object(m.classid, m.objid, m.objsubid) i,
		   pg_identify_object_as_address(m.classid, m.objid, m.objsubid) a
	 WHERE a.object_names[cardinality(a.object_names)] NOT LIKE 'dlsm\_%'
		OR (i.schema IS NOT NULL AND i.schema <> 'dlsm_ext')
	$$, 'every member of dlsm is named dlsm_* and lives in the extension''s schema');

SELECT is_empty($$
	SELECT c.oid::regclass::text FROM pg_class c
	 WHERE c.relname LIKE 'dlsm\_%' AND c.relnamespace <> 'dlsm_ext'::regnamespace
	UNION ALL
	SELECT p.oid::regprocedure::text FROM pg_proc p
	 WHERE p.proname LIKE 'dlsm\_%' AND p.pronamespace <> 'dlsm_ext'::regnamespace
	UNION ALL
	SELECT t.oid::regtype::text FROM pg_type t
	 WHERE t.typname ~ '^_?dlsm_' AND t.typnamespace <> 'dlsm_ext'::regnamespace
	$$, 'nothing named dlsm_* was created outside the extension''s schema');

-- The registry: one row per queue, keyed by the table
SELECT has_table('dlsm_ext', 'dlsm_queues', 'the registry dlsm_queues exists');
SELECT columns_are('dlsm_ext', 'dlsm_queues', ARRAY[
	'queue', 'channel', 'max_attempts', 'retention',
	'id_column', 'status_column', 'kind_column', 'entity_column', 'process_id_column',
	'registered_by', 'registered_at', 'handler', 'handler_timeout',
	'group_column', 'dedup_column', 'updates_wait_for_create']);
SELECT col_type_is('dlsm_ext', 'dlsm_queues', c::name, t,
				   'dlsm_queues.' || c || ' is ' || t)
  FROM (VALUES (1, 'queue', 'regclass'),
			   (2, 'channel', 'text'),
			   (3, 'max_attempts', 'integer'),
			   (4, 'retention', 'interval'),
			   (5, 'id_column', 'name'),
			   (6, 'status_column', 'name'),
			   (7, 'kind_column', 'name'),
			   (8, 'entity_column', 'name'),
			   (9, 'process_id_column', 'name'),
			   (10, 'registered_by', 'regrole'),
			   (11, 'registered_at', 'timestamp with time zone'),
			   (12, 'handler', 'text'),
			   (13, 'handler_timeout', 'interval'),
			   (14, 'group_column', 'name'),
			   (15, 'dedup_column', 'name'),
			   (16, 'updates_wait_for_create', 'boolean')) AS v(n, c, t)
 ORDER BY n;
SELECT col_is_pk('dlsm_ext', 'dlsm_queues', '{queue}'::name[],
				 'dlsm_queues is keyed by queue');

-- The registry, the captures and the leases are dumped with their
-- contents, so that pg_dump and pg_restore keep them; the fence sequence is
-- not (a restored database starts a fence space of its own)
SELECT is((SELECT pg_catalog.array_agg(c::regclass::text ORDER BY c::regclass::text)
			 FROM pg_extension e, unnest(e.extconfig) AS c
			WHERE e.extname = 'dlsm'),
		  '{dlsm_ext.dlsm_captures,dlsm_ext.dlsm_group_limits,dlsm_ext.dlsm_leases,dlsm_ext.dlsm_queues}'::text[],
		  'the registry, the captures, the limits and the leases are extension configuration (pg_dump keeps them)');

-- The captures: one row per capture trigger, columns kept by name
SELECT columns_are('dlsm_ext', 'dlsm_captures', ARRAY[
	'source', 'queue', 'trigger_name', 'kind', 'entity_columns', 'columns',
	'group_column']);
SELECT col_is_pk('dlsm_ext', 'dlsm_captures', '{source,trigger_name}'::name[],
				 'dlsm_captures is keyed by the source and the trigger');
SELECT col_type_is('dlsm_ext', 'dlsm_leases', 'holder_role', 'regrole',
				   'a lease remembers the role that took it');

-- The fence sequence: bigint, strictly increasing, never wraps
SELECT has_sequence('dlsm_ext', 'dlsm_fence_seq', 'the fence sequence dlsm_fence_seq exists');
SELECT results_eq($$
	SELECT seqtypid::regtype::text, seqincrement > 0, seqcycle
	  FROM pg_sequence WHERE seqrelid = to_regclass('dlsm_ext.dlsm_fence_seq') $$,
	$$ VALUES ('bigint', true, false) $$,
	'dlsm_fence_seq is a bigint sequence that only rises and does not cycle');

-- The event trigger that forgets queues dropped with a plain DROP TABLE
SELECT results_eq($$
	SELECT evtevent::text COLLATE "default", evtfoid::regprocedure::text, evtenabled <> 'D', evttags IS NULL
	  FROM pg_event_trigger WHERE evtname = 'dlsm_forget_dropped' $$,
	$$ VALUES ('sql_drop', 'dlsm_ext.dlsm_forget_dropped()', true, true) $$,
	'event trigger dlsm_forget_dropped fires on every sql_drop and calls the extension''s function');

-- The shared tables (1.5): one row per fixed-size table, for pg_monitor
SELECT columns_are('dlsm_ext', 'dlsm_shared_tables', ARRAY[
	'name', 'capacity', 'used', 'times_full']);
SELECT ok(NOT has_table_privilege('public', 'dlsm_ext.dlsm_shared_tables', 'SELECT')
		  AND has_table_privilege('pg_monitor', 'dlsm_ext.dlsm_shared_tables', 'SELECT'),
		  'dlsm_shared_tables is for pg_monitor, not PUBLIC');

-- The signals of slow setups (1.6): whether a queue has statistics, and
-- producers that notify listeners themselves
SELECT columns_are('dlsm_ext', 'dlsm_worker_status', ARRAY[
	'database', 'pid', 'started_at', 'last_reap_at', 'reaped', 'handled',
	'errors', 'last_error', 'deleted', 'wakeups', 'skipped', 'state',
	'last_pass_age', 'producer_notifies', 'crowded_notifies']);
SELECT columns_are('dlsm_ext', 'dlsm_queue_stats', ARRAY[
	'queue', 'new', 'in_progress', 'complete', 'error', 'ready', 'delayed',
	'waiting_on_create', 'oldest_ready_age', 'expired_leases', 'dead_tuples',
	'last_autovacuum', 'oldest_claim_age', 'held_by_limits',
	'waiting_for_create_to_arrive', 'has_statistics']);

SELECT * FROM finish();
ROLLBACK;
