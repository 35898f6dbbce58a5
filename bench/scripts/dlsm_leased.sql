SELECT process_id FROM dlsm_claim('bq_leased', lease => '5 minutes') \gset
SELECT dlsm_settle('bq_leased', :process_id);
