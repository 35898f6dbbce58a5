-- Fences: in the space of the server's timeline, never repeated, raised
-- on demand
SELECT dlsm_create_queue('fence_q');
SELECT dlsm_enqueue('fence_q', 'x');
SELECT fence AS f1 FROM dlsm_claim('fence_q', lease => '1 hour') \gset
SELECT (:f1 >> 52) AS timeline,
	   (:f1 & ((1::bigint << 52) - 1)) > 0 AS counter_above_zero;
SELECT dlsm_try_lock('fl') > :f1 AS lock_after_claim;

-- DROP and CREATE EXTENSION: the new sequence starts above every fence
-- handed out before
SET client_min_messages = warning;
DROP EXTENSION dlsm CASCADE;
RESET client_min_messages;
CREATE EXTENSION dlsm;
SELECT dlsm_try_lock('fl') > :f1 AS after_recreate;
SELECT last_value > :f1 AS sequence_above FROM dlsm_fence_seq;
-- the sequence is not dumped: a restore starts its own fence space
SELECT count(*) AS dumped FROM pg_extension, unnest(extconfig) c
 WHERE extname = 'dlsm' AND c = 'dlsm_fence_seq'::regclass;

-- dlsm_raise_fence: every later fence exceeds the floor given
SELECT dlsm_raise_fence(:f1 + 1000000) >= :f1 + 1000000 AS raised;
SELECT dlsm_try_lock('fl') > :f1 + 1000000 AS above_floor;
SELECT dlsm_raise_fence(1) >= :f1 + 1000000 AS never_lowered;
SELECT dlsm_raise_fence(2::bigint << 52);
SELECT dlsm_raise_fence(NULL) IS NULL AS strict;
CREATE ROLE dlsm_fencer;
SET ROLE dlsm_fencer;
SELECT dlsm_raise_fence(1);
SELECT dlsm_fence_start();
RESET ROLE;
DROP ROLE dlsm_fencer;
DROP TABLE fence_q;
