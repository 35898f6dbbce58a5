-- The router's errors on bad input that it raises itself, without reaching
-- a shard: wrong arguments, no configuration, an unknown node, a partition
-- being moved; then what a router whose shards cannot be reached answers.
-- Each call is run by error_of, which returns the SQLSTATE, message, detail
-- and hint of its error ('00000' when it had none); shown one field a line.
CREATE EXTENSION IF NOT EXISTS dlsm_proxy CASCADE;

CREATE FUNCTION pg_temp.error_of(call text, OUT state text, OUT message text,
								 OUT detail text, OUT hint text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE call;
	state := '00000';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
							detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
	detail := nullif(detail, '');
	hint := nullif(hint, '');
END
$$;

-- 1. No configuration: every call refuses with 55000, after checking its
-- own arguments
\pset format unaligned
\x on
SELECT c.n, c.call, e.*
  FROM unnest(ARRAY[
	$$SELECT dlsm_enqueue('q', 'e1')$$,
	$$SELECT * FROM dlsm_claim('q')$$,
	$$SELECT * FROM dlsm_claim('q', '1 min', wait => NULL)$$,
	$$SELECT * FROM dlsm_claim('q', '1 min', wait => '-1 s')$$,
	$$SELECT * FROM dlsm_claim('q', '1 min')$$,
	$$SELECT * FROM dlsm_claim_on(NULL, 'q', '1 min')$$,
	$$SELECT * FROM dlsm_claim_on(1, 'q', '1 min')$$,
	$$SELECT * FROM dlsm_claim_on(1, 'q')$$,
	$$SELECT dlsm_settle('q', NULL)$$,
	$$SELECT dlsm_settle('q', '00000000-0000-4000-8000-000000000001')$$,
	$$SELECT dlsm_heartbeat('q', NULL)$$,
	$$SELECT dlsm_heartbeat('q', '00000000-0000-4000-8000-000000000001')$$,
	$$SELECT * FROM dlsm_settle_many('q', NULL)$$,
	$$SELECT * FROM dlsm_settle_many('q', '{{00000000-0000-4000-8000-000000000001}}')$$,
	$$SELECT * FROM dlsm_settle_many('q', ARRAY[NULL::uuid])$$,
	$$SELECT * FROM dlsm_settle_many('q', '{}')$$,
	$$SELECT * FROM dlsm_settle_many('q', '{00000000-0000-4000-8000-000000000001}')$$,
	$$SELECT dlsm_try_lock('l')$$,
	$$SELECT dlsm_try_lock('l', lease => '1 min')$$,
	$$SELECT dlsm_unlock('l', 1)$$,
	$$SELECT dlsm_refresh_lock('l', 1, '1 min')$$,
	$$SELECT dlsm_create_queue('q')$$,
	$$SELECT dlsm_drop_queue('q')$$,
	$$SELECT dlsm_set_handler('q', 'h')$$,
	$$SELECT dlsm_reap('q')$$,
	$$SELECT dlsm_requeue_on(NULL, 'q', '{1}')$$,
	$$SELECT dlsm_requeue_on(1, 'q', '{1}')$$,
	$$SELECT dlsm_cancel_on(NULL, 'q', '{1}')$$,
	$$SELECT dlsm_cancel_on(1, 'q', '{1}')$$,
	$$SELECT dlsm_proxy_node_of('e1')$$,
	$$SELECT dlsm_proxy_add_node('host=shard3')$$,
	$$SELECT dlsm_proxy_set_node(1, 'host=shard1')$$,
	$$SELECT dlsm_proxy_remote(1, 'SELECT 1')$$,
	$$CALL dlsm_proxy_move('{0}', 1)$$
  ]) WITH ORDINALITY AS c(call, n),
	   LATERAL pg_temp.error_of(c.call) e
 ORDER BY c.n;
\x off
\pset format aligned

-- nothing to show, and nothing to refresh
SELECT (SELECT count(*) FROM dlsm_proxy_status) AS status,
	   (SELECT count(*) FROM dlsm_proxy_partitions) AS partitions,
	   (SELECT count(*) FROM dlsm_queue_stats) AS queue_stats,
	   (SELECT count(*) FROM dlsm_locks) AS locks,
	   (SELECT count(*) FROM dlsm_worker_status) AS worker_status,
	   (SELECT count(*) FROM dlsm_proxy_refresh()) AS refreshed;

-- 2. dlsm_proxy_configure's arguments, and connection strings it refuses
-- before it connects (a password, which every role could read in
-- pg_foreign_server; one that is not a connection string)
\pset format unaligned
\x on
SELECT c.n, c.call, e.*
  FROM unnest(ARRAY[
	$$SELECT dlsm_proxy_configure(NULL)$$,
	$$SELECT dlsm_proxy_configure('{}')$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a', NULL])$$,
	$$SELECT dlsm_proxy_configure(array_fill('host=a'::text, ARRAY[256]))$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a', 'host=b'], 1)$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a'], 3)$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a'], 131072)$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a'], NULL)$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a', 'host=b password=secret'])$$,
	$$SELECT dlsm_proxy_configure(ARRAY['host=a sslpassword = ''x'''])$$,
	$$SELECT dlsm_proxy_configure(ARRAY['postgresql://app:secret@a/db'])$$,
	$$SELECT dlsm_proxy_configure(ARRAY['postgresql://a/db?pass%77ord=secret'])$$,
	$$SELECT dlsm_proxy_configure(ARRAY['not a connection string'])$$
  ]) WITH ORDINALITY AS c(call, n),
	   LATERAL pg_temp.error_of(c.call) e
 ORDER BY c.n;
\x off
\pset format aligned
-- none of them configured anything
SELECT count(*) AS nodes FROM dlsm_proxy_nodes;
SELECT count(*) AS maps FROM dlsm_proxy_map;
SELECT count(*) AS servers FROM pg_foreign_server WHERE srvname = 'dlsm_shards';

-- the keywords of connection strings, as dlsm_proxy_conninfo_keys reads them
SELECT s, dlsm_proxy_conninfo_keys(s)
  FROM unnest(ARRAY['host=a port=5432', 'host = ''a b'' dbname=x\ y', '',
					'postgres://u@h/d?sslmode=require&application_name=x',
					'postgresql://u:p@h/d', 'postgresql://h/d?pass%77ord=x']) s;

-- URIs, as libpq reads them: the user part runs from the scheme to the
-- first @ when an @ comes before any /, whatever it holds besides (#, ?
-- and & too); the password follows its first :, when not empty; the
-- parameters follow the first ? after it.  libpq_password is what libpq
-- 15's PQconninfoParse reads (a password, or an sslpassword); every
-- spelling here is one it accepts, but 32, which it refuses as it is not
-- a URI (the scheme's case) and not keyword = value either.  33 and 34
-- are issue 40's: a ? inside [ ] hid the password from 1.1.  The router
-- refuses what it reads a password in, and what it cannot read
-- (test/t/067_router_conninfo.pl compares it with libpq on many more)
CREATE TEMP TABLE spellings (n int, s text, libpq_password bool);
INSERT INTO spellings VALUES
	(1, 'postgresql://u:pa#ss@h/db', true),
	(2, 'postgresql://u:pa?ss@h/db', true),
	(3, 'postgresql://u:pa&ss@h/db', true),
	(4, 'postgresql://u:pw#@h/db', true),
	(5, 'postgresql://u:pa#ss@h/db?sslmode=disable', true),
	(6, 'postgresql://u:p@ss@h/db', true),
	(7, 'postgresql://u:p%40ss@h/db', true),
	(8, 'postgresql://u:p:w@h/db', true),
	(9, 'postgresql://u:pa ss@h/db', true),
	(10, 'postgresql://:pw@h/db', true),
	(11, 'postgres://u:pw@h', true),
	(12, 'postgresql://u:pw@', true),
	(13, 'postgresql://u:pw@/db', true),
	(14, 'postgresql://u:pw@[::1]:5432/db', true),
	(15, 'postgresql://u:pw@h1,h2/db', true),
	(16, 'postgresql://u:pw@h#frag', true),
	(17, 'postgresql://u:pw%3A@h/db', true),
	(18, 'postgresql://u@h/db?password=pw', true),
	(19, 'postgresql://h/db?pass%77ord=pw', true),
	(20, 'postgresql://u@h?password=pw@x/db', true),
	(21, 'postgresql://h/db?sslpassword=x', true),
	(22, 'postgresql://u:@h/db', false),
	(23, 'postgresql://u@h/db', false),
	(24, 'postgresql://u%3Apw@h/db', false),
	(25, 'postgresql://u:pa/ss@h/db', false),
	(26, 'postgresql://h?user=u@x', false),
	(27, 'postgresql://u@x:y@h/db', false),
	(28, 'host=h password=pw', true),
	(29, 'host=h password=''p w''', true),
	(30, 'host=h application_name=''password=x''', false),
	(31, 'host=h dbname=postgresql://u:pw@h/db', false),
	(32, 'PostgreSQL://u:pw@h/db', NULL),
	(33, 'postgresql://[::1?]/db?password=secret', true),
	(34, 'postgresql://host,[h?2]/db?password=x', true);
-- what dlsm_proxy_conninfo_keys reads, and whether the router refuses it
CREATE FUNCTION pg_temp.keys_or_error(s text, OUT keys text[], OUT error text)
LANGUAGE plpgsql AS $$
BEGIN
	keys := dlsm_proxy_conninfo_keys(s);
EXCEPTION WHEN OTHERS THEN
	error := SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT n, s, libpq_password, k.keys, k.error,
	   k.error IS NOT NULL OR k.keys && '{password,sslpassword}' AS refused
  FROM spellings, LATERAL pg_temp.keys_or_error(s) k ORDER BY n;
-- none where libpq reads a password and the router does not refuse it, nor
-- the other way round (a string either cannot read counts as refused: 9,
-- whose space libpq 18 refuses, and 32)
SELECT n AS disagreement FROM spellings, LATERAL pg_temp.keys_or_error(s) k
 WHERE coalesce(libpq_password, true) IS DISTINCT FROM
	   (k.error IS NOT NULL OR k.keys && '{password,sslpassword}');

-- the pure helpers: partition of an entity, node of a process id
SELECT dlsm_proxy_partition_of('e1', 4) AS partition_4,
	   dlsm_proxy_partition_of('e1', 1) AS partition_1,
	   dlsm_proxy_node_of_process('00000000-0000-4000-8000-000000000007') AS node,
	   dlsm_proxy_tag('00000000-0000-4000-8000-000000000007', 3) AS tagged,
	   dlsm_proxy_node_of_process(dlsm_proxy_tag(gen_random_uuid(), 255)) AS node_255;
SELECT s, m, dlsm_proxy_unreachable(s, m)
  FROM (VALUES ('08006', 'x'), ('57P01', 'x'), ('53300', 'x'), ('XX000', 'could not connect to server'),
			   ('XX000', 'out of memory'), ('42P01', 'relation "q" does not exist')) v(s, m);

-- 3. A router configured with two nodes that do not exist (a socket
-- directory that does not exist: connecting fails at once).  PL/Proxy's
-- notices of a failed connection dropped on the next call are left out.
SET client_min_messages = warning;
SELECT node_id, reachable, shard, shard_node_id, tags_process_ids, partitions, moving_in,
	   error IS NOT NULL AS has_error
  FROM dlsm_proxy_configure(ARRAY['host=/nonexistent/dlsm_proxy_regress port=1 dbname=x',
								  'host=/nonexistent/dlsm_proxy_regress port=2 dbname=x'], 4);
RESET client_min_messages;
SELECT * FROM dlsm_proxy_partitions ORDER BY partition;
SELECT srvname, srvoptions FROM pg_foreign_server WHERE srvname = 'dlsm_shards';

-- entities of partitions 0 (node 1) and 1 (node 2)
SELECT (SELECT 'e' || i FROM generate_series(1, 1000) i
		 WHERE dlsm_proxy_partition_of('e' || i, 4) = 0 ORDER BY i LIMIT 1) AS e0,
	   (SELECT 'e' || i FROM generate_series(1, 1000) i
		 WHERE dlsm_proxy_partition_of('e' || i, 4) = 1 ORDER BY i LIMIT 1) AS e1
\gset
SELECT :'e0' AS e0, dlsm_proxy_node_of(:'e0') AS node_of_e0,
	   :'e1' AS e1, dlsm_proxy_node_of(:'e1') AS node_of_e1;

-- unknown nodes, bad arguments of a move, a partition being moved
\pset format unaligned
\x on
SELECT c.n, c.call, e.*
  FROM unnest(ARRAY[
	$$SELECT dlsm_proxy_configure(ARRAY['host=a'])$$,
	$$SELECT * FROM dlsm_claim_on(3, 'q', '1 min')$$,
	$$SELECT * FROM dlsm_claim_on(0, 'q', '1 min')$$,
	$$SELECT dlsm_requeue_on(3, 'q', '{1}')$$,
	$$SELECT dlsm_cancel_on(0, 'q', '{1}')$$,
	$$SELECT dlsm_proxy_set_node(3, 'host=a')$$,
	$$SELECT dlsm_proxy_set_node(1, 'host=a password=secret')$$,
	$$SELECT dlsm_proxy_add_node('host=a password=secret')$$,
	$$SELECT dlsm_proxy_remote(3, 'SELECT 1')$$,
	$$CALL dlsm_proxy_move('{0}', 3)$$,
	$$CALL dlsm_proxy_move('{4}', 1)$$,
	$$CALL dlsm_proxy_move('{-1}', 1)$$,
	$$CALL dlsm_proxy_move(NULL, 1)$$,
	$$CALL dlsm_proxy_move('{0,NULL}', 1)$$,
	$$CALL dlsm_proxy_move('{0,2}', 1)$$
  ]) WITH ORDINALITY AS c(call, n),
	   LATERAL pg_temp.error_of(c.call) e
 ORDER BY c.n;
\x off
\pset format aligned

-- the nodes a claim may take work from: dlsm_proxy.claim_nodes
SET dlsm_proxy.claim_nodes = '1, 7';
SELECT * FROM pg_temp.error_of($$SELECT * FROM dlsm_claim('q', '1 min')$$);
SET dlsm_proxy.claim_nodes = 'one';
SELECT * FROM pg_temp.error_of($$SELECT * FROM dlsm_claim('q', '1 min')$$);
RESET dlsm_proxy.claim_nodes;

-- partition 1 being moved to node 1: new work of its entities is refused
UPDATE dlsm_proxy_map SET moving[2] = 1;
SELECT * FROM dlsm_proxy_partitions ORDER BY partition;
\pset format unaligned
\x on
SELECT c.n, c.call, e.*
  FROM unnest(ARRAY[
	format('SELECT dlsm_enqueue(%L, %L)', 'q', :'e1'),
	format('SELECT dlsm_try_lock(%L, lease => %L)', :'e1', '1 min'),
	format('SELECT dlsm_try_lock(%L)', :'e1'),
	$$CALL dlsm_proxy_move('{0}', 2)$$
  ]) WITH ORDINALITY AS c(call, n),
	   LATERAL pg_temp.error_of(c.call) e
 ORDER BY c.n;
\x off
\pset format aligned
SELECT node_id, partitions, moving_in FROM dlsm_proxy_status ORDER BY node_id;
UPDATE dlsm_proxy_map SET moving = array_fill(NULL::int4, ARRAY[4]);

-- 4. Nodes that cannot be reached: 08006 naming the node (the detail is
-- libpq's message, left out here)
SET client_min_messages = error;	-- dlsm_settle_many's warning names the socket
SELECT c.n, c.call, e.state, e.message
  FROM unnest(ARRAY[
	format('SELECT dlsm_enqueue(%L, %L)', 'q', :'e0'),
	format('SELECT dlsm_try_lock(%L, lease => %L)', :'e1', '1 min'),
	$$SELECT * FROM dlsm_claim('q', '1 min')$$,
	$$SELECT * FROM dlsm_claim_on(2, 'q', '1 min')$$,
	$$SELECT dlsm_settle('q', '00000000-0000-4000-8000-000000000001')$$,
	$$SELECT dlsm_heartbeat('q', '00000000-0000-4000-8000-000000000002')$$,
	$$SELECT dlsm_create_queue('q')$$,
	$$SELECT count(*) FROM dlsm_queue_stats$$,
	$$SELECT dlsm_proxy_remote(1, 'SELECT 1')$$,
	$$SELECT dlsm_requeue_on(2, 'q', '{1}')$$,
	$$SELECT dlsm_cancel_on(1, 'q', '{1}')$$
  ]) WITH ORDINALITY AS c(call, n),
	   LATERAL pg_temp.error_of(c.call) e
 ORDER BY c.n;
SELECT * FROM dlsm_settle_many('q', '{00000000-0000-4000-8000-000000000001,00000000-0000-4000-8000-000000000002}');
SELECT node_id, reachable, error IS NOT NULL AS has_error FROM dlsm_proxy_status ORDER BY node_id;
RESET client_min_messages;
