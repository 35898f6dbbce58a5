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

-- a capture into a queue that is gone warns and captures nothing
SELECT dlsm_create_queue('gone_q');
CREATE TABLE gsrc (id int PRIMARY KEY, v text);
SELECT dlsm_capture('gsrc', 'gone_q');
SELECT dlsm_drop_queue('gone_q');
\set VERBOSITY terse
INSERT INTO gsrc VALUES (1, 'a');
\set VERBOSITY default
-- a column named many times is watched once
SELECT dlsm_capture('gsrc', 'changes',
	columns => ARRAY(SELECT 'v'::name FROM generate_series(1, 100000)));
SELECT tgnargs, length(tgargs) < 40 AS short_arguments
  FROM pg_trigger WHERE tgrelid = 'gsrc'::regclass
   AND tgname = 'dlsm_capture_changes';
-- a trigger made by hand with other arguments is refused
CREATE TRIGGER forged AFTER INSERT ON gsrc FOR EACH ROW
	EXECUTE FUNCTION dlsm_capture_trigger('1', 'x', '10', '1', '');
\set VERBOSITY terse
INSERT INTO gsrc VALUES (2, 'b');
\set VERBOSITY default
DROP TABLE gsrc;
DROP TABLE gone_q;

DROP TABLE orders, lines, notes, keyless, changes;
DROP OWNED BY dlsm_writer;
DROP ROLE dlsm_writer;
