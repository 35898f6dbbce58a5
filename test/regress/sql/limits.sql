-- Groups and their limits: dlsm_set_limit, dlsm_limits, and claims that
-- pass over a group at its limit.
SET client_min_messages = warning;
SELECT dlsm_create_queue('lq');
RESET client_min_messages;

-- a queue made by dlsm_create_queue has a group column
SELECT group_column FROM dlsm_queues WHERE queue = 'lq'::regclass;

-- five entities of group a, three of b, two without a group
SELECT count(dlsm_enqueue('lq', 'a' || i, group_key => 'a')) FROM generate_series(1, 5) i;
SELECT count(dlsm_enqueue('lq', 'b' || i, group_key => 'b')) FROM generate_series(1, 3) i;
SELECT count(dlsm_enqueue('lq', 'n' || i)) FROM generate_series(1, 2) i;

-- every group at most 2 units at once, b at most 1
SELECT dlsm_set_limit('lq', concurrency => 2);
SELECT dlsm_set_limit('lq', 'b', concurrency => 1);
SELECT group_key, concurrency, rate, per FROM dlsm_group_limits
 WHERE queue = 'lq'::regclass ORDER BY group_key NULLS FIRST;

-- one claim of ten units gets two of a, one of b and both without a group
SELECT entity FROM dlsm_claim('lq', units => 10, lease => '1 hour') ORDER BY id;

-- they are in progress now: a second claim gets nothing
SELECT count(*) FROM dlsm_claim('lq', units => 10, lease => '1 hour');
SELECT group_key, concurrency, in_progress FROM dlsm_limits
 WHERE queue = 'lq'::regclass ORDER BY group_key NULLS FIRST;
SELECT ready, held_by_limits FROM dlsm_queue_stats WHERE queue = 'lq'::regclass;

-- settling a unit of a frees one slot of a
SELECT dlsm_settle('lq', process_id) FROM lq WHERE entity = 'a1';
SELECT entity FROM dlsm_claim('lq', units => 10, lease => '1 hour');

-- a transaction's claims count as they are made: with b's limit raised
-- to 2, one claim takes one more of b, and a claim in the same
-- transaction none
BEGIN;
SELECT dlsm_set_limit('lq', 'b', concurrency => 2);
SELECT entity FROM dlsm_claim('lq', units => 10);
SELECT count(*) FROM dlsm_claim('lq', units => 10);
ROLLBACK;

-- removing b's own limit puts it under the default (2)
SELECT dlsm_set_limit('lq', 'b');
SELECT entity FROM dlsm_claim('lq', units => 10, lease => '1 hour');
SELECT count(*) FROM dlsm_group_limits WHERE queue = 'lq'::regclass;

-- a rate limit: one claim of group r per hour
SELECT dlsm_enqueue('lq', 'r' || i, group_key => 'r') > 0 FROM generate_series(1, 3) i;
SELECT dlsm_set_limit('lq', 'r', rate => 1, per => '1 hour');
SELECT entity FROM dlsm_claim('lq', units => 10, lease => '1 hour');
SELECT count(*) FROM dlsm_claim('lq', units => 10, lease => '1 hour');
SELECT group_key, rate, per, tokens_left, next_claim_at > now() + '59 minutes' AS later
  FROM dlsm_limits WHERE queue = 'lq'::regclass AND group_key = 'r';

-- a claim that rolls back gives no slot back early: the slot is free
-- again after the rollback
SELECT dlsm_enqueue('lq', 'c' || i, group_key => 'c') > 0 FROM generate_series(1, 2) i;
SELECT dlsm_set_limit('lq', 'c', concurrency => 1);
BEGIN;
SELECT entity FROM dlsm_claim('lq', units => 10);
ROLLBACK;
SELECT entity FROM dlsm_claim('lq', units => 10, lease => '1 hour');

-- a unit settled in the transaction that claimed it frees its slot at
-- once: the create, then the updates, of the article
-- "Implementing a Distributed Lock State Machine", in one transaction with group z at most 1
SELECT dlsm_set_limit('lq', 'z', concurrency => 1);
SELECT dlsm_enqueue('lq', 'z1', 'create', group_key => 'z') > 0;
SELECT dlsm_enqueue('lq', 'z1', 'update', group_key => 'z') > 0 FROM generate_series(1, 2);
BEGIN;
SELECT dlsm_settle('lq', process_id) FROM dlsm_claim('lq', units => 1) WHERE entity = 'z1';
SELECT kind, count(*) FROM dlsm_claim('lq', units => 5) WHERE entity = 'z1' GROUP BY kind;
COMMIT;

-- a claim rolled back to a savepoint gives its slot back
SELECT dlsm_set_limit('lq', 'y', concurrency => 1);
SELECT dlsm_enqueue('lq', 'y' || i, 'job', group_key => 'y') > 0 FROM generate_series(1, 2) i;
BEGIN;
SAVEPOINT s;
SELECT entity FROM dlsm_claim('lq', units => 5) WHERE entity LIKE 'y%';
ROLLBACK TO SAVEPOINT s;
SELECT entity FROM dlsm_claim('lq', units => 5) WHERE entity LIKE 'y%';
ROLLBACK;

-- units that share a process id are units all the same: one call with a
-- process id of its own takes two of group p (at most 2), and a third is
-- passed over after their commit
SET client_min_messages = warning;
SELECT dlsm_create_queue('lq2') IS NOT NULL;
RESET client_min_messages;
SELECT dlsm_set_limit('lq2', 'p', concurrency => 2);
SELECT dlsm_enqueue('lq2', 'p' || i, 'job', group_key => 'p') > 0 FROM generate_series(1, 3) i;
SELECT entity FROM dlsm_claim('lq2', units => 3, lease => '1 hour',
	process_id => '00000000-0000-0000-0000-0000000000b1');
SELECT count(*) FROM dlsm_claim('lq2', units => 3, lease => '1 hour');

-- a settle rolled back to its savepoint leaves the unit claimed, with its
-- slot: group s (at most 1) has no room for s2
SELECT dlsm_set_limit('lq2', 's', concurrency => 1);
SELECT dlsm_enqueue('lq2', 's' || i, 'job', group_key => 's') > 0 FROM generate_series(1, 2) i;
BEGIN;
SELECT process_id AS spid FROM dlsm_claim('lq2', units => 1) \gset
SAVEPOINT a;
SELECT dlsm_settle('lq2', :'spid');
ROLLBACK TO SAVEPOINT a;
SELECT count(*) FROM dlsm_claim('lq2', units => 5);
ROLLBACK;
SELECT dlsm_drop_queue('lq2', drop_table => true);

-- a request its entity holds back takes no slot: with k1 in progress and
-- group k at most 2, k1's next request waits and k2's is claimed
SELECT dlsm_set_limit('lq', 'k', concurrency => 2);
SELECT dlsm_enqueue('lq', 'k1', 'job', group_key => 'k') > 0;
SELECT entity FROM dlsm_claim('lq', units => 1, lease => '1 hour') WHERE entity LIKE 'k%';
SELECT dlsm_enqueue('lq', e, 'job', group_key => 'k') > 0 FROM unnest(ARRAY['k1', 'k2']) e;
SELECT entity FROM dlsm_claim('lq', units => 5, lease => '1 hour') WHERE entity LIKE 'k%';

-- dlsm_group_updates keeps the limits too: u1's updates wait while u2's
-- unit holds group gu's one slot
SELECT dlsm_set_limit('lq', 'gu', concurrency => 1);
SELECT dlsm_enqueue('lq', e, 'create', group_key => 'gu') > 0 FROM unnest(ARRAY['u1', 'u2']) e;
UPDATE lq SET status = 'complete' WHERE entity = 'u1';
SELECT dlsm_enqueue('lq', 'u1', 'update', group_key => 'gu') > 0 FROM generate_series(1, 2);
SELECT entity FROM dlsm_claim('lq', units => 1, lease => '1 hour') WHERE entity LIKE 'u%';
SELECT dlsm_group_updates('lq', 'u1', '00000000-0000-0000-0000-0000000000a1');
SELECT dlsm_settle('lq', process_id) FROM lq WHERE entity = 'u2' AND status = 'in-progress';
SELECT dlsm_group_updates('lq', 'u1', '00000000-0000-0000-0000-0000000000a1');
-- the same process id grouping again joins its own unit
SELECT dlsm_enqueue('lq', 'u1', 'update', group_key => 'gu') > 0;
SELECT dlsm_group_updates('lq', 'u1', '00000000-0000-0000-0000-0000000000a1');
SELECT dlsm_group_updates('lq', 'u1', '00000000-0000-0000-0000-0000000000a2');

-- bad input changes nothing
SELECT dlsm_set_limit(NULL, concurrency => 1);
SELECT dlsm_set_limit('lq', concurrency => 0);
SELECT dlsm_set_limit('lq', concurrency => -1);
SELECT dlsm_set_limit('lq', concurrency => 1001);
SELECT dlsm_set_limit('lq', rate => 0);
SELECT dlsm_set_limit('lq', rate => -5);
SELECT dlsm_set_limit('lq', rate => 1, per => NULL);
SELECT dlsm_set_limit('lq', rate => 1, per => '0');
SELECT dlsm_set_limit('lq', rate => 1, per => '-1 second');
SELECT dlsm_set_limit('lq', rate => 1, per => '200 years');
SELECT dlsm_set_limit('pg_class', concurrency => 1);
SELECT dlsm_enqueue('lq', 'x', group_key => NULL) > 0;
SELECT count(*) FROM dlsm_group_limits WHERE queue = 'lq'::regclass;

-- an adopted table without a group column has no groups
CREATE TABLE adopted (id bigserial PRIMARY KEY, status text NOT NULL,
	kind text NOT NULL, entity text NOT NULL, process_id uuid);
SET client_min_messages = warning;
SELECT dlsm_register_queue('adopted');
RESET client_min_messages;
SELECT dlsm_enqueue('adopted', 'e', group_key => 'g');
SELECT dlsm_set_limit('adopted', concurrency => 1);
SELECT dlsm_drop_queue('adopted');
-- one with a group column names it; a column of another type is refused
ALTER TABLE adopted ADD COLUMN tenant text, ADD COLUMN num int;
SELECT dlsm_register_queue('adopted', group_key => 'num');
SELECT dlsm_register_queue('adopted', group_key => 'nothere');
SET client_min_messages = warning;
SELECT dlsm_register_queue('adopted', group_key => 'tenant');
RESET client_min_messages;
SELECT dlsm_enqueue('adopted', 'e', group_key => 'g') > 0;
SELECT dlsm_set_limit('adopted', 'g', concurrency => 1);
SELECT c.entity, a.tenant FROM dlsm_claim('adopted', units => 5) c JOIN adopted a USING (id);

-- only the queue's owner sets its limits
CREATE ROLE limits_other;
GRANT SELECT, UPDATE ON lq TO limits_other;
SET ROLE limits_other;
SELECT dlsm_set_limit('lq', concurrency => 5);
RESET ROLE;

-- dropping a queue drops its limits
SELECT dlsm_drop_queue('adopted', drop_table => true);
SELECT dlsm_drop_queue('lq', drop_table => true);
SELECT count(*) FROM dlsm_group_limits;
DROP ROLE limits_other;

-- a claim waiting on a group held back by its rate wakes when the group's
-- next claim is due (300 ms here), not at its once-a-second look
SELECT dlsm_create_queue('rq');
SELECT dlsm_enqueue('rq', 'w' || i, 'job', group_key => 'w') > 0 FROM generate_series(1, 2) i;
SELECT dlsm_set_limit('rq', 'w', rate => 1, per => '300 ms');
SELECT entity FROM dlsm_claim('rq');
SELECT entity, clock_timestamp() - statement_timestamp() < interval '800 ms' AS woken_when_due
  FROM dlsm_claim('rq', wait => '5 s');
DROP TABLE rq;

-- a queue owner who is not a superuser: a rate's window is at most a day
-- (a group's entry in shared memory lives that long), and past the
-- owner's share of the table of rate limits (4,096 groups) claims are
-- admitted, their rate not kept, with one WARNING
CREATE ROLE limits_tenant;
GRANT CREATE ON SCHEMA public TO limits_tenant;
SET ROLE limits_tenant;
SET client_min_messages = warning;
SELECT dlsm_create_queue('tq');
SELECT dlsm_set_limit('tq', rate => 1, per => '1 day 1 second');
SELECT dlsm_set_limit('tq', rate => 1, per => '100 days');
SELECT dlsm_set_limit('tq', rate => 2, per => '1 day');
SELECT count(dlsm_enqueue('tq', 'e' || i, group_key => 'g' || i)) FROM generate_series(1, 4200) i;
SELECT count(*) FROM dlsm_claim('tq', units => 2000);
SELECT count(*) FROM dlsm_claim('tq', units => 2000);
SELECT count(*) FROM dlsm_claim('tq', units => 2000);
-- the groups within the share keep their rate; those past it have none
SELECT dlsm_enqueue('tq', 'again1', group_key => 'g1') > 0;
SELECT dlsm_enqueue('tq', 'again4200', group_key => 'g4200') > 0;
SELECT entity FROM dlsm_claim('tq', units => 2);
-- dropping the queue frees its groups' entries
SELECT dlsm_drop_queue('tq', drop_table => true);
SELECT dlsm_create_queue('tq');
SELECT dlsm_set_limit('tq', rate => 2, per => '1 day');
SELECT count(dlsm_enqueue('tq', 'e' || i, group_key => 'g' || i)) FROM generate_series(1, 4000) i;
SELECT count(*) FROM dlsm_claim('tq', units => 2000);
SELECT count(*) FROM dlsm_claim('tq', units => 2000);
-- its last group's rate is kept: it found an entry
SELECT dlsm_enqueue('tq', 'again', group_key => 'g4000') > 0;
SELECT count(*) FROM dlsm_claim('tq');
SELECT dlsm_drop_queue('tq', drop_table => true);
RESET client_min_messages;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM limits_tenant;
DROP ROLE limits_tenant;

-- a unit settled inside a savepoint gives its slot back to its
-- transaction: the entity's update is claimed next, under the one slot
SET client_min_messages = warning;
SELECT dlsm_create_queue('sq');
RESET client_min_messages;
SELECT dlsm_set_limit('sq', 'g', concurrency => 1);
SELECT dlsm_enqueue('sq', 'e1', 'create', group_key => 'g');
SELECT dlsm_enqueue('sq', 'e1', 'update', group_key => 'g');
SELECT dlsm_enqueue('sq', 'e2', 'create', group_key => 'g');
BEGIN;
SAVEPOINT a;
SELECT dlsm_settle('sq', process_id) FROM dlsm_claim('sq');
SELECT id, entity, kind FROM dlsm_claim('sq');
ROLLBACK;
-- a settle in a savepoint released, then the update claimed and settled
-- in another, then e2: one slot at a time
BEGIN;
SAVEPOINT a;
SELECT dlsm_settle('sq', process_id) FROM dlsm_claim('sq');
RELEASE SAVEPOINT a;
SAVEPOINT b;
SELECT dlsm_settle('sq', process_id) FROM dlsm_claim('sq');
SELECT id, entity, kind FROM dlsm_claim('sq');
SELECT count(*) FROM dlsm_claim('sq');
COMMIT;
SELECT id, status FROM sq ORDER BY id;
SELECT group_key, in_progress FROM dlsm_limits WHERE queue = 'sq'::regclass;
SELECT dlsm_drop_queue('sq', drop_table => true);

-- a unit counts against the group of its first request only: e1's
-- updates in g0 then g1 hold a slot of g0, and e2's update in g1 is
-- claimed under g1's limit of 1
SET client_min_messages = warning;
SELECT dlsm_create_queue('uq');
RESET client_min_messages;
SELECT dlsm_set_limit('uq', 'g1', concurrency => 1);
SELECT dlsm_enqueue('uq', 'e1', 'update', group_key => 'g0');
SELECT dlsm_enqueue('uq', 'e1', 'update', group_key => 'g1');
SELECT dlsm_enqueue('uq', 'e2', 'update', group_key => 'g1');
SELECT entity, kind FROM dlsm_claim('uq', lease => '1 hour');
SELECT group_key, in_progress FROM dlsm_limits WHERE queue = 'uq'::regclass;
SELECT in_progress FROM dlsm_group_state('uq', 'g1');
SELECT entity FROM dlsm_claim('uq', lease => '1 hour');
SELECT dlsm_drop_queue('uq', drop_table => true);
