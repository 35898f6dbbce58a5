SELECT dlsm_settle('sq_1m', process_id) FROM dlsm_claim('sq_1m');
