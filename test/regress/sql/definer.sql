-- A claim is written when its transaction commits only when it was made as
-- the session's own identity, with no function's settings in force.  Made
-- in a SECURITY DEFINER function, in a function with SET clauses or in a
-- security-restricted operation, it is written at once, inside that call,
-- as that identity under those settings: the queue owner's triggers never
-- run as one role under a search_path another role chose (issue 21 #1).
CREATE ROLE dlsm_admin;
CREATE ROLE dlsm_alice;
CREATE SCHEMA dadmin AUTHORIZATION dlsm_admin;
CREATE SCHEMA dalice AUTHORIZATION dlsm_alice;
SET ROLE dlsm_admin;
CREATE TABLE dadmin.audit_log (status text, who text, path text);
GRANT SELECT ON dadmin.audit_log TO PUBLIC;
SELECT dlsm_create_queue('dadmin.jobs');
-- the owner's trigger calls now() unqualified: under a search_path chosen
-- by someone else it would call their now()
CREATE FUNCTION dadmin.audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO dadmin.audit_log
		VALUES (NEW.status, current_user, current_setting('search_path'));
	PERFORM now();
	RETURN NEW;
END $$;
CREATE TRIGGER audit BEFORE UPDATE ON dadmin.jobs
	FOR EACH ROW EXECUTE FUNCTION dadmin.audit();
CREATE FUNCTION dadmin.take_job(OUT id bigint, OUT entity text)
	RETURNS SETOF record LANGUAGE sql SECURITY DEFINER
	SET search_path = dadmin, pg_temp AS
$$ SELECT id, entity FROM public.dlsm_claim('dadmin.jobs', lease => '5 min') $$;
-- the same, with SET clauses but not SECURITY DEFINER
CREATE FUNCTION dadmin.take_pinned(OUT id bigint, OUT entity text)
	RETURNS SETOF record LANGUAGE sql SET search_path = dadmin, pg_temp AS
$$ SELECT id, entity FROM public.dlsm_claim('dadmin.jobs') $$;
-- SECURITY DEFINER, no SET clause
CREATE FUNCTION dadmin.take_definer(OUT id bigint, OUT entity text)
	RETURNS SETOF record LANGUAGE sql SECURITY DEFINER AS
$$ SELECT id, entity FROM public.dlsm_claim('dadmin.jobs') $$;
REVOKE ALL ON FUNCTION dadmin.take_job(), dadmin.take_definer() FROM PUBLIC;
GRANT USAGE ON SCHEMA dadmin TO dlsm_alice;
GRANT EXECUTE ON FUNCTION dadmin.take_job(), dadmin.take_definer() TO dlsm_alice;
SELECT count(dlsm_enqueue('dadmin.jobs', 'e' || e)) FROM generate_series(1, 5) e;
RESET ROLE;

-- alice puts her own now() first in her search_path
SET ROLE dlsm_alice;
CREATE TABLE dalice.hijacked (who text);
GRANT USAGE ON SCHEMA dalice TO PUBLIC;
GRANT INSERT ON dalice.hijacked TO PUBLIC;
CREATE FUNCTION dalice.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO dalice.hijacked VALUES (current_user);
	RETURN pg_catalog.now();
END $$;
SET search_path = dalice, pg_catalog;
BEGIN;
SELECT entity FROM dadmin.take_job();
-- written already, inside the call
SELECT count(*) AS written_in_call FROM dadmin.audit_log;
COMMIT;
RESET search_path;
-- a definer without SET clauses: written at once as well, as the definer
-- (under the caller's search_path: an unpinned definer function's own
-- risk, as everywhere in PostgreSQL)
BEGIN;
SELECT entity FROM dadmin.take_definer();
SELECT count(*) AS written_in_call FROM dadmin.audit_log;
COMMIT;
RESET ROLE;
-- the trigger ran as the definer under the definer's search_path, never
-- alice's now() as dlsm_admin
SELECT status, who, path FROM dadmin.audit_log;
SELECT who FROM dalice.hijacked;
SELECT entity, status FROM dadmin.jobs ORDER BY id;
TRUNCATE dadmin.audit_log;

-- a function with SET clauses only: written inside the call too
BEGIN;
SELECT entity FROM dadmin.take_pinned();
SELECT count(*) AS written_in_call FROM dadmin.audit_log;
ROLLBACK;
TRUNCATE dadmin.audit_log;

-- in the session's own identity too, a claim of a table whose UPDATE runs
-- a user's code (here the owner's trigger) is written at once, inside the
-- call, as the claimer under the session's settings: nothing of a user
-- runs while the transaction commits (a claim of a table without such code
-- is written at commit: isolation spec pending)
BEGIN;
SET LOCAL search_path = dadmin, public;
SELECT entity FROM dlsm_claim('dadmin.jobs');
SELECT count(*) AS written_in_call FROM dadmin.audit_log;
COMMIT;
SELECT status, who = current_user AS as_claimer, path FROM dadmin.audit_log;
TRUNCATE dadmin.audit_log;

-- a claim and its settle in one definer call: settled, and the claim's
-- write and the settle both ran as the definer
SET ROLE dlsm_admin;
CREATE FUNCTION dadmin.take_and_settle() RETURNS bigint LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = dadmin, pg_temp AS $$
DECLARE r record;
BEGIN
	SELECT * INTO r FROM public.dlsm_claim('dadmin.jobs');
	RETURN public.dlsm_settle('dadmin.jobs', r.process_id);
END $$;
RESET ROLE;
BEGIN;
SELECT dadmin.take_and_settle() AS settled;
COMMIT;
SELECT status, who, path FROM dadmin.audit_log;
SELECT entity, status FROM dadmin.jobs ORDER BY id;

-- a write the owner's trigger refuses fails the claim itself, inside the
-- call: no row is sent, nothing can be settled (55000), and the request
-- is still new, for the next claim (it once failed the COMMIT instead,
-- after the claim's rows were sent)
CREATE FUNCTION dadmin.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'no claims today'; END $$;
CREATE TRIGGER refuse BEFORE UPDATE ON dadmin.jobs FOR EACH ROW
	WHEN (NEW.status = 'in-progress') EXECUTE FUNCTION dadmin.refuse();
SELECT entity FROM dlsm_claim('dadmin.jobs',
	process_id => '88888888-8888-8888-8888-888888888888');
SELECT dlsm_settle('dadmin.jobs', '88888888-8888-8888-8888-888888888888');
SELECT entity, status, attempts FROM dadmin.jobs WHERE entity = 'e5';

-- a capture inserts into its queue as the queue's owner: the owner's
-- hooks on the queue run as the owner with search_path pinned to
-- pg_catalog, pg_temp, never under the writer's search_path
SET ROLE dlsm_admin;
SELECT dlsm_create_queue('dadmin.changes');
CREATE FUNCTION dadmin.audit_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO dadmin.audit_log
		VALUES ('captured', current_user, current_setting('search_path'));
	PERFORM now();
	RETURN NEW;
END $$;
CREATE TRIGGER audit BEFORE INSERT ON dadmin.changes
	FOR EACH ROW EXECUTE FUNCTION dadmin.audit_insert();
CREATE TABLE dadmin.source (id int PRIMARY KEY);
SELECT dlsm_capture('dadmin.source', 'dadmin.changes');
GRANT INSERT ON dadmin.source TO dlsm_alice;
RESET ROLE;
TRUNCATE dadmin.audit_log, dalice.hijacked;
SET ROLE dlsm_alice;
SET search_path = dalice, pg_catalog;
INSERT INTO dadmin.source VALUES (1);
RESET search_path;
RESET ROLE;
SELECT status, who, path FROM dadmin.audit_log;
SELECT who FROM dalice.hijacked;
SELECT entity FROM dadmin.changes;

DROP SCHEMA dadmin CASCADE;
DROP SCHEMA dalice CASCADE;
DROP ROLE dlsm_admin;
DROP ROLE dlsm_alice;
