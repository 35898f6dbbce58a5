-- examples/orders.sql: the article's "additional application", in the
-- database.  Changes to five tables about customer orders are captured
-- into two queues, in the writers' own transactions; dlsm's worker folds
-- them into order_search, a full-text searchable document per order.
--
--   psql -f examples/orders.sql      (a database with CREATE EXTENSION dlsm,
--                                     dlsm preloaded so that its worker runs)
--
-- The applications writing the five tables know nothing of it.

CREATE SCHEMA orders_demo;
SET search_path = orders_demo, public;

CREATE TABLE customers (
	id			int PRIMARY KEY,
	name		text NOT NULL,
	email		text
);
CREATE TABLE addresses (
	id			int PRIMARY KEY,
	customer_id int NOT NULL,
	street		text,
	city		text
);
CREATE TABLE orders (
	id			int PRIMARY KEY,
	customer_id int NOT NULL,
	status		text NOT NULL DEFAULT 'open',
	placed_at	timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE items (
	order_id	int NOT NULL,
	line		int NOT NULL,
	sku			text,
	description text,
	PRIMARY KEY (order_id, line)
);
CREATE TABLE notes (
	id			int PRIMARY KEY,
	order_id	int NOT NULL,
	body		text
);

-- The search table: one document per order, with a full-text index.
CREATE TABLE order_search (
	order_id	int PRIMARY KEY,
	customer_id int NOT NULL,
	document	text NOT NULL,
	tsv			tsvector GENERATED ALWAYS AS (to_tsvector('simple', document)) STORED
);
CREATE INDEX order_search_tsv ON order_search USING gin (tsv);

-- An order's document, from its current rows: what the search table
-- should hold for it (NULL once the order is gone).
CREATE FUNCTION order_document(p_order int) RETURNS text
LANGUAGE sql STABLE SET search_path = orders_demo, pg_catalog AS $$
	SELECT concat_ws(' ',
		'order', o.id, o.status, c.name, c.email,
		(SELECT string_agg(concat_ws(' ', a.street, a.city), ' ' ORDER BY a.id)
		   FROM addresses a WHERE a.customer_id = o.customer_id),
		(SELECT string_agg(concat_ws(' ', i.sku, i.description), ' ' ORDER BY i.line)
		   FROM items i WHERE i.order_id = o.id),
		(SELECT string_agg(n.body, ' ' ORDER BY n.id)
		   FROM notes n WHERE n.order_id = o.id))
	  FROM orders o LEFT JOIN customers c ON c.id = o.customer_id
	 WHERE o.id = p_order
$$;

-- Bring one order's row of the search table up to date.
CREATE FUNCTION refresh_order(p_order int) RETURNS void
LANGUAGE plpgsql SET search_path = orders_demo, pg_catalog AS $$
DECLARE
	doc text := order_document(p_order);
BEGIN
	IF doc IS NULL THEN
		DELETE FROM order_search WHERE order_id = p_order;
	ELSE
		INSERT INTO order_search (order_id, customer_id, document)
		SELECT p_order, customer_id, doc FROM orders WHERE id = p_order
		ON CONFLICT (order_id) DO UPDATE
		   SET customer_id = excluded.customer_id, document = excluded.document;
	END IF;
END
$$;

-- The handlers: a unit is every pending change of one order (or one
-- customer), folded at once.  They run in the worker's transaction, with
-- the claim and the settle: each unit's effect commits exactly once.
CREATE FUNCTION index_order(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql SET search_path = orders_demo, pg_catalog AS $$
BEGIN
	PERFORM refresh_order(entity::int);
END
$$;

CREATE FUNCTION index_customer(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql SET search_path = orders_demo, pg_catalog AS $$
BEGIN
	PERFORM refresh_order(o.id) FROM orders o WHERE o.customer_id = entity::int;
END
$$;

-- Two queues: changes keyed by order, changes keyed by customer.
SELECT dlsm_create_queue('orders_demo.order_changes', retention => '1 day');
SELECT dlsm_create_queue('orders_demo.customer_changes', retention => '1 day');

SELECT dlsm_capture('orders', 'order_changes');
SELECT dlsm_capture('items', 'order_changes', entity_column => 'order_id');
SELECT dlsm_capture('notes', 'order_changes', entity_column => 'order_id',
					columns => '{body,order_id}');
SELECT dlsm_capture('customers', 'customer_changes');
SELECT dlsm_capture('addresses', 'customer_changes', entity_column => 'customer_id');

SELECT dlsm_set_handler('order_changes', 'index_order');
SELECT dlsm_set_handler('customer_changes', 'index_customer');

-- What the search table holds, rebuilt from scratch: the check that the
-- incremental path is right.
CREATE VIEW order_search_rebuilt AS
	SELECT o.id AS order_id, o.customer_id, order_document(o.id) AS document
	  FROM orders o;

RESET search_path;
