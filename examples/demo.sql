-- examples/demo.sql: the article's spreadsheet service, played out in SQL.
-- Loaded by examples/demo.sh into a throwaway cluster.
--
--   front end  spreadsheets.front_end(): users ask for spreadsheets to be
--              created, then click "update" on them, again and again.  Each
--              click is one INSERT into the hand-off table, one transaction.
--   back ends  spreadsheets.back_end(): claim a unit of work with dlsm_claim,
--              do the (simulated) Google Sheets calls, settle with
--              dlsm_settle, COMMIT.  All updates of one spreadsheet that are
--              waiting come as one unit: one call to Google, not ten.

CREATE EXTENSION IF NOT EXISTS dlsm;
CREATE SCHEMA spreadsheets;

-- The hand-off table (id, status, kind, entity, payload, process_id, ...).
SELECT dlsm_create_queue('spreadsheets.request_queue');

-- What the back ends did: one row per unit, written in the unit's own
-- transaction, so it exists exactly when the settle committed.
CREATE TABLE spreadsheets.work_log (
	backend    text        NOT NULL,
	process_id uuid        NOT NULL,
	kind       text        NOT NULL,
	entity     text        NOT NULL,
	requests   int         NOT NULL,
	outcome    text        NOT NULL,
	done_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- What the front end says it produced (its own count, kept outside the queue).
CREATE TABLE spreadsheets.produced (
	creates int NOT NULL,
	updates int NOT NULL
);

-- Set by the demo once the queue is drained: back ends finish their loop.
CREATE TABLE spreadsheets.stop (stop boolean NOT NULL);
INSERT INTO spreadsheets.stop VALUES (false);

-- The front end: `sheets` spreadsheets are created over the first 70% of
-- `seconds`; meanwhile users click "update" on the ones that exist, a few
-- times in a row, the popular sheets more often.  About `rate` clicks a second.
CREATE PROCEDURE spreadsheets.front_end(seconds int, sheets int, rate int)
LANGUAGE plpgsql AS $$
DECLARE
	started  timestamptz := clock_timestamp();
	created  int := 0;
	updates  int := 0;
	i        bigint := 0;
	sheet    int;
	clicks   int;
	lag      float8;
BEGIN
	PERFORM set_config('application_name', 'front-end', false);
	WHILE clock_timestamp() < started + make_interval(secs => seconds) LOOP
		-- time for the next spreadsheet to be created?
		IF created < sheets AND
		   created < sheets * extract(epoch FROM clock_timestamp() - started)
		             / (seconds * 0.7) THEN
			created := created + 1;
			PERFORM dlsm_enqueue('spreadsheets.request_queue',
				format('sheet-%s', lpad(created::text, 4, '0')), 'create',
				jsonb_build_object('title', format('Budget %s', created)));
			COMMIT;
			i := i + 1;
		ELSIF created > 0 THEN
			-- a user clicks "update" on a sheet, 1 to 4 times
			sheet := 1 + floor(created * random() ^ 2)::int;
			clicks := 1 + floor(random() * 4)::int;
			FOR c IN 1 .. clicks LOOP
				PERFORM dlsm_enqueue('spreadsheets.request_queue',
					format('sheet-%s', lpad(sheet::text, 4, '0')), 'update',
					jsonb_build_object('cells', 1 + floor(random() * 50)::int));
				COMMIT;
				updates := updates + 1;
				i := i + 1;
			END LOOP;
		END IF;
		-- keep to `rate` requests a second
		lag := i::float8 / rate - extract(epoch FROM clock_timestamp() - started);
		IF lag > 0 THEN
			PERFORM pg_sleep(lag);
		END IF;
	END LOOP;
	INSERT INTO spreadsheets.produced VALUES (created, updates);
	COMMIT;
END
$$;

-- A back end: claim, work, settle, COMMIT, until told to stop.  Its
-- application_name shows what it holds right now (like a process title).
CREATE PROCEDURE spreadsheets.back_end(name text, error_rate float8)
LANGUAGE plpgsql AS $$
DECLARE
	u_pid    uuid;
	u_kind   text;
	u_entity text;
	u_first  bigint;
	u_n      int;
	outcome  text;
BEGIN
	PERFORM set_config('application_name', name, false);
	LOOP
		-- one unit: a create, or every waiting update of one spreadsheet
		SELECT min(c.process_id::text)::uuid, min(c.kind), min(c.entity),
		       min(c.id), count(*)
		  INTO u_pid, u_kind, u_entity, u_first, u_n
		  FROM dlsm_claim('spreadsheets.request_queue', wait => '1 second') c;
		IF u_n = 0 THEN
			COMMIT;
			EXIT WHEN (SELECT stop FROM spreadsheets.stop);
			CONTINUE;
		END IF;
		PERFORM set_config('application_name',
			format('%s #%s+%s %s %s', name, u_first, u_n, u_kind, u_entity), false);

		-- the work: talk to Google for a few milliseconds
		PERFORM pg_sleep(0.002 + random() * 0.008);
		outcome := CASE WHEN random() < error_rate THEN 'error' ELSE 'complete' END;

		INSERT INTO spreadsheets.work_log (backend, process_id, kind, entity, requests, outcome)
		VALUES (name, u_pid, u_kind, u_entity, u_n, outcome);
		PERFORM dlsm_settle('spreadsheets.request_queue', u_pid, outcome,
			CASE outcome WHEN 'error' THEN 'simulated Google Sheets failure' END);
		COMMIT;
		PERFORM set_config('application_name', name, false);
	END LOOP;
END
$$;

-- Kill a back end in the middle of a unit: after its claim, before its
-- settle.  Holding work_log keeps the back ends at "record what I did" for a
-- few milliseconds, so the victim is caught for sure with its unit in hand.
-- Returns 'pid|application_name' of the victim, or NULL (none in 2-3 s).
CREATE FUNCTION spreadsheets.kill_mid_unit(victim text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	v record;
BEGIN
	LOCK TABLE spreadsheets.work_log IN EXCLUSIVE MODE;
	FOR i IN 1 .. 2000 LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT pid, application_name INTO v
		  FROM pg_stat_activity
		 WHERE application_name LIKE victim || ' #%'
		   AND wait_event_type = 'Lock';
		IF FOUND THEN
			-- SIGTERM; wait up to 5 s for the process to be gone
			PERFORM pg_terminate_backend(v.pid, 5000);
			RETURN v.pid || '|' || v.application_name;
		END IF;
		PERFORM pg_sleep(0.001);
	END LOOP;
	RETURN NULL;
END
$$;
