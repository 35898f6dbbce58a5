-- Settling, retries, heartbeats, lost claims, the reaper, the history log
-- (process ids are random here: errors show their SQLSTATE only)
\set VERBOSITY sqlstate
SELECT dlsm_create_queue('s', max_attempts => 3);

-- complete and error keep the claim as history
SELECT dlsm_enqueue('s', 'ok'), dlsm_enqueue('s', 'bad');
SELECT process_id AS ok_pid, fence AS ok_fence FROM dlsm_claim('s') \gset
SELECT process_id AS bad_pid FROM dlsm_claim('s') \gset
SELECT dlsm_settle('s', :'ok_pid');
SELECT dlsm_settle('s', :'bad_pid', 'error', 'spreadsheet not found');
SELECT entity, status, detail, attempts,
	   process_id = :'ok_pid' AS ok_pid_kept, fence = :ok_fence AS ok_fence_kept,
	   settled_at >= claimed_at AS timeline, lease_until IS NULL AS no_lease
  FROM s ORDER BY id;

-- a settled claim cannot be settled again, nor moved to another outcome
SELECT dlsm_settle('s', :'ok_pid');
SELECT dlsm_settle('s', :'ok_pid', 'error');
SELECT status FROM s WHERE process_id = :'ok_pid';

-- retry: back to new with a backoff, error once max_attempts is spent
SELECT dlsm_enqueue('s', 'flaky');
SELECT process_id AS p1 FROM dlsm_claim('s') \gset
SELECT dlsm_settle('s', :'p1', 'retry', 'timeout');
SELECT status, attempts, detail, settled_at IS NULL AS unsettled,
	   lease_until IS NULL AS no_lease,
	   run_at BETWEEN now() + interval '0.9 s' AND clock_timestamp() + interval '1 s' AS backoff_1s
  FROM s WHERE entity = 'flaky';
SELECT count(*) AS during_backoff FROM dlsm_claim('s');
UPDATE s SET run_at = now() WHERE entity = 'flaky';
SELECT process_id AS p2 FROM dlsm_claim('s') \gset
SELECT dlsm_settle('s', :'p2', 'retry', 'timeout again', retry_after => '10 minutes');
SELECT status, attempts,
	   run_at BETWEEN now() + interval '9 minutes' AND clock_timestamp() + interval '10 minutes' AS retry_after
  FROM s WHERE entity = 'flaky';
UPDATE s SET run_at = now() WHERE entity = 'flaky';
SELECT process_id AS p3 FROM dlsm_claim('s') \gset
SELECT dlsm_settle('s', :'p3', 'retry', 'still failing');
SELECT status, attempts, detail, settled_at IS NOT NULL AS settled,
	   lease_until IS NULL AS no_lease
  FROM s WHERE entity = 'flaky';
-- the earlier claims of the request are lost
SELECT dlsm_settle('s', :'p1');

-- settle_many: one row per process id, 0 for a lost one, the rest settles
SELECT dlsm_enqueue('s', 'm' || n) FROM generate_series(1, 4) n;
CREATE TEMP TABLE batch AS SELECT process_id FROM dlsm_claim('s', units => 4);
SELECT count(*) AS claimed FROM batch;
SELECT dlsm_settle('s', process_id) FROM batch
 WHERE process_id = (SELECT min(process_id::text)::uuid FROM batch);
SELECT settled, count(*) FROM dlsm_settle_many('s',
	ARRAY(SELECT process_id FROM batch) || '22222222-2222-2222-2222-222222222222'::uuid)
 GROUP BY settled ORDER BY settled;
SELECT p.process_id = b.process_id AS given_order
  FROM (SELECT process_id, row_number() OVER () AS n
		  FROM dlsm_settle_many('s', ARRAY(SELECT process_id FROM batch ORDER BY process_id))) p
  JOIN (SELECT process_id, row_number() OVER (ORDER BY process_id) AS n FROM batch) b USING (n)
 LIMIT 1;
SELECT status, count(*) FROM s WHERE entity LIKE 'm%' GROUP BY status;
-- settle_many with retry
SELECT dlsm_enqueue('s', 'r' || n) FROM generate_series(1, 2) n;
SELECT settled FROM dlsm_settle_many('s',
	ARRAY(SELECT process_id FROM dlsm_claim('s', units => 2)), 'retry', 'later',
	'1 hour');
SELECT status, attempts, detail FROM s WHERE entity LIKE 'r%' ORDER BY id;
-- an empty batch settles nothing
SELECT count(*) FROM dlsm_settle_many('s', '{}');

-- heartbeat extends the lease; a lost claim cannot be extended
SELECT dlsm_enqueue('s', 'long');
SELECT process_id AS hb FROM dlsm_claim('s', lease => '1 minute') \gset
SELECT dlsm_heartbeat('s', :'hb', '1 hour') > clock_timestamp() + interval '59 minutes' AS extended;
SELECT lease_until > clock_timestamp() + interval '59 minutes' AS stored FROM s WHERE entity = 'long';
SELECT dlsm_heartbeat('s', :'hb') < clock_timestamp() + interval '6 minutes' AS default_lease;
SELECT dlsm_settle('s', :'hb');
SELECT dlsm_heartbeat('s', :'hb');

-- the reaper: an expired lease goes back to new; a live one stays
SELECT dlsm_enqueue('s', 'stuck'), dlsm_enqueue('s', 'alive');
SELECT process_id AS stuck_pid FROM dlsm_claim('s', lease => '10 ms') \gset
SELECT process_id AS alive_pid FROM dlsm_claim('s', lease => '1 hour') \gset
SELECT pg_sleep(0.05);
SELECT dlsm_reap('s');
SELECT entity, status, attempts,
	   detail LIKE 'lease of process ' || :'stuck_pid' || ' expired at % after 1 attempt' AS why,
	   lease_until < clock_timestamp() AS lease_expired
  FROM s WHERE entity IN ('stuck', 'alive') ORDER BY id;
-- the late claimant has lost its claim: its settle changes nothing
SELECT dlsm_settle('s', :'stuck_pid');
SELECT dlsm_heartbeat('s', :'stuck_pid');
SELECT status FROM s WHERE entity = 'stuck';
SELECT dlsm_reap('s');
-- reaped until attempts are spent, then error
SELECT process_id FROM dlsm_claim('s', lease => '1 ms') \gset
SELECT pg_sleep(0.01);
SELECT dlsm_reap('s');
SELECT process_id FROM dlsm_claim('s', lease => '1 ms') \gset
SELECT pg_sleep(0.01);
SELECT dlsm_reap('s');
SELECT status, attempts, detail LIKE '%retries exhausted after 3 attempts' AS why
  FROM s WHERE entity = 'stuck';
SELECT dlsm_settle('s', :'alive_pid');

-- a re-claimed request: the old claimant is fenced off by its process id
SELECT dlsm_enqueue('s', 'twice');
SELECT process_id AS old_pid, fence AS old_fence FROM dlsm_claim('s', lease => '1 ms') \gset
SELECT pg_sleep(0.01);
SELECT dlsm_reap('s');
SELECT process_id AS new_pid, fence > :old_fence AS newer_fence FROM dlsm_claim('s') \gset
SELECT :'newer_fence' AS newer_fence;
SELECT dlsm_settle('s', :'old_pid', 'error');
SELECT dlsm_settle('s', :'new_pid');
SELECT status, attempts, process_id = :'new_pid' AS by_new_claimant
  FROM s WHERE entity = 'twice';

-- a unit retried together comes back together: one run_at for all its rows
SELECT count(dlsm_enqueue('s', 'unit', 'update')) FROM generate_series(1, 50);
SELECT count(*) AS unit_rows FROM dlsm_claim('s') \gset
SELECT :unit_rows AS unit_rows;
SELECT dlsm_settle('s', process_id, 'retry', retry_after => '1 ms')
  FROM s WHERE entity = 'unit' GROUP BY process_id;
SELECT count(DISTINCT run_at) AS run_ats FROM s WHERE entity = 'unit';
SELECT pg_sleep(0.01);
SELECT count(*) AS again_one_unit FROM dlsm_claim('s');
SELECT dlsm_settle('s', process_id) FROM s WHERE entity = 'unit' GROUP BY process_id;

-- the default backoff stops growing at an hour, however many attempts
SELECT dlsm_create_queue('many', max_attempts => 100);
SELECT dlsm_enqueue('many', 'x');
UPDATE many SET attempts = 60;
SELECT process_id AS pm FROM dlsm_claim('many') \gset
SELECT dlsm_settle('many', :'pm', 'retry');
SELECT status, attempts,
	   run_at BETWEEN now() + interval '59 minutes' AND clock_timestamp() + interval '1 hour' AS capped
  FROM many;

SELECT status, count(*) FROM s GROUP BY status ORDER BY status;

-- one attempt is "1 attempt"; a settled row shows no lease, a reaped one
-- the lease that expired (issue 24, smaller items)
SELECT dlsm_create_queue('once', max_attempts => 1);
SELECT dlsm_enqueue('once', e) FROM unnest('{o1,o2,o3,o4}'::text[]) e;
SELECT count(dlsm_enqueue('once', 'o5', 'update')) FROM generate_series(1, 2);
-- a committed claim, then retry
SELECT process_id AS o1 FROM dlsm_claim('once') \gset
SELECT dlsm_settle('once', :'o1', 'retry', 'boom');
-- claimed and settled in one statement: one row, retry
SELECT dlsm_settle('once', c.process_id, 'retry', 'bang') FROM dlsm_claim('once') c;
-- a lease expired
SELECT process_id AS o3 FROM dlsm_claim('once', lease => '1 ms') \gset
SELECT pg_sleep(0.01);
SELECT dlsm_reap('once');
-- claimed and settled in one statement: one row, and a unit of two
SELECT dlsm_settle('once', c.process_id) FROM dlsm_claim('once') c;
SELECT dlsm_settle('once', c.process_id)
  FROM (SELECT DISTINCT process_id FROM dlsm_claim('once')) c;
SELECT entity, status, attempts,
	   regexp_replace(detail, '[0-9a-f-]{36} expired at .* retries', 'P expired at T; retries') AS detail,
	   CASE WHEN lease_until IS NULL THEN 'none'
			WHEN lease_until < clock_timestamp() THEN 'expired' ELSE 'running' END AS lease,
	   claimed_at IS NOT NULL AS claimed
  FROM once ORDER BY id;

-- a process id read back from the queue inside the claiming transaction is
-- NULL: the claim is written at commit; the error says so (issue 24 #4)
\set VERBOSITY default
SELECT dlsm_create_queue('readback');
SELECT dlsm_enqueue('readback', 'r1') > 0 AS enqueued;
BEGIN;
SELECT entity FROM dlsm_claim('readback');
SELECT dlsm_settle('readback', process_id) FROM readback WHERE entity = 'r1';
ROLLBACK;
BEGIN;
SELECT entity FROM dlsm_claim('readback');
SELECT dlsm_heartbeat('readback', process_id) FROM readback WHERE entity = 'r1';
ROLLBACK;
SELECT dlsm_drop_queue('readback', drop_table => true);
