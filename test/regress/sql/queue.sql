-- Queues: creation, registry, enqueue, unregistering
CREATE EXTENSION dlsm;

SELECT dlsm_create_queue('jobs');
CREATE SCHEMA spreadsheets;
SELECT dlsm_create_queue('spreadsheets.request_queue', channel => 'sheets',
						 max_attempts => 3, retention => '7 days');
-- a name that needs quoting
CREATE SCHEMA "Odd Schema";
SELECT dlsm_create_queue('"Odd Schema"."Q 1"');

SELECT queue, channel, max_attempts, retention, registered_by
  FROM dlsm_queues ORDER BY queue::text;

-- the table: the columns of README's dlsm_create_queue, partial indexes, wake trigger
SELECT attname, format_type(atttypid, atttypmod), attnotnull
  FROM pg_attribute
 WHERE attrelid = 'jobs'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT indexname, indexdef FROM pg_indexes
 WHERE tablename = 'jobs' ORDER BY indexname;
SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass;
SELECT tgname, tgtype FROM pg_trigger WHERE tgrelid = 'jobs'::regclass;

-- enqueue: the function and a plain INSERT
SELECT dlsm_enqueue('jobs', 'e1');
SELECT dlsm_enqueue('jobs', 'e1', 'update', '{"cells": 3}');
SELECT dlsm_enqueue('jobs', 'e2', 'report', NULL, now() + interval '1 hour');
INSERT INTO jobs (entity, kind) VALUES ('e3', 'create'), ('e3', 'update');
SELECT id, status, kind, entity, payload, attempts, process_id, fence,
	   run_at > now() AS delayed
  FROM jobs ORDER BY id;

-- one create per entity (the sparse unique index of the article
-- "Implementing a Distributed Lock State Machine")
SELECT dlsm_enqueue('jobs', 'e1', 'create');

-- unregister but keep the table: the wake trigger goes, the rows stay
SELECT dlsm_create_queue('kept');
SELECT dlsm_enqueue('kept', 'x');
SELECT dlsm_drop_queue('kept');
SELECT count(*) AS registered FROM dlsm_queues WHERE queue = 'kept'::regclass;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'kept'::regclass;
SELECT count(*) AS rows_kept FROM kept;
INSERT INTO kept (entity) VALUES ('y');
DROP TABLE kept;

-- unregister and drop the table
SELECT dlsm_drop_queue('"Odd Schema"."Q 1"', drop_table => true);
SELECT to_regclass('"Odd Schema"."Q 1"') AS dropped;

-- a plain DROP TABLE unregisters the queue too
SELECT dlsm_create_queue('gone');
DROP TABLE gone;
SELECT count(*) AS still_registered FROM dlsm_queues WHERE queue::text = 'gone';

SELECT queue FROM dlsm_queues ORDER BY queue::text;

-- dlsm's own words for a second create only when the index broken is the
-- queue's unique index of creates (on its entity column): another unique
-- index keeps PostgreSQL's error
CREATE TABLE adopt_u (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid, ext text DEFAULT 'x');
CREATE UNIQUE INDEX adopt_u_ext ON adopt_u (ext) WHERE ext IS NOT NULL;
SELECT dlsm_register_queue('adopt_u');
SELECT dlsm_enqueue('adopt_u', 'a', 'create') > 0 AS enqueued;
SELECT dlsm_enqueue('adopt_u', 'b', 'create');
SELECT dlsm_drop_queue('adopt_u', drop_table => true);
