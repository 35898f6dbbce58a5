-- Bad input: a specific SQLSTATE, a clear message, and nothing changed
\set VERBOSITY sqlstate
SELECT dlsm_create_queue('e');
SELECT dlsm_enqueue('e', 'x') AS x_id \gset
CREATE TABLE plain (id int);
CREATE TEMP TABLE before AS SELECT * FROM e;
CREATE TEMP TABLE registry_before AS SELECT * FROM dlsm_queues;

-- NULL arguments: 22004
SELECT dlsm_create_queue(NULL);
SELECT dlsm_create_queue('e2', max_attempts => NULL);
SELECT dlsm_drop_queue(NULL);
SELECT dlsm_drop_queue('e', NULL);
SELECT dlsm_enqueue(NULL, 'x');
SELECT dlsm_enqueue('e', NULL);
SELECT dlsm_enqueue('e', 'x', NULL);
SELECT * FROM dlsm_claim(NULL);
SELECT * FROM dlsm_claim('e', after => NULL);
SELECT * FROM dlsm_claim('e', wait => NULL);
SELECT * FROM dlsm_claim('e', units => NULL);
SELECT dlsm_group_updates('e', NULL, gen_random_uuid());
SELECT dlsm_group_updates('e', 'x', NULL);
SELECT dlsm_settle('e', NULL);
SELECT dlsm_settle('e', gen_random_uuid(), NULL);
SELECT * FROM dlsm_settle_many('e', NULL);
SELECT * FROM dlsm_settle_many('e', ARRAY[gen_random_uuid(), NULL]);
SELECT dlsm_heartbeat('e', NULL);
SELECT dlsm_reap(NULL);

-- out-of-range arguments: 22023
SELECT dlsm_create_queue('e2', max_attempts => 0);
SELECT dlsm_create_queue('e2', retention => '-1 day');
SELECT dlsm_create_queue('e2', channel => '');
SELECT * FROM dlsm_claim('e', lease => '0');
SELECT * FROM dlsm_claim('e', lease => '-5 minutes');
SELECT * FROM dlsm_claim('e', lease => '1000 years');
-- an infinite interval (17 and later; 15 and 16 have none: 22007)
SELECT * FROM dlsm_claim('e', lease => 'infinity');
SELECT * FROM dlsm_claim('e', wait => '-1 s');
SELECT * FROM dlsm_claim('e', units => 0);
SELECT dlsm_heartbeat('e', gen_random_uuid(), '0');
SELECT dlsm_settle('e', gen_random_uuid(), 'done');
SELECT dlsm_settle('e', gen_random_uuid(), 'complete', retry_after => '1 s');
SELECT dlsm_settle('e', gen_random_uuid(), 'retry', retry_after => '-1 s');
SELECT * FROM dlsm_settle_many('e', ARRAY[gen_random_uuid()], 'finished');
SELECT * FROM dlsm_settle_many('e', ARRAY[[gen_random_uuid()]]);

-- not a queue: 42704 (a plain table, an unregistered one, a dropped one)
SELECT * FROM dlsm_claim('plain');
SELECT dlsm_enqueue('plain', 'x');
SELECT dlsm_settle('plain', gen_random_uuid());
SELECT dlsm_reap('plain');
SELECT dlsm_drop_queue('plain');
SELECT dlsm_create_queue('dropped');
SELECT dlsm_drop_queue('dropped');
SELECT * FROM dlsm_claim('dropped');
SELECT dlsm_drop_queue('dropped');
-- a table that does not exist at all is refused by regclass itself
SELECT * FROM dlsm_claim('no_such_table');

-- a process id that holds nothing: 55000
SELECT dlsm_settle('e', gen_random_uuid());
SELECT dlsm_heartbeat('e', gen_random_uuid());

-- an existing table name cannot become a new queue: 42P07
SELECT dlsm_create_queue('plain');
SELECT dlsm_create_queue('no_such_schema.q');

-- claims need READ COMMITTED: 0A000
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM dlsm_claim('e', wait => '1 s');
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM dlsm_claim('e');
ROLLBACK;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT dlsm_group_updates('e', 'x', gen_random_uuid());
ROLLBACK;
-- a queue cannot be a temporary table: 0A000
SELECT dlsm_create_queue('pg_temp.tq');
-- the trigger function is not callable directly
SELECT dlsm_wake();

-- nothing above changed the queue or the registry
SELECT count(*) AS changed FROM (
	(SELECT * FROM e EXCEPT SELECT * FROM before)
	UNION ALL
	(SELECT * FROM before EXCEPT SELECT * FROM e)) d;
SELECT count(*) AS registry_changed FROM (
	(SELECT * FROM dlsm_queues EXCEPT SELECT * FROM registry_before)
	UNION ALL
	(SELECT * FROM registry_before EXCEPT SELECT * FROM dlsm_queues)) d;

-- the same errors in full, once each, for the messages
\set VERBOSITY default
SELECT dlsm_enqueue('e', NULL);
SELECT * FROM dlsm_claim('e', lease => '0');
SELECT * FROM dlsm_claim('e', lease => '1000 years');
SELECT * FROM dlsm_claim('e', wait => '-1 s');
SELECT * FROM dlsm_claim('e', units => 0);
SELECT dlsm_create_queue('e2', max_attempts => 0);
SELECT dlsm_create_queue('e2', retention => '-1 day');
SELECT dlsm_create_queue('e2', channel => '');
SELECT dlsm_settle('e', gen_random_uuid(), 'done');
SELECT dlsm_settle('e', gen_random_uuid(), 'complete', retry_after => '1 s');
SELECT dlsm_settle('e', gen_random_uuid(), 'retry', retry_after => '-1 s');
SELECT * FROM dlsm_settle_many('e', ARRAY[gen_random_uuid(), NULL]);
SELECT * FROM dlsm_settle_many('e', ARRAY[[gen_random_uuid()]]);
SELECT * FROM dlsm_claim('plain');
SELECT dlsm_settle('e', '55555555-5555-5555-5555-555555555555');
SELECT dlsm_heartbeat('e', '55555555-5555-5555-5555-555555555555');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT * FROM dlsm_claim('e');
ROLLBACK;
SELECT dlsm_create_queue('pg_temp.tq');
SELECT dlsm_wake();
SET dlsm.no_such_setting = 1;
SET dlsm.default_lease = 0;

-- a stats function declared with columns the library does not serve
CREATE FUNCTION wrong_stats(OUT queue regclass, OUT new int8)
RETURNS SETOF record AS 'dlsm', 'dlsm_queue_stats' LANGUAGE C;
SELECT * FROM wrong_stats();
DROP FUNCTION wrong_stats();

-- an OID that names no table (as one dropped by another session meanwhile
-- would): 42P01 for the table the call works on, its OID in messages that
-- only name it; never "(null)"
SELECT dlsm_register_queue(4242424::regclass);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_capture(4242424::regclass, 'e');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_uncapture(4242424::regclass, 'e');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_uncapture('pg_class', 4242424::regclass);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_set_handler('e', 4242424::regproc);
\echo :LAST_ERROR_SQLSTATE

-- the extension stays where it was created: its C code found its schema
-- once, and its kept statements name it
ALTER EXTENSION dlsm SET SCHEMA pg_catalog;
