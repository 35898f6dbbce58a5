-- Handlers and the monitoring views, as SQL sees them (the worker running
-- them is tested by the TAP suite)
SELECT dlsm_create_queue('hq');
CREATE FUNCTION good_handler(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS 'SELECT';
CREATE FUNCTION bad_handler(entity text, kind text)
RETURNS void LANGUAGE sql AS 'SELECT';

-- the handler is kept by its qualified name
SELECT dlsm_set_handler('hq', 'good_handler');
SELECT queue, handler, handler_timeout FROM dlsm_queues WHERE queue = 'hq'::regclass;
SELECT dlsm_set_handler('hq', NULL);
SELECT queue, handler, handler_timeout FROM dlsm_queues WHERE queue = 'hq'::regclass;
-- an overloaded name is named by its signature
CREATE FUNCTION good_handler(n int) RETURNS void LANGUAGE sql AS 'SELECT';
SELECT dlsm_set_handler('hq', 'good_handler');
SELECT dlsm_set_handler('hq',
	'good_handler(text, text, bigint[], jsonb[])'::regprocedure::oid::regproc);
SELECT handler FROM dlsm_queues WHERE queue = 'hq'::regclass;
SELECT dlsm_set_handler('hq', NULL);
DROP FUNCTION good_handler(int);

-- dlsm_alter_queue: NULL leaves a setting as it is; a zero retention clears it
SELECT dlsm_alter_queue('hq', channel => 'hq_work', max_attempts => 3,
	retention => '7 days', handler_timeout => '2 s');
SELECT channel, max_attempts, retention, handler_timeout
  FROM dlsm_queues WHERE queue = 'hq'::regclass;
SELECT dlsm_alter_queue('hq', retention => '0');
SELECT channel, max_attempts, retention, handler_timeout
  FROM dlsm_queues WHERE queue = 'hq'::regclass;
SELECT dlsm_alter_queue('hq', max_attempts => 0);
SELECT dlsm_alter_queue('hq', retention => '-1 day');
SELECT dlsm_alter_queue('hq', retention => '-300000 years');
SELECT dlsm_alter_queue('hq', handler_timeout => '25 days');
-- a zero handler_timeout clears it: dlsm.handler_timeout applies again
SELECT dlsm_alter_queue('hq', handler_timeout => '0');
SELECT handler_timeout IS NULL AS cleared FROM dlsm_queues WHERE queue = 'hq'::regclass;
SELECT dlsm_alter_queue('hq', channel => '');
SELECT dlsm_alter_queue('hq', channel => 'hq');

-- errors: a wrong signature, a table that is not a queue, not the owner
SELECT dlsm_set_handler('hq', 'bad_handler');
SELECT dlsm_set_handler(NULL, 'good_handler');
CREATE TABLE not_a_queue (id int);
SELECT dlsm_set_handler('not_a_queue', 'good_handler');
CREATE ROLE dlsm_stranger;
GRANT SELECT, UPDATE ON hq TO dlsm_stranger;
SET ROLE dlsm_stranger;
SELECT dlsm_set_handler('hq', 'good_handler');
SELECT dlsm_alter_queue('hq', max_attempts => 2);
RESET ROLE;
-- a handler the role may not execute
REVOKE EXECUTE ON FUNCTION good_handler(text, text, bigint[], jsonb[]) FROM PUBLIC;
ALTER TABLE hq OWNER TO dlsm_stranger;
SET ROLE dlsm_stranger;
SELECT dlsm_set_handler('hq', 'good_handler');
RESET ROLE;
ALTER TABLE hq OWNER TO CURRENT_USER;
SELECT handler FROM dlsm_queues WHERE queue = 'hq'::regclass;

-- dlsm_queue_stats: counts by state, ready, delayed, waiting on a create
INSERT INTO hq (entity, kind) VALUES ('s', 'create'), ('s', 'update'), ('t', 'create');
INSERT INTO hq (entity, kind, run_at) VALUES ('u', 'create', now() + interval '1 day');
SELECT count(*) FROM dlsm_claim('hq', lease => '1 ms');
SELECT pg_sleep(0.01);
SELECT queue, new, in_progress, complete, error, ready, delayed,
	   waiting_on_create, oldest_ready_age IS NOT NULL AS has_oldest,
	   expired_leases, oldest_claim_age >= interval '10 ms' AS claim_aged
  FROM dlsm_queue_stats WHERE queue = 'hq'::regclass;
-- monitoring is for pg_monitor
SET ROLE dlsm_stranger;
SELECT count(*) FROM dlsm_queue_stats;
RESET ROLE;
GRANT pg_monitor TO dlsm_stranger;
REVOKE ALL ON hq FROM dlsm_stranger;
SET ROLE dlsm_stranger;
SELECT queue, new, in_progress FROM dlsm_queue_stats WHERE queue = 'hq'::regclass;
-- pg_monitor reads dlsm_worker_status too: one row per database, each once
SELECT has_table_privilege('dlsm_worker_status', 'SELECT') AS readable,
	   count(*) - count(DISTINCT database) AS shown_twice
  FROM dlsm_worker_status;
RESET ROLE;

DROP TABLE hq;
DROP TABLE not_a_queue;
DROP FUNCTION good_handler(text, text, bigint[], jsonb[]);
DROP FUNCTION bad_handler(text, text);
DROP ROLE dlsm_stranger;
