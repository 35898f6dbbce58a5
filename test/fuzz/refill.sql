-- test/fuzz/refill.sql: rows in every state in the fuzzed queues, run by
-- test/fuzz/sqlsmith.sh as a superuser before each seed, with :round set
-- (entities are new each round: one create per entity).  What the fuzzer
-- dropped of its own (fz.mine, its handler, its limit) is made again.
-- Errors stop nothing: the fuzzer may have left rows that refuse a step.

-- fuzzer's own queue, made again when the fuzzer dropped it
SET ROLE fuzzer;
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM dlsm_queues WHERE queue::text IN ('fz.mine', 'mine')) THEN
		DROP TABLE IF EXISTS fz.mine;
		PERFORM dlsm_create_queue('fz.mine', updates_wait_for_create => true);
	END IF;
END
$$;
CREATE OR REPLACE FUNCTION fz.handle_mine(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF kind = 'update' AND ids[1] % 3 = 0 THEN
		RAISE EXCEPTION 'fuzz handler of fz.mine refuses %', ids;
	END IF;
END
$$;
SELECT dlsm_set_handler('fz.mine', 'fz.handle_mine');
SELECT dlsm_set_limit('fz.mine', concurrency => 2);
-- a named lock with a lease, one per round
SELECT dlsm_try_lock('fuzzer-lease-' || :round, lease => '1 hour');
-- rows: creates, updates waiting for them, delayed ones
SELECT dlsm_enqueue('fz.mine', 'm' || :round || '-' || g, 'create', jsonb_build_object('g', g))
  FROM generate_series(1, 10) g;
SELECT dlsm_enqueue('fz.mine', 'm' || :round || '-' || g, 'update', NULL, now() + '1 hour')
  FROM generate_series(1, 5) g;
SELECT dlsm_enqueue('fz.mine', 'm' || :round || '-w' || g, 'update')
  FROM generate_series(1, 3) g;
RESET ROLE;

SET ROLE fuzzowner;
SELECT dlsm_try_lock('owner-lease-' || :round, lease => '1 hour');
SELECT dlsm_try_lock('owner-short-' || :round, lease => '2 seconds');

-- fq.jobs: the worker's; a capture feeds it too
SELECT dlsm_enqueue('fq.jobs', 'j' || :round || '-' || g, CASE WHEN g % 3 = 0 THEN 'update' ELSE 'create' END,
	jsonb_build_object('g', g), CASE WHEN g % 5 = 0 THEN now() + '1 hour' END)
  FROM generate_series(1, 20) g;
INSERT INTO fq.accounts
	SELECT :round * 100 + g, 'acct-' || g, g * 10, 'r' || (g % 3) FROM generate_series(1, 10) g
	ON CONFLICT DO NOTHING;
UPDATE fq.accounts SET balance = balance + 1 WHERE id % 2 = 0;
DELETE FROM fq.accounts WHERE id % 7 = 0;

-- fq.tasks: no handler, so rows stay in every state: new (some in limited
-- groups, some delayed, some with dedup keys), in progress (long and short
-- leases), complete, error, retried, cancelled, requeued
SELECT dlsm_enqueue('fq.tasks', 't' || :round || '-' || g, 'create', jsonb_build_object('g', g),
	CASE WHEN g % 6 = 0 THEN now() + '1 hour' END,
	'tenant-' || chr(97 + g % 4),
	CASE WHEN g % 5 = 0 THEN 'tok-' || :round || '-' || g END,
	CASE WHEN g % 10 = 0 THEN interval '1 hour' END)
  FROM generate_series(1, 40) g;
SELECT dlsm_enqueue('fq.tasks', 't' || :round || '-' || g, 'update', NULL, NULL, 'tenant-' || chr(97 + g % 4))
  FROM generate_series(1, 10) g;
INSERT INTO fq.ledger
	SELECT :round * 100 + g, 'acct-' || (g % 4), g, 'tenant-' || chr(97 + g % 3) FROM generate_series(1, 8) g
	ON CONFLICT DO NOTHING;
SELECT count(*) AS claimed_long FROM dlsm_claim('fq.tasks', lease => '1 hour', units => 3);
SELECT count(*) AS claimed_short FROM dlsm_claim('fq.tasks', lease => '1 second', units => 2);
DO $$
DECLARE
	r record;
	n int := 0;
BEGIN
	FOR r IN SELECT DISTINCT process_id FROM dlsm_claim('fq.tasks', lease => '10 minutes', units => 8) LOOP
		n := n + 1;
		IF n % 3 = 0 THEN
			PERFORM dlsm_settle('fq.tasks', r.process_id, 'error', 'fuzz refill: failed');
		ELSIF n % 3 = 1 THEN
			PERFORM dlsm_settle('fq.tasks', r.process_id, 'complete');
		ELSE
			PERFORM dlsm_settle('fq.tasks', r.process_id, 'retry', 'fuzz refill: later', '1 hour');
		END IF;
	END LOOP;
END
$$;
SELECT dlsm_cancel('fq.tasks', ARRAY(SELECT task_id FROM fq.tasks WHERE state = 'new' ORDER BY task_id DESC LIMIT 2));
SELECT dlsm_requeue('fq.tasks', ARRAY(SELECT task_id FROM fq.tasks WHERE state = 'error' ORDER BY task_id LIMIT 1));
RESET ROLE;

-- the knobs (setup.sql), from what the queues and locks hold now
TRUNCATE fq.knobs;
WITH v AS (
	SELECT (SELECT array_agg(queue ORDER BY queue) FROM dlsm_queues)
			|| '{fq.accounts,fq.ledger,fq.knobs}'::regclass[] AS queues,
		   (SELECT array_agg(p) FROM (
				SELECT process_id FROM fq.jobs WHERE status = 'in-progress'
				UNION ALL SELECT owner_pid::uuid FROM fq.tasks
				 WHERE state = 'in-progress' AND owner_pid ~ '^[0-9a-f-]{36}$'
				UNION ALL SELECT process_id FROM fz.mine WHERE status = 'in-progress'
				UNION ALL SELECT gen_random_uuid()) x(p)) AS pids,
		   (SELECT array_agg(i) FROM (
				SELECT id FROM fq.jobs UNION ALL SELECT task_id FROM fq.tasks
				UNION ALL SELECT id FROM fz.mine UNION ALL SELECT -1) x(i)) AS ids,
		   (SELECT array_agg(e) FROM (
				SELECT entity FROM fq.jobs UNION ALL SELECT subject FROM fq.tasks
				UNION ALL SELECT entity FROM fz.mine UNION ALL SELECT '') x(e)) AS entities,
		   (SELECT array_agg(name) || '{fuzz-free}'::text[] FROM dlsm_leases) AS locks,
		   (SELECT array_agg(fence) || '{0}'::int8[] FROM dlsm_leases) AS fences,
		   '{create,update,delete,ledger,""}'::text[] AS kinds,
		   '{complete,error,retry,bogus}'::text[] AS outcomes,
		   '{0,"1 second","2 seconds","1 hour","-1 day","100 years"}'::interval[] AS leases,
		   '{id,entity,status,subject,tenant,token,region,name,bogus}'::name[] AS cols,
		   '{fz.handle_mine,fq.handle_jobs,pg_catalog.now}'::regproc[] AS handlers)
INSERT INTO fq.knobs
SELECT queues[1 + g % cardinality(queues)], queues[1 + (g * 7) % cardinality(queues)],
	   pids[1 + g % cardinality(pids)],
	   ARRAY[pids[1 + g % cardinality(pids)], pids[1 + (g * 3) % cardinality(pids)]],
	   ids[1 + (g * 11) % cardinality(ids)],
	   ARRAY[ids[1 + (g * 11) % cardinality(ids)], ids[1 + (g * 13) % cardinality(ids)]],
	   entities[1 + (g * 5) % cardinality(entities)],
	   kinds[1 + g % cardinality(kinds)], outcomes[1 + g % cardinality(outcomes)],
	   'knob ' || g, leases[1 + g % cardinality(leases)],
	   now() + (g - 20) * interval '1 minute', jsonb_build_object('knob', g),
	   locks[1 + g % cardinality(locks)], fences[1 + g % cardinality(fences)],
	   cols[1 + g % cardinality(cols)], ARRAY[cols[1 + g % cardinality(cols)]],
	   handlers[1 + g % cardinality(handlers)]
  FROM v, generate_series(1, 40) g;
SELECT 'refill ' || :round || ': ' || string_agg(q || ' ' || s || ' ' || n, ', ' ORDER BY q, s) AS rows
  FROM (SELECT 'fq.jobs' AS q, status AS s, count(*) AS n FROM fq.jobs GROUP BY 2
		UNION ALL SELECT 'fq.tasks', state, count(*) FROM fq.tasks GROUP BY 2
		UNION ALL SELECT 'fz.mine', status, count(*) FROM fz.mine GROUP BY 2) c;
