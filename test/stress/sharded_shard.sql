-- test/stress/sharded_shard.sql: what each shard of the sharded stress run
-- (test/t/060_sharding.pl) keeps besides dlsm: the history of every request
-- of the queue sq, written by a row trigger in the transaction of the change
-- itself (the enqueue, the claim, the settle, the reaper's pass, the copy of
-- a create by a move), so that nothing the router or a killed consumer does
-- can leave it out of step with the queue.  Run after the router created sq.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TABLE sq_history (
	seq			bigserial PRIMARY KEY,
	id			bigint NOT NULL,
	entity		text NOT NULL,
	kind		text NOT NULL,
	old_status	text,					-- NULL: the row was inserted
	new_status	text NOT NULL,
	old_pid		uuid,
	old_fence	bigint,
	process_id	uuid,
	fence		bigint,
	run_at		timestamptz,
	detail		text,
	token		text,					-- the producer's token (payload)
	at			timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX ON sq_history (id);

CREATE FUNCTION sq_history_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		INSERT INTO sq_history (id, entity, kind, new_status, process_id, fence,
								run_at, detail, token)
		VALUES (NEW.id, NEW.entity, NEW.kind, NEW.status, NEW.process_id, NEW.fence,
				NEW.run_at, NEW.detail, NEW.payload->>'token');
	ELSIF NEW.status IS DISTINCT FROM OLD.status
		  OR NEW.process_id IS DISTINCT FROM OLD.process_id
		  OR NEW.fence IS DISTINCT FROM OLD.fence THEN
		INSERT INTO sq_history (id, entity, kind, old_status, new_status, old_pid,
								old_fence, process_id, fence, run_at, detail, token)
		VALUES (NEW.id, NEW.entity, NEW.kind, OLD.status, NEW.status, OLD.process_id,
				OLD.fence, NEW.process_id, NEW.fence, NEW.run_at, NEW.detail,
				NEW.payload->>'token');
	END IF;
	RETURN NULL;
END
$$;

CREATE TRIGGER sq_history AFTER INSERT OR UPDATE ON sq
	FOR EACH ROW EXECUTE FUNCTION sq_history_row();
