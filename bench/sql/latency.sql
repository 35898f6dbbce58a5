-- bench/sql/latency.sql: the objects of the latency and coalescing cases.
-- Commit times come from track_commit_timestamp.
SET client_min_messages = warning;
DROP TABLE IF EXISTS lat_wait, lat_handler, lat_produced, lat_claimed, lat_started, cq;
DROP FUNCTION IF EXISTS lat_h(text, text, bigint[], jsonb[]);
SELECT dlsm_create_queue('lat_wait'), dlsm_create_queue('lat_handler') \g /dev/null
CREATE TABLE lat_produced (request_id bigint, q text, x xid8 NOT NULL);
CREATE TABLE lat_claimed (request_id bigint PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE lat_started (request_id bigint PRIMARY KEY, at timestamptz NOT NULL);
CREATE FUNCTION lat_h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO lat_started SELECT i, clock_timestamp() FROM unnest(ids) i $$;
SELECT dlsm_set_handler('lat_handler', 'lat_h') \g /dev/null

-- the producer: n enqueues, each committed, gap seconds apart
CREATE OR REPLACE PROCEDURE lat_produce(q regclass, n int, gap float8)
LANGUAGE plpgsql AS $$
BEGIN
	FOR k IN 1 .. n LOOP
		INSERT INTO lat_produced
			VALUES (dlsm_enqueue(q, 'p' || k), q::text, pg_current_xact_id());
		COMMIT;
		PERFORM pg_sleep(gap);
	END LOOP;
END $$;

-- the waiting consumer: n claims waiting up to 10 s, each settled and committed
CREATE OR REPLACE PROCEDURE lat_consume(n int)
LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	FOR k IN 1 .. n LOOP
		SELECT id, process_id, clock_timestamp() AS at INTO c
		  FROM dlsm_claim('lat_wait', wait => '10 s');
		EXIT WHEN c.id IS NULL;
		INSERT INTO lat_claimed VALUES (c.id, c.at);
		PERFORM dlsm_settle('lat_wait', c.process_id);
		COMMIT;
	END LOOP;
END $$;

-- milliseconds from each enqueue's commit to the claim or handler start
CREATE OR REPLACE VIEW lat_ms AS
	SELECT 'enqueue commit -> waiting dlsm_claim returns' AS measure,
		   extract(epoch FROM c.at - pg_xact_commit_timestamp(p.x::text::xid)) * 1000 AS ms
	  FROM lat_produced p JOIN lat_claimed c USING (request_id)
	 WHERE p.q = 'lat_wait'
	UNION ALL
	SELECT 'enqueue commit -> handler starts',
		   extract(epoch FROM s.at - pg_xact_commit_timestamp(p.x::text::xid)) * 1000
	  FROM lat_produced p JOIN lat_started s USING (request_id)
	 WHERE p.q = 'lat_handler';

-- coalescing: one entity's create (settled) and 1,000 pending updates,
-- claimed as one unit and settled by one statement; returns the rows
-- claimed, the units, the rows settled and the milliseconds of each step
CREATE OR REPLACE FUNCTION coalesce_1000(
	OUT claimed bigint, OUT units bigint, OUT settled bigint,
	OUT claim_ms float8, OUT settle_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
	t0 timestamptz;
	pids uuid[];
BEGIN
	DROP TABLE IF EXISTS cq;
	PERFORM dlsm_create_queue('cq');
	INSERT INTO cq (entity, kind, status) VALUES ('c', 'create', 'complete');
	INSERT INTO cq (entity, kind) SELECT 'c', 'update' FROM generate_series(1, 1000);
	ANALYZE cq;
	t0 := clock_timestamp();
	SELECT count(*), count(DISTINCT process_id), array_agg(DISTINCT process_id)
	  INTO claimed, units, pids FROM dlsm_claim('cq');
	claim_ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	t0 := clock_timestamp();
	SELECT sum(s.settled) INTO settled FROM dlsm_settle_many('cq', pids) s;
	settle_ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
