SELECT count(*) FROM dlsm_settle_many('bq_batch', ARRAY(SELECT process_id FROM dlsm_claim('bq_batch', units => 100)));
