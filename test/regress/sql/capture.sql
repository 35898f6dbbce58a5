-- Change capture: every INSERT, UPDATE and DELETE of a table becomes a
-- request, in the writer's transaction
SELECT dlsm_create_queue('changes');
CREATE TABLE orders (id int PRIMARY KEY, status text, total numeric, note text);
CREATE TABLE lines (order_id int, line int, item text, PRIMARY KEY (order_id, line));
CREATE TABLE notes (note_id int PRIMARY KEY, order_id int, body text);

SELECT dlsm_capture('orders', 'changes');
SELECT dlsm_capture('lines', 'changes', kind => 'line');
SELECT dlsm_capture('notes', 'changes', entity_column => 'order_id',
					columns => '{body}');

INSERT INTO orders VALUES (1, 'new', 10, NULL), (2, 'new', 20, NULL);
UPDATE orders SET status = 'paid' WHERE id = 1;
DELETE FROM orders WHERE id = 2;
INSERT INTO lines VALUES (1, 1, 'pen'), (1, 2, 'ink');
INSERT INTO notes VALUES (7, 1, 'call first');
UPDATE notes SET order_id = 1 WHERE note_id = 7;	-- body unchanged: nothing
UPDATE notes SET body = 'call twice' WHERE note_id = 7;
-- a note moved to another order changes both orders
INSERT INTO notes VALUES (8, 2, 'gift wrap');
UPDATE notes SET order_id = 1, body = 'gift wrap, order 1' WHERE note_id = 8;
-- a rolled-back writer leaves no request: no phantom changes
BEGIN;
INSERT INTO orders VALUES (3, 'new', 30, NULL);
ROLLBACK;

SELECT id, kind, entity, payload->>'op' AS op, payload->>'table' AS source,
	   payload->'old' AS old, payload->'new' AS new
  FROM changes ORDER BY id;

-- the captured changes are claimed like any request: an entity's changes
-- as one unit
SELECT entity, count(*) AS changes FROM dlsm_claim('changes') GROUP BY entity;

-- uncapture: no more requests
SELECT dlsm_uncapture('notes', 'changes');
UPDATE notes SET body = 'unseen';
SELECT count(*) AS from_notes FROM changes WHERE payload->>'table' = 'public.notes';

-- writers need no privilege on the queue: the capture inserts as its owner
CREATE ROLE dlsm_writer;
GRANT INSERT, UPDATE ON orders TO dlsm_writer;
SET ROLE dlsm_writer;
INSERT INTO orders VALUES (4, 'new', 40, NULL);
RESET ROLE;
SELECT entity, payload->>'op' AS op FROM changes WHERE entity = '4';

-- errors
SELECT dlsm_capture('orders', 'changes');
SELECT dlsm_uncapture('notes', 'changes');
SELECT dlsm_capture('changes', 'changes');
SELECT dlsm_capture('orders', 'notes');
CREATE TABLE keyless (a int);
SELECT dlsm_capture('keyless', 'changes');
SELECT dlsm_capture('keyless', 'changes', entity_column => 'b');
SELECT dlsm_capture('keyless', 'changes', entity_column => 'a', columns => '{z}');
SELECT dlsm_capture(NULL, 'changes');
SELECT dlsm_capture('keyless', NULL);
SELECT dlsm_capture('keyless', 'changes', kind => NULL);
GRANT SELECT ON keyless TO dlsm_writer;
SET ROLE dlsm_writer;
SELECT dlsm_capture('keyless', 'changes', entity_column => 'a');
RESET ROLE;
GRANT INSERT ON changes TO dlsm_writer;
SET ROLE dlsm_writer;
SELECT dlsm_capture('keyless', 'changes', entity_column => 'a');
SELECT dlsm_uncapture('orders', 'changes');
RESET ROLE;
SELECT dlsm_capture_trigger();

-- a queue that a table captures into cannot be unregistered nor dropped
SELECT dlsm_create_queue('gone_q');
CREATE TABLE gsrc (id int PRIMARY KEY, v text);
SELECT dlsm_capture('gsrc', 'gone_q');
SELECT dlsm_drop_queue('gone_q');
DROP TABLE gone_q;
SELECT dlsm_uncapture('gsrc', 'gone_q');
SELECT dlsm_drop_queue('gone_q');
INSERT INTO gsrc VALUES (1, 'a');
SELECT count(*) AS captured FROM gone_q;
-- a producer holding INSERT captures its own table into another role's
-- queue: the queue's owner, even after revoking the grant, removes the
-- capture and drops the queue; the producer's writes go on uncaptured
CREATE ROLE dlsm_qowner;
CREATE ROLE dlsm_producer;
GRANT CREATE ON SCHEMA public TO dlsm_qowner, dlsm_producer;
SET ROLE dlsm_qowner;
SELECT dlsm_create_queue('owned_q');
GRANT INSERT ON owned_q TO dlsm_producer;
SET ROLE dlsm_producer;
CREATE TABLE psrc (id int PRIMARY KEY);
SELECT dlsm_capture('psrc', 'owned_q');
INSERT INTO psrc VALUES (1);
SET ROLE dlsm_qowner;
REVOKE INSERT ON owned_q FROM dlsm_producer;
SELECT dlsm_drop_queue('owned_q');
DROP TABLE owned_q;
SELECT dlsm_uncapture('psrc', 'owned_q');
SELECT count(*) AS captures FROM dlsm_captures WHERE queue = 'owned_q'::regclass;
DROP TABLE owned_q;
SET ROLE dlsm_producer;
INSERT INTO psrc VALUES (2);
SELECT count(*) AS written FROM psrc;
SELECT count(*) AS capture_triggers FROM pg_trigger WHERE tgrelid = 'psrc'::regclass;
DROP TABLE psrc;
RESET ROLE;
-- a partitioned source: the changes of its partitions are captured, of
-- partitions attached later too, and of partitions of partitions, as
-- changes of the captured table, as its owner (the partition's is not
-- asked); a partition detached is captured no more
SELECT dlsm_create_queue('pq');
CREATE TABLE psrc2 (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE psrc2_1 PARTITION OF psrc2 FOR VALUES FROM (0) TO (100);
CREATE TABLE psrc2_2 PARTITION OF psrc2 FOR VALUES FROM (100) TO (200)
	PARTITION BY RANGE (id);
CREATE TABLE psrc2_2a PARTITION OF psrc2_2 FOR VALUES FROM (100) TO (200);
SELECT dlsm_capture('psrc2', 'pq', columns => '{v}');
ALTER TABLE psrc2_1 OWNER TO dlsm_writer;
CREATE TABLE psrc2_3 (v text, id int PRIMARY KEY);
ALTER TABLE psrc2 ATTACH PARTITION psrc2_3 FOR VALUES FROM (200) TO (300);
CREATE TABLE psrc2_4 PARTITION OF psrc2 FOR VALUES FROM (300) TO (400);
INSERT INTO psrc2 VALUES (1, 'a'), (101, 'b'), (201, 'c'), (301, 'd');
INSERT INTO psrc2_3 VALUES ('e', 202);
UPDATE psrc2 SET v = 'bb' WHERE id = 101;
UPDATE psrc2 SET id = id WHERE id = 1;	-- v unchanged: nothing
-- a row moved to another partition: PostgreSQL deletes it from one and
-- inserts it into the other, and fires the row triggers of each
UPDATE psrc2 SET id = 5 WHERE id = 201;
DELETE FROM psrc2_4 WHERE id = 301;
ALTER TABLE psrc2 DETACH PARTITION psrc2_4;
INSERT INTO psrc2_4 VALUES (302, 'f');
SELECT entity, payload->>'op' AS op, payload->>'table' AS source,
	   payload->'old'->>'v' AS old_v, payload->'new'->>'v' AS new_v
  FROM pq ORDER BY id;
SELECT tgrelid::regclass AS partition FROM pg_trigger
 WHERE tgname = 'dlsm_capture_pq' ORDER BY 1;
-- a partition captured on its own as well: the capture of its parent
-- takes a trigger name free on every partition, and each capture enqueues
CREATE TABLE psrc4 (id int PRIMARY KEY) PARTITION BY LIST (id);
CREATE TABLE psrc4_1 PARTITION OF psrc4 FOR VALUES IN (1);
SELECT dlsm_capture('psrc4_1', 'pq', kind => 'own');
SELECT dlsm_capture('psrc4', 'pq', kind => 'parent');
SELECT tgrelid::regclass AS partition, tgname FROM pg_trigger
 WHERE tgrelid IN ('psrc4'::regclass, 'psrc4_1'::regclass) ORDER BY 1, 2;
INSERT INTO psrc4 VALUES (1);
SELECT kind, payload->>'table' AS source FROM pq WHERE entity = '1' AND kind <> 'update' ORDER BY kind;
-- the partition's own capture is removed alone; a partition's cloned
-- trigger is no capture of its own
SELECT dlsm_uncapture('psrc4_1', 'pq');
SELECT dlsm_uncapture('psrc4_1', 'pq');
SELECT tgrelid::regclass AS partition, tgname FROM pg_trigger
 WHERE tgrelid IN ('psrc4'::regclass, 'psrc4_1'::regclass) ORDER BY 1, 2;
DROP TABLE psrc4;
-- uncapture: the partitions' triggers go with the capture's
SELECT dlsm_uncapture('psrc2', 'pq');
SELECT count(*) AS triggers FROM pg_trigger
 WHERE tgrelid IN (SELECT relid FROM pg_partition_tree('psrc2'));
INSERT INTO psrc2 VALUES (2);
SELECT count(*) AS from_2 FROM pq WHERE entity = '2';
DROP TABLE psrc2, psrc2_4;
SELECT dlsm_drop_queue('pq', drop_table => true);
-- only a capture trigger goes: a trigger of the producer's own that took
-- the capture trigger's name stays, and the capture is forgotten
SET ROLE dlsm_qowner;
SELECT dlsm_create_queue('owned_q2');
GRANT INSERT ON owned_q2 TO dlsm_producer;
SET ROLE dlsm_producer;
CREATE TABLE psrc3 (id int PRIMARY KEY);
SELECT dlsm_capture('psrc3', 'owned_q2');
DROP TRIGGER dlsm_capture_owned_q2 ON psrc3;
CREATE FUNCTION psrc3_audit() RETURNS trigger LANGUAGE plpgsql
	AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER dlsm_capture_owned_q2 AFTER INSERT ON psrc3
	FOR EACH ROW EXECUTE FUNCTION psrc3_audit();
SET ROLE dlsm_qowner;
SELECT dlsm_uncapture('psrc3', 'owned_q2');
SELECT tgname FROM pg_trigger WHERE tgrelid = 'psrc3'::regclass;
SELECT count(*) AS captures FROM dlsm_captures WHERE queue = 'owned_q2'::regclass;
SELECT dlsm_drop_queue('owned_q2', drop_table => true);
SET ROLE dlsm_producer;
DROP TABLE psrc3;
DROP FUNCTION psrc3_audit();
RESET ROLE;
-- a temporary table cannot be captured: PostgreSQL drops it at commit or
-- at the session's end without sql_drop, and its capture would be left
-- behind, keeping the queue's owner from dropping the queue
SET ROLE dlsm_qowner;
SELECT dlsm_create_queue('victim_q');
GRANT INSERT ON victim_q TO dlsm_producer;
SET ROLE dlsm_producer;
BEGIN;
CREATE TEMP TABLE t2 (id int PRIMARY KEY) ON COMMIT DROP;
SELECT dlsm_capture('t2', 'victim_q');
COMMIT;
CREATE TEMP TABLE t3 (id int PRIMARY KEY);
SELECT dlsm_capture('t3', 'victim_q');
DROP TABLE t3;
SET ROLE dlsm_qowner;
SELECT count(*) AS captures FROM dlsm_captures WHERE queue = 'victim_q'::regclass;
SELECT dlsm_drop_queue('victim_q', drop_table => true);
-- a capture whose source is gone without the event trigger (dropped while
-- event triggers did not fire, or left by an earlier version): the
-- queue's owner removes it by the source's OID, and it does not keep the
-- owner from dropping the queue; to anyone else the source does not exist
SELECT dlsm_create_queue('dangle_q');
GRANT INSERT ON dangle_q TO dlsm_producer;
SET ROLE dlsm_producer;
CREATE TABLE dsrc1 (id int PRIMARY KEY);
CREATE TABLE dsrc2 (id int PRIMARY KEY);
SELECT dlsm_capture('dsrc1', 'dangle_q'), dlsm_capture('dsrc2', 'dangle_q');
SELECT 'dsrc1'::regclass::oid AS dsrc1_oid, 'dsrc2'::regclass::oid AS dsrc2_oid \gset
RESET ROLE;
SET session_replication_role = replica;
DROP TABLE dsrc1;
RESET session_replication_role;
ALTER EVENT TRIGGER dlsm_forget_dropped DISABLE;
DROP TABLE dsrc2;
ALTER EVENT TRIGGER dlsm_forget_dropped ENABLE;
SELECT count(*) AS dangling FROM dlsm_captures WHERE queue = 'dangle_q'::regclass;
\set VERBOSITY sqlstate
SET ROLE dlsm_producer;
SELECT dlsm_uncapture(:dsrc1_oid, 'dangle_q');
SET ROLE dlsm_qowner;
SELECT dlsm_uncapture(:dsrc1_oid, 'dangle_q');
SELECT dlsm_uncapture(:dsrc1_oid, 'dangle_q');
\set VERBOSITY default
SELECT count(*) AS dangling FROM dlsm_captures WHERE queue = 'dangle_q'::regclass;
SELECT dlsm_drop_queue('dangle_q', drop_table => true);
SELECT count(*) AS captures FROM dlsm_captures
 WHERE source::oid IN (:dsrc1_oid, :dsrc2_oid);
-- and a queue gone without the event trigger: the source's owner removes
-- the capture by the queue's OID, and writes the table again
SELECT dlsm_create_queue('dangle_q2');
GRANT INSERT ON dangle_q2 TO dlsm_producer;
SET ROLE dlsm_producer;
CREATE TABLE dsrc3 (id int PRIMARY KEY);
SELECT dlsm_capture('dsrc3', 'dangle_q2');
SELECT 'dangle_q2'::regclass::oid AS dangle_q2_oid \gset
RESET ROLE;
SET session_replication_role = replica;
DROP TABLE dangle_q2;
RESET session_replication_role;
DELETE FROM dlsm_queues WHERE queue::oid = :dangle_q2_oid;
SET ROLE dlsm_producer;
\set VERBOSITY sqlstate
INSERT INTO dsrc3 VALUES (1);
SELECT dlsm_uncapture('dsrc3', :dangle_q2_oid);
\set VERBOSITY default
INSERT INTO dsrc3 VALUES (1);
SELECT count(*) AS captures FROM dlsm_captures WHERE source = 'dsrc3'::regclass;
DROP TABLE dsrc3;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM dlsm_qowner, dlsm_producer;
DROP ROLE dlsm_qowner, dlsm_producer;
-- a column named many times is watched once; captures are recorded by name
SELECT dlsm_capture('gsrc', 'changes',
	columns => ARRAY(SELECT 'v'::name FROM generate_series(1, 100000)));
SELECT source, queue, trigger_name, kind, entity_columns, columns
  FROM dlsm_captures WHERE source = 'gsrc'::regclass;
SELECT tgnargs FROM pg_trigger WHERE tgrelid = 'gsrc'::regclass
   AND tgname = 'dlsm_capture_changes';
-- a trigger made by hand is refused: the write fails
CREATE TRIGGER forged AFTER INSERT ON gsrc FOR EACH ROW
	EXECUTE FUNCTION dlsm_capture_trigger();
INSERT INTO gsrc VALUES (2, 'b');
DROP TRIGGER forged ON gsrc;
-- a capture follows its queue when the queue is renamed
ALTER TABLE changes RENAME TO changes_v2;
INSERT INTO gsrc VALUES (3, 'c');
SELECT entity, payload->>'op' AS op FROM changes_v2 WHERE entity = '3';
ALTER TABLE changes_v2 RENAME TO changes;
-- ... and the source's columns by name when the source changes shape
ALTER TABLE gsrc ADD COLUMN w text;
ALTER TABLE gsrc DROP COLUMN w;
UPDATE gsrc SET v = 'cc' WHERE id = 3;
SELECT count(*) AS updates_of_3 FROM changes WHERE entity = '3';
-- a captured column that is gone makes the write fail, not go unseen
ALTER TABLE gsrc DROP COLUMN v;
INSERT INTO gsrc VALUES (4);
DROP TABLE gsrc;
-- the entity's column renamed away and back: the failed read of the
-- capture frees nothing twice, later changes keep their kind
SELECT dlsm_create_queue('reload_q');
CREATE TABLE rsrc (id int PRIMARY KEY, k text, v text);
SELECT dlsm_capture('rsrc', 'reload_q', entity_column => 'k', columns => '{v}');
INSERT INTO rsrc VALUES (1, 'a', 'x');
ALTER TABLE rsrc RENAME COLUMN k TO k2;
INSERT INTO rsrc VALUES (2, 'b', 'x');
ALTER TABLE rsrc RENAME COLUMN k2 TO k;
INSERT INTO rsrc VALUES (3, 'c', 'x');
UPDATE rsrc SET v = 'y';
SELECT entity, kind, payload->>'op' AS op FROM reload_q ORDER BY id;
DROP TABLE rsrc;
SELECT dlsm_drop_queue('reload_q', drop_table => true);
SELECT count(*) AS captures_of_dropped_tables FROM dlsm_captures
 WHERE source::text NOT IN (SELECT oid::regclass::text FROM pg_class);

-- queues of the same name in two schemas: triggers named apart, each
-- uncapture removes only its own capture
CREATE SCHEMA qs;
SELECT dlsm_create_queue('qs.cq'), dlsm_create_queue('public.cq');
CREATE TABLE twice (id int PRIMARY KEY);
SELECT dlsm_capture('twice', 'qs.cq'), dlsm_capture('twice', 'public.cq');
SELECT trigger_name FROM dlsm_captures WHERE source = 'twice'::regclass ORDER BY 1;
SELECT dlsm_uncapture('twice', 'public.cq');
INSERT INTO twice VALUES (1);
SELECT (SELECT count(*) FROM qs.cq) AS into_qs, (SELECT count(*) FROM public.cq) AS into_public;
-- a long name is cut at a character boundary
SELECT dlsm_create_queue('a' || repeat('é', 26));
SELECT dlsm_capture('twice', ('a' || repeat('é', 26))::regclass);
SELECT length(trigger_name::text) AS chars, octet_length(trigger_name::text) AS bytes,
	   convert_from(convert_to(trigger_name::text, 'UTF8'), 'UTF8') = trigger_name::text AS valid
  FROM dlsm_captures WHERE source = 'twice'::regclass AND queue <> 'qs.cq'::regclass;
SELECT dlsm_uncapture('twice', ('a' || repeat('é', 26))::regclass);
SELECT dlsm_uncapture('twice', 'qs.cq');
DROP TABLE twice, qs.cq, public.cq;
SELECT dlsm_drop_queue(('a' || repeat('é', 26))::regclass, drop_table => true);
DROP SCHEMA qs;

-- a queue dropped by a trigger while a capture writes into it: refused
SELECT dlsm_create_queue('public.cq2');
CREATE TABLE s2 (id int PRIMARY KEY, v text);
SELECT dlsm_capture('s2', 'cq2');
INSERT INTO s2 VALUES (1, 'a');
CREATE FUNCTION drop_me() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- names qualified: a capture runs the queue owner's code with
	-- search_path pg_catalog, pg_temp
	IF EXISTS (SELECT 1 FROM public.dlsm_queues WHERE queue = 'public.cq2'::regclass) THEN
		PERFORM public.dlsm_uncapture('public.s2', 'public.cq2');
		PERFORM public.dlsm_drop_queue('public.cq2');
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER drop_me BEFORE INSERT ON cq2 FOR EACH ROW EXECUTE FUNCTION drop_me();
UPDATE s2 SET id = 2 WHERE id = 1;
SELECT count(*) AS registered FROM dlsm_queues WHERE queue = 'cq2'::regclass;
DROP TRIGGER drop_me ON cq2;
DROP FUNCTION drop_me();
SELECT dlsm_uncapture('s2', 'cq2');
DROP TABLE s2;
SELECT dlsm_drop_queue('cq2', drop_table => true);

-- group_column (1.4): a column of the source table written into the
-- queue's group column, so that the queue's limits hold per tenant
SELECT dlsm_create_queue('tq');
CREATE TABLE tenants_docs (id int PRIMARY KEY, tenant text, body text);
SELECT dlsm_capture('tenants_docs', 'tq', group_column => 'tenant');
SELECT group_column FROM dlsm_captures WHERE source = 'tenants_docs'::regclass;
INSERT INTO tenants_docs VALUES (1, 'acme', 'a'), (2, 'globex', 'b'), (3, NULL, 'c');
UPDATE tenants_docs SET tenant = 'initech' WHERE id = 2;
DELETE FROM tenants_docs WHERE id = 1;
SELECT entity, kind, group_key, payload->>'op' AS op FROM tq ORDER BY id;
-- acme at most 1 unit: of two acme documents, one is claimed
INSERT INTO tenants_docs VALUES (4, 'acme', 'd');
SELECT dlsm_set_limit('tq', 'acme', concurrency => 1);
BEGIN;
SELECT c.entity, t.group_key FROM dlsm_claim('tq', units => 10) c
  JOIN tq t USING (id) ORDER BY c.id;
ROLLBACK;
-- an unknown column, a queue without a group column: refused, nothing kept
SELECT dlsm_uncapture('tenants_docs', 'tq');
SELECT dlsm_capture('tenants_docs', 'tq', group_column => 'nosuch');
CREATE TABLE plain_q (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	entity text NOT NULL, kind text NOT NULL, payload jsonb,
	status text NOT NULL DEFAULT 'new', process_id uuid, fence bigint,
	attempts int NOT NULL DEFAULT 0, run_at timestamptz NOT NULL DEFAULT now(),
	enqueued_at timestamptz NOT NULL DEFAULT now(), claimed_at timestamptz,
	lease_until timestamptz, settled_at timestamptz, detail text);
SELECT dlsm_register_queue('plain_q');
SELECT dlsm_capture('tenants_docs', 'plain_q', group_column => 'tenant');
SELECT count(*) FROM dlsm_captures WHERE source = 'tenants_docs'::regclass;
SELECT dlsm_drop_queue('plain_q', drop_table => true);
DROP TABLE tenants_docs;
SELECT dlsm_drop_queue('tq', drop_table => true);

-- locks before checks: a role without rights on a table is refused before
-- anything locks it (its lock request would queue everyone behind it):
-- whatever it names as the queue (a temporary table of its own, another
-- role's queue, its own queue without that capture), and when it names the
-- table by a bare OID, in a schema it may not use
CREATE ROLE dlsm_nobody;
GRANT CREATE ON SCHEMA public TO dlsm_nobody;
CREATE SCHEMA sealed;
CREATE TABLE sealed.secret (id int PRIMARY KEY);
SELECT dlsm_capture('sealed.secret', 'changes');
REVOKE ALL ON SCHEMA sealed FROM PUBLIC;
SELECT 'sealed.secret'::regclass::oid AS secret_oid \gset
SET ROLE dlsm_nobody;
CREATE TEMP TABLE mine (x int);
SELECT dlsm_create_queue('nobody_q');
SELECT dlsm_uncapture('pg_catalog.pg_class', 'mine');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_uncapture(:secret_oid, 'mine');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_uncapture(:secret_oid, 'changes');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_uncapture(:secret_oid, 'nobody_q');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_capture(:secret_oid, 'nobody_q');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_capture('pg_catalog.pg_class', 'nobody_q');
\echo :LAST_ERROR_SQLSTATE
SELECT dlsm_drop_queue('nobody_q', drop_table => true);
DROP TABLE mine;
RESET ROLE;
-- nothing changed: the capture is there, and captures
SELECT count(*) AS captures FROM dlsm_captures WHERE source = :secret_oid;
INSERT INTO sealed.secret VALUES (1);
SELECT count(*) AS captured FROM changes WHERE payload->>'table' = 'sealed.secret';
SELECT dlsm_uncapture('sealed.secret', 'changes');
DROP SCHEMA sealed CASCADE;
REVOKE CREATE ON SCHEMA public FROM dlsm_nobody;
DROP ROLE dlsm_nobody;

DROP TABLE orders, lines, notes, keyless, changes;
DROP OWNED BY dlsm_writer;
DROP ROLE dlsm_writer;
