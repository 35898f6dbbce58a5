SELECT dlsm_settle('bq', process_id) FROM dlsm_claim('bq');
