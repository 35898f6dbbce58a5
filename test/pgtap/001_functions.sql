-- test/pgtap/001_functions.sql
--
-- The shape of dlsm's SQL functions, as README's SQL reference gives it:
-- argument types, names and defaults, result types and columns,
-- volatility and language, and that no API function runs as its definer
-- (privileges are the caller's: every statement on a queue runs as the
-- role that called the function).  What the functions do, and the
-- messages they raise, is pg_regress's business: each suite tests one
-- thing, and messages are compared in test/regress/expected/*.out.
--
-- The extension goes into the default schema, public, where CREATE
-- EXTENSION dlsm puts it when no schema is named.

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlsm;

-- pg_get_function_arguments prints interval defaults in IntervalStyle
SET LOCAL intervalstyle = postgres;

SELECT plan(175);

-- The API as README documents it: one row per SQL-callable function.
--   args       argument types, as regtype prints them (pgTAP compares those)
--   returns    result type, as pgTAP prints it ('setof record' for TABLE)
--   arguments  pg_get_function_arguments(): names, types and defaults
CREATE TEMP TABLE api (
	ord			int PRIMARY KEY,
	name		name NOT NULL,
	args		name[] NOT NULL,
	returns		text NOT NULL,
	arguments	text NOT NULL
);
INSERT INTO api VALUES
(1, 'dlsm_create_queue', '{text,text,integer,interval,boolean}', 'regclass',
 'queue text, channel text DEFAULT NULL::text, max_attempts integer DEFAULT 5, '
 'retention interval DEFAULT NULL::interval, '
 'updates_wait_for_create boolean DEFAULT false'),
(2, 'dlsm_drop_queue', '{regclass,boolean}', 'void',
 'queue regclass, drop_table boolean DEFAULT false'),
(3, 'dlsm_enqueue', '{regclass,text,text,jsonb,"timestamp with time zone",text,text,interval}', 'bigint',
 'queue regclass, entity text, kind text DEFAULT ''create''::text, '
 'payload jsonb DEFAULT NULL::jsonb, '
 'run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, '
 'group_key text DEFAULT NULL::text, dedup_key text DEFAULT NULL::text, '
 'dedup_window interval DEFAULT NULL::interval'),
(4, 'dlsm_claim', '{regclass,interval,uuid,bigint,interval,integer}', 'setof record',
 'queue regclass, lease interval DEFAULT NULL::interval, '
 'process_id uuid DEFAULT NULL::uuid, after bigint DEFAULT 0, '
 'wait interval DEFAULT ''00:00:00''::interval, units integer DEFAULT 1'),
(5, 'dlsm_group_updates', '{regclass,text,uuid}', 'bigint',
 'queue regclass, entity text, process_id uuid'),
(6, 'dlsm_settle', '{regclass,uuid,text,text,interval}', 'bigint',
 'queue regclass, process_id uuid, outcome text DEFAULT ''complete''::text, '
 'detail text DEFAULT NULL::text, retry_after interval DEFAULT NULL::interval'),
(7, 'dlsm_settle_many', '{regclass,uuid[],text,text,interval}', 'setof record',
 'queue regclass, process_ids uuid[], outcome text DEFAULT ''complete''::text, '
 'detail text DEFAULT NULL::text, retry_after interval DEFAULT NULL::interval'),
(8, 'dlsm_heartbeat', '{regclass,uuid,interval}', 'timestamp with time zone',
 'queue regclass, process_id uuid, lease interval DEFAULT NULL::interval'),
(9, 'dlsm_reap', '{regclass}', 'bigint',
 'queue regclass'),
(11, 'dlsm_set_handler', '{regclass,regproc}', 'void',
 'queue regclass, handler regproc'),
(12, 'dlsm_try_lock', '{text,interval,interval}', 'bigint',
 'name text, wait interval DEFAULT ''00:00:00''::interval, '
 'lease interval DEFAULT NULL::interval'),
(13, 'dlsm_unlock', '{text,bigint}', 'boolean',
 'name text, fence bigint'),
(14, 'dlsm_refresh_lock', '{text,bigint,interval}', 'timestamp with time zone',
 'name text, fence bigint, lease interval'),
(15, 'dlsm_capture', '{regclass,regclass,text,name,name[],name}', 'void',
 'source regclass, queue regclass, kind text DEFAULT ''update''::text, '
 'entity_column name DEFAULT NULL::name, columns name[] DEFAULT NULL::name[], '
 'group_column name DEFAULT NULL::name'),
(16, 'dlsm_uncapture', '{regclass,regclass}', 'void',
 'source regclass, queue regclass'),
(17, 'dlsm_alter_queue', '{regclass,text,integer,interval,interval,boolean}', 'void',
 'queue regclass, channel text DEFAULT NULL::text, '
 'max_attempts integer DEFAULT NULL::integer, '
 'retention interval DEFAULT NULL::interval, '
 'handler_timeout interval DEFAULT NULL::interval, '
 'updates_wait_for_create boolean DEFAULT NULL::boolean'),
(18, 'dlsm_raise_fence', '{bigint}', 'bigint',
 'at_least bigint');
INSERT INTO api VALUES
(19, 'dlsm_requeue', '{regclass,bigint[]}', 'bigint',
 'queue regclass, ids bigint[]'),
(20, 'dlsm_cancel', '{regclass,bigint[]}', 'bigint',
 'queue regclass, ids bigint[]');
INSERT INTO api VALUES
(10, 'dlsm_register_queue', '{regclass,name,name,name,name,name,text,integer,interval,name,name}', 'regclass',
 'queue regclass, id name DEFAULT ''id''::name, status name DEFAULT ''status''::name, '
 'kind name DEFAULT ''kind''::name, entity name DEFAULT ''entity''::name, '
 'process_id name DEFAULT ''process_id''::name, channel text DEFAULT NULL::text, '
 'max_attempts integer DEFAULT 5, retention interval DEFAULT NULL::interval, '
 'group_key name DEFAULT NULL::name, dedup_key name DEFAULT NULL::name');
INSERT INTO api VALUES
(21, 'dlsm_set_limit', '{regclass,text,integer,integer,interval}', 'void',
 'queue regclass, group_key text DEFAULT NULL::text, '
 'concurrency integer DEFAULT NULL::integer, rate integer DEFAULT NULL::integer, '
 'per interval DEFAULT ''00:00:01''::interval'),
(22, 'dlsm_group_state', '{regclass,text}', 'record',
 'queue regclass, group_key text, OUT in_progress bigint, '
 'OUT next_claim_at timestamp with time zone'),
(23, 'dlsm_enqueue_deduplicated', '{}', 'boolean', '');

-- The function a row names, or NULL when there is none.
CREATE FUNCTION pg_temp.api_oid(name, name[]) RETURNS regprocedure
LANGUAGE sql STABLE
AS $$ SELECT to_regprocedure(format('public.%I(%s)', $1, array_to_string($2, ','))) $$;

-- The extension itself: in public by default, not relocatable.
SELECT has_extension('public', 'dlsm', 'dlsm is installed in the default schema, public');
SELECT is((SELECT extrelocatable FROM pg_extension WHERE extname = 'dlsm'), false,
	'dlsm is not relocatable');

-- 23 API functions x 7 checks = 161 tests
SELECT has_function('public', name, args) FROM api ORDER BY ord;
SELECT function_returns('public', name, args, returns) FROM api ORDER BY ord;
SELECT is(pg_get_function_arguments(pg_temp.api_oid(name, args)), arguments,
		  name || ' has the documented argument names and defaults')
  FROM api ORDER BY ord;
SELECT volatility_is('public', name, args, 'volatile') FROM api ORDER BY ord;
SELECT function_lang_is('public', name, args, 'c') FROM api ORDER BY ord;
SELECT isnt_definer('public', name, args) FROM api ORDER BY ord;
SELECT isnt(obj_description(pg_temp.api_oid(name, args), 'pg_proc'), NULL,
			name || ' has a comment')
  FROM api ORDER BY ord;

-- The result columns of the two RETURNS TABLE functions
SELECT is(pg_get_function_result(pg_temp.api_oid(name, args)),
		  'TABLE(id bigint, kind text, entity text, payload jsonb, process_id uuid, '
		  'fence bigint, lease_until timestamp with time zone)',
		  'dlsm_claim returns its documented columns')
  FROM api WHERE name = 'dlsm_claim';
SELECT is(pg_get_function_result(pg_temp.api_oid(name, args)),
		  'TABLE(process_id uuid, settled bigint)',
		  'dlsm_settle_many returns its documented columns')
  FROM api WHERE name = 'dlsm_settle_many';

-- Every dlsm function writes, so none may run in parallel mode
SELECT is_empty($$
	SELECT p.oid::regprocedure
	  FROM pg_proc p JOIN pg_depend d
		ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
	 WHERE d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm')
	   AND p.proparallel <> 'u'
	$$, 'no dlsm function is marked PARALLEL SAFE or RESTRICTED');

-- The statement trigger every queue carries
SELECT has_function('public', 'dlsm_wake', '{}'::name[]);
SELECT function_returns('public', 'dlsm_wake', '{}'::name[], 'trigger');
SELECT function_lang_is('public', 'dlsm_wake', '{}'::name[], 'c');
SELECT isnt_definer('public', 'dlsm_wake', '{}'::name[]);

-- The event trigger's function: it deletes from the registry, which
-- PUBLIC cannot write, so it is SECURITY DEFINER with a pinned
-- search_path
SELECT has_function('public', 'dlsm_forget_dropped', '{}'::name[]);
SELECT function_returns('public', 'dlsm_forget_dropped', '{}'::name[], 'event_trigger');
SELECT function_lang_is('public', 'dlsm_forget_dropped', '{}'::name[], 'plpgsql');
SELECT is_definer('public', 'dlsm_forget_dropped', '{}'::name[]);
SELECT is((SELECT proconfig FROM pg_proc
			WHERE oid = to_regprocedure('public.dlsm_forget_dropped()')),
		  '{"search_path=pg_catalog, pg_temp"}'::text[],
		  'dlsm_forget_dropped pins search_path to pg_catalog, pg_temp');

SELECT * FROM finish();
ROLLBACK;
