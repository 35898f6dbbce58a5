-- A queue's shared entries (its floor, parked groups and rates, keyed by
-- the table's OID) do not outlive what they describe: TRUNCATE clears the
-- floor, dlsm_drop_queue clears every entry, and a table registered again
-- under the same OID starts afresh.  Each claim below comes at once, well
-- within the floors' own 1-s check, which would otherwise heal them.
SET client_min_messages = warning;
SELECT dlsm_create_queue('sq');
RESET client_min_messages;
SELECT dlsm_set_limit('sq', 'g', concurrency => 1);

-- g is full (e1 in progress, committed): a claim passes over e2 and parks g
SELECT dlsm_enqueue('sq', 'e1', group_key => 'g') IS NOT NULL AS enqueued;
SELECT entity FROM dlsm_claim('sq', lease => '1 hour');
SELECT dlsm_enqueue('sq', 'e2', group_key => 'g') IS NOT NULL AS enqueued;
SELECT count(*) FROM dlsm_claim('sq', lease => '1 hour');

-- TRUNCATE ... RESTART IDENTITY removes the unit in progress: g has room,
-- and the next request of g is claimed at once
TRUNCATE sq RESTART IDENTITY;
SELECT dlsm_enqueue('sq', 'e3', group_key => 'g');
SELECT entity FROM dlsm_claim('sq', lease => '1 hour');

-- again g full, and parked
SELECT dlsm_enqueue('sq', 'e4', group_key => 'g') IS NOT NULL AS enqueued;
SELECT count(*) FROM dlsm_claim('sq', lease => '1 hour');

-- the queue is dropped, its rows deleted, and the table registered again:
-- the same OID, a new queue, whose group g has no unit in progress
SELECT dlsm_drop_queue('sq', drop_table => false);
DELETE FROM sq;
SET client_min_messages = warning;
SELECT dlsm_register_queue('sq', group_key => 'group_key') = 'sq'::regclass AS registered;
RESET client_min_messages;
SELECT dlsm_set_limit('sq', 'g', concurrency => 1);
SELECT dlsm_enqueue('sq', 'e5', group_key => 'g') IS NOT NULL AS enqueued;
SELECT entity FROM dlsm_claim('sq', lease => '1 hour');

-- a rate of 1 a day taken by the old queue does not hold the new one back
SELECT dlsm_set_limit('sq', 'r', rate => 1, per => '1 day');
SELECT dlsm_enqueue('sq', 'r1', group_key => 'r') IS NOT NULL AS enqueued;
SELECT entity FROM dlsm_claim('sq', lease => '1 hour');
SELECT dlsm_drop_queue('sq', drop_table => false);
DELETE FROM sq;
SET client_min_messages = warning;
SELECT dlsm_register_queue('sq', group_key => 'group_key') = 'sq'::regclass AS registered;
RESET client_min_messages;
SELECT dlsm_set_limit('sq', 'r', rate => 1, per => '1 day');
SELECT dlsm_enqueue('sq', 'r2', group_key => 'r') IS NOT NULL AS enqueued;
SELECT entity FROM dlsm_claim('sq', lease => '1 hour');

SELECT dlsm_drop_queue('sq', drop_table => true);
