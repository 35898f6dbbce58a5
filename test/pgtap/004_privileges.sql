-- test/pgtap/004_privileges.sql
--
-- Who may do what.  dlsm's functions are open to
-- PUBLIC and run with the caller's privileges, so what guards a queue is
-- the privileges on its table: a role without UPDATE on a queue cannot
-- claim from it.  The registry is readable by all and written only by
-- dlsm itself; the fence sequence is usable by all, since claims draw
-- fences from it as the caller.  The messages of these errors are
-- pg_regress's business.

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlsm;

SELECT plan(20);

-- EXECUTE for PUBLIC on the API and on dlsm_wake (creating a queue's
-- trigger needs EXECUTE on it); none on the event trigger's function,
-- which is SECURITY DEFINER and only for the event trigger to call.
SELECT function_privs_are('public', f::name, a::name[], 'public', p::name[],
						  f || ' is ' || CASE WHEN p = '{}' THEN 'not ' ELSE '' END ||
						  'executable by PUBLIC')
  FROM (VALUES
	(1, 'dlsm_create_queue', '{text,text,integer,interval,boolean}', '{EXECUTE}'),
	(2, 'dlsm_drop_queue', '{regclass,boolean}', '{EXECUTE}'),
	(3, 'dlsm_enqueue', '{regclass,text,text,jsonb,timestamp with time zone,text,text,interval}', '{EXECUTE}'),
	(4, 'dlsm_claim', '{regclass,interval,uuid,bigint,interval,integer}', '{EXECUTE}'),
	(5, 'dlsm_group_updates', '{regclass,text,uuid}', '{EXECUTE}'),
	(6, 'dlsm_settle', '{regclass,uuid,text,text,interval}', '{EXECUTE}'),
	(7, 'dlsm_settle_many', '{regclass,uuid[],text,text,interval}', '{EXECUTE}'),
	(8, 'dlsm_heartbeat', '{regclass,uuid,interval}', '{EXECUTE}'),
	(9, 'dlsm_reap', '{regclass}', '{EXECUTE}'),
	(10, 'dlsm_wake', '{}', '{EXECUTE}'),
	(11, 'dlsm_forget_dropped', '{}', '{}'),
	(12, 'dlsm_requeue', '{regclass,bigint[]}', '{EXECUTE}'),
	(13, 'dlsm_cancel', '{regclass,bigint[]}', '{EXECUTE}'),
	(14, 'dlsm_set_limit', '{regclass,text,integer,integer,interval}', '{EXECUTE}'),
	(15, 'dlsm_group_state', '{regclass,text}', '{EXECUTE}')) AS v(n, f, a, p)
 ORDER BY n;

SELECT function_privs_are('public', 'dlsm_register_queue',
						  '{regclass,name,name,name,name,name,text,integer,interval,name,name}',
						  'public', '{EXECUTE}',
						  'dlsm_register_queue is executable by PUBLIC');

SELECT table_privs_are('public', 'dlsm_queues', 'public', '{SELECT}',
					   'PUBLIC may read dlsm_queues, and not write it');
SELECT sequence_privs_are('public', 'dlsm_fence_seq', 'public', '{USAGE}',
						  'PUBLIC has USAGE on dlsm_fence_seq, and nothing else');

-- A consumer role that may read the queue but not update it cannot
-- claim; given UPDATE as well it can.  (SELECT is granted throughout:
-- the claim reads the queue as the caller too, so this isolates UPDATE.)
-- A request is waiting, so the claim goes all the way: it takes a fence
-- from the sequence and updates the row, both as the consumer.  (PERFORM: a plain SELECT would print among the
-- TAP lines.)
DO $$
BEGIN
	PERFORM dlsm_create_queue('q');
	PERFORM dlsm_enqueue('q', 'e1');
END
$$;
CREATE ROLE dlsm_pgtap_consumer;
GRANT SELECT ON q TO dlsm_pgtap_consumer;

SET ROLE dlsm_pgtap_consumer;
SELECT throws_ok($$ SELECT * FROM dlsm_claim('q') $$, '42501', NULL,
				 'without UPDATE on the queue, dlsm_claim fails with 42501');
RESET ROLE;

GRANT UPDATE ON q TO dlsm_pgtap_consumer;
SET ROLE dlsm_pgtap_consumer;
SELECT lives_ok($$ SELECT * FROM dlsm_claim('q') $$,
				'with SELECT and UPDATE on the queue, dlsm_claim works');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
