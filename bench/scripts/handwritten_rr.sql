BEGIN;
UPDATE hq_rr SET status = 'in-progress', process_id = gen_random_uuid() WHERE id = (SELECT id FROM hq_rr WHERE status = 'new' ORDER BY id FETCH FIRST ROW ONLY FOR UPDATE SKIP LOCKED) RETURNING process_id \gset
UPDATE hq_rr SET status = 'complete' WHERE process_id = :process_id::uuid;
COMMIT;
