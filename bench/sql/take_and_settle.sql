-- bench/sql/take_and_settle.sql: claim + settle of queue bq_definer inside
-- a SECURITY DEFINER function with a pinned search_path (the definer lines
-- of bench/identity_ab.sh and bench/instructions_ab.sh)
CREATE FUNCTION bench_take_and_settle() RETURNS bigint LANGUAGE plpgsql
	SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE r record;
BEGIN
	SELECT * INTO r FROM dlsm_claim('bq_definer');
	RETURN dlsm_settle('bq_definer', r.process_id);
END $$;

