-- A queue's table changed after registration: dlsm checks its columns again
-- whenever the table changes, and refuses with the error its registration
-- would get, instead of reading a column of a new type as the old one (the
-- server crashed there).  Everything runs as an ordinary role owning its
-- table.
CREATE ROLE dlsm_drifter;
CREATE SCHEMA drift AUTHORIZATION dlsm_drifter;
SET ROLE dlsm_drifter;
SET search_path = drift, public;
CREATE TABLE hk (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  status text DEFAULT 'new', kind text DEFAULT 'create', entity text NOT NULL,
  process_id uuid, payload jsonb);
SELECT dlsm_register_queue('hk');
SELECT dlsm_enqueue('hk', '0') > 0 AS enqueued;

-- the entity becomes a bigint: every call that runs a statement on the
-- queue refuses, the descriptor-only ones still answer
ALTER TABLE hk ALTER COLUMN entity TYPE bigint USING entity::bigint;
INSERT INTO hk (entity) VALUES (1);
SELECT * FROM dlsm_claim('hk');
SELECT dlsm_enqueue('hk', '2');
SELECT dlsm_reap('hk');
SELECT dlsm_group_updates('hk', '1', gen_random_uuid());
SELECT dlsm_settle('hk', gen_random_uuid(), 'complete');
SELECT dlsm_heartbeat('hk', gen_random_uuid());
SELECT dlsm_alter_queue('hk', max_attempts => 3);
SELECT dlsm_set_handler('hk', NULL);
RESET ROLE;
SELECT new, in_progress FROM dlsm_queue_stats WHERE queue = 'drift.hk'::regclass;
SET ROLE dlsm_drifter;
SET search_path = drift, public;

-- changed back, the queue works again, and nothing was lost
ALTER TABLE hk ALTER COLUMN entity TYPE text;
SELECT entity, kind FROM dlsm_claim('hk', units => 5) ORDER BY id;

-- a domain over text is not text
CREATE DOMAIN name_text AS text;
ALTER TABLE hk ALTER COLUMN entity TYPE name_text;
SELECT * FROM dlsm_claim('hk');
ALTER TABLE hk ALTER COLUMN entity TYPE text;

-- the payload becomes text holding what is not JSON
ALTER TABLE hk ALTER COLUMN payload TYPE text;
INSERT INTO hk (entity, payload) VALUES ('p', 'not json');
SELECT * FROM dlsm_claim('hk');
DELETE FROM hk WHERE payload = 'not json';
ALTER TABLE hk ALTER COLUMN payload TYPE jsonb USING payload::jsonb;

-- a mapped column renamed, or dropped
ALTER TABLE hk RENAME COLUMN kind TO request_kind;
SELECT * FROM dlsm_claim('hk');
ALTER TABLE hk RENAME COLUMN request_kind TO kind;
ALTER TABLE hk DROP COLUMN process_id;
SELECT * FROM dlsm_claim('hk');
ALTER TABLE hk ADD COLUMN process_id uuid;

-- the id without its identity
ALTER TABLE hk ALTER COLUMN id DROP IDENTITY;
SELECT dlsm_enqueue('hk', 'x');
ALTER TABLE hk ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (START 1000);

-- an entity compared by a nondeterministic collation: two entities equal
-- under it would be two entities to dlsm's locks
CREATE COLLATION drift_ci (provider = icu, locale = 'und-u-ks-level2',
  deterministic = false);
ALTER TABLE hk ALTER COLUMN entity TYPE text COLLATE drift_ci;
SELECT * FROM dlsm_claim('hk');
ALTER TABLE hk ALTER COLUMN entity TYPE text COLLATE "C";
SELECT dlsm_enqueue('hk', 'after') > 0 AS enqueued;

-- a table that no longer fits can still be dropped by its owner
ALTER TABLE hk ALTER COLUMN attempts TYPE bigint;
SELECT * FROM dlsm_claim('hk');
SELECT dlsm_drop_queue('hk', drop_table => true);

-- NULLs where an adopted table allows them: such a row is never claimed,
-- and the rows after it are
CREATE TABLE hn (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  status text DEFAULT 'new', kind text DEFAULT 'create', entity text,
  process_id uuid);
SELECT dlsm_register_queue('hn');
INSERT INTO hn (entity, kind) VALUES (NULL, 'create'), ('e1', NULL),
  ('e2', 'create');
SELECT entity, kind FROM dlsm_claim('hn', units => 5);
SELECT entity, kind, status FROM hn ORDER BY id;

-- the dedup key column: refused with a nondeterministic collation at
-- registration ('Invoice-42' and 'invoice-42' would be one key to its
-- index, two to its lock), and when it gets one afterwards
CREATE TABLE hd (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  status text DEFAULT 'new', kind text DEFAULT 'create', entity text NOT NULL,
  process_id uuid, dedup_key text COLLATE drift_ci);
SELECT dlsm_register_queue('hd', dedup_key => 'dedup_key');
ALTER TABLE hd ALTER COLUMN dedup_key TYPE text COLLATE "C";
SELECT dlsm_register_queue('hd', dedup_key => 'dedup_key');
SELECT dlsm_enqueue('hd', 'e', dedup_key => 'Invoice-42') > 0 AS enqueued;
ALTER TABLE hd ALTER COLUMN dedup_key TYPE text COLLATE drift_ci;
SELECT dlsm_enqueue('hd', 'e', dedup_key => 'invoice-42');
SELECT count(*) FROM hd;

-- a queue dlsm created, altered the same way
SELECT dlsm_create_queue('made');
ALTER TABLE made ALTER COLUMN group_key TYPE int USING NULL;
SELECT dlsm_enqueue('made', 'e');
ALTER TABLE made ALTER COLUMN group_key TYPE text;
SELECT dlsm_enqueue('made', 'e') > 0 AS enqueued;
ALTER TABLE made ALTER COLUMN fence TYPE int;
SELECT * FROM dlsm_claim('made');
SELECT dlsm_drop_queue('made', drop_table => true);
SELECT dlsm_drop_queue('hd', drop_table => true);
SELECT dlsm_drop_queue('hn', drop_table => true);
-- an owner's trigger that writes NULL where dlsm reads a state back: the
-- reap released the row as it reads it, not as it wrote it (it crashed)
SELECT dlsm_create_queue('nul');
ALTER TABLE nul ALTER COLUMN status DROP NOT NULL;
CREATE FUNCTION nul_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF new.status = 'new' AND old.status = 'in-progress' THEN
    new.status := NULL;
  END IF;
  RETURN new;
END $$;
CREATE TRIGGER nul_status BEFORE UPDATE ON nul
  FOR EACH ROW EXECUTE FUNCTION nul_status();
SELECT dlsm_enqueue('nul', 'e') > 0 AS enqueued;
SELECT count(*) FROM dlsm_claim('nul', lease => '10 ms');
SELECT pg_sleep(0.1);
SELECT dlsm_reap('nul');
SELECT entity, status FROM nul;
-- the same for the process id a settle reads back: it crashed the server
-- in the settle, and in the worker's settle of a handler's unit at each start
CREATE OR REPLACE FUNCTION nul_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF new.status <> 'in-progress' THEN
    new.process_id := NULL;
  END IF;
  RETURN new;
END $$;
SELECT dlsm_enqueue('nul', 'p') > 0 AS enqueued;
SELECT dlsm_settle('nul', process_id) FROM dlsm_claim('nul', lease => '1 min');
SELECT entity, status, process_id IS NULL AS no_process_id FROM nul ORDER BY id;
SELECT dlsm_drop_queue('nul', drop_table => true);
RESET ROLE;
RESET search_path;
DROP SCHEMA drift CASCADE;
DROP ROLE dlsm_drifter;

-- a declaration that passes fewer arguments than the library reads (as an
-- older version's may) is refused before any is read
CREATE FUNCTION public.short_enqueue(regclass, text) RETURNS bigint
  AS 'dlsm', 'dlsm_enqueue' LANGUAGE C;
SELECT public.short_enqueue('pg_class', 'e');
DROP FUNCTION public.short_enqueue(regclass, text);
