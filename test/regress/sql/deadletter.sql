-- Dead letters: dlsm_requeue takes requests in error back to new,
-- dlsm_cancel settles new ones as error; both keep every rule of an entity
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dlsm;
RESET client_min_messages;
SELECT dlsm_create_queue('dl', max_attempts => 2);
CREATE ROLE dlsm_dl_admin;
CREATE ROLE dlsm_dl_reader;
GRANT SELECT, UPDATE ON dl TO dlsm_dl_admin;
GRANT SELECT ON dl TO dlsm_dl_reader;

-- a fails once, b spends its attempts on retries (ids 1 and 2)
SELECT dlsm_enqueue('dl', 'a'), dlsm_enqueue('dl', 'b');
SELECT fence AS a_fence FROM dlsm_claim('dl') \gset
SELECT dlsm_settle('dl', process_id, 'error', 'boom') FROM dl WHERE entity = 'a';
SELECT dlsm_settle('dl', process_id, 'retry', 'flaky', '0')
  FROM dlsm_claim('dl', lease => '1 hour');
SELECT fence AS b_fence FROM dlsm_claim('dl', lease => '1 hour') \gset
SELECT dlsm_settle('dl', process_id, 'retry', 'flaky again', '0') FROM dl WHERE entity = 'b';
-- c is enqueued after them and is still new
SELECT dlsm_enqueue('dl', 'c');
SELECT id, entity, status, attempts, detail FROM dl ORDER BY id;

-- requeue: only the rows in error move (c is new, 99 does not exist), as
-- the caller, whose name the detail keeps with the last detail and attempts
SET ROLE dlsm_dl_admin;
SELECT dlsm_requeue('dl', ARRAY[3, 2, 99, 1]) AS requeued;
RESET ROLE;
SELECT id, entity, status, attempts, detail, process_id IS NULL AS no_pid,
	   fence IS NULL AS no_fence, claimed_at IS NULL AND lease_until IS NULL
	   AND settled_at IS NULL AS unclaimed, run_at <= now() AS due
  FROM dl ORDER BY id;
-- requeued twice: the second call finds nothing in error
SELECT dlsm_requeue('dl', ARRAY[1, 2]) AS requeued_again;
-- claimed again in id order, before c, with higher fences
SELECT entity, fence > :a_fence AND fence > :b_fence AS higher_fence
  FROM dlsm_claim('dl', lease => '1 hour');
SELECT entity FROM dlsm_claim('dl', lease => '1 hour');
SELECT entity FROM dlsm_claim('dl', lease => '1 hour');
SELECT entity, status, attempts, detail FROM dl ORDER BY id;
SELECT dlsm_settle('dl', process_id) FROM dl WHERE status = 'in-progress';

-- per entity: an update enqueued before its create (4), the create (5),
-- an update after it (6).  The create fails; its updates are settled error
-- by the next claim.
SELECT dlsm_enqueue('dl', 'e', 'update'), dlsm_enqueue('dl', 'e', 'create'),
	   dlsm_enqueue('dl', 'e', 'update');
SELECT dlsm_settle('dl', process_id, 'error', 'no sheet')
  FROM dlsm_claim('dl', lease => '1 hour');
SELECT count(*) AS claimed FROM dlsm_claim('dl');
SELECT id, kind, status, detail FROM dl WHERE entity = 'e' ORDER BY id;
-- the updates requeued alone fail again: their create is still in error
SELECT dlsm_requeue('dl', ARRAY[4, 6]) AS requeued;
SELECT count(*) AS claimed FROM dlsm_claim('dl');
SELECT id, status, attempts FROM dl WHERE entity = 'e' ORDER BY id;
-- requeued with their create: the create goes first, the updates wait for
-- it, then come as one unit
SELECT dlsm_requeue('dl', ARRAY[6, 5, 4]) AS requeued;
SELECT id, kind FROM dlsm_claim('dl', lease => '1 hour');
SELECT count(*) AS while_create_in_progress FROM dlsm_claim('dl');
SELECT id, status FROM dl WHERE entity = 'e' ORDER BY id;
SELECT dlsm_settle('dl', process_id) FROM dl WHERE status = 'in-progress';
SELECT id, kind, process_id IS NOT NULL AS claimed
  FROM dlsm_claim('dl', lease => '1 hour') ORDER BY id;
SELECT count(DISTINCT process_id) AS units FROM dl WHERE status = 'in-progress';
SELECT dlsm_settle('dl', process_id) FROM dl WHERE status = 'in-progress' LIMIT 1;

-- cancel: only new rows move, to error, naming who cancelled; complete (1),
-- error and missing ids are passed over
SELECT dlsm_enqueue('dl', 'f'), dlsm_enqueue('dl', 'g');
SELECT dlsm_enqueue('dl', 'h', 'bad') \gset
SELECT dlsm_settle('dl', process_id, 'error') FROM dlsm_claim('dl', after => :dlsm_enqueue - 1);
SET ROLE dlsm_dl_admin;
SELECT dlsm_cancel('dl', ARRAY[7, 1, 9, 99]) AS cancelled;
RESET ROLE;
SELECT id, entity, status, detail, settled_at IS NOT NULL AS settled,
	   process_id IS NULL AS never_claimed
  FROM dl WHERE id >= 7 ORDER BY id;
-- a cancelled request is never handed out
SELECT entity FROM dlsm_claim('dl', lease => '1 hour');
-- nor requeued twice into two claims: cancel, requeue, claim once
SELECT dlsm_requeue('dl', ARRAY[7]) AS requeued;
SELECT entity FROM dlsm_claim('dl', lease => '1 hour');
SELECT count(*) AS nothing_left FROM dlsm_claim('dl');

-- in progress (f and g, claimed with a lease): refused, nothing changes
SELECT dlsm_enqueue('dl', 'k') AS k_id \gset
\set VERBOSITY default
SELECT dlsm_cancel('dl', ARRAY[:k_id, 8]);
\echo :LAST_ERROR_SQLSTATE
SELECT id, status FROM dl WHERE id IN (:k_id, 8) ORDER BY id;
-- a claim of this very transaction reads 'new' in the table until its
-- commit: it is in progress all the same
BEGIN;
SELECT id AS k_claimed, process_id AS k_pid FROM dlsm_claim('dl') \gset
SELECT status FROM dl WHERE id = :k_claimed;
SAVEPOINT s;
SELECT dlsm_cancel('dl', ARRAY[:k_claimed]);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK TO s;
-- the claim is still this transaction's: its settle writes it
SELECT dlsm_settle('dl', :'k_pid');
COMMIT;
SELECT id = :k_claimed AS same, status, detail FROM dl WHERE id = :k_id;

-- a create cancelled: its updates fail at the next claim, as for a
-- create in error
SELECT dlsm_enqueue('dl', 'm', 'create') AS m_id, dlsm_enqueue('dl', 'm', 'update') \gset
SET ROLE dlsm_dl_admin;
SELECT dlsm_cancel('dl', ARRAY[:m_id]) AS cancelled;
RESET ROLE;
SELECT count(*) AS claimed FROM dlsm_claim('dl');
SELECT kind, status, detail FROM dl WHERE entity = 'm' ORDER BY id;

-- an adopted table with columns of its own names and a text process id
CREATE TABLE dl_adopted (
	rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	st text NOT NULL DEFAULT 'new',
	k text NOT NULL DEFAULT 'create',
	sheet text NOT NULL,
	worker text);
SELECT dlsm_register_queue('dl_adopted', id => 'rid', status => 'st',
	kind => 'k', entity => 'sheet', process_id => 'worker');
INSERT INTO dl_adopted (sheet) VALUES ('s1'), ('s2');
SELECT dlsm_settle('dl_adopted', process_id, 'error', 'bad sheet')
  FROM dlsm_claim('dl_adopted', lease => '1 hour');
SELECT dlsm_cancel('dl_adopted', ARRAY[2]) AS cancelled,
	   dlsm_requeue('dl_adopted', ARRAY[1]) AS requeued;
SELECT rid, st, worker IS NULL AS no_worker, attempts,
	   replace(detail, current_user, 'me') AS detail
  FROM dl_adopted ORDER BY rid;
SELECT id, entity FROM dlsm_claim('dl_adopted', lease => '1 hour');
SELECT dlsm_cancel('dl_adopted', ARRAY[1]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_requeue('dl_adopted', ARRAY[2]) AS requeued;
SELECT id, entity FROM dlsm_claim('dl_adopted', lease => '1 hour');
SELECT rid, st, attempts FROM dl_adopted ORDER BY rid;
SELECT dlsm_drop_queue('dl_adopted', drop_table => true);

-- bad input: nothing changes
SELECT dlsm_enqueue('dl', 'n') AS n_id \gset
SELECT dlsm_requeue(NULL, ARRAY[1]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel(NULL, ARRAY[:n_id]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_requeue('dl', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel('dl', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_requeue('dl', ARRAY[1, NULL]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel('dl', ARRAY[NULL, :n_id]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_requeue('dl', ARRAY[[1, 2], [3, 4]]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel('dl', ARRAY[[:n_id]]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_requeue('dl', '{}') AS requeued, dlsm_cancel('dl', '{}') AS cancelled;
CREATE TABLE dl_plain (id bigint);
SELECT dlsm_requeue('dl_plain', ARRAY[1]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel('dl_plain', ARRAY[1]);
\echo :LAST_ERROR_SQLSTATE
-- without UPDATE on the queue: 42501
SET ROLE dlsm_dl_reader;
SELECT dlsm_requeue('dl', ARRAY[1]);
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_cancel('dl', ARRAY[:n_id]);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT status, detail FROM dl WHERE id = :n_id;
SELECT status, count(*) FROM dl GROUP BY status ORDER BY status;

DROP TABLE dl_plain;
SELECT dlsm_drop_queue('dl', drop_table => true);
DROP ROLE dlsm_dl_admin;
DROP ROLE dlsm_dl_reader;
