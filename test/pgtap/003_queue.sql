-- test/pgtap/003_queue.sql
--
-- The shape of a queue made by dlsm_create_queue (the table of README's
-- dlsm_create_queue): its columns, types, defaults and nullability, its
-- primary key and state check, its partial indexes, its storage settings
-- and the statement trigger that wakes consumers.  What the queue does is
-- pg_regress's business.
--
-- The extension lives in a schema off search_path and the queue in
-- public, so the trigger check also shows that the C code finds
-- dlsm_wake through the extension's catalog entry, never through
-- search_path.

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE SCHEMA dlsm_ext;
CREATE EXTENSION dlsm WITH SCHEMA dlsm_ext;

SELECT plan(56);

-- (PERFORM: a plain SELECT would print the result among the TAP lines)
DO $$ BEGIN PERFORM dlsm_ext.dlsm_create_queue('q'); END $$;

SELECT has_table('public', 'q', 'dlsm_create_queue(''q'') made the table public.q');

-- Columns: exactly those of the table in section 2
SELECT columns_are('public', 'q', ARRAY[
	'id', 'status', 'kind', 'entity', 'payload', 'process_id', 'fence', 'attempts',
	'run_at', 'enqueued_at', 'claimed_at', 'lease_until', 'settled_at', 'detail',
	'group_key', 'dedup_key']);

SELECT col_type_is('public', 'q', c::name, t, 'q.' || c || ' is ' || t)
  FROM (VALUES (1, 'id', 'bigint'),
			   (2, 'status', 'text'),
			   (3, 'kind', 'text'),
			   (4, 'entity', 'text'),
			   (5, 'payload', 'jsonb'),
			   (6, 'process_id', 'uuid'),
			   (7, 'fence', 'bigint'),
			   (8, 'attempts', 'integer'),
			   (9, 'run_at', 'timestamp with time zone'),
			   (10, 'enqueued_at', 'timestamp with time zone'),
			   (11, 'claimed_at', 'timestamp with time zone'),
			   (12, 'lease_until', 'timestamp with time zone'),
			   (13, 'settled_at', 'timestamp with time zone'),
			   (14, 'detail', 'text'),
			   (15, 'group_key', 'text'),
			   (16, 'dedup_key', 'text')) AS v(n, c, t)
 ORDER BY n;

-- A plain INSERT naming only the entity must make a claimable request:
-- the state, kind, counter and times it leaves out are filled in and
-- cannot be NULL (a NULL run_at would never compare <= now).
SELECT col_not_null('public', 'q', c::name, 'q.' || c || ' is NOT NULL')
  FROM unnest('{id,status,kind,entity,attempts,run_at,enqueued_at}'::text[])
	   WITH ORDINALITY AS u(c, n)
 ORDER BY n;
-- Everything a new request does not have yet may be NULL
SELECT col_is_null('public', 'q', c::name, 'q.' || c || ' allows NULL')
  FROM unnest('{payload,process_id,fence,claimed_at,lease_until,settled_at,detail,group_key,dedup_key}'::text[])
	   WITH ORDINALITY AS u(c, n)
 ORDER BY n;
SELECT col_default_is('public', 'q', c::name, d, 'q.' || c || ' defaults to ' || d)
  FROM (VALUES (1, 'status', 'new'),
			   (2, 'kind', 'create'),
			   (3, 'attempts', '0'),
			   (4, 'run_at', 'now()'),
			   (5, 'enqueued_at', 'now()')) AS v(n, c, d)
 ORDER BY n;
SELECT ok((SELECT attidentity IN ('a', 'd') FROM pg_attribute
			WHERE attrelid = to_regclass('public.q') AND attname = 'id'),
		  'q.id is an identity column');
SELECT col_is_pk('public', 'q', '{id}'::name[], 'q is keyed by id');

-- Exactly the four states of section 2
SELECT results_eq($$
	SELECT pg_get_constraintdef(oid) FROM pg_constraint
	 WHERE conrelid = to_regclass('public.q') AND contype = 'c' $$,
	$$ VALUES ('CHECK ((status = ANY (''{new,in-progress,complete,error}''::text[])))') $$,
	'q.status is checked to be new, in-progress, complete or error');

-- Indexes: the primary key and four partial indexes.  Ready rows by id
-- (the claim's scan), one create per entity (the sparse unique index of
-- the article "Implementing a Distributed Lock State Machine"), open rows
-- by entity, and held rows by process id (settle, heartbeat), and rows
-- with a dedup key by key and id (dlsm_enqueue's look-up).
SELECT indexes_are('public', 'q', ARRAY['q_pkey', 'q_ready', 'q_creates', 'q_open', 'q_held',
										'q_group_key_idx', 'q_dedup']);
SELECT is((SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND indexname = i),
		  def, i || ' is ' || what)
  FROM (VALUES
	(1, 'q_ready', 'a partial index of new rows by id',
	 'CREATE INDEX q_ready ON public.q USING btree (id) WHERE (status = ''new''::text)'),
	(2, 'q_creates', 'a unique partial index: one create per entity',
	 'CREATE UNIQUE INDEX q_creates ON public.q USING btree (entity) WHERE (kind = ''create''::text)'),
	(3, 'q_open', 'a partial index of new and in-progress rows by entity',
	 'CREATE INDEX q_open ON public.q USING btree (entity, id) '
	 'WHERE (status = ANY (''{new,in-progress}''::text[]))'),
	(4, 'q_held', 'a partial index of in-progress rows by process id',
	 'CREATE INDEX q_held ON public.q USING btree (process_id) '
	 'WHERE (status = ''in-progress''::text)'),
	(5, 'q_dedup', 'a partial index of rows with a dedup key by key and id',
	 'CREATE INDEX q_dedup ON public.q USING btree (dedup_key, id) '
	 'INCLUDE (status, settled_at) WHERE (dedup_key IS NOT NULL)')) AS v(n, i, what, def)
 ORDER BY n;
SELECT is_empty($$
	SELECT indexrelid::regclass FROM pg_index
	 WHERE indrelid = to_regclass('public.q')
	   AND pg_get_indexdef(indexrelid) ~ '\mlease_until\M' $$,
	'no index of q mentions lease_until, so heartbeats stay HOT');

-- Storage for a high-churn table
SELECT ok((SELECT option_value::int < 100
			 FROM pg_class, pg_options_to_table(reloptions)
			WHERE oid = to_regclass('public.q') AND option_name = 'fillfactor'),
		  'q has a fillfactor below 100, leaving room for HOT updates');
SELECT ok((SELECT count(*) = 2
			 FROM pg_class, pg_options_to_table(reloptions)
			WHERE oid = to_regclass('public.q')
			  AND option_name IN ('autovacuum_vacuum_threshold',
								  'autovacuum_vacuum_scale_factor')),
		  'q has its own autovacuum threshold and scale factor');

-- The statement trigger that wakes consumers, calling the extension's
-- dlsm_wake.  tgtype bits: 1 row, 2 before, 4 insert, 64 instead of.
SELECT has_trigger('public', 'q', 'dlsm_wake'::name, 'q has the trigger dlsm_wake');
SELECT trigger_is('public', 'q', 'dlsm_wake', 'dlsm_ext', 'dlsm_wake');
SELECT ok((SELECT tgtype & 1 = 0 FROM pg_trigger
			WHERE tgrelid = to_regclass('public.q') AND tgname = 'dlsm_wake'),
		  'dlsm_wake fires once per statement, not per row');
SELECT ok((SELECT tgtype & (2 | 64) = 0 FROM pg_trigger
			WHERE tgrelid = to_regclass('public.q') AND tgname = 'dlsm_wake'),
		  'dlsm_wake fires after the statement');
SELECT ok((SELECT tgtype & 4 <> 0 FROM pg_trigger
			WHERE tgrelid = to_regclass('public.q') AND tgname = 'dlsm_wake'),
		  'dlsm_wake fires on INSERT, so a plain INSERT wakes claimers');

SELECT * FROM finish();
ROLLBACK;
