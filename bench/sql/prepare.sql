-- bench/sql/prepare.sql: every system's state, rebuilt before each round.
SET client_min_messages = warning;
DROP TABLE IF EXISTS phys, hq, hq_rr, hu, bq_tx, bq_leased, bq_batch, uq, sq_blocked, sq_rr;

-- the physical reference
CREATE TABLE phys (id int PRIMARY KEY, v int NOT NULL DEFAULT 0);
INSERT INTO phys SELECT g FROM generate_series(1, 100000) g;

-- hand-written queues, with the indexes a careful author adds
CREATE TABLE hq (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'new',
				 kind text NOT NULL DEFAULT 'create', entity text NOT NULL,
				 process_id uuid);
CREATE INDEX ON hq (process_id);
CREATE INDEX ON hq (id) WHERE status = 'new';
INSERT INTO hq (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;
CREATE TABLE hu (LIKE hq INCLUDING ALL);
-- the same as hq, claimed while a REPEATABLE READ transaction is open
CREATE TABLE hq_rr (LIKE hq INCLUDING ALL);
INSERT INTO hq_rr (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;
CREATE INDEX ON hu (entity);

-- dlsm queues
SELECT dlsm_create_queue('bq_tx'), dlsm_create_queue('bq_leased'),
	   dlsm_create_queue('bq_batch'), dlsm_create_queue('uq'),
	   dlsm_create_queue('sq_blocked'), dlsm_create_queue('sq_rr') \g /dev/null
INSERT INTO bq_tx (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;
INSERT INTO bq_leased (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;
INSERT INTO bq_batch (entity) SELECT 'e' || g FROM generate_series(1, 400000) g;
INSERT INTO sq_rr (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;

-- update-heavy: 10,000 entities in blocks of 50, each a create then 19
-- rounds of updates of the block's entities, in that order of ids
CREATE TEMP TABLE heavy AS
	SELECT 'u' || (b * 50 + e) AS entity,
		   CASE WHEN r = 0 THEN 'create' ELSE 'update' END AS kind
	  FROM generate_series(0, 199) b, generate_series(0, 19) r,
		   generate_series(1, 50) e
	 ORDER BY b, r, e;
INSERT INTO hu (entity, kind) SELECT entity, kind FROM heavy;
INSERT INTO uq (entity, kind) SELECT entity, kind FROM heavy;

-- 1,000 updates blocked behind an in-progress create at the head
INSERT INTO sq_blocked (entity, kind) VALUES ('x', 'create');
SELECT count(*) FROM dlsm_claim('sq_blocked', lease => '1 day') \g /dev/null
INSERT INTO sq_blocked (entity, kind)
	SELECT 'x', 'update' FROM generate_series(1, 1000);
INSERT INTO sq_blocked (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;

-- the 1,000,000 settled rows stay; its new rows are refilled
DELETE FROM sq_1m WHERE entity LIKE 'e%';
INSERT INTO sq_1m (entity) SELECT 'e' || g FROM generate_series(1, 100000) g;

VACUUM ANALYZE;
CHECKPOINT;
