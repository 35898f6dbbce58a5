-- bench/scripts/dlsm_enqueue_dedup_batch.sql: 100 enqueues per transaction,
-- each with a new dedup key (bench/dedup_ab.sh)
\set r random(1, 1000000000000)
SELECT count(dlsm_enqueue('bq_dedup', 'e' || (:r::bigint + g), 'job', dedup_key => 'k' || (:r::bigint + g)))
  FROM generate_series(1, 100) g;
