SELECT dlsm_settle('uq', p) FROM (SELECT DISTINCT process_id AS p FROM dlsm_claim('uq')) u;
