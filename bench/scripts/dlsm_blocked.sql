SELECT dlsm_settle('sq_blocked', process_id) FROM dlsm_claim('sq_blocked');
