-- bench/scripts/dlsm_enqueue_batch.sql: 100 enqueues per transaction, no
-- dedup key: the cost of the call without a commit per row (bench/dedup_ab.sh)
\set r random(1, 1000000000000)
SELECT count(dlsm_enqueue('bq_plain', 'e' || (:r::bigint + g), 'job'))
  FROM generate_series(1, 100) g;
