-- test/stress/sharded.sql: the actors of the sharded stress run
-- (test/t/060_sharding.pl), run in the router database, where dlsm_enqueue,
-- dlsm_claim, dlsm_settle, dlsm_settle_many and dlsm_heartbeat are
-- dlsm_proxy's: every call is its own transaction on one shard.
--
-- The client code is the same as against one server, with leases: through
-- the router only leased claims work.  What the router writes here is
-- bookkeeping the checks compare with the shards' own history
-- (test/stress/sharded_shard.sql):
--   sh_produced  one row per enqueue attempt, committed before the call
--                ('intent') and marked 'done' with the shard's id after it:
--                a 'done' request must be on a shard, exactly once
--   sh_units     one row per unit a consumer settled, after the settle
--                returned (a consumer killed in between leaves no row)
--   sh_stats     events: kills, rollbacks, lost claims, refusals, ...
--
-- Every actor is a procedure looping with COMMIT inside, run by psql from a
-- shell loop that restarts it when its backend is killed.  A call that
-- fails because a shard could not be reached (killed connection, restarted
-- shard) is counted and retried; any other error stops the actor and shows
-- as an ERROR in its log.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TABLE sh_control (
	stop	boolean NOT NULL DEFAULT false,
	run_end	timestamptz NOT NULL
);

CREATE TABLE sh_produced (
	token		uuid PRIMARY KEY,
	entity		text NOT NULL,
	kind		text NOT NULL,
	state		text NOT NULL DEFAULT 'intent',	-- intent, done, refused
	id			bigint,
	node		int,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON sh_produced (entity, kind);

CREATE TABLE sh_units (
	unit_id		bigserial PRIMARY KEY,
	consumer	text NOT NULL,
	process_id	uuid NOT NULL,
	fence		bigint NOT NULL,
	entity		text NOT NULL,
	kind		text NOT NULL,
	ids			bigint[] NOT NULL,
	single		boolean NOT NULL,		-- claimed by a claim of one unit
	outcome		text NOT NULL,
	settled		bigint NOT NULL,
	claimed_at	timestamptz NOT NULL,
	settled_at	timestamptz NOT NULL,
	txid		bigint NOT NULL DEFAULT txid_current()
);

CREATE TABLE sh_stats (
	what		text NOT NULL,
	n			bigint NOT NULL,
	who			text,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TYPE sh_unit AS (
	pid			uuid,
	fence		bigint,
	entity		text,
	kind		text,
	ids			bigint[],
	poison		boolean
);

-- producers stop at the end of the run, consumers and the killer when the
-- test says so (a move still draining at the end of the run needs them)
CREATE FUNCTION sh_producing() RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT NOT stop AND clock_timestamp() < run_end FROM sh_control
$$;

CREATE FUNCTION sh_running() RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT NOT stop FROM sh_control
$$;

-- a shard that could not be reached, as the router reports it
CREATE FUNCTION sh_unreachable(state text, msg text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT dlsm_proxy_unreachable(state, msg)
		OR (state = '55000' AND msg LIKE 'dlsm_claim: no shard%')
$$;

CREATE FUNCTION sh_count(what text, who text, n bigint DEFAULT 1) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO sh_stats (what, n, who) VALUES (what, n, who)
$$;

-- The producer: a create first for each entity, then updates, over
-- n_entities entities; one request in 80 is poison (always retried, so it
-- ends in error when its attempts are spent).
CREATE PROCEDURE sh_produce(me text, n_entities int, pause float8)
LANGUAGE plpgsql AS $$
DECLARE
	e		text;
	k		text;
	tok		uuid;
	rid		bigint;
	nupd	int;
BEGIN
	WHILE sh_producing() LOOP
		e := 'e' || (1 + floor(random() * n_entities))::int;
		IF NOT EXISTS (SELECT 1 FROM sh_produced WHERE entity = e AND kind = 'create') THEN
			k := 'create';
			nupd := 1;
		ELSE
			k := 'update';
			nupd := 1 + floor(random() * 3)::int;
		END IF;
		FOR i IN 1 .. nupd LOOP
			tok := gen_random_uuid();
			INSERT INTO sh_produced (token, entity, kind) VALUES (tok, e, k);
			COMMIT;
			BEGIN
				rid := dlsm_enqueue('sq', e, k,
					CASE WHEN random() < 0.0125
						 THEN jsonb_build_object('token', tok, 'poison', true)
						 ELSE jsonb_build_object('token', tok) END);
				UPDATE sh_produced SET state = 'done', id = rid, node = dlsm_proxy_node_of(e)
				 WHERE token = tok;
			EXCEPTION
				WHEN object_in_use THEN		-- its partition is being moved
					UPDATE sh_produced SET state = 'refused' WHERE token = tok;
					PERFORM sh_count('enqueue-refused-moving', me);
				WHEN OTHERS THEN
					IF NOT sh_unreachable(SQLSTATE, SQLERRM) THEN
						RAISE;
					END IF;
					PERFORM sh_count('enqueue-unreachable', me);
			END;
			COMMIT;
		END LOOP;
		PERFORM pg_sleep(pause * random() * 2);
	END LOOP;
END
$$;

-- Claim up to v_units units through the router; NULL when nothing.
CREATE FUNCTION sh_claim(v_units int, v_lease interval, v_pid uuid, v_wait interval)
RETURNS sh_unit[]
LANGUAGE sql AS $$
	SELECT array_agg(x ORDER BY (x).fence) FROM (
		SELECT ROW(c.process_id, min(c.fence), min(c.entity), min(c.kind),
				   array_agg(c.id ORDER BY c.id),
				   bool_or(coalesce((c.payload->>'poison')::boolean, false)))::sh_unit AS x
		  FROM dlsm_claim('sq', lease => v_lease, process_id => v_pid,
						  wait => v_wait, units => v_units) c
		 GROUP BY c.process_id) s
$$;

-- Settle units with one outcome (dlsm_settle for one, dlsm_settle_many for
-- several) and record the settled ones; returns how many were lost.
-- v_single: they come from a claim of one unit (whose process id the router
-- makes, with its node in the last byte).
CREATE FUNCTION sh_settle(me text, us sh_unit[], v_outcome text, v_claimed timestamptz,
						  v_single boolean)
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	n		bigint;
	i		bigint;
	lost	int := 0;
	retry	interval;
BEGIN
	IF v_outcome = 'retry' THEN
		retry := make_interval(secs => 0.05 + random() * 0.3);
	END IF;
	IF cardinality(us) = 1 THEN
		BEGIN
			n := dlsm_settle('sq', us[1].pid, v_outcome, 'stress ' || me, retry);
		EXCEPTION WHEN object_not_in_prerequisite_state THEN
			n := 0;
		END;
		IF n > 0 THEN
			INSERT INTO sh_units (consumer, process_id, fence, entity, kind, ids, single,
								  outcome, settled, claimed_at, settled_at)
			VALUES (me, us[1].pid, us[1].fence, us[1].entity, us[1].kind, us[1].ids, v_single,
					v_outcome, n, v_claimed, clock_timestamp());
		ELSE
			lost := 1;
		END IF;
	ELSE
		FOR i, n IN
			SELECT s.ord, s.settled
			  FROM dlsm_settle_many('sq', (SELECT array_agg((y).pid) FROM unnest(us) y),
									v_outcome, 'stress ' || me, retry)
				   WITH ORDINALITY AS s(process_id, settled, ord)
		LOOP
			IF n IS NULL THEN
				-- its node could not be reached: unsettled, its lease runs out
				PERFORM sh_count('settle-unreachable', me);
			ELSIF n = 0 THEN
				lost := lost + 1;
			ELSE
				INSERT INTO sh_units (consumer, process_id, fence, entity, kind, ids, single,
									  outcome, settled, claimed_at, settled_at)
				VALUES (me, us[i].pid, us[i].fence, us[i].entity, us[i].kind, us[i].ids, false,
						v_outcome, n, v_claimed, clock_timestamp());
			END IF;
		END LOOP;
	END IF;
	RETURN lost;
END
$$;

CREATE FUNCTION sh_outcome() RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN r < 0.06 THEN 'error' WHEN r < 0.18 THEN 'retry' ELSE 'complete' END
	  FROM (SELECT random() AS r) s
$$;

-- A leased consumer: claim (sometimes several units, sometimes waiting,
-- sometimes with its own process id), commit, work, maybe heartbeat,
-- overrun the lease, walk away or roll back its work, settle.
CREATE PROCEDURE sh_consume(me text)
LANGUAGE plpgsql AS $$
DECLARE
	us		sh_unit[];
	nunits	int;
	v_lease	interval;
	v_pid	uuid;
	v_wait	interval;
	t0		timestamptz;
	r		float8;
	lost	int;
	poisoned boolean;
BEGIN
	WHILE sh_running() LOOP
		nunits := CASE WHEN random() < 0.2 THEN 2 + floor(random() * 4)::int ELSE 1 END;
		v_lease := make_interval(secs => 1 + random());
		v_pid := CASE WHEN nunits = 1 AND random() < 0.3 THEN gen_random_uuid() END;
		v_wait := CASE WHEN random() < 0.3 THEN interval '200 ms' ELSE interval '0' END;
		BEGIN
			us := sh_claim(nunits, v_lease, v_pid, v_wait);
		EXCEPTION WHEN OTHERS THEN
			IF NOT sh_unreachable(SQLSTATE, SQLERRM) THEN
				RAISE;
			END IF;
			PERFORM sh_count('claim-unreachable', me);
			us := NULL;
		END;
		t0 := clock_timestamp();
		COMMIT;
		IF us IS NULL THEN
			PERFORM pg_sleep(0.01 + random() * 0.03);
			CONTINUE;
		END IF;
		IF nunits > 1 THEN
			PERFORM sh_count('batch', me);
		END IF;
		poisoned := EXISTS (SELECT 1 FROM unnest(us) x WHERE (x).poison);

		r := random();
		IF r < 0.03 THEN
			-- walk away: the lease expires and the shard's reaper frees it
			PERFORM sh_count('abandon', me);
			COMMIT;
			RETURN;
		ELSIF r < 0.08 THEN
			-- the work fails and rolls back before the settle: the claim
			-- stays (it committed on the shard) until its lease runs out
			PERFORM pg_sleep(random() * 0.05);
			ROLLBACK;
			PERFORM sh_count('rollback', me);
			COMMIT;
			CONTINUE;
		ELSIF r < 0.14 THEN
			-- overrun the lease: usually reaped meanwhile, the settle is lost
			PERFORM pg_sleep(extract(epoch FROM v_lease) + 0.3 + random() * 0.5);
		ELSIF r < 0.35 THEN
			PERFORM pg_sleep(random() * 0.2);
			BEGIN
				PERFORM dlsm_heartbeat('sq', (u).pid, v_lease) FROM unnest(us) u;
				PERFORM sh_count('heartbeat', me);
			EXCEPTION
				WHEN object_not_in_prerequisite_state THEN
					PERFORM sh_count('lost-heartbeat', me);
				WHEN OTHERS THEN
					IF NOT sh_unreachable(SQLSTATE, SQLERRM) THEN
						RAISE;
					END IF;
					PERFORM sh_count('heartbeat-unreachable', me);
			END;
			COMMIT;
			PERFORM pg_sleep(random() * 0.2);
		ELSE
			PERFORM pg_sleep(random() * 0.05);
		END IF;

		BEGIN
			lost := sh_settle(me, us, CASE WHEN poisoned THEN 'retry' ELSE sh_outcome() END, t0,
							  nunits = 1);
			IF lost > 0 THEN
				PERFORM sh_count('lost', me, lost);
			END IF;
		EXCEPTION WHEN OTHERS THEN
			IF NOT sh_unreachable(SQLSTATE, SQLERRM) THEN
				RAISE;
			END IF;
			PERFORM sh_count('settle-unreachable', me);
		END;
		IF random() < 0.03 THEN
			-- the router's transaction rolls back after the settle: the
			-- settle stays (it committed on its shard), its record goes
			ROLLBACK;
			PERFORM sh_count('rollback-after-settle', me);
		END IF;
		COMMIT;
	END LOOP;
END
$$;

-- The killer: every 0.3-1 s terminates one or two consumer backends of the
-- router (their claims stay behind on the shards until their leases end).
CREATE PROCEDURE sh_killer()
LANGUAGE plpgsql AS $$
BEGIN
	WHILE sh_running() LOOP
		PERFORM pg_sleep(0.3 + random() * 0.7);
		WITH victims AS MATERIALIZED (
			SELECT a.pid, a.application_name AS app
			  FROM pg_stat_activity a
			 WHERE a.application_name LIKE 'sh-consumer-%' AND a.pid <> pg_backend_pid()
			 ORDER BY random()
			 LIMIT CASE WHEN random() < 0.2 THEN 2 ELSE 1 END)
		INSERT INTO sh_stats (what, n, who)
		SELECT 'kill', 1, app FROM victims WHERE pg_terminate_backend(pid);
		COMMIT;
	END LOOP;
END
$$;

-- After the run: a clean consumer completes everything that is open on
-- any shard (poison is retried until its attempts are spent).
CREATE PROCEDURE sh_drain(seconds int)
LANGUAGE plpgsql AS $$
DECLARE
	us		sh_unit[];
	t0		timestamptz;
	drain_end timestamptz := clock_timestamp() + make_interval(secs => seconds);
BEGIN
	WHILE clock_timestamp() < drain_end LOOP
		us := sh_claim(50, interval '30 s', NULL, interval '0');
		t0 := clock_timestamp();
		COMMIT;
		IF us IS NULL THEN
			EXIT WHEN (SELECT sum(new + in_progress) FROM dlsm_queue_stats WHERE queue = 'sq') = 0;
			PERFORM dlsm_reap('sq');
			COMMIT;
			PERFORM pg_sleep(0.05);
			CONTINUE;
		END IF;
		PERFORM sh_settle('drain', (SELECT array_agg(x) FROM unnest(us) x WHERE (x).poison),
						  'retry', t0, false)
		  WHERE EXISTS (SELECT 1 FROM unnest(us) x WHERE (x).poison);
		PERFORM sh_settle('drain', (SELECT array_agg(x) FROM unnest(us) x WHERE NOT (x).poison),
						  'complete', t0, false)
		  WHERE EXISTS (SELECT 1 FROM unnest(us) x WHERE NOT (x).poison);
		COMMIT;
	END LOOP;
END
$$;
