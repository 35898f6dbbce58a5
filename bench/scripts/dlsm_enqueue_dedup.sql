-- bench/scripts/dlsm_enqueue_dedup.sql: one enqueue per transaction with a
-- dedup key, a new one each time (bench/dedup_ab.sh)
\set r random(1, 1000000000000)
SELECT dlsm_enqueue('bq_dedup', 'e' || :r, 'job', dedup_key => 'k' || :r);
