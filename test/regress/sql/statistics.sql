-- A queue not analysed yet (issue 34): its plans are made without
-- statistics.  dlsm_queue_stats says so in has_statistics, and a session
-- whose plans the queue outgrew gets a NOTICE, once for the queue, when
-- they are made again (at one run in 16 a plan reads the table's size).
-- Autovacuum is off for the table, so that nothing analyses it meanwhile.
SET client_min_messages = warning;
SELECT dlsm_create_queue('nq');
RESET client_min_messages;
ALTER TABLE nq SET (autovacuum_enabled = off);
SELECT has_statistics FROM dlsm_queue_stats WHERE queue = 'nq'::regclass;

-- the session's plans are made while the queue holds one request
SELECT dlsm_enqueue('nq', 'first', 'job') IS NOT NULL AS enqueued;
SELECT count(dlsm_settle('nq', process_id)) FROM dlsm_claim('nq');

-- the queue grows past 8 MB (a smaller one is not worth a NOTICE); 40
-- claims and settles: one NOTICE
INSERT INTO nq (entity, kind, status, settled_at)
  SELECT 'done' || g, 'job', 'complete', now() FROM generate_series(1, 120000) g;
INSERT INTO nq (entity, kind) SELECT 'open' || g, 'job' FROM generate_series(1, 2000) g;
DO $$
BEGIN
	FOR i IN 1..40 LOOP
		PERFORM dlsm_settle('nq', process_id) FROM dlsm_claim('nq');
	END LOOP;
END
$$;
SELECT count(*) FROM nq WHERE status = 'complete';

-- analysed: the column says so, and no NOTICE follows
ANALYZE nq;
SELECT has_statistics FROM dlsm_queue_stats WHERE queue = 'nq'::regclass;
SELECT count(dlsm_settle('nq', process_id)) FROM dlsm_claim('nq');

SET client_min_messages = warning;
SELECT dlsm_drop_queue('nq', drop_table => true);
RESET client_min_messages;
