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

-- The end of a timeline's space: claims, grouped updates and locks of
-- either scope hand out its last fence, then fail with 54000 rather than
-- a fence of the next timeline's space
SELECT last_value AS saved FROM dlsm_fence_seq \gset
SELECT ((:f1 >> 52) + 1) << 52 AS next_floor \gset
SELECT dlsm_create_queue('fence_end');
SELECT dlsm_enqueue('fence_end', e, k)
  FROM (VALUES ('a', 'update'), ('b', 'update'), ('c', 'update'),
               ('d', 'update')) v(e, k);
SELECT dlsm_raise_fence(:next_floor - 3) = :next_floor - 3 AS raised_to_end;
SELECT dlsm_try_lock('end1') = :next_floor - 2 AS second_last;
SELECT fence = :next_floor - 1 AS last FROM dlsm_claim('fence_end', lease => '1 hour');
SELECT dlsm_try_lock('end2');
\echo :LAST_ERROR_SQLSTATE
SELECT fence FROM dlsm_claim('fence_end', lease => '1 hour');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_try_lock('end3', lease => '1 minute');
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT dlsm_group_updates('fence_end', 'c', gen_random_uuid());
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SELECT dlsm_raise_fence(:next_floor - 2);
\echo :LAST_ERROR_SQLSTATE
SELECT max(fence) < :next_floor AS none_beyond FROM fence_end;
SELECT count(*) AS leases FROM dlsm_leases;
SELECT setval('dlsm_fence_seq', :saved) = :saved AS restored;
DROP TABLE fence_end;
