-- Privileges are the caller's: nothing in dlsm lends rights on a queue
SELECT dlsm_create_queue('priv');
SELECT dlsm_enqueue('priv', 'a'), dlsm_enqueue('priv', 'b');
CREATE ROLE dlsm_reader;
CREATE ROLE dlsm_worker;
CREATE ROLE dlsm_producer;
CREATE ROLE dlsm_blind;
GRANT SELECT ON priv TO dlsm_reader;
GRANT UPDATE ON priv TO dlsm_blind;
GRANT SELECT, UPDATE ON priv TO dlsm_worker;
GRANT INSERT, SELECT ON priv TO dlsm_producer;

-- without UPDATE a role cannot claim, settle, extend or reap
SET ROLE dlsm_reader;
SELECT * FROM dlsm_claim('priv');
SELECT dlsm_settle('priv', gen_random_uuid());
SELECT dlsm_heartbeat('priv', gen_random_uuid());
SELECT dlsm_reap('priv');
SELECT dlsm_group_updates('priv', 'a', gen_random_uuid());
SELECT dlsm_enqueue('priv', 'c');
-- nor write the registry, nor take the fence sequence forward by setval
INSERT INTO dlsm_queues (queue, channel, max_attempts, registered_by)
	VALUES ('priv', 'x', 1, 'dlsm_reader');
DELETE FROM dlsm_queues;
SELECT setval('dlsm_fence_seq', 1);
-- nor unregister a queue it does not own
SELECT dlsm_drop_queue('priv');
RESET ROLE;
-- UPDATE without SELECT is not enough: a claim reads the queue
SET ROLE dlsm_blind;
SELECT * FROM dlsm_claim('priv');
RESET ROLE;
SELECT status, count(*) FROM priv GROUP BY status;

-- with UPDATE it can
SET ROLE dlsm_worker;
SELECT entity FROM dlsm_claim('priv');
SELECT dlsm_settle('priv', process_id) FROM priv WHERE status = 'in-progress';
SELECT dlsm_enqueue('priv', 'c');
RESET ROLE;

-- a producer with INSERT enqueues but cannot claim
SET ROLE dlsm_producer;
SELECT dlsm_enqueue('priv', 'c') > 0 AS enqueued;
SELECT * FROM dlsm_claim('priv');
RESET ROLE;

-- a queue with row-level security is refused: the exclusion of entities
-- must see every row; the monitoring view shows it without counts
ALTER TABLE priv ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_b ON priv TO dlsm_worker USING (entity = 'b');
SET ROLE dlsm_worker;
SELECT entity FROM dlsm_claim('priv', units => 10);
RESET ROLE;
SELECT dlsm_enqueue('priv', 'd');
SELECT queue, new, in_progress FROM dlsm_queue_stats WHERE queue = 'priv'::regclass;
SELECT entity, status FROM priv ORDER BY id;
-- registering a table with row-level security is refused too
CREATE TABLE rls_table (id bigint GENERATED ALWAYS AS IDENTITY, status text,
	kind text, entity text, process_id uuid);
ALTER TABLE rls_table ENABLE ROW LEVEL SECURITY;
SELECT dlsm_register_queue('rls_table');
DROP TABLE rls_table;
ALTER TABLE priv DISABLE ROW LEVEL SECURITY;
SELECT count(*) AS claimed_again FROM dlsm_claim('priv', units => 10);

-- a producer needs no privilege on dlsm's schema to enqueue by INSERT, nor
-- a writer of a captured table on the queue or its schema
CREATE SCHEMA hidden;
CREATE TABLE hidden.guarded (id int PRIMARY KEY);
SELECT dlsm_create_queue('hidden.hq');
SELECT dlsm_capture('hidden.guarded', 'hidden.hq');
REVOKE ALL ON SCHEMA hidden FROM PUBLIC;
GRANT USAGE ON SCHEMA hidden TO dlsm_producer;
GRANT INSERT ON hidden.guarded TO dlsm_producer;
SET ROLE dlsm_producer;
INSERT INTO hidden.guarded VALUES (1);
RESET ROLE;
SELECT entity, payload->>'op' AS op FROM hidden.hq;
SELECT dlsm_uncapture('hidden.guarded', 'hidden.hq');
DROP SCHEMA hidden CASCADE;

DROP TABLE priv;
DROP ROLE dlsm_reader;
DROP ROLE dlsm_worker;
DROP ROLE dlsm_producer;
DROP ROLE dlsm_blind;
