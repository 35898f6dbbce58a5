-- Adopting an existing table: spreadsheets.request_queue of the article
-- "Implementing a Distributed Lock State Machine", as printed (with names given to its CHECK
-- constraints)
CREATE SCHEMA article;
CREATE SEQUENCE article.request_queue_id_seq;
CREATE TABLE article.request_queue (
  request_queue_id BIGINT NOT NULL PRIMARY KEY DEFAULT NEXTVAL('article.request_queue_id_seq'),
  request_status TEXT NOT NULL DEFAULT 'new',
  request_type TEXT NOT NULL DEFAULT 'create',
  process_id TEXT,
  spreadsheet_id TEXT NOT NULL,
  CONSTRAINT request_status_check CHECK (
    request_status IN (
      'complete',
      'error',
      'in-progress',
      'new'
    )
  ),
  CONSTRAINT request_type_check CHECK (
    request_type IN (
      'create',
      'update'
    )
  )
);
CREATE UNIQUE INDEX request_queue_01
ON article.request_queue (
  spreadsheet_id, request_type
)
WHERE (
  request_type = 'create'
);

SELECT dlsm_register_queue('article.request_queue',
	id => 'request_queue_id', status => 'request_status',
	kind => 'request_type', entity => 'spreadsheet_id',
	process_id => 'process_id', channel => 'spreadsheets_request_queue');
SELECT queue, channel, id_column, status_column, kind_column, entity_column,
	   process_id_column
  FROM dlsm_queues WHERE queue = 'article.request_queue'::regclass;
-- only what was missing was added
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute
 WHERE attrelid = 'article.request_queue'::regclass AND attnum > 0
 ORDER BY attnum;
SELECT indexname FROM pg_indexes
 WHERE schemaname = 'article' AND tablename = 'request_queue' ORDER BY 1;

-- the front end, as printed
INSERT INTO article.request_queue (request_type, spreadsheet_id)
VALUES ('create', '9s9has9d81hd0a0891h0d90a881840f');
INSERT INTO article.request_queue (request_type, spreadsheet_id)
VALUES ('update', '9s9has9d81hd0a0891h0d90a881840f'),
	   ('update', '9s9has9d81hd0a0891h0d90a881840f'),
	   ('create', 'other-sheet');

-- the back end through dlsm: the create first, its updates wait for it
BEGIN;
SELECT request_id, kind, entity FROM (
	SELECT id AS request_id, kind, entity FROM dlsm_claim('article.request_queue',
		process_id => 'aaaaaaaa-0000-0000-0000-000000000001')) c;
SELECT id, kind, entity FROM dlsm_claim('article.request_queue',
	process_id => 'bbbbbbbb-0000-0000-0000-000000000002');
SELECT dlsm_settle('article.request_queue', 'aaaaaaaa-0000-0000-0000-000000000001');
SELECT dlsm_settle('article.request_queue', 'bbbbbbbb-0000-0000-0000-000000000002');
COMMIT;
SELECT id, kind, entity FROM dlsm_claim('article.request_queue',
	process_id => 'cccccccc-0000-0000-0000-000000000003', lease => '1 hour');
SELECT dlsm_heartbeat('article.request_queue', 'cccccccc-0000-0000-0000-000000000003', '2 hours')
	   > now() + interval '1 hour' AS extended;
SELECT * FROM dlsm_settle_many('article.request_queue',
	ARRAY['cccccccc-0000-0000-0000-000000000003'::uuid]);
-- the history log, process ids as text
SELECT request_queue_id, request_status, request_type, spreadsheet_id, process_id,
	   attempts
  FROM article.request_queue ORDER BY request_queue_id;
-- retries, the reaper and lost claims work on it as on a created queue
INSERT INTO article.request_queue (request_type, spreadsheet_id) VALUES ('create', 'flaky');
SELECT process_id FROM dlsm_claim('article.request_queue', lease => '1 ms') \gset
SELECT pg_sleep(0.01);
SELECT dlsm_reap('article.request_queue');
SELECT request_status, attempts FROM article.request_queue WHERE spreadsheet_id = 'flaky';
\set VERBOSITY sqlstate
SELECT dlsm_settle('article.request_queue', :'process_id');
\set VERBOSITY default

-- errors
SELECT dlsm_register_queue('article.request_queue',
	id => 'request_queue_id', status => 'request_status',
	kind => 'request_type', entity => 'spreadsheet_id');
CREATE TABLE article.no_status (id bigint, kind text, entity text, process_id uuid);
SELECT dlsm_register_queue('article.no_status');
CREATE TABLE article.odd (id bigint, status int, kind text, entity text, process_id uuid);
SELECT dlsm_register_queue('article.odd');
CREATE TABLE article.odd_fence (id bigint, status text, kind text, entity text,
								process_id uuid, fence text);
SELECT dlsm_register_queue('article.odd_fence');
CREATE VIEW article.v AS SELECT 1 AS id;
SELECT dlsm_register_queue('article.v');
SELECT dlsm_register_queue(NULL);
SELECT dlsm_register_queue('article.odd', id => NULL);
SELECT dlsm_register_queue('article.odd', max_attempts => 0);
CREATE TABLE article.no_default (id bigint, status text, kind text, entity text, process_id uuid);
SELECT dlsm_register_queue('article.no_default');
CREATE ROLE dlsm_not_owner;
CREATE TABLE article.theirs (id bigint GENERATED ALWAYS AS IDENTITY, status text,
							 kind text DEFAULT 'create', entity text, process_id uuid);
GRANT USAGE ON SCHEMA article TO dlsm_not_owner;
GRANT SELECT, UPDATE ON article.theirs TO dlsm_not_owner;
SET ROLE dlsm_not_owner;
SELECT dlsm_register_queue('article.theirs');
RESET ROLE;
-- none of them became a queue, and nothing was added to them
SELECT count(*) AS registered FROM dlsm_queues WHERE queue::text LIKE 'article.%';
SELECT count(*) AS columns_added FROM pg_attribute
 WHERE attrelid IN ('article.no_status'::regclass, 'article.odd'::regclass,
					'article.odd_fence'::regclass, 'article.theirs'::regclass,
					'article.no_default'::regclass)
   AND attname IN ('payload', 'attempts', 'run_at');
-- a table with the default names is adopted with no map at all
SELECT dlsm_register_queue('article.theirs');
SELECT dlsm_enqueue('article.theirs', 'x') > 0 AS enqueued;
SELECT id, kind, entity FROM dlsm_claim('article.theirs');

-- re-registering a table that was a queue before adds no index twice
SELECT dlsm_create_queue('article.again');
SELECT count(*) AS indexes_created FROM pg_index WHERE indrelid = 'article.again'::regclass;
SELECT dlsm_drop_queue('article.again');
SELECT dlsm_register_queue('article.again');
SELECT count(*) AS indexes_after_register FROM pg_index
 WHERE indrelid = 'article.again'::regclass;
SELECT dlsm_drop_queue('article.again');
SELECT dlsm_register_queue('article.again');
SELECT count(*) AS indexes_after_twice FROM pg_index
 WHERE indrelid = 'article.again'::regclass;
SELECT dlsm_enqueue('article.again', 'x') > 0 AS enqueued;

DROP SCHEMA article CASCADE;
DROP OWNED BY dlsm_not_owner;
DROP ROLE dlsm_not_owner;
