-- bench/scripts/dlsm_enqueue.sql: one enqueue per transaction, no dedup key
-- (bench/dedup_ab.sh's reference side)
\set r random(1, 1000000000000)
SELECT dlsm_enqueue('bq_plain', 'e' || :r, 'job');
