-- examples/orders-burst.sql: a scripted burst of writes across the five
-- tables of examples/orders.sql (inserts, updates, deletes, a rollback).
SET search_path = orders_demo, public;
SELECT setseed(0.42);

INSERT INTO customers
SELECT c, 'customer ' || c, 'c' || c || '@example.com' FROM generate_series(1, 40) c;
INSERT INTO addresses
SELECT a, 1 + a % 40, a || ' Main Street', (ARRAY['Lisbon', 'Oslo', 'Quito', 'Perth'])[1 + a % 4]
  FROM generate_series(1, 60) a;
INSERT INTO orders (id, customer_id)
SELECT o, 1 + o % 40 FROM generate_series(1, 200) o;
INSERT INTO items
SELECT 1 + i % 200, i, 'SKU-' || i, (ARRAY['red kettle', 'blue lamp', 'green chair', 'steel pan'])[1 + i % 4]
  FROM generate_series(1, 600) i;
INSERT INTO notes
SELECT n, 1 + n % 200, 'warranty note ' || n FROM generate_series(1, 150) n;

-- many small transactions, as applications make them
DO $$
BEGIN
	FOR i IN 1 .. 300 LOOP
		CASE i % 6
			WHEN 0 THEN UPDATE orders SET status = 'shipped' WHERE id = 1 + (i * 7) % 200;
			WHEN 1 THEN UPDATE items SET description = description || ' deluxe'
						 WHERE order_id = 1 + (i * 11) % 200 AND line = (SELECT min(line) FROM items WHERE order_id = 1 + (i * 11) % 200);
			WHEN 2 THEN UPDATE customers SET email = 'new' || i || '@example.org' WHERE id = 1 + i % 40;
			WHEN 3 THEN UPDATE addresses SET city = 'Nairobi' WHERE id = 1 + (i * 3) % 60;
			WHEN 4 THEN INSERT INTO notes VALUES (1000 + i, 1 + (i * 13) % 200, 'callback requested ' || i);
			ELSE DELETE FROM items WHERE order_id = 1 + (i * 17) % 200 AND line = (SELECT max(line) FROM items WHERE order_id = 1 + (i * 17) % 200);
		END CASE;
		COMMIT;
	END LOOP;
END
$$;

-- orders and customers go away too
DELETE FROM notes WHERE order_id IN (5, 6);
DELETE FROM items WHERE order_id IN (5, 6);
DELETE FROM orders WHERE id IN (5, 6);
UPDATE notes SET order_id = 7 WHERE order_id = 8;

-- a writer that rolls back leaves no change behind
BEGIN;
UPDATE orders SET status = 'phantom' WHERE id = 9;
ROLLBACK;
RESET search_path;
