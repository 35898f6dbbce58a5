-- Deduplication: dlsm_enqueue's dedup_key and dedup_window, and
-- dlsm_enqueue_deduplicated() telling whether a row was added
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dlsm;
RESET client_min_messages;
SELECT dlsm_create_queue('dq');

-- a created queue has the column, its index, and the registry names it
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute WHERE attrelid = 'dq'::regclass AND attname = 'dedup_key';
SELECT indexdef FROM pg_indexes WHERE tablename = 'dq' AND indexname = 'dq_dedup';
SELECT dedup_column FROM dlsm_queues WHERE queue = 'dq'::regclass;

-- before any dlsm_enqueue of the session: NULL
SELECT dlsm_enqueue_deduplicated();

-- a new key adds a row
SELECT dlsm_enqueue('dq', 'e1', 'job', '{"n": 1}', dedup_key => 'k1') AS k1 \gset
SELECT dlsm_enqueue_deduplicated();
SELECT id = :k1 AS is_k1, entity, payload, dedup_key FROM dq;

-- the same key while its request is new: its id, nothing added (entity,
-- kind and payload of the second call are not used)
SELECT dlsm_enqueue('dq', 'e2', 'other', '{"n": 2}', dedup_key => 'k1') = :k1 AS same_id;
SELECT dlsm_enqueue_deduplicated();
SELECT count(*) AS rows FROM dq;

-- without a key: always a row, and the session's answer follows the last
-- call (not due for a day: the claims below do not see it)
SELECT dlsm_enqueue('dq', 'e0', 'job', NULL, now() + interval '1 day') > :k1 AS added;
SELECT dlsm_enqueue_deduplicated();

-- in progress (a leased claim): still the same request
SELECT id = :k1 AS claimed_k1, process_id AS pid FROM dlsm_claim('dq', lease => '1 hour') \gset
SELECT :'claimed_k1';
SELECT status FROM dq WHERE id = :k1;
SELECT dlsm_enqueue('dq', 'e1', 'job', dedup_key => 'k1') = :k1 AS same_id;
SELECT dlsm_enqueue_deduplicated();

-- settled, and no window: the key is free again
SELECT dlsm_settle('dq', :'pid', 'complete');
SELECT dlsm_enqueue('dq', 'e1', 'job', dedup_key => 'k1') AS k1b \gset
SELECT :k1b <> :k1 AS new_row, dlsm_enqueue_deduplicated() AS deduplicated;
SELECT count(*) AS k1_rows FROM dq WHERE dedup_key = 'k1';

-- a window: a request settled less than dedup_window ago counts, the most
-- recent one first
SELECT id AS c_id, process_id AS pid FROM dlsm_claim('dq') \gset
SELECT dlsm_settle('dq', :'pid', 'error', 'failed');
SELECT dlsm_enqueue('dq', 'e3', 'job', dedup_key => 'k1', dedup_window => '1 hour') = :k1b AS same_id;
SELECT dlsm_enqueue_deduplicated();
-- a zero window is no window
SELECT dlsm_enqueue('dq', 'e3', 'job', dedup_key => 'k1', dedup_window => '0') AS k1c \gset
SELECT :k1c <> :k1b AS new_row, dlsm_enqueue_deduplicated() AS deduplicated;
-- settled longer ago than the window: free
SELECT id AS c_id, process_id AS pid FROM dlsm_claim('dq') \gset
SELECT dlsm_settle('dq', :'pid', 'complete');
UPDATE dq SET settled_at = settled_at - interval '2 hours' WHERE dedup_key = 'k1';
SELECT dlsm_enqueue('dq', 'e3', 'job', dedup_key => 'k1', dedup_window => '1 hour') AS k1d \gset
SELECT dlsm_enqueue_deduplicated();
SELECT dlsm_enqueue('dq', 'e3', 'job', dedup_key => 'k1', dedup_window => '3 hours') = :k1d AS newest_first;
SELECT count(*) AS k1_rows FROM dq WHERE dedup_key = 'k1';

-- a retry makes the request new again: still the same request
SELECT id = :k1d AS claimed_k1d, process_id AS pid FROM dlsm_claim('dq', lease => '1 hour') \gset
SELECT :'claimed_k1d';
SELECT dlsm_settle('dq', :'pid', 'retry', retry_after => '1 hour');
SELECT dlsm_enqueue('dq', 'e3', 'job', dedup_key => 'k1') = :k1d AS same_id;

-- inside a transaction: its own uncommitted row counts; a savepoint rolled
-- back frees the key with its row
BEGIN;
SELECT dlsm_enqueue('dq', 'e4', 'job', dedup_key => 'k4') AS k4 \gset
SELECT dlsm_enqueue('dq', 'e4', 'job', dedup_key => 'k4') = :k4 AS same_id;
SAVEPOINT s;
SELECT dlsm_enqueue('dq', 'e5', 'job', dedup_key => 'k5') AS k5 \gset
ROLLBACK TO s;
SELECT dlsm_enqueue('dq', 'e5', 'job', dedup_key => 'k5') <> :k5 AS new_row;
SELECT dlsm_enqueue_deduplicated();
COMMIT;
SELECT dedup_key, count(*) FROM dq WHERE dedup_key IN ('k4', 'k5') GROUP BY 1 ORDER BY 1;
-- a rolled-back transaction frees the key
BEGIN;
SELECT dlsm_enqueue('dq', 'e6', 'job', dedup_key => 'k6') > 0 AS added;
ROLLBACK;
SELECT dlsm_enqueue('dq', 'e6', 'job', dedup_key => 'k6') > 0 AS added;
SELECT dlsm_enqueue_deduplicated();

-- REPEATABLE READ and SERIALIZABLE: a key committed before is found, and
-- one added in the transaction too
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT dlsm_enqueue('dq', 'e4', 'job', dedup_key => 'k4') = :k4 AS same_id;
SELECT dlsm_enqueue('dq', 'e8', 'job', dedup_key => 'k8') AS k8 \gset
SELECT dlsm_enqueue('dq', 'e8', 'job', dedup_key => 'k8') = :k8 AS same_id;
COMMIT;
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT dlsm_enqueue('dq', 'e8', 'job', dedup_key => 'k8') = :k8 AS same_id;
COMMIT;

-- a create with a key: the key is looked up first, so a deduplicated
-- create returns its id instead of the second create's 23505
SELECT dlsm_enqueue('dq', 'c1', 'create', dedup_key => 'kc') AS kc \gset
SELECT dlsm_enqueue('dq', 'c1', 'create', dedup_key => 'kc') = :kc AS same_id;
SELECT dlsm_enqueue_deduplicated();
-- another key for the same entity: still one create per entity
SELECT dlsm_enqueue('dq', 'c1', 'create', dedup_key => 'kc2');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS c1_rows FROM dq WHERE entity = 'c1';

-- a plain INSERT may set the column: dlsm_enqueue finds that row too
INSERT INTO dq (entity, kind, dedup_key) VALUES ('e7', 'job', 'k7');
SELECT dlsm_enqueue('dq', 'e7', 'job', dedup_key => 'k7') = (SELECT id FROM dq WHERE dedup_key = 'k7') AS same_id;

-- a requeue keeps one live request per key: a failed request whose key a
-- newer request holds (new or in progress) is not requeued (55000, nothing
-- changed), nor are two failed requests of one key together; once nobody
-- holds the key, the requeued request holds it again
SELECT dlsm_create_queue('dr');
SELECT dlsm_enqueue('dr', 'r1', 'job', dedup_key => 'kr') AS r1 \gset
SELECT process_id AS pid FROM dlsm_claim('dr') \gset
SELECT dlsm_settle('dr', :'pid', 'error', 'boom');
SELECT dlsm_enqueue('dr', 'r2', 'job', dedup_key => 'kr') AS r2 \gset
SELECT :r2 <> :r1 AS new_row;
SELECT dlsm_requeue('dr', ARRAY[:r1]);
\echo :LAST_ERROR_SQLSTATE
SELECT id = :r1 AS is_r1, status, attempts, detail FROM dr ORDER BY id;
SELECT dlsm_enqueue('dr', 'r3', 'job', dedup_key => 'kr') = :r2 AS same_id;
-- held in progress: the same
SELECT process_id AS pid FROM dlsm_claim('dr', lease => '1 hour') \gset
SELECT dlsm_requeue('dr', ARRAY[:r1]);
\echo :LAST_ERROR_SQLSTATE
-- both failed: not together, and ids of other rows do not matter
SELECT dlsm_settle('dr', :'pid', 'error', 'boom again');
SELECT dlsm_requeue('dr', ARRAY[:r2, 4242, :r1]);
\echo :LAST_ERROR_SQLSTATE
SELECT id = :r1 AS is_r1, status FROM dr ORDER BY id;
-- one of them: requeued, and it holds the key again
SELECT dlsm_requeue('dr', ARRAY[:r1]) AS requeued;
SELECT dlsm_enqueue('dr', 'r4', 'job', dedup_key => 'kr') = :r1 AS same_id;
SELECT dlsm_requeue('dr', ARRAY[:r2]);
\echo :LAST_ERROR_SQLSTATE
-- this transaction's own request of the key, not committed, holds it too
INSERT INTO dr (entity, kind, status, dedup_key, settled_at, detail)
	VALUES ('t1', 'job', 'error', 'kt', now(), 'failed') RETURNING id AS t1 \gset
BEGIN;
SELECT dlsm_enqueue('dr', 't2', 'job', dedup_key => 'kt') > 0 AS added;
SAVEPOINT s;
SELECT dlsm_requeue('dr', ARRAY[:t1]);
ROLLBACK TO s;
ROLLBACK;
-- requests without a key are requeued as before, beside one with a key
INSERT INTO dr (entity, kind, status, settled_at, detail)
	VALUES ('n1', 'job', 'error', now(), 'failed') RETURNING id AS n1 \gset
SELECT dlsm_requeue('dr', ARRAY[:n1, :t1]) AS requeued;
SELECT dedup_key, count(*) AS live FROM dr
 WHERE status IN ('new', 'in-progress') GROUP BY 1 ORDER BY 1;
SELECT dlsm_drop_queue('dr', drop_table => true);

-- the lookup (as dlsm runs it: a generic plan) uses the index
SET enable_seqscan = off;
SET plan_cache_mode = force_generic_plan;
PREPARE lookup(text, interval) AS
SELECT id FROM dq WHERE dedup_key = $1
   AND (status = ANY ('{new,in-progress}')
		OR (status = ANY ('{complete,error}') AND settled_at > (clock_timestamp() - $2)))
 ORDER BY id DESC LIMIT 1;
EXPLAIN (COSTS OFF) EXECUTE lookup('k1', '1 hour');
DEALLOCATE lookup;
RESET plan_cache_mode;
RESET enable_seqscan;

-- a queue analyzed while empty (as after a retention emptied it): the
-- look-up still reads the index, not the whole table
SELECT dlsm_create_queue('dq_empty');
VACUUM ANALYZE dq_empty;
BEGIN;
-- (the counts not yet reported of earlier transactions are in these too)
SELECT seq_scan AS seq0, idx_scan AS idx0
  FROM pg_stat_xact_user_tables WHERE relid = 'dq_empty'::regclass \gset
SELECT count(dlsm_enqueue('dq_empty', 'e' || g, 'job', dedup_key => 'k' || (g % 5)))
  FROM generate_series(1, 20) g;
SELECT seq_scan - :seq0 AS seq_scans, idx_scan - :idx0 AS index_scans
  FROM pg_stat_xact_user_tables WHERE relid = 'dq_empty'::regclass;
COMMIT;
SELECT count(*) AS rows FROM dq_empty;
SELECT dlsm_drop_queue('dq_empty', drop_table => true);

-- adopted tables name their column; text or varchar
CREATE TABLE adopted (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid, singleton varchar(40));
SELECT dlsm_register_queue('adopted', dedup_key => 'singleton');
SELECT dedup_column FROM dlsm_queues WHERE queue = 'adopted'::regclass;
SELECT indexdef FROM pg_indexes WHERE tablename = 'adopted' AND indexname = 'adopted_dlsm_dedup';
SELECT dlsm_enqueue('adopted', 'a', 'job', dedup_key => 'once') AS a1 \gset
SELECT dlsm_enqueue('adopted', 'b', 'job', dedup_key => 'once') = :a1 AS same_id;
SELECT dlsm_enqueue_deduplicated();
SELECT entity, singleton FROM adopted;
-- registered again: no index twice
SELECT dlsm_drop_queue('adopted');
SELECT dlsm_register_queue('adopted', dedup_key => 'singleton');
SELECT indexname FROM pg_indexes
 WHERE tablename = 'adopted' AND indexdef LIKE '%(singleton, id)%';
SELECT dlsm_drop_queue('adopted', drop_table => true);

-- a queue created before 1.3 (here: made so) gains a dedup key as README
-- says: add the column, then register the table again naming it
SELECT dlsm_create_queue('old');
ALTER TABLE old DROP COLUMN dedup_key;
SELECT dlsm_drop_queue('old');
SELECT dlsm_register_queue('old', max_attempts => 3);
SELECT dlsm_enqueue('old', 'o1', 'job') > 0 AS added;
BEGIN;
ALTER TABLE old ADD COLUMN dedup_key text;
SELECT dlsm_drop_queue('old');
SELECT dlsm_register_queue('old', max_attempts => 3, dedup_key => 'dedup_key');
COMMIT;
SELECT dedup_column, max_attempts FROM dlsm_queues WHERE queue = 'old'::regclass;
SELECT dlsm_enqueue('old', 'o2', 'job', dedup_key => 'ko') AS o2 \gset
SELECT dlsm_enqueue('old', 'o3', 'job', dedup_key => 'ko') = :o2 AS same_id;
SELECT count(*) AS old_rows FROM old;
SELECT dlsm_drop_queue('old', drop_table => true);

-- Bad input: a specific SQLSTATE, and nothing changed
SELECT dlsm_create_queue('kept', retention => '1 hour');
CREATE TABLE nodedup (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid, dedup_key text, n int);
SELECT dlsm_register_queue('nodedup');
SELECT dedup_column FROM dlsm_queues WHERE queue = 'nodedup'::regclass;
CREATE TEMP TABLE before AS
	SELECT 'dq' AS q, count(*) AS n FROM dq
	UNION ALL SELECT 'kept', count(*) FROM kept
	UNION ALL SELECT 'nodedup', count(*) FROM nodedup;
CREATE TEMP TABLE registry_before AS SELECT * FROM dlsm_queues;

-- a window without a key (NULL key)
SELECT dlsm_enqueue('dq', 'x', 'job', dedup_window => '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_enqueue('dq', 'x', 'job', dedup_key => NULL, dedup_window => '1 hour');
\echo :LAST_ERROR_SQLSTATE
-- a negative window, a window of 100 years or more
SELECT dlsm_enqueue('dq', 'x', 'job', dedup_key => 'kx', dedup_window => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_enqueue('dq', 'x', 'job', dedup_key => 'kx', dedup_window => '1000 years');
\echo :LAST_ERROR_SQLSTATE
-- a window longer than the queue's retention: the rows it would look for
-- are deleted
SELECT dlsm_enqueue('kept', 'x', 'job', dedup_key => 'kx', dedup_window => '2 hours');
\echo :LAST_ERROR_SQLSTATE
-- a queue without a dedup column (a column of that name is not enough)
SELECT dlsm_enqueue('nodedup', 'x', 'job', dedup_key => 'kx');
\echo :LAST_ERROR_SQLSTATE
-- registering: a column that does not exist, or of another type
CREATE TABLE badcol (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid, k int);
SELECT dlsm_register_queue('badcol', dedup_key => 'nosuch');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_register_queue('badcol', dedup_key => 'k');
\echo :LAST_ERROR_SQLSTATE
-- nothing changed
SELECT 'dq' AS q, count(*) AS n FROM dq
UNION ALL SELECT 'kept', count(*) FROM kept
UNION ALL SELECT 'nodedup', count(*) FROM nodedup
EXCEPT SELECT * FROM before;
SELECT count(*) AS registry_changes FROM (
	(SELECT * FROM dlsm_queues EXCEPT SELECT * FROM registry_before)
	UNION ALL (SELECT * FROM registry_before EXCEPT SELECT * FROM dlsm_queues)) c;
SELECT count(*) AS badcol_registered FROM dlsm_queues WHERE queue = 'badcol'::regclass;
-- a window as long as the retention is fine
SELECT dlsm_enqueue('kept', 'x', 'job', dedup_key => 'kx', dedup_window => '1 hour') > 0 AS added;

-- The look-up scans the key's index directly where the queue has one fit
-- for it (dedup.c), and runs its statement otherwise: the same answers.
SELECT dlsm_create_queue('dp');
-- one statement enqueuing a key five times adds one row: each call sees
-- the rows of the calls before it
SELECT count(DISTINCT dlsm_enqueue('dp', 'e', 'job', dedup_key => 'same')) AS ids
  FROM generate_series(1, 5);
SELECT count(*) AS rows FROM dp;
SELECT process_id AS pid FROM dlsm_claim('dp') \gset
SELECT dlsm_settle('dp', :'pid', 'complete');
-- enqueued, claimed and settled in one transaction: held within a window,
-- free without one
BEGIN;
SELECT dlsm_enqueue('dp', 's1', 'job', dedup_key => 'ks') AS ks \gset
SELECT id = :ks AS claimed_ks, process_id AS pid FROM dlsm_claim('dp') \gset
SELECT :'claimed_ks';
SELECT dlsm_settle('dp', :'pid', 'complete');
SELECT dlsm_enqueue('dp', 's1', 'job', dedup_key => 'ks', dedup_window => '1 hour') = :ks AS same_id;
SELECT dlsm_enqueue('dp', 's1', 'job', dedup_key => 'ks') <> :ks AS new_row;
COMMIT;
-- a deleted row (as retention deletes them) holds nothing
SELECT dlsm_enqueue('dp', 'd1', 'job', dedup_key => 'kd') AS kd \gset
DELETE FROM dp WHERE id = :kd;
SELECT dlsm_enqueue('dp', 'd1', 'job', dedup_key => 'kd') <> :kd AS new_row;
SELECT dlsm_enqueue('dp', 'd1', 'job', dedup_key => 'kd', dedup_window => '1 hour') AS kd \gset
-- without the index, the statement: the same answers
DROP INDEX dp_dedup;
SELECT dlsm_enqueue('dp', 'd1', 'job', dedup_key => 'kd') = :kd AS same_id;
SELECT dlsm_enqueue('dp', 's1', 'job', dedup_key => 'ks', dedup_window => '1 hour') > :ks AS newest_first;
SELECT dlsm_enqueue('dp', 'n1', 'job', dedup_key => 'kn') AS kn \gset
-- an index of another shape is not scanned: newest ids last
CREATE INDEX dp_dedup_desc ON dp (dedup_key, id DESC);
SELECT dlsm_enqueue('dp', 'n1', 'job', dedup_key => 'kn') = :kn AS same_id;
DROP INDEX dp_dedup_desc;
-- the index made again: scanned again, the same answers
CREATE INDEX dp_dedup ON dp (dedup_key, id) INCLUDE (status, settled_at)
	WHERE dedup_key IS NOT NULL;
SELECT dlsm_enqueue('dp', 'n1', 'job', dedup_key => 'kn') = :kn AS same_id;
SELECT dlsm_enqueue('dp', 'd1', 'job', dedup_key => 'kd') = :kd AS same_id;
SELECT dedup_key, count(*) FROM dp GROUP BY 1 ORDER BY 1;
SELECT dlsm_drop_queue('dp', drop_table => true);
-- a partitioned queue: its index is a partitioned one, not scanned (a
-- scan of the partitioned table would crash the server); the statement
-- answers
CREATE TABLE dpp (id bigint GENERATED ALWAYS AS IDENTITY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid, k text, PRIMARY KEY (id))
	PARTITION BY RANGE (id);
CREATE TABLE dpp_1 PARTITION OF dpp FOR VALUES FROM (MINVALUE) TO (1000);
CREATE TABLE dpp_2 PARTITION OF dpp FOR VALUES FROM (1000) TO (MAXVALUE);
SELECT dlsm_register_queue('dpp', dedup_key => 'k');
SELECT indexdef FROM pg_indexes WHERE tablename = 'dpp' AND indexdef LIKE '%(k, id)%';
SELECT dlsm_enqueue('dpp', 'p1', 'job', dedup_key => 'kp') AS kp \gset
SELECT dlsm_enqueue('dpp', 'p2', 'job', dedup_key => 'kp') = :kp AS same_id;
SELECT dlsm_enqueue_deduplicated();
SELECT dlsm_enqueue('dpp', 'p3', 'job', dedup_key => 'kq') <> :kp AS new_row;
SELECT tableoid::regclass AS partition, entity, k FROM dpp ORDER BY id;
SELECT dlsm_drop_queue('dpp', drop_table => true);
