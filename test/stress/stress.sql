-- test/stress/stress.sql: schema and actors of the stress run (stress.sh).
--
-- Every actor is a PROCEDURE that loops with COMMIT/ROLLBACK inside, run by
-- psql from a shell loop that restarts it: killing the backend or crashing
-- the server only makes the loop reconnect.  Everything the checks need is
-- written in the same transaction as the change it describes, so a kill or a
-- crash can never leave the bookkeeping out of step with the queue:
--   stress_producer_log  one row per committed request (same transaction)
--   stress_audit         one row per settled unit (same transaction as the
--                        settle), with its claim and settle times
--   stress_stats         events without a queue change: kills, rollbacks,
--                        lost claims, abandoned leases, reaps, crashes

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('stress_q', max_attempts => 5);

-- Groups of entities with limits: every group at most 2 units in
-- progress, g1 at most 1, g2 at most 3, gr at most 2 and 10 claims a
-- second; one entity in six has no group.
SELECT dlsm_set_limit('stress_q', concurrency => 2);
SELECT dlsm_set_limit('stress_q', 'g1', concurrency => 1);
SELECT dlsm_set_limit('stress_q', 'g2', concurrency => 3);
SELECT dlsm_set_limit('stress_q', 'gr', concurrency => 2, rate => 10,
					  per => '1 second');
CREATE FUNCTION stress_group(e text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE abs(hashtext(e)) % 6 WHEN 0 THEN NULL WHEN 5 THEN 'gr'
		   ELSE 'g' || abs(hashtext(e)) % 6 END
$$;

CREATE TABLE stress_control (
	stop	boolean NOT NULL DEFAULT false,
	run_end	timestamptz NOT NULL
);

CREATE TABLE stress_producer_log (
	id			bigint PRIMARY KEY,
	entity		text NOT NULL,
	kind		text NOT NULL,
	logged_at	timestamptz NOT NULL DEFAULT clock_timestamp(),
	txid		bigint NOT NULL DEFAULT txid_current()
);
CREATE INDEX ON stress_producer_log (entity, kind);

CREATE TABLE stress_audit (
	unit_id		bigserial PRIMARY KEY,
	consumer	text NOT NULL,
	mode		text NOT NULL,			-- tx, leased, drain
	process_id	uuid NOT NULL,
	fence		bigint NOT NULL,		-- min of fences
	fences		bigint[] NOT NULL,		-- fence of each claimed row, by id
	entity		text NOT NULL,			-- min of entities
	entities	text[] NOT NULL,		-- distinct entities of the unit
	kind		text NOT NULL,
	kinds		text[] NOT NULL,		-- distinct kinds of the unit
	ids			bigint[] NOT NULL,		-- claimed rows, by id
	outcome		text NOT NULL,			-- complete, error, retry
	settled		bigint NOT NULL,		-- rows the settle reported
	statuses	text[] NOT NULL,		-- status of each row after the settle
	run_at		timestamptz NOT NULL,	-- latest run_at of the rows when claimed
	group_key	text,					-- the group of the unit's entity
	claimed_at	timestamptz NOT NULL,	-- the claim's time (lease_until - lease)
	settling_at	timestamptz NOT NULL,	-- just before the settle (the unit's
										-- slot of its group comes free in it)
	started_at	timestamptz NOT NULL,	-- right after the claim returned
	ended_at	timestamptz NOT NULL,	-- just before the settle's commit
	txid		bigint NOT NULL DEFAULT txid_current()
);
CREATE INDEX ON stress_audit (entity, started_at);
CREATE INDEX ON stress_audit (process_id);

-- Dead letters and deduplication: every dlsm_requeue of a request (at most
-- once each) and every enqueue with a dedup key, in the same transaction
CREATE TABLE stress_requeue_log (
	id			bigint PRIMARY KEY,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE stress_dedup_log (
	n			bigserial PRIMARY KEY,
	key			text NOT NULL,
	id			bigint NOT NULL,		-- what dlsm_enqueue returned
	added		boolean NOT NULL,		-- NOT dlsm_enqueue_deduplicated()
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE stress_stats (
	what		text NOT NULL,
	n			bigint NOT NULL,
	who			text,
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- One unit as returned by dlsm_claim, rows grouped by process id.
CREATE TYPE stress_unit AS (
	pid			uuid,
	fence		bigint,
	fences		bigint[],
	entity		text,
	entities	text[],
	kind		text,
	kinds		text[],
	ids			bigint[],
	poison		boolean,				-- a request that always fails
	run_at		timestamptz,			-- latest run_at of its rows
	group_key	text,					-- the group of its entity
	claimed_at	timestamptz				-- as the claim gave it
);

CREATE FUNCTION stress_running() RETURNS boolean
LANGUAGE sql STABLE AS $$
	SELECT NOT stop AND clock_timestamp() < run_end FROM stress_control
$$;

-- Claim up to v_units units; NULL when nothing was claimable.  The run_at
-- of the claimed rows is read back in a second statement (the claim leaves
-- it as it was), to check that nothing was claimed before it was due.
CREATE FUNCTION stress_claim(v_units int, v_lease interval, v_pid uuid,
							 v_wait interval)
RETURNS stress_unit[]
LANGUAGE plpgsql AS $$
DECLARE
	us		stress_unit[];
	u		stress_unit;
BEGIN
	SELECT array_agg(x ORDER BY (x).fence) INTO us FROM (
		SELECT ROW(c.process_id, min(c.fence),
				   array_agg(c.fence ORDER BY c.id),
				   min(c.entity), array_agg(DISTINCT c.entity),
				   min(c.kind), array_agg(DISTINCT c.kind),
				   array_agg(c.id ORDER BY c.id),
				   bool_or(coalesce((c.payload->>'poison')::boolean, false)),
				   NULL::timestamptz, NULL::text,
				   min(c.lease_until) - coalesce(v_lease,
						current_setting('dlsm.default_lease')::interval)
				  )::stress_unit AS x
		  FROM dlsm_claim('stress_q', lease => v_lease, process_id => v_pid,
						  wait => v_wait, units => v_units) c
		 GROUP BY c.process_id) s;
	FOR i IN 1 .. coalesce(cardinality(us), 0) LOOP
		u := us[i];
		SELECT max(q.run_at), min(q.group_key) INTO u.run_at, u.group_key
		  FROM stress_q q WHERE q.id = ANY (u.ids);
		us[i] := u;
	END LOOP;
	RETURN us;
END
$$;

-- Record a settled unit; call in the settle's transaction, after it.
CREATE FUNCTION stress_record(me text, v_mode text, u stress_unit,
							  v_outcome text, v_settled bigint,
							  v_start timestamptz, v_settling timestamptz)
RETURNS void
LANGUAGE sql AS $$
	INSERT INTO stress_audit (consumer, mode, process_id, fence, fences,
							  entity, entities, kind, kinds, ids, outcome,
							  settled, statuses, run_at, group_key,
							  claimed_at, settling_at, started_at, ended_at)
	SELECT me, v_mode, (u).pid, (u).fence, (u).fences, (u).entity,
		   (u).entities, (u).kind, (u).kinds, (u).ids, v_outcome, v_settled,
		   (SELECT array_agg(q.status ORDER BY q.id) FROM stress_q q
			 WHERE q.id = ANY ((u).ids)),
		   (u).run_at, (u).group_key, (u).claimed_at, v_settling, v_start,
		   clock_timestamp()
$$;

-- A payload; one request in 80 is poison: consumers always retry it, so it
-- ends in error once its attempts are spent (and fails its whole unit).
CREATE FUNCTION stress_payload(i int) RETURNS jsonb
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN random() < 0.0125
				THEN jsonb_build_object('i', i, 'poison', true)
				ELSE jsonb_build_object('i', i, 'at', clock_timestamp()) END
$$;

-- The producer: creates first per entity, then updates, at random over
-- n_entities entities, until max_requests or the end of the run.  Each
-- committed request is logged in the same transaction.
CREATE PROCEDURE stress_produce(max_requests int, n_entities int,
								pause float8)
LANGUAGE plpgsql AS $$
DECLARE
	e		text;
	k		int;
	made	bigint;
BEGIN
	SELECT count(*) INTO made FROM stress_producer_log;
	WHILE stress_running() AND made < max_requests LOOP
		e := 'e' || (1 + floor(random() * n_entities))::int;
		IF NOT EXISTS (SELECT 1 FROM stress_producer_log
						WHERE entity = e AND kind = 'create') THEN
			IF random() < 0.5 THEN
				INSERT INTO stress_producer_log (id, entity, kind)
				VALUES (dlsm_enqueue('stress_q', e, 'create',
									 stress_payload(0),
									 group_key => stress_group(e)),
						e, 'create');
			ELSE
				WITH r AS (INSERT INTO stress_q (entity, kind, payload, group_key)
						   VALUES (e, 'create', stress_payload(0), stress_group(e))
						   RETURNING id, entity, kind)
				INSERT INTO stress_producer_log (id, entity, kind)
				SELECT id, entity, kind FROM r;
			END IF;
			made := made + 1;
			-- now and then updates right behind the create, same transaction
			IF random() < 0.2 THEN
				k := 1 + floor(random() * 2)::int;
				WITH r AS (INSERT INTO stress_q (entity, kind, payload, group_key)
						   SELECT e, 'update', stress_payload(g), stress_group(e)
							 FROM generate_series(1, k) g
						   RETURNING id, entity, kind)
				INSERT INTO stress_producer_log (id, entity, kind)
				SELECT id, entity, kind FROM r;
				made := made + k;
			END IF;
		ELSIF random() < 0.3 THEN
			INSERT INTO stress_producer_log (id, entity, kind)
			VALUES (dlsm_enqueue('stress_q', e, 'update',
								 stress_payload(0),
								 group_key => stress_group(e)),
					e, 'update');
			made := made + 1;
		ELSE
			k := 1 + floor(random() * 3)::int;
			WITH r AS (INSERT INTO stress_q (entity, kind, payload, group_key)
					   SELECT e, 'update', stress_payload(g), stress_group(e)
						 FROM generate_series(1, k) g
					   RETURNING id, entity, kind)
			INSERT INTO stress_producer_log (id, entity, kind)
			SELECT id, entity, kind FROM r;
			made := made + k;
		END IF;
		COMMIT;
		PERFORM pg_sleep(pause * random() * 2);
	END LOOP;
END
$$;

-- Settle the units us with one outcome: dlsm_settle for one unit,
-- dlsm_settle_many for several.  Records each settled unit in the audit
-- and returns how many units were lost (settled nothing).  Raises 55000
-- when a single unit was lost (the caller catches it).
CREATE FUNCTION stress_settle(me text, v_mode text, us stress_unit[],
							  v_outcome text, v_start timestamptz)
RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
	u		stress_unit;
	i		bigint;
	n		bigint;
	lost	int := 0;
	retry	interval;
	settling timestamptz := clock_timestamp();
BEGIN
	IF v_outcome = 'retry' THEN
		retry := make_interval(secs => 0.05 + random() * 0.45);
	END IF;
	IF cardinality(us) = 1 THEN
		u := us[1];
		n := dlsm_settle('stress_q', u.pid, v_outcome, 'stress ' || me, retry);
		PERFORM stress_record(me, v_mode, u, v_outcome, n, v_start, settling);
	ELSE
		FOR i, n IN
			SELECT s.ord, s.settled
			  FROM dlsm_settle_many('stress_q',
									(SELECT array_agg((y).pid) FROM unnest(us) y),
									v_outcome, 'stress ' || me, retry)
				   WITH ORDINALITY AS s(process_id, settled, ord)
		LOOP
			IF n = 0 THEN
				lost := lost + 1;
			ELSE
				PERFORM stress_record(me, v_mode, us[i], v_outcome, n, v_start, settling);
			END IF;
		END LOOP;
	END IF;
	RETURN lost;
END
$$;

CREATE FUNCTION stress_pick_outcome() RETURNS text
LANGUAGE sql VOLATILE AS $$
	SELECT CASE WHEN r < 0.06 THEN 'error'
				WHEN r < 0.18 THEN 'retry'
				ELSE 'complete' END
	  FROM (SELECT random() AS r) s
$$;

-- A consumer.  mode 'tx': claim, work and settle in one transaction, or
-- roll back.  mode 'leased': claim with a short lease and commit, work,
-- maybe heartbeat, overrun the lease or walk away, settle in a later
-- transaction (catching 55000 for a lost claim).  mode 'drain': a clean
-- transactional consumer that completes everything until nothing is open.
CREATE PROCEDURE stress_consume(me text, v_mode text)
LANGUAGE plpgsql AS $$
DECLARE
	us		stress_unit[];
	nunits	int;
	v_lease	interval;
	v_pid	uuid;
	v_wait	interval;
	t0		timestamptz;
	r		float8;
	lost	int;
	poisoned boolean;
	drain_end timestamptz := clock_timestamp() + interval '60 seconds';
BEGIN
	LOOP
		IF v_mode = 'drain' THEN
			EXIT WHEN clock_timestamp() > drain_end;
		ELSE
			EXIT WHEN NOT stress_running();
		END IF;

		nunits := CASE WHEN v_mode = 'drain' THEN 50
					   WHEN random() < 0.2 THEN 2 + floor(random() * 4)::int
					   ELSE 1 END;
		v_lease := CASE WHEN v_mode = 'leased'
						THEN make_interval(secs => 1 + random()) END;
		v_pid := CASE WHEN nunits = 1 AND random() < 0.3
					  THEN gen_random_uuid() END;
		v_wait := CASE WHEN v_mode = 'tx' AND random() < 0.3
					   THEN interval '200 ms' ELSE interval '0' END;

		us := stress_claim(nunits, v_lease, v_pid, v_wait);
		t0 := clock_timestamp();
		poisoned := EXISTS (SELECT 1 FROM unnest(us) x WHERE (x).poison);
		IF us IS NULL THEN
			COMMIT;
			IF v_mode = 'drain' THEN
				EXIT WHEN NOT EXISTS (SELECT 1 FROM stress_q
									   WHERE status IN ('new', 'in-progress'));
				PERFORM dlsm_reap('stress_q');
				COMMIT;
				PERFORM pg_sleep(0.05);
			ELSE
				PERFORM pg_sleep(0.01 + random() * 0.03);
			END IF;
			CONTINUE;
		END IF;

		IF v_mode = 'drain' THEN
			PERFORM stress_settle(me, v_mode, us,
								  CASE WHEN poisoned THEN 'retry' ELSE 'complete' END, t0);
			COMMIT;
			CONTINUE;
		END IF;

		IF v_mode = 'tx' THEN
			PERFORM pg_sleep(random() * 0.02);		-- the work
			IF random() < 0.08 THEN
				ROLLBACK;
				INSERT INTO stress_stats (what, n, who) VALUES ('rollback', 1, me);
				COMMIT;
				CONTINUE;
			END IF;
			lost := stress_settle(me, v_mode, us,
								  CASE WHEN poisoned THEN 'retry'
									   ELSE stress_pick_outcome() END, t0);
			IF lost > 0 THEN		-- cannot happen to a transactional claim
				INSERT INTO stress_stats (what, n, who) VALUES ('lost-tx', lost, me);
			END IF;
			COMMIT;
			CONTINUE;
		END IF;

		-- leased: the claim commits now, the work happens outside it
		COMMIT;
		r := random();
		IF r < 0.04 THEN
			-- die without settling: the lease expires and the reaper frees it
			INSERT INTO stress_stats (what, n, who) VALUES ('abandon', 1, me);
			COMMIT;
			RETURN;
		ELSIF r < 0.12 THEN
			-- overrun the lease: usually reaped meanwhile, the settle is lost
			PERFORM pg_sleep(extract(epoch FROM v_lease) + 0.3 + random() * 0.5);
			IF random() < 0.5 THEN
				BEGIN
					PERFORM dlsm_heartbeat('stress_q', u.pid, v_lease)
					   FROM unnest(us) u;
					INSERT INTO stress_stats (what, n, who) VALUES ('heartbeat', 1, me);
				EXCEPTION WHEN SQLSTATE '55000' THEN
					INSERT INTO stress_stats (what, n, who)
					VALUES ('lost-heartbeat', 1, me);
				END;
				COMMIT;
			END IF;
		ELSIF r < 0.35 THEN
			PERFORM pg_sleep(random() * 0.2);
			BEGIN
				PERFORM dlsm_heartbeat('stress_q', u.pid, v_lease)
				   FROM unnest(us) u;
				INSERT INTO stress_stats (what, n, who) VALUES ('heartbeat', 1, me);
			EXCEPTION WHEN SQLSTATE '55000' THEN
				INSERT INTO stress_stats (what, n, who)
				VALUES ('lost-heartbeat', 1, me);
			END;
			COMMIT;
			PERFORM pg_sleep(random() * 0.2);
		ELSE
			PERFORM pg_sleep(random() * 0.05);
		END IF;

		IF random() < 0.05 THEN
			-- the settling transaction fails: the lease runs out later
			BEGIN
				PERFORM stress_settle(me, v_mode, us, 'complete', t0);
			EXCEPTION WHEN SQLSTATE '55000' THEN
				NULL;
			END;
			ROLLBACK;
			INSERT INTO stress_stats (what, n, who) VALUES ('rollback', 1, me);
			COMMIT;
			CONTINUE;
		END IF;

		BEGIN
			lost := stress_settle(me, v_mode, us,
								  CASE WHEN poisoned THEN 'retry'
									   ELSE stress_pick_outcome() END, t0);
		EXCEPTION WHEN SQLSTATE '55000' THEN
			lost := 1;
		END;
		IF lost > 0 THEN
			INSERT INTO stress_stats (what, n, who) VALUES ('lost', lost, me);
		END IF;
		COMMIT;
	END LOOP;
END
$$;

-- The janitor: there is no background worker yet, so reap by hand.
-- The dedup producer: 'ping' requests of entities dk1..dk20, each with the
-- dedup key of its entity, so that a key has at most one live request; a
-- row added is logged like the producer's, a call answered with an
-- existing id in stress_dedup_log.
CREATE PROCEDURE stress_dedup_produce()
LANGUAGE plpgsql AS $$
DECLARE
	k		text;
	rid		bigint;
BEGIN
	WHILE stress_running() LOOP
		k := 'dk' || (1 + floor(random() * 20))::int;
		rid := dlsm_enqueue('stress_q', k, 'ping', stress_payload(0),
							dedup_key => k);
		INSERT INTO stress_dedup_log (key, id, added)
		VALUES (k, rid, NOT dlsm_enqueue_deduplicated());
		IF NOT dlsm_enqueue_deduplicated() THEN
			INSERT INTO stress_producer_log (id, entity, kind) VALUES (rid, k, 'ping');
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.02 + random() * 0.05);
	END LOOP;
END
$$;

-- The dead-letter clerk: now and then requeues a 'ping' a consumer
-- settled as error (each at most once), mostly one whose dedup key no live
-- request held when it looked (refused, 55000, when one holds it by the
-- requeue, or when both requests picked hold one key), and cancels a new
-- 'ping' (refused, 55000, when it is in progress meanwhile).
CREATE PROCEDURE stress_dead_letters()
LANGUAGE plpgsql AS $$
DECLARE
	ids		bigint[];
	n		bigint;
BEGIN
	WHILE stress_running() LOOP
		SELECT array_agg(id) INTO ids FROM (
			SELECT q.id FROM stress_q q
			 WHERE q.kind = 'ping' AND q.status = 'error'
			   AND q.detail LIKE 'stress %'
			   AND NOT EXISTS (SELECT 1 FROM stress_requeue_log r WHERE r.id = q.id)
			   AND (random() < 0.2 OR NOT EXISTS (
					SELECT 1 FROM stress_q o WHERE o.dedup_key = q.dedup_key
					   AND o.status IN ('new', 'in-progress')))
			 ORDER BY random() LIMIT 2) s;
		IF ids IS NOT NULL THEN
			BEGIN
				n := dlsm_requeue('stress_q', ids);
				INSERT INTO stress_requeue_log (id)
				SELECT q.id FROM stress_q q WHERE q.id = ANY (ids) AND q.status = 'new';
				INSERT INTO stress_stats (what, n, who) VALUES ('requeued', n, 'clerk');
			EXCEPTION WHEN SQLSTATE '55000' THEN
				INSERT INTO stress_stats (what, n, who) VALUES ('requeue-refused', 1, 'clerk');
			END;
		END IF;
		COMMIT;
		BEGIN
			SELECT array_agg(id) INTO ids FROM (
				SELECT q.id FROM stress_q q
				 WHERE q.kind = 'ping' AND q.status = 'new'
				 ORDER BY random() LIMIT 1) s;
			IF ids IS NOT NULL THEN
				n := dlsm_cancel('stress_q', ids);
				INSERT INTO stress_stats (what, n, who) VALUES ('cancelled', n, 'clerk');
			END IF;
		EXCEPTION WHEN SQLSTATE '55000' THEN
			INSERT INTO stress_stats (what, n, who) VALUES ('cancel-refused', 1, 'clerk');
		END;
		COMMIT;
		PERFORM pg_sleep(0.3 + random() * 0.4);
	END LOOP;
END
$$;

CREATE PROCEDURE stress_janitor()
LANGUAGE plpgsql AS $$
DECLARE
	n	bigint;
BEGIN
	WHILE stress_running() LOOP
		n := dlsm_reap('stress_q');
		IF n > 0 THEN
			INSERT INTO stress_stats (what, n, who) VALUES ('reaped', n, 'janitor');
		END IF;
		COMMIT;
		PERFORM pg_sleep(0.2 + random() * 0.2);
	END LOOP;
END
$$;

-- The killer: every 0.3-1 s terminates a random consumer backend, now and
-- then two, one time in twenty the producer instead.  Seven times out of
-- ten it prefers a consumer in the middle of a transactional unit: one
-- holding an entity lock of the queue (an advisory-type lock on the queue's OID whose field4,
-- objsubid in pg_locks, has its top bit set, so it reads negative).
CREATE PROCEDURE stress_killer()
LANGUAGE plpgsql AS $$
DECLARE
	prefer	boolean;
	victim_producer boolean;
BEGIN
	WHILE stress_running() LOOP
		PERFORM pg_sleep(0.3 + random() * 0.7);
		prefer := random() < 0.7;
		victim_producer := random() < 0.05;
		WITH victims AS MATERIALIZED (
			SELECT pid, app, held FROM (
				SELECT a.pid, a.application_name AS app,
					   EXISTS (SELECT 1 FROM pg_locks l
								WHERE l.pid = a.pid AND l.locktype = 'advisory'
								  AND l.classid = 'stress_q'::regclass::oid
								  AND l.objsubid < 0 AND l.granted) AS held
				  FROM pg_stat_activity a
				 WHERE CASE WHEN victim_producer
							THEN a.application_name = 'stress-producer'
							ELSE a.application_name LIKE 'stress-consumer-%' END
				   AND a.pid <> pg_backend_pid()) c
			 ORDER BY held AND prefer DESC, random()
			 LIMIT CASE WHEN random() < 0.2 THEN 2 ELSE 1 END),
		killed AS MATERIALIZED (
			SELECT app, held FROM victims WHERE pg_terminate_backend(pid))
		INSERT INTO stress_stats (what, n, who)
		SELECT w, 1, app
		  FROM killed,
			   unnest(CASE WHEN app = 'stress-producer' THEN '{kill-producer}'::text[]
						   WHEN held THEN '{kill,kill-in-unit}'::text[]
						   ELSE '{kill}'::text[] END) w;
		COMMIT;
	END LOOP;
END
$$;
