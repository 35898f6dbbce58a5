SELECT dlsm_settle('bq_tx', process_id) FROM dlsm_claim('bq_tx');
