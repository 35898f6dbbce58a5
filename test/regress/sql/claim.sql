-- Claiming: the seven rules of a claim, numbered as in README's dlsm_claim
SELECT dlsm_create_queue('q');

-- 1. FIFO: oldest ready request first; 6. a fresh process id and fence
SELECT dlsm_enqueue('q', 'a'), dlsm_enqueue('q', 'b'), dlsm_enqueue('q', 'c');
SELECT id, kind, entity, payload, process_id IS NOT NULL AS has_pid,
	   fence IS NOT NULL AS has_fence,
	   lease_until BETWEEN now() + interval '4 minutes' AND clock_timestamp() + interval '5 minutes' AS default_lease
  FROM dlsm_claim('q') \gset first_
SELECT :first_id AS id, :'first_entity' AS entity, :'first_has_pid' AS has_pid,
	   :'first_default_lease' AS default_lease;
SELECT status, attempts, claimed_at IS NOT NULL AS claimed
  FROM q WHERE id = :first_id;

-- the line in the sand: after => skips ids up to it
SELECT id, entity FROM dlsm_claim('q', after => 2);
-- units: several units in one call, each with its own process id and fence
SELECT dlsm_enqueue('q', 'd'), dlsm_enqueue('q', 'e');
SELECT count(*) AS rows, count(DISTINCT process_id) AS pids,
	   count(DISTINCT fence) AS fences
  FROM dlsm_claim('q', units => 10);
SELECT count(*) AS nothing_left FROM dlsm_claim('q');

-- fences are distinct per unit and increase from one claim to the next
SELECT count(DISTINCT fence) = count(*) AS distinct_fences
  FROM q WHERE fence IS NOT NULL;
SELECT bool_and(lo > prev_hi) AS increasing
  FROM (SELECT min(fence) AS lo,
			   lag(max(fence)) OVER (ORDER BY claimed_at) AS prev_hi
		  FROM q WHERE fence IS NOT NULL GROUP BY claimed_at) s
 WHERE prev_hi IS NOT NULL;
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress';

-- 1. run_at: a delayed request is not claimable before its time
SELECT dlsm_enqueue('q', 'later', 'create', NULL, now() + interval '1 hour') AS later_id \gset
SELECT count(*) AS claimable_now FROM dlsm_claim('q');
UPDATE q SET run_at = now() WHERE id = :later_id;
SELECT entity FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress';

-- 6. a given process id: every row claimed by the call carries it
SELECT dlsm_enqueue('q', 'p1'), dlsm_enqueue('q', 'p2');
SELECT entity, process_id FROM dlsm_claim('q',
	process_id => '11111111-1111-1111-1111-111111111111', units => 5)
 ORDER BY id;
SELECT dlsm_settle('q', '11111111-1111-1111-1111-111111111111');

-- 3. one unit per entity: a leased claim keeps the entity busy
SELECT dlsm_enqueue('q', 'busy', 'create'), dlsm_enqueue('q', 'busy', 'job');
SELECT id, kind FROM dlsm_claim('q', lease => '1 minute') \gset busy_
SELECT count(*) AS while_busy FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE id = :busy_id;
SELECT kind, entity FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress';

-- 4. and 5. updates wait for their create, then are grouped into one unit
SELECT dlsm_enqueue('q', 's1', 'create');
SELECT dlsm_enqueue('q', 's1', 'update', jsonb_build_object('n', n))
  FROM generate_series(1, 3) n;
SELECT dlsm_enqueue('q', 's2', 'update');		-- no create at all
SELECT id, kind, entity FROM dlsm_claim('q') \gset s1c_
SELECT kind, entity FROM dlsm_claim('q');		-- s1's updates wait: s2's is taken
SELECT count(*) AS s1_updates_wait FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE id = :s1c_id;
SELECT kind, entity, payload,
	   process_id = first_value(process_id) OVER () AS same_pid,
	   fence = first_value(fence) OVER () AS same_fence
  FROM dlsm_claim('q') ORDER BY id;
SELECT count(DISTINCT fence) AS fences, count(DISTINCT process_id) AS pids
  FROM q WHERE entity = 's1' AND kind = 'update';
SELECT dlsm_settle('q', process_id) FROM q
 WHERE status = 'in-progress' GROUP BY process_id ORDER BY 1;

-- 5. a group never jumps ahead of an earlier request of another kind
SELECT dlsm_enqueue('q', 's3', 'update'), dlsm_enqueue('q', 's3', 'update'),
	   dlsm_enqueue('q', 's3', 'archive'), dlsm_enqueue('q', 's3', 'update');
SELECT kind, count(*) FROM dlsm_claim('q') GROUP BY kind;
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress' GROUP BY process_id;
SELECT kind, count(*) FROM dlsm_claim('q') GROUP BY kind;
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress' GROUP BY process_id;
SELECT kind, count(*) FROM dlsm_claim('q') GROUP BY kind;
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress' GROUP BY process_id;

-- 4. a create that ended in error fails its updates without handing them out
SELECT dlsm_enqueue('q', 's4', 'create');
SELECT dlsm_enqueue('q', 's4', 'update'), dlsm_enqueue('q', 's4', 'update');
SELECT id AS s4c FROM dlsm_claim('q') \gset
SELECT dlsm_settle('q', process_id, 'error', 'sheet quota exceeded')
  FROM q WHERE id = :s4c;
SELECT count(*) AS handed_out FROM dlsm_claim('q');
SELECT kind, status, detail = format('create request %s of entity "s4" ended in error', :s4c) AS names_create
  FROM q WHERE entity = 's4' ORDER BY id;

-- transactional claims: a claim writes its rows when its transaction
-- commits (or when it settles them); until then they read 'new', locked.
-- A rollback leaves them as they were.
SELECT dlsm_enqueue('q', 'tx');
BEGIN;
SELECT entity FROM dlsm_claim('q');
SELECT status FROM q WHERE entity = 'tx';
ROLLBACK;
SELECT status, attempts, process_id FROM q WHERE entity = 'tx';
-- claim and settle in one transaction, even in one statement
SELECT dlsm_settle('q', c.process_id) FROM dlsm_claim('q') c;
SELECT status, attempts FROM q WHERE entity = 'tx';

-- 7. wait: nothing comes, so it returns empty after the wait
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) AS waited_for_nothing FROM dlsm_claim('q', wait => '200 ms');
SELECT clock_timestamp() - :'t0'::timestamptz >= interval '200 ms' AS waited;
-- a delayed request that becomes due while waiting is taken
SELECT dlsm_enqueue('q', 'soon', 'create', NULL, clock_timestamp() + interval '300 ms');
SELECT entity FROM dlsm_claim('q', wait => '5 s');
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress';

SELECT status, count(*) FROM q GROUP BY status ORDER BY status;

-- a group ends at the entity's first update that is not due yet
SELECT dlsm_enqueue('q', 'g', 'update') AS g1 \gset
SELECT dlsm_enqueue('q', 'g', 'update', NULL, now() + interval '1 hour') AS g2 \gset
SELECT dlsm_enqueue('q', 'g', 'update') AS g3 \gset
SELECT id = :g1 AS only_the_first FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress' GROUP BY process_id;
SELECT count(*) AS g3_waits_for_g2 FROM dlsm_claim('q');
UPDATE q SET run_at = now() WHERE id = :g2;
SELECT count(*) AS g2_and_g3 FROM dlsm_claim('q');
SELECT dlsm_settle('q', process_id) FROM q WHERE status = 'in-progress' GROUP BY process_id;

-- many rows behind a busy entity: the claim reads past all of them
SELECT dlsm_create_queue('wide');
INSERT INTO wide (entity, kind) VALUES ('busy', 'create');
SELECT count(*) AS held FROM dlsm_claim('wide', lease => '1 hour');
INSERT INTO wide (entity, kind) SELECT 'busy', 'update' FROM generate_series(1, 300);
INSERT INTO wide (entity) SELECT 'free' || g FROM generate_series(1, 200) g;
SELECT entity FROM dlsm_claim('wide');
-- many units at once: 150 of the 199 free creates, each its own unit
SELECT count(*) AS rows, count(DISTINCT process_id) AS units,
	   min(entity) FILTER (WHERE entity LIKE 'busy%') AS busy
  FROM dlsm_claim('wide', units => 150);
SELECT status, kind, count(*) FROM wide GROUP BY status, kind ORDER BY 1, 2;
DROP TABLE wide;

-- an entity named to collide with another's key under an unseeded hash
-- (computed offline for seed 0): a producer's update waiting for a create
-- due in a day must not hold back the other entity's update
SELECT hashtextextended('victim-entity-0000000001', 0) =
	   hashtextextended('atk398115...mR?/C;:0YW-G', 0) AS unseeded_collision;
SELECT dlsm_create_queue('hq');
SELECT dlsm_enqueue('hq', 'victim-entity-0000000001', 'create');
SELECT dlsm_enqueue('hq', 'atk398115...mR?/C;:0YW-G', 'create',
					run_at => now() + '1 day');
SELECT dlsm_enqueue('hq', 'atk398115...mR?/C;:0YW-G', 'update');
SELECT entity, kind, dlsm_settle('hq', process_id) FROM dlsm_claim('hq');
SELECT dlsm_enqueue('hq', 'victim-entity-0000000001', 'update');
SELECT id, entity, kind FROM dlsm_claim('hq');
SELECT id, entity, kind, status FROM hq ORDER BY id;
DROP TABLE hq;

-- dlsm.log_statements: each statement dlsm prepares, with the queue's
-- names put in, one LOG line each (a superuser's setting)
SELECT dlsm_create_queue('lsq');
SET client_min_messages = log;
SET dlsm.log_statements = on;
SELECT count(*) FROM dlsm_claim('lsq');
SELECT count(*) FROM dlsm_claim('lsq');
RESET dlsm.log_statements;
RESET client_min_messages;
DROP TABLE lsq;
