-- Durations that dlsm reads from its own tables, written there by hand:
-- one too long to count in microseconds is cut to just under 100 years,
-- instead of a number wrapped round; not an error, which would stop every
-- use of the queue (the worker's passes over its database included) until
-- the row was mended.  As arguments, such durations are errors.
SET client_min_messages = warning;
SELECT dlsm_create_queue('durq');
RESET client_min_messages;
SELECT count(dlsm_enqueue('durq', 'e' || i, group_key => 'g'))
  FROM generate_series(1, 6) i;

-- a rate of one unit per 100,000,000 years (dlsm_set_limit refuses it):
-- one unit, the next not before a century
INSERT INTO dlsm_group_limits (queue, group_key, rate, per)
VALUES ('durq', NULL, 1, '100000000 years');
SELECT count(*) FROM dlsm_claim('durq', units => 2, lease => '1 hour');
DELETE FROM dlsm_group_limits WHERE queue = 'durq'::regclass;

-- a handler timeout of 100,000,000 years (dlsm_alter_queue refuses it),
-- read by a new session (a hand's write does not tell this one's cache):
-- the queue works
UPDATE dlsm_queues SET handler_timeout = '100000000 years'
 WHERE queue = 'durq'::regclass;
\c -
SELECT count(*) FROM dlsm_claim('durq', units => 2, lease => '1 hour');
-- and one of minus 100,000,000 years: none, as NULL (dlsm.handler_timeout)
UPDATE dlsm_queues SET handler_timeout = '-100000000 years'
 WHERE queue = 'durq'::regclass;
\c -
SELECT count(*) FROM dlsm_claim('durq', units => 2, lease => '1 hour');
UPDATE dlsm_queues SET handler_timeout = NULL WHERE queue = 'durq'::regclass;
SELECT count(*) FROM dlsm_claim('durq', units => 2, lease => '1 hour');

-- the same durations as arguments
SELECT dlsm_set_limit('durq', rate => 1, per => '100000000 years');
SELECT dlsm_alter_queue('durq', handler_timeout => '100000000 years');

SET client_min_messages = warning;
SELECT dlsm_drop_queue('durq');
