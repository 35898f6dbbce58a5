SELECT dlsm_settle('sq_rr', process_id) FROM dlsm_claim('sq_rr');
