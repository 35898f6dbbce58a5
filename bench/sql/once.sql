-- bench/sql/once.sql: what every round shares, built once per benchmark run.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dlsm;
CREATE EXTENSION IF NOT EXISTS pgstattuple;

-- The algorithm of the article "Implementing a Distributed Lock State Machine"
-- for an update-heavy queue, hand-written: claim the first new row past the
-- line in the sand (SKIP LOCKED); for an update, check its create with
-- NOWAIT and group the entity's updates with NOWAIT; settle by process id.
-- A lock conflict rolls the attempt back and skips the row (the client's
-- ROLLBACK, run here as an exception block).  Returns the requests
-- settled, 0 when nothing was claimable.
CREATE OR REPLACE FUNCTION hw_unit() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	line bigint := 0;
	pid uuid := gen_random_uuid();
	r record;
	n int;
BEGIN
	LOOP
		BEGIN
			UPDATE hu SET process_id = pid, status = 'in-progress'
			 WHERE id = (SELECT id FROM hu WHERE status = 'new' AND id > line
						  ORDER BY id FETCH FIRST ROW ONLY FOR UPDATE SKIP LOCKED)
			RETURNING id, kind, entity INTO r;
			IF NOT FOUND THEN
				RETURN 0;
			END IF;
			line := r.id;
			IF r.kind = 'update' THEN
				PERFORM true FROM hu
				 WHERE entity = r.entity AND kind = 'create'
				   AND status NOT IN ('complete', 'error')
				 FOR UPDATE NOWAIT;
				IF FOUND THEN	-- its create is not done: skip it too
					RAISE lock_not_available;
				END IF;
				UPDATE hu SET process_id = pid, status = 'in-progress'
				 WHERE id IN (SELECT id FROM hu
							   WHERE entity = r.entity AND kind = 'update'
								 AND status NOT IN ('complete', 'error')
							   FOR UPDATE NOWAIT);
			END IF;
			UPDATE hu SET status = 'complete' WHERE process_id = pid;
			GET DIAGNOSTICS n = ROW_COUNT;
			RETURN n;
		EXCEPTION WHEN lock_not_available THEN
			NULL;		-- rolled back: the line in the sand moves past r.id
		END;
	END LOOP;
END $$;

-- a queue with 1,000,000 settled rows (their new rows are refilled per round)
DROP TABLE IF EXISTS sq_1m;
SELECT dlsm_create_queue('sq_1m') \g /dev/null
INSERT INTO sq_1m (entity, status, process_id, fence, attempts, claimed_at, settled_at)
	SELECT 's' || g, 'complete', gen_random_uuid(), g, 1, now(), now()
	  FROM generate_series(1, 1000000) g;
