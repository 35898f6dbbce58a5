-- dlsm_group_updates: the grouping step of the article
-- "Implementing a Distributed Lock State Machine", for hand-written claims
SELECT dlsm_create_queue('g');
SELECT dlsm_enqueue('g', 'sheet', 'create');
SELECT dlsm_enqueue('g', 'sheet', 'update') FROM generate_series(1, 4);
SELECT dlsm_settle('g', process_id) FROM dlsm_claim('g');

-- the article's back end, by hand: claim one update, then group the rest
BEGIN;
UPDATE g SET status = 'in-progress',
			 process_id = '33333333-3333-3333-3333-333333333333'
 WHERE id = (SELECT id FROM g WHERE status = 'new' ORDER BY id
			  FETCH FIRST ROW ONLY FOR UPDATE SKIP LOCKED)
RETURNING id, kind, entity;
SELECT dlsm_group_updates('g', 'sheet', '33333333-3333-3333-3333-333333333333');
SELECT status, count(*), count(DISTINCT fence) AS fences
  FROM g WHERE kind = 'update' GROUP BY status;
SELECT dlsm_settle('g', '33333333-3333-3333-3333-333333333333');
COMMIT;
SELECT status, count(*) FROM g GROUP BY status ORDER BY status;

-- nothing open: zero rows grouped
SELECT dlsm_group_updates('g', 'sheet', '33333333-3333-3333-3333-333333333333');
SELECT dlsm_group_updates('g', 'no such sheet', '33333333-3333-3333-3333-333333333333');

-- another process holds the entity: 55P03, nothing changes
SELECT dlsm_enqueue('g', 'sheet', 'update'), dlsm_enqueue('g', 'sheet', 'update');
SELECT process_id AS holder FROM dlsm_claim('g', lease => '1 hour') LIMIT 1 \gset
SELECT dlsm_enqueue('g', 'sheet', 'update');
SELECT dlsm_group_updates('g', 'sheet', '44444444-4444-4444-4444-444444444444');
SELECT status, count(*) FROM g WHERE kind = 'update' GROUP BY status ORDER BY status;
-- inside a savepoint the transaction goes on
BEGIN;
SAVEPOINT try_group;
SELECT dlsm_group_updates('g', 'sheet', '44444444-4444-4444-4444-444444444444');
ROLLBACK TO SAVEPOINT try_group;
SELECT count(*) AS still_usable FROM g;
COMMIT;
-- the holder itself may group the newer update into its claim
SELECT dlsm_group_updates('g', 'sheet', :'holder');
SELECT dlsm_settle('g', :'holder');
SELECT status, count(*) FROM g GROUP BY status ORDER BY status;

-- the grouping respects the entity's create and its requests of other kinds
SELECT dlsm_create_queue('g2');
INSERT INTO g2 (kind, entity) VALUES ('update', 'S'), ('create', 'S'), ('update', 'S');
SELECT dlsm_group_updates('g2', 'S', '66666666-6666-6666-6666-666666666666');
UPDATE g2 SET status = 'complete' WHERE kind = 'create';
INSERT INTO g2 (kind, entity) VALUES ('archive', 'S'), ('update', 'S');
SELECT dlsm_group_updates('g2', 'S', '66666666-6666-6666-6666-666666666666');
SELECT id, kind, status, attempts FROM g2 ORDER BY id;
-- grouping again: the rows already held are not counted as new attempts
SELECT dlsm_group_updates('g2', 'S', '66666666-6666-6666-6666-666666666666');
SELECT id, kind, status, attempts FROM g2 ORDER BY id;

-- updates not yet due are not grouped, and the group stops at the first
-- of them, as a claim's group does (issue 21 #7)
SELECT dlsm_create_queue('g3');
SELECT dlsm_enqueue('g3', 'e1', 'update') > 0 AS due;
SELECT dlsm_enqueue('g3', 'e1', 'update',
	run_at => clock_timestamp() + '1 hour') > 0 AS later;
SELECT dlsm_enqueue('g3', 'e1', 'update') > 0 AS due_behind_it;
BEGIN;
SELECT dlsm_group_updates('g3', 'e1', '77777777-7777-7777-7777-777777777777');
SELECT status, run_at > now() AS delayed FROM g3 ORDER BY id;
ROLLBACK;
-- nothing due: nothing grouped
UPDATE g3 SET run_at = clock_timestamp() + '1 hour';
SELECT dlsm_group_updates('g3', 'e1', '77777777-7777-7777-7777-777777777777');
