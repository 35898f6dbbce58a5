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

-- row-level security applies to claims: a worker sees only its tenant's rows
ALTER TABLE priv ENABLE ROW LEVEL SECURITY;
CREATE POLICY only_b ON priv TO dlsm_worker USING (entity = 'b');
SET ROLE dlsm_worker;
SELECT entity FROM dlsm_claim('priv', units => 10);
RESET ROLE;
SELECT entity, status FROM priv ORDER BY id;

DROP TABLE priv;
DROP ROLE dlsm_reader;
DROP ROLE dlsm_worker;
DROP ROLE dlsm_producer;
DROP ROLE dlsm_blind;
