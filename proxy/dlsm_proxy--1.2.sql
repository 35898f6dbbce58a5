/* proxy/dlsm_proxy--1.2.sql: dlsm_proxy--1.0.sql, dlsm_proxy--1.0--1.1.sql and dlsm_proxy--1.1--1.2.sql in one */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION dlsm_proxy CASCADE" to load this file. \quit

/*
 * dlsm_proxy: a router database for dlsm sharded by entity, on PL/Proxy.
 *
 * The router has the same function names and arguments as dlsm; each call
 * goes to one shard (an entity's, a lock name's, a claim's) or, for the
 * monitoring views, to all of them.  Every shard is an ordinary dlsm
 * database; one entity lives on one shard, so every per-entity guarantee of
 * dlsm holds there.
 *
 *   entity, lock name  -> partition = hashtext(name) & (partitions - 1)
 *                      -> node      = dlsm_proxy_map.nodes[partition + 1]
 *   process id         -> node      = its last byte (dlsm.node_id of the
 *                                     shard that made it, or the router's tag)
 *   node n             -> PL/Proxy partition n - 1 of the SQL/MED server
 *                         dlsm_shards (modular_mapping: one per node)
 *
 * Objects and types below are qualified with @extschema@ or pg_catalog;
 * the PL/pgSQL bodies that work on the router's own tables run with the
 * caller's search_path.  The statements dlsm_proxy_move runs on the shards'
 * queue tables, which other roles own, qualify every operator, function and
 * type as well.  The remote queries (the SELECT of a PL/Proxy function)
 * name dlsm's functions unqualified: they run with the shard connection's
 * search_path (README says to keep it trusted or pin it).
 */

-- Configuration: the shards, and which partitions each one holds.

CREATE TABLE @extschema@.dlsm_proxy_nodes (
	node_id		pg_catalog.int4 PRIMARY KEY
		CHECK (node_id OPERATOR(pg_catalog.>=) 1 AND node_id OPERATOR(pg_catalog.<=) 255),
	connstr		pg_catalog.text NOT NULL,
	-- the shard's dlsm.node_id is node_id: dlsm tags every process id it
	-- makes there with it (learned by dlsm_proxy_refresh)
	tags_process_ids pg_catalog.bool NOT NULL DEFAULT false,
	added_at	pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.dlsm_proxy_nodes IS
'the shards of dlsm_proxy: node id (the shard''s dlsm.node_id) and connection string';

-- One row: nodes[p + 1] holds partition p; moving[p + 1] is the node it is
-- being moved to while CALL dlsm_proxy_move runs.
CREATE TABLE @extschema@.dlsm_proxy_map (
	single		pg_catalog.bool PRIMARY KEY DEFAULT true CHECK (single),
	nodes		pg_catalog.int4[] NOT NULL,
	moving		pg_catalog.int4[] NOT NULL,
	changed_at	pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE @extschema@.dlsm_proxy_map IS
'which node holds each partition of the entity hash, and moves under way';

SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_proxy_nodes', '');
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlsm_proxy_map', '');
-- connection strings hold no password (dlsm_proxy_write_server refuses
-- them), yet are the owner's business; the routing code of every caller
-- reads the map and the node ids
REVOKE ALL ON @extschema@.dlsm_proxy_nodes FROM PUBLIC;
REVOKE ALL ON @extschema@.dlsm_proxy_map FROM PUBLIC;
GRANT SELECT (node_id, tags_process_ids) ON @extschema@.dlsm_proxy_nodes TO PUBLIC;
GRANT SELECT ON @extschema@.dlsm_proxy_map TO PUBLIC;

-- Internal helpers.

CREATE FUNCTION @extschema@.dlsm_proxy_not_configured()
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'dlsm_proxy is not configured'
		USING ERRCODE = 'object_not_in_prerequisite_state',
			  HINT = 'Call dlsm_proxy_configure(ARRAY[''<connection string of node 1>'', ...]).';
END
$$;

-- The PL/Proxy partition (node - 1) that holds an entity, for RUN ON.
-- Refuses an entity whose partition is being moved: new work for it waits
-- until the move is over.
CREATE FUNCTION @extschema@.dlsm_proxy_route_entity(entity pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql STABLE AS $$
DECLARE
	m	record;
	p	int4;
BEGIN
	SELECT nodes, moving INTO m FROM @extschema@.dlsm_proxy_map;
	IF NOT FOUND THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	IF entity IS NULL THEN
		RETURN 0;				-- the shard reports the NULL argument
	END IF;
	p := (hashtext(entity) & (cardinality(m.nodes) - 1)) + 1;
	IF m.moving[p] IS NOT NULL THEN
		RAISE EXCEPTION '"%" is being moved from node % to node %', entity, m.nodes[p], m.moving[p]
			USING ERRCODE = 'object_in_use',
				  DETAIL = format('Partition %s of the entity hash is being moved; new work for it is refused until the move is over.', p - 1),
				  HINT = 'Retry in a moment.';
	END IF;
	RETURN m.nodes[p] - 1;
END
$$;

-- The same for a lock name taken through the router: leases only.
CREATE FUNCTION @extschema@.dlsm_proxy_route_lock(name pg_catalog.text, lease pg_catalog.interval)
RETURNS pg_catalog.int4
LANGUAGE plpgsql STABLE AS $$
BEGIN
	IF lease IS NULL AND name IS NOT NULL THEN
		RAISE EXCEPTION 'dlsm_try_lock through dlsm_proxy needs a lease'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Each call through the router is its own transaction on the shard: a transaction-scope lock would be released at once.',
				  HINT = 'Pass lease => ..., or take the lock in a transaction on the shard itself.';
	END IF;
	RETURN @extschema@.dlsm_proxy_route_entity(name);
END
$$;

-- Where a lock name lives now, moving or not (unlock, refresh).
CREATE FUNCTION @extschema@.dlsm_proxy_route_name(name pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql STABLE AS $$
DECLARE
	m	int4[];
BEGIN
	SELECT nodes INTO m FROM @extschema@.dlsm_proxy_map;
	IF NOT FOUND THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	IF name IS NULL THEN
		RETURN 0;
	END IF;
	RETURN m[(hashtext(name) & (cardinality(m) - 1)) + 1] - 1;
END
$$;

-- The node that holds an entity (or a lock name) now.
CREATE FUNCTION @extschema@.dlsm_proxy_node_of(entity pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE sql STABLE STRICT AS $$
	SELECT @extschema@.dlsm_proxy_route_name(entity) + 1
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_node_of(pg_catalog.text) IS
'the node that holds an entity or a lock name';

-- The partition of the entity hash an entity (or a lock name) falls in.
CREATE FUNCTION @extschema@.dlsm_proxy_partition_of(entity pg_catalog.text,
													partitions pg_catalog.int4)
RETURNS pg_catalog.int4
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT pg_catalog.hashtext(entity) OPERATOR(pg_catalog.&) (partitions OPERATOR(pg_catalog.-) 1)
$$;

-- A process id's node: its last byte (0: untagged).
CREATE FUNCTION @extschema@.dlsm_proxy_node_of_process(process_id pg_catalog.uuid)
RETURNS pg_catalog.int4
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT pg_catalog.get_byte(pg_catalog.uuid_send(process_id), 15)
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_node_of_process(pg_catalog.uuid) IS
'the node a process id names in its last byte (0: untagged)';

-- A process id with its last byte set to node.
CREATE FUNCTION @extschema@.dlsm_proxy_tag(process_id pg_catalog.uuid, node pg_catalog.int4)
RETURNS pg_catalog.uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT pg_catalog.encode(pg_catalog.set_byte(pg_catalog.uuid_send(process_id), 15, node),
							 'hex')::pg_catalog.uuid
$$;

-- Is this error a shard that cannot be reached (down, starting, shutting
-- down, full, connection lost), as opposed to an answer from dlsm?
-- PL/Proxy reports libpq failures as XX000 with libpq's message.
CREATE FUNCTION @extschema@.dlsm_proxy_unreachable(state pg_catalog.text, message pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT state LIKE '08%'
		OR state IN ('57P01', '57P02', '57P03', '53300')
		OR (state = 'XX000' AND message ~ '(PQconnectPoll|PQconnectStart|PQconsumeInput|PQsendQuery|PQflush|connect timeout|query timeout|could not connect|Connection refused|server closed the connection|connection to server|terminating connection|Lost result|Unfinished connection)')
$$;

-- A node that cannot be reached, as the router reports it: 08006, naming
-- the node and what could not be done, PL/Proxy's message as the detail.
CREATE FUNCTION @extschema@.dlsm_proxy_raise_unreachable(node pg_catalog.int4,
														  what pg_catalog.text,
														  message pg_catalog.text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION '%: node % of dlsm_proxy cannot be reached', what, node
		USING ERRCODE = 'connection_failure',
			  DETAIL = message,
			  HINT = 'Only the entities, lock names and claims of that node wait until it is back; the other nodes go on. A call whose connection was lost may have taken effect there. dlsm_proxy_status shows which nodes can be reached.';
END
$$;

-- An answer of a node that is an error, as the router reports it: the
-- node's own message, SQLSTATE, detail and hint, unwrapped from PL/Proxy's
-- "f(n): [db] REMOTE ERROR: ...", "Remote detail: ..." and "Remote hint:
-- ...", and the node named in the detail.  Called from an exception
-- handler with what GET STACKED DIAGNOSTICS gave it.  done: for a call on
-- every node, the nodes it was done on already (not undone: each node
-- commits its part).
CREATE FUNCTION @extschema@.dlsm_proxy_reraise(node pg_catalog.int4, state pg_catalog.text,
												message pg_catalog.text, detail pg_catalog.text,
												hint pg_catalog.text,
												done pg_catalog.int4[] DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	m	text := pg_catalog.regexp_replace(message,
				'^\S+\(\d+\): \[[^]]*\] REMOTE [A-Z]+: ', '');
	d	text := pg_catalog.concat_ws(' ',
				pg_catalog.regexp_replace(nullif(detail, ''), '^Remote detail: ', ''),
				pg_catalog.format('Raised on node %s of dlsm_proxy.', node),
				CASE WHEN pg_catalog.cardinality(done) = 1
					 THEN pg_catalog.format('Done already on node %s, and not undone there.', done[1])
					 WHEN pg_catalog.cardinality(done) > 1
					 THEN pg_catalog.format('Done already on nodes %s, and not undone there.',
											pg_catalog.array_to_string(done, ', '))
				END);
	h	text := pg_catalog.regexp_replace(nullif(hint, ''), '^Remote hint: ', '');
BEGIN
	IF h IS NULL THEN
		RAISE EXCEPTION USING MESSAGE = m, ERRCODE = state, DETAIL = d;
	END IF;
	RAISE EXCEPTION USING MESSAGE = m, ERRCODE = state, DETAIL = d, HINT = h;
END
$$;

-- Session settings of the router (placeholders: SET them like any setting):
--   dlsm_proxy.claim_nodes    '' (every node) or a list of node ids, e.g. '2' or '1,3':
--                             the nodes dlsm_claim takes work from
--   dlsm_proxy.wait_slice     '100ms': how long a waiting claim waits on one
--                             node before it looks at the others again
--   dlsm_proxy.empty_backoff  '100ms': a node found empty is looked at again
--                             after this, before, only when no other node has work
--   dlsm_proxy.down_backoff   '1s': a node found unreachable is skipped this long
CREATE FUNCTION @extschema@.dlsm_proxy_setting(name pg_catalog.text, fallback pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE sql STABLE AS $$
	SELECT coalesce(nullif(pg_catalog.current_setting(name, true), ''), fallback)
$$;

-- A claimed row, as dlsm_claim returns it.
CREATE TYPE @extschema@.dlsm_proxy_claimed AS (
	id pg_catalog.int8,
	kind pg_catalog.text,
	entity pg_catalog.text,
	payload pg_catalog.jsonb,
	process_id pg_catalog.uuid,
	fence pg_catalog.int8,
	lease_until pg_catalog.timestamptz);

-- PL/Proxy functions: one call on one node (node_index = node - 1).

CREATE FUNCTION @extschema@.dlsm_proxy_claim_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_lease pg_catalog.interval,
	p_process_id pg_catalog.uuid, p_after pg_catalog.int8, p_wait pg_catalog.interval,
	p_units pg_catalog.int4)
RETURNS SETOF @extschema@.dlsm_proxy_claimed
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT c.id, c.kind, c.entity, c.payload, c.process_id, c.fence, c.lease_until
	  FROM dlsm_claim(p_queue, p_lease, p_process_id, p_after, p_wait, p_units) c;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_settle_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_process_id pg_catalog.uuid,
	p_outcome pg_catalog.text, p_detail pg_catalog.text, p_retry_after pg_catalog.interval)
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_settle(p_queue, p_process_id, p_outcome, p_detail, p_retry_after);
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_settle_many_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_process_ids pg_catalog.uuid[],
	p_outcome pg_catalog.text, p_detail pg_catalog.text, p_retry_after pg_catalog.interval)
RETURNS TABLE (process_id pg_catalog.uuid, settled pg_catalog.int8)
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT s.process_id, s.settled
	  FROM dlsm_settle_many(p_queue, p_process_ids, p_outcome, p_detail, p_retry_after) s;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_heartbeat_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_process_id pg_catalog.uuid,
	p_lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_heartbeat(p_queue, p_process_id, p_lease);
$$;

-- What the router knows of a shard, from the shard itself.
CREATE FUNCTION @extschema@.dlsm_proxy_probe_on(
	node_index pg_catalog.int4,
	OUT shard_node_id pg_catalog.int4, OUT shard pg_catalog.text,
	OUT dlsm_version pg_catalog.text, OUT raise_fence pg_catalog.bool)
RETURNS record
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT nullif(current_setting('dlsm.node_id', true), '')::int4 AS shard_node_id,
		   format('%s/%s', coalesce(nullif(current_setting('cluster_name'), ''),
									'port ' || current_setting('port')),
				  current_database()) AS shard,
		   (SELECT e.extversion FROM pg_extension e WHERE e.extname = 'dlsm') AS dlsm_version,
		   EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = 'dlsm_raise_fence') AS raise_fence;
$$;

-- The API, under dlsm's names.  queue is text here (the table is on the
-- shards): a name as for regclass, resolved on the shard.

CREATE FUNCTION @extschema@.dlsm_proxy_enqueue_on(
	p_queue pg_catalog.text, p_entity pg_catalog.text, p_kind pg_catalog.text,
	p_payload pg_catalog.jsonb, p_run_at pg_catalog.timestamptz)
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON @extschema@.dlsm_proxy_route_entity(p_entity);
	SELECT dlsm_enqueue(p_queue, p_entity, p_kind, p_payload, p_run_at);
$$;

CREATE FUNCTION @extschema@.dlsm_enqueue(
	queue pg_catalog.text,
	entity pg_catalog.text,
	kind pg_catalog.text DEFAULT 'create',
	payload pg_catalog.jsonb DEFAULT NULL,
	run_at pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	e_detail	text;
	e_hint		text;
BEGIN
	RETURN @extschema@.dlsm_proxy_enqueue_on(queue, entity, kind, payload, run_at);
EXCEPTION WHEN OTHERS THEN
	IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(
			@extschema@.dlsm_proxy_route_name(entity) + 1,
			format('dlsm_enqueue of "%s"', entity), SQLERRM);
	END IF;
	GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
	PERFORM @extschema@.dlsm_proxy_reraise(@extschema@.dlsm_proxy_route_name(entity) + 1, SQLSTATE, SQLERRM, e_detail, e_hint);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb, pg_catalog.timestamptz) IS
'add a request to the queue on the entity''s shard; its id is unique on that shard';

-- The claim: one node, or any node with work.
--
-- Candidates are the nodes of dlsm_proxy.claim_nodes (or p_nodes), else
-- all.  Each call starts one node further than the session's last call
-- (round robin, from a random node), so that one consumer serves every
-- shard in turn, and goes on to the next node while it finds nothing:
--   pass 1  nodes not found empty in the last dlsm_proxy.empty_backoff,
--           without waiting;
--   pass 2  the nodes found empty lately, without waiting (nothing is
--           missed: a claim returns nothing only when every node had nothing);
--   then, until wait runs out, a claim that waits dlsm_proxy.wait_slice on
--   one node (woken at once by work there) followed by a look at the
--   others, the waited-on node rotating.
-- A node that cannot be reached is skipped for dlsm_proxy.down_backoff; a
-- claim fails (08006) only when no candidate node could be reached.
-- A caller's process id, and the process id of a single-unit claim, are
-- made by the router with the node in the last byte; claims of several
-- units get theirs from dlsm (tagged by the shard's dlsm.node_id).
--
-- dlsm_claim is the loop over passes and nodes; its steps follow.

-- The session's claim state, between one dlsm_claim and the next: where
-- the last claim started and, per node id, until when (epoch seconds) the
-- node counts as found empty and as unreachable.  It lives in the custom
-- setting dlsm_proxy.claim_state as one float8[]
--   {rotation, empty_until[1 .. maxnode], down_until[1 .. maxnode]}
-- and these two functions are the only ones that read or write it.

-- The state for node ids 1 .. maxnode; all NULL when the session has none
-- yet, or one for another highest node id.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_state_get(
	maxnode pg_catalog.int4,
	OUT rotation pg_catalog.int4,
	OUT empty_until pg_catalog.float8[],
	OUT down_until pg_catalog.float8[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	st	float8[] := nullif(pg_catalog.current_setting('dlsm_proxy.claim_state', true), '')::float8[];
BEGIN
	IF st IS NULL OR cardinality(st) <> 1 + 2 * maxnode THEN
		RETURN;
	END IF;
	rotation := st[1]::int4;
	empty_until := st[2 : 1 + maxnode];
	down_until := st[2 + maxnode : 1 + 2 * maxnode];
END
$$;

-- Keep the state for the session's next claim (rolled back with the
-- transaction, as any SET).
CREATE FUNCTION @extschema@.dlsm_proxy_claim_state_set(
	rotation pg_catalog.int4,
	empty_until pg_catalog.float8[],
	down_until pg_catalog.float8[])
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	PERFORM pg_catalog.set_config('dlsm_proxy.claim_state',
		(ARRAY[rotation::float8] || empty_until || down_until)::text, false);
END
$$;

-- The arguments dlsm_claim checks itself, before any node: a lease (a
-- claim through the router commits at once) and a wait of zero or more.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_check(lease pg_catalog.interval,
													wait pg_catalog.interval)
RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	IF lease IS NULL THEN
		RAISE EXCEPTION 'dlsm_claim through dlsm_proxy needs a lease'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'Each call through the router commits on its shard at once: a claim without a lease could not be rolled back.',
				  HINT = 'Pass lease => ..., or claim and settle in one transaction on the shard itself.';
	END IF;
	IF wait IS NULL THEN
		RAISE EXCEPTION 'argument "wait" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF wait < interval '0' THEN
		RAISE EXCEPTION 'wait must not be negative'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
END
$$;

-- The nodes a claim may take work from, in node id order unless
-- dlsm_proxy.claim_nodes lists them; and the highest node id (the size of
-- the claim state).
CREATE FUNCTION @extschema@.dlsm_proxy_claim_candidates(
	OUT candidates pg_catalog.int4[],
	OUT maxnode pg_catalog.int4)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	all_nodes	int4[];
	listed		text;
BEGIN
	SELECT pg_catalog.array_agg(x.node_id ORDER BY x.node_id), pg_catalog.max(x.node_id)
	  INTO all_nodes, maxnode
	  FROM @extschema@.dlsm_proxy_nodes x;
	IF all_nodes IS NULL THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	listed := nullif(pg_catalog.regexp_replace(
		@extschema@.dlsm_proxy_setting('dlsm_proxy.claim_nodes', ''), '\s', '', 'g'), '');
	candidates := coalesce(pg_catalog.string_to_array(listed, ',')::int4[], all_nodes);
	IF NOT candidates OPERATOR(pg_catalog.<@) all_nodes OR cardinality(candidates) = 0 THEN
		RAISE EXCEPTION 'no such node of dlsm_proxy among %', candidates
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The nodes are %s.', all_nodes),
				  HINT = 'Check dlsm_proxy.claim_nodes.';
	END IF;
END
$$;

-- The claim's timing settings: dlsm_proxy.empty_backoff and
-- dlsm_proxy.down_backoff in seconds, dlsm_proxy.wait_slice.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_timing(
	OUT empty_backoff pg_catalog.float8,
	OUT down_backoff pg_catalog.float8,
	OUT wait_slice pg_catalog.interval)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	empty_backoff := extract(epoch FROM @extschema@.dlsm_proxy_setting('dlsm_proxy.empty_backoff', '100ms')::interval);
	down_backoff := extract(epoch FROM @extschema@.dlsm_proxy_setting('dlsm_proxy.down_backoff', '1s')::interval);
	wait_slice := @extschema@.dlsm_proxy_setting('dlsm_proxy.wait_slice', '100ms')::interval;
END
$$;

-- Whether a pass of a claim skips a node.  Passes 1 and 2: the nodes not
-- found empty lately, then those found empty; pass 3: only the nodes found
-- unreachable lately, and only when no node was reached; pass 4 on: every
-- node.  Outside pass 3, a node found unreachable lately is skipped.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_skips(
	pass pg_catalog.int4, reached pg_catalog.bool,
	empty_until pg_catalog.float8, down_until pg_catalog.float8, now_s pg_catalog.float8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF pass = 3 THEN
		RETURN reached OR down_until <= now_s;
	END IF;
	IF down_until > now_s THEN
		RETURN true;
	END IF;
	IF pass <= 2 THEN
		RETURN (empty_until > now_s) <> (pass = 2);
	END IF;
	RETURN false;
END
$$;

-- How long a waiting claim waits on one node: dlsm_proxy.wait_slice, cut
-- at the deadline.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_slice(slice pg_catalog.interval,
													deadline pg_catalog.timestamptz)
RETURNS pg_catalog.interval
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN greatest(least(slice, deadline - pg_catalog.clock_timestamp()), interval '0');
END
$$;

-- The process id a claim sends to node: the caller's, or a new one for a
-- claim of one unit, with the node in its last byte; else NULL (dlsm makes
-- them, tagged by the shard).
CREATE FUNCTION @extschema@.dlsm_proxy_claim_process_id(process_id pg_catalog.uuid,
														 units pg_catalog.int4,
														 node pg_catalog.int4)
RETURNS pg_catalog.uuid
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
	RETURN CASE WHEN process_id IS NOT NULL
				THEN @extschema@.dlsm_proxy_tag(process_id, node)
				WHEN units = 1
				THEN @extschema@.dlsm_proxy_tag(pg_catalog.gen_random_uuid(), node) END;
END
$$;

-- One claim on one node: the rows claimed there (none: the node had no
-- work), or, when the node cannot be reached, no rows and PL/Proxy's
-- error.  Any other error is the node's answer, raised as dlsm's own.
CREATE FUNCTION @extschema@.dlsm_proxy_claim_from(
	node pg_catalog.int4, p_queue pg_catalog.text, p_lease pg_catalog.interval,
	p_process_id pg_catalog.uuid, p_after pg_catalog.int8, p_wait pg_catalog.interval,
	p_units pg_catalog.int4,
	OUT claimed @extschema@.dlsm_proxy_claimed[],
	OUT unreachable pg_catalog.text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	e_detail	text;
	e_hint		text;
BEGIN
	SELECT coalesce(pg_catalog.array_agg(ROW(c.id, c.kind, c.entity, c.payload, c.process_id,
											 c.fence, c.lease_until)::@extschema@.dlsm_proxy_claimed
										 ORDER BY c.o), '{}')
	  INTO claimed
	  FROM @extschema@.dlsm_proxy_claim_on(node - 1, p_queue, p_lease, p_process_id,
											p_after, p_wait, p_units)
		   WITH ORDINALITY AS c(id, kind, entity, payload, process_id, fence, lease_until, o);
EXCEPTION WHEN OTHERS THEN
	IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
		PERFORM @extschema@.dlsm_proxy_reraise(node, SQLSTATE, SQLERRM, e_detail, e_hint);
	END IF;
	claimed := NULL;
	unreachable := SQLERRM;
END
$$;

CREATE FUNCTION @extschema@.dlsm_claim(
	queue pg_catalog.text,
	lease pg_catalog.interval DEFAULT NULL,
	process_id pg_catalog.uuid DEFAULT NULL,
	after pg_catalog.int8 DEFAULT 0,
	wait pg_catalog.interval DEFAULT '0',
	units pg_catalog.int4 DEFAULT 1)
RETURNS SETOF @extschema@.dlsm_proxy_claimed
ROWS 1
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	cand		int4[];
	maxnode		int4;
	n			int4;
	timing		record;
	rotation	int4;
	empty_until	float8[];
	down_until	float8[];
	start		int4;
	first		int4;
	pass		int4 := 1;
	k			int4;
	node		int4;
	w			interval;
	r			record;
	deadline	timestamptz;
	now_s		float8;
	waited		boolean;
	tried		int4;
	reached		boolean := false;
	last_error	text;
BEGIN
	PERFORM @extschema@.dlsm_proxy_claim_check(dlsm_claim.lease, dlsm_claim.wait);
	SELECT c.candidates, c.maxnode INTO cand, maxnode FROM @extschema@.dlsm_proxy_claim_candidates() c;
	n := cardinality(cand);
	SELECT * INTO timing FROM @extschema@.dlsm_proxy_claim_timing();
	SELECT s.rotation, s.empty_until, s.down_until INTO rotation, empty_until, down_until
	  FROM @extschema@.dlsm_proxy_claim_state_get(maxnode) s;
	IF rotation IS NULL THEN
		-- the session's first claim (or the nodes changed): from a random node
		rotation := floor(random() * n);
		empty_until := pg_catalog.array_fill(0::float8, ARRAY[maxnode]);
		down_until := pg_catalog.array_fill(0::float8, ARRAY[maxnode]);
	END IF;
	start := (rotation + 1) % n;
	first := start;
	deadline := pg_catalog.clock_timestamp() + dlsm_claim.wait;

	LOOP
		waited := false;
		tried := 0;
		FOR k IN 0 .. n - 1 LOOP
			node := cand[(first + k) % n + 1];
			now_s := extract(epoch FROM pg_catalog.clock_timestamp());
			CONTINUE WHEN @extschema@.dlsm_proxy_claim_skips(pass, reached, empty_until[node],
															 down_until[node], now_s);
			w := interval '0';
			IF pass >= 4 AND NOT waited THEN
				w := @extschema@.dlsm_proxy_claim_slice(timing.wait_slice, deadline);
				waited := true;
			END IF;
			tried := tried + 1;
			SELECT * INTO r FROM @extschema@.dlsm_proxy_claim_from(node, dlsm_claim.queue, dlsm_claim.lease,
				@extschema@.dlsm_proxy_claim_process_id(dlsm_claim.process_id, dlsm_claim.units, node),
				dlsm_claim.after, w, dlsm_claim.units);
			IF r.claimed IS NULL THEN
				last_error := r.unreachable;
				down_until[node] := extract(epoch FROM pg_catalog.clock_timestamp()) + timing.down_backoff;
				CONTINUE;
			END IF;
			reached := true;
			down_until[node] := 0;
			IF cardinality(r.claimed) > 0 THEN
				empty_until[node] := 0;
				PERFORM @extschema@.dlsm_proxy_claim_state_set(start, empty_until, down_until);
				RETURN QUERY SELECT * FROM unnest(r.claimed);
				RETURN;
			END IF;
			empty_until[node] := extract(epoch FROM pg_catalog.clock_timestamp()) + timing.empty_backoff;
		END LOOP;

		IF pass = 3 AND NOT reached THEN
			-- every node reachable lately was tried; nothing reachable at all
			PERFORM @extschema@.dlsm_proxy_claim_state_set(start, empty_until, down_until);
			RAISE EXCEPTION 'dlsm_claim: no shard could be reached'
				USING ERRCODE = 'connection_failure',
					  DETAIL = format('Nodes tried: %s. Last error: %s', cand, last_error);
		END IF;
		pass := pass + 1;
		IF pass >= 4 THEN
			EXIT WHEN pg_catalog.clock_timestamp() >= deadline;
			IF pass > 4 THEN
				first := (first + 1) % n;
			END IF;
			IF tried = 0 AND pass > 4 THEN
				-- nothing reachable to wait on: wait here, then look again
				PERFORM pg_catalog.pg_sleep(extract(epoch FROM
					@extschema@.dlsm_proxy_claim_slice(timing.wait_slice, deadline)));
			END IF;
		END IF;
	END LOOP;
	PERFORM @extschema@.dlsm_proxy_claim_state_set(start, empty_until, down_until);
	RETURN;
END
$$;

COMMENT ON FUNCTION @extschema@.dlsm_claim(pg_catalog.text, pg_catalog.interval, pg_catalog.uuid, pg_catalog.int8, pg_catalog.interval, pg_catalog.int4) IS
'claim with a lease the next units of work of the first node that has some (dlsm_proxy.claim_nodes: which nodes)';

CREATE FUNCTION @extschema@.dlsm_claim_on(
	node_id pg_catalog.int4,
	queue pg_catalog.text,
	lease pg_catalog.interval DEFAULT NULL,
	process_id pg_catalog.uuid DEFAULT NULL,
	after pg_catalog.int8 DEFAULT 0,
	wait pg_catalog.interval DEFAULT '0',
	units pg_catalog.int4 DEFAULT 1)
RETURNS SETOF @extschema@.dlsm_proxy_claimed
ROWS 1
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	saved	text := pg_catalog.current_setting('dlsm_proxy.claim_nodes', true);
BEGIN
	IF node_id IS NULL THEN
		RAISE EXCEPTION 'argument "node_id" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM pg_catalog.set_config('dlsm_proxy.claim_nodes', node_id::text, true);
	RETURN QUERY SELECT * FROM @extschema@.dlsm_claim(queue, lease, process_id, after, wait, units);
	PERFORM pg_catalog.set_config('dlsm_proxy.claim_nodes', coalesce(saved, ''), true);
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_claim_on(pg_catalog.int4, pg_catalog.text, pg_catalog.interval, pg_catalog.uuid, pg_catalog.int8, pg_catalog.interval, pg_catalog.int4) IS
'claim with a lease the next units of work of one node';

-- Settles and heartbeats go to the node in the process id's last byte.
-- When every node tags its process ids (dlsm.node_id), that node's answer
-- is final; otherwise a claim that node does not hold is looked for on the
-- others (an untagged process id, made by a dlsm without dlsm.node_id).
CREATE FUNCTION @extschema@.dlsm_settle(
	queue pg_catalog.text,
	process_id pg_catalog.uuid,
	outcome pg_catalog.text DEFAULT 'complete',
	detail pg_catalog.text DEFAULT NULL,
	retry_after pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	home		int4;
	known		boolean;
	final		boolean;
	other		int4;
	unreached	int4[];
	last_error	text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF dlsm_settle.process_id IS NULL THEN
		RAISE EXCEPTION 'argument "process_id" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	home := @extschema@.dlsm_proxy_node_of_process(dlsm_settle.process_id);
	SELECT pg_catalog.bool_or(x.node_id = home), pg_catalog.bool_and(x.tags_process_ids)
	  INTO known, final FROM @extschema@.dlsm_proxy_nodes x;
	IF known IS NULL THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	IF known THEN
		BEGIN
			RETURN @extschema@.dlsm_proxy_settle_on(home - 1, queue, dlsm_settle.process_id,
													outcome, detail, retry_after);
		EXCEPTION
			WHEN object_not_in_prerequisite_state THEN
				IF final THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(home, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
			WHEN OTHERS THEN
				IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(home, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
				IF final THEN
					PERFORM @extschema@.dlsm_proxy_raise_unreachable(home,
						format('dlsm_settle of process id %s', dlsm_settle.process_id), SQLERRM);
				END IF;
				unreached := ARRAY[home];
				last_error := SQLERRM;
		END;
	END IF;
	-- not tagged by every node: the claim may be on another node
	FOR other IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x
				  WHERE x.node_id <> home LOOP
		BEGIN
			RETURN @extschema@.dlsm_proxy_settle_on(other - 1, queue, dlsm_settle.process_id,
													outcome, detail, retry_after);
		EXCEPTION
			WHEN object_not_in_prerequisite_state THEN
				NULL;
			WHEN OTHERS THEN
				IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(other, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
				unreached := unreached || other;
				last_error := SQLERRM;
		END;
	END LOOP;
	IF unreached IS NOT NULL THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(unreached[1],
			format('dlsm_settle of process id %s (not held on the nodes reached)', dlsm_settle.process_id),
			last_error);
	END IF;
	RAISE EXCEPTION 'process id % holds no request in progress in queue "%"',
		dlsm_settle.process_id, queue
		USING ERRCODE = 'object_not_in_prerequisite_state',
			  DETAIL = 'No node holds it.';
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_settle(pg_catalog.text, pg_catalog.uuid, pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'settle a claim on the node its process id names';

CREATE FUNCTION @extschema@.dlsm_heartbeat(
	queue pg_catalog.text,
	process_id pg_catalog.uuid,
	lease pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	home		int4;
	known		boolean;
	final		boolean;
	other		int4;
	unreached	int4[];
	last_error	text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF dlsm_heartbeat.process_id IS NULL THEN
		RAISE EXCEPTION 'argument "process_id" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	home := @extschema@.dlsm_proxy_node_of_process(dlsm_heartbeat.process_id);
	SELECT pg_catalog.bool_or(x.node_id = home), pg_catalog.bool_and(x.tags_process_ids)
	  INTO known, final FROM @extschema@.dlsm_proxy_nodes x;
	IF known IS NULL THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	IF known THEN
		BEGIN
			RETURN @extschema@.dlsm_proxy_heartbeat_on(home - 1, queue, dlsm_heartbeat.process_id, lease);
		EXCEPTION
			WHEN object_not_in_prerequisite_state THEN
				IF final THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(home, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
			WHEN OTHERS THEN
				IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(home, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
				IF final THEN
					PERFORM @extschema@.dlsm_proxy_raise_unreachable(home,
						format('dlsm_heartbeat of process id %s', dlsm_heartbeat.process_id), SQLERRM);
				END IF;
				unreached := ARRAY[home];
				last_error := SQLERRM;
		END;
	END IF;
	-- not tagged by every node: the claim may be on another node
	FOR other IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x
				  WHERE x.node_id <> home LOOP
		BEGIN
			RETURN @extschema@.dlsm_proxy_heartbeat_on(other - 1, queue, dlsm_heartbeat.process_id, lease);
		EXCEPTION
			WHEN object_not_in_prerequisite_state THEN
				NULL;
			WHEN OTHERS THEN
				IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(other, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
				unreached := unreached || other;
				last_error := SQLERRM;
		END;
	END LOOP;
	IF unreached IS NOT NULL THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(unreached[1],
			format('dlsm_heartbeat of process id %s (not held on the nodes reached)', dlsm_heartbeat.process_id),
			last_error);
	END IF;
	RAISE EXCEPTION 'process id % holds no request in progress in queue "%"',
		dlsm_heartbeat.process_id, queue
		USING ERRCODE = 'object_not_in_prerequisite_state',
			  DETAIL = 'No node holds it.';
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_heartbeat(pg_catalog.text, pg_catalog.uuid, pg_catalog.interval) IS
'extend the lease of a claim on the node its process id names';

-- A batch goes to the nodes of its process ids, one call per node (a claim
-- of several units takes them from one node, so usually one call); one row
-- per given process id, in the given order, settled = 0 for a lost one, and
-- NULL for one whose node could not be reached (with a WARNING): it stays
-- claimed until settled again or its lease runs out.
CREATE FUNCTION @extschema@.dlsm_settle_many(
	queue pg_catalog.text,
	process_ids pg_catalog.uuid[],
	outcome pg_catalog.text DEFAULT 'complete',
	detail pg_catalog.text DEFAULT NULL,
	retry_after pg_catalog.interval DEFAULT NULL)
RETURNS TABLE (
	process_id pg_catalog.uuid,
	settled pg_catalog.int8)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
	nn			int4;
	final		boolean;
	homes		int4[];
	rp			uuid[] := '{}';
	rs			int8[] := '{}';
	unreached	int4[] := '{}';
	missing		uuid[];
	g			record;
	r			record;
	other		int4;
	sub			uuid[];
	last_error	text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF process_ids IS NULL THEN
		RAISE EXCEPTION 'argument "process_ids" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF pg_catalog.array_ndims(process_ids) > 1 THEN
		RAISE EXCEPTION 'process_ids must be a one-dimensional array'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF pg_catalog.array_position(process_ids, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'process_ids must not contain nulls'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF cardinality(process_ids) = 0 THEN
		RETURN;
	END IF;
	SELECT pg_catalog.count(*), pg_catalog.bool_and(x.tags_process_ids)
	  INTO nn, final FROM @extschema@.dlsm_proxy_nodes x;
	IF nn = 0 THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	-- each process id's home: the node in its last byte (nodes are 1 .. nn);
	-- an untagged one goes to some node first
	SELECT pg_catalog.array_agg(CASE WHEN b BETWEEN 1 AND nn THEN b
									 ELSE pg_catalog.abs(pg_catalog.hashtext(a.u::text)) % nn + 1 END
								ORDER BY a.o)
	  INTO homes
	  FROM unnest(process_ids) WITH ORDINALITY AS a(u, o),
		   LATERAL @extschema@.dlsm_proxy_node_of_process(a.u) AS b;
	FOR g IN SELECT h.home, pg_catalog.array_agg(h.u ORDER BY h.o) AS pids
			   FROM unnest(process_ids, homes) WITH ORDINALITY AS h(u, home, o)
			  GROUP BY h.home ORDER BY h.home LOOP
		BEGIN
			FOR r IN SELECT s.process_id AS p, s.settled AS n
					   FROM @extschema@.dlsm_proxy_settle_many_on(g.home - 1, queue, g.pids, outcome,
																   detail, retry_after) s LOOP
				rp := rp || r.p;
				rs := rs || r.n;
			END LOOP;
		EXCEPTION WHEN OTHERS THEN
			IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
				GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
				PERFORM @extschema@.dlsm_proxy_reraise(g.home, SQLSTATE, SQLERRM, e_detail, e_hint);
			END IF;
			unreached := unreached || g.home;
			last_error := SQLERRM;
		END;
	END LOOP;
	IF NOT final THEN
		-- untagged process ids: look on the other reachable nodes for what
		-- settled nothing on its first node
		SELECT pg_catalog.array_agg(DISTINCT a.u) INTO missing
		  FROM unnest(process_ids) a(u)
		 WHERE NOT EXISTS (SELECT 1 FROM unnest(rp, rs) x(p, n) WHERE x.p = a.u AND x.n > 0);
		FOR other IN 1 .. nn LOOP
			EXIT WHEN missing IS NULL;
			CONTINUE WHEN other = ANY (unreached);
			SELECT pg_catalog.array_agg(h.u) INTO sub
			  FROM unnest(process_ids, homes) h(u, home)
			 WHERE h.u = ANY (missing) AND h.home <> other;
			CONTINUE WHEN sub IS NULL;
			BEGIN
				FOR r IN SELECT s.process_id AS p, s.settled AS n
						   FROM @extschema@.dlsm_proxy_settle_many_on(other - 1, queue, sub, outcome,
																	   detail, retry_after) s LOOP
					rp := rp || r.p;
					rs := rs || r.n;
				END LOOP;
			EXCEPTION WHEN OTHERS THEN
				IF NOT @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
					GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
					PERFORM @extschema@.dlsm_proxy_reraise(other, SQLSTATE, SQLERRM, e_detail, e_hint);
				END IF;
				unreached := unreached || other;
				last_error := SQLERRM;
			END;
			SELECT pg_catalog.array_agg(m.u) INTO missing
			  FROM unnest(missing) m(u)
			 WHERE NOT EXISTS (SELECT 1 FROM unnest(rp, rs) x(p, n) WHERE x.p = m.u AND x.n > 0);
		END LOOP;
	END IF;
	IF cardinality(unreached) > 0 THEN
		RAISE WARNING 'dlsm_settle_many: node % of dlsm_proxy cannot be reached', unreached
			USING DETAIL = last_error,
				  HINT = 'The process ids that node may hold are reported with settled NULL: settle them again later, or their leases run out.';
	END IF;
	-- settled: what a node reported (a process id given twice, twice); NULL
	-- when its node, or any node for an untagged one, could not be reached
	RETURN QUERY
		SELECT a.u,
			   CASE WHEN r2.n > 0 THEN r2.n
					WHEN a.home = ANY (unreached) OR (NOT final AND cardinality(unreached) > 0) THEN NULL
					ELSE 0::int8 END
		  FROM unnest(process_ids, homes) WITH ORDINALITY AS a(u, home, o)
		  LEFT JOIN (SELECT x.p, pg_catalog.max(x.n) AS n
					   FROM unnest(rp, rs) x(p, n) GROUP BY x.p) r2 ON r2.p = a.u
		 ORDER BY a.o;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_settle_many(pg_catalog.text, pg_catalog.uuid[], pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'settle many claims, each on the node its process id names; settled NULL where that node cannot be reached';

-- Named locks: lease scope only, on the node of the name.

CREATE FUNCTION @extschema@.dlsm_proxy_try_lock_on(
	p_name pg_catalog.text, p_wait pg_catalog.interval, p_lease pg_catalog.interval)
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON @extschema@.dlsm_proxy_route_lock(p_name, p_lease);
	SELECT dlsm_try_lock(p_name, p_wait, p_lease);
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_unlock_on(p_name pg_catalog.text, p_fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON @extschema@.dlsm_proxy_route_name(p_name);
	SELECT dlsm_unlock(p_name, p_fence);
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_refresh_lock_on(
	p_name pg_catalog.text, p_fence pg_catalog.int8, p_lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON @extschema@.dlsm_proxy_route_name(p_name);
	SELECT dlsm_refresh_lock(p_name, p_fence, p_lease);
$$;

CREATE FUNCTION @extschema@.dlsm_try_lock(
	name pg_catalog.text,
	wait pg_catalog.interval DEFAULT '0',
	lease pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	e_detail	text;
	e_hint		text;
BEGIN
	RETURN @extschema@.dlsm_proxy_try_lock_on(name, wait, lease);
EXCEPTION WHEN OTHERS THEN
	IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(
			@extschema@.dlsm_proxy_route_name(name) + 1,
			format('dlsm_try_lock of "%s"', name), SQLERRM);
	END IF;
	GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
	PERFORM @extschema@.dlsm_proxy_reraise(@extschema@.dlsm_proxy_route_name(name) + 1, SQLSTATE, SQLERRM, e_detail, e_hint);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_try_lock(pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
'take a named lock with a lease on the node of its name; a fence or NULL';

CREATE FUNCTION @extschema@.dlsm_unlock(
	name pg_catalog.text,
	fence pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	e_detail	text;
	e_hint		text;
BEGIN
	RETURN @extschema@.dlsm_proxy_unlock_on(name, fence);
EXCEPTION WHEN OTHERS THEN
	IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(
			@extschema@.dlsm_proxy_route_name(name) + 1,
			format('dlsm_unlock of "%s"', name), SQLERRM);
	END IF;
	GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
	PERFORM @extschema@.dlsm_proxy_reraise(@extschema@.dlsm_proxy_route_name(name) + 1, SQLSTATE, SQLERRM, e_detail, e_hint);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_unlock(pg_catalog.text, pg_catalog.int8) IS
'release a named lock on the node of its name';

CREATE FUNCTION @extschema@.dlsm_refresh_lock(
	name pg_catalog.text,
	fence pg_catalog.int8,
	lease pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	e_detail	text;
	e_hint		text;
BEGIN
	RETURN @extschema@.dlsm_proxy_refresh_lock_on(name, fence, lease);
EXCEPTION WHEN OTHERS THEN
	IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(
			@extschema@.dlsm_proxy_route_name(name) + 1,
			format('dlsm_refresh_lock of "%s"', name), SQLERRM);
	END IF;
	GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
	PERFORM @extschema@.dlsm_proxy_reraise(@extschema@.dlsm_proxy_route_name(name) + 1, SQLSTATE, SQLERRM, e_detail, e_hint);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_refresh_lock(pg_catalog.text, pg_catalog.int8, pg_catalog.interval) IS
'extend the lease of a named lock on the node of its name';

-- On every node: queue administration and the reaper.  One call per node,
-- in node order; a node's error names that node and the nodes the call was
-- done on already (each node commits its part: a call that fails on node 2
-- stays done on node 1).  dlsm_set_handler first checks on every node that
-- the queue and the function exist, and changes nothing when one lacks them.

CREATE FUNCTION @extschema@.dlsm_proxy_create_queue_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_channel pg_catalog.text,
	p_max_attempts pg_catalog.int4, p_retention pg_catalog.interval)
RETURNS pg_catalog.text
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_create_queue(p_queue, p_channel, p_max_attempts, p_retention)::text;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_drop_queue_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_drop_table pg_catalog.bool)
RETURNS pg_catalog.text
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT p_queue::text FROM dlsm_drop_queue(p_queue, p_drop_table);
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_set_handler_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_handler pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT p_queue::regclass::text FROM dlsm_set_handler(p_queue, p_handler::regproc);
$$;

-- What a node lacks for dlsm_set_handler: NULL, or 'SQLSTATE message'.
CREATE FUNCTION @extschema@.dlsm_proxy_handler_check_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_handler pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT CASE WHEN pg_catalog.to_regclass(p_queue) IS NULL
				THEN pg_catalog.format('42P01 relation "%s" does not exist', p_queue)
				WHEN p_handler IS NOT NULL AND pg_catalog.to_regproc(p_handler) IS NULL
				THEN pg_catalog.format('42883 function "%s" does not exist', p_handler) END;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_reap_on(node_index pg_catalog.int4, p_queue pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_reap(p_queue);
$$;

-- The error of node (or its being unreachable) in a call on every node,
-- done already on the nodes done.
CREATE FUNCTION @extschema@.dlsm_proxy_raise_on_all(node pg_catalog.int4, done pg_catalog.int4[],
													 what pg_catalog.text, state pg_catalog.text,
													 message pg_catalog.text, detail pg_catalog.text,
													 hint pg_catalog.text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF @extschema@.dlsm_proxy_unreachable(state, message) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(node,
			CASE WHEN pg_catalog.cardinality(done) = 0 THEN what
				 WHEN pg_catalog.cardinality(done) = 1
				 THEN pg_catalog.format('%s (done already on node %s)', what, done[1])
				 ELSE pg_catalog.format('%s (done already on nodes %s)', what,
										pg_catalog.array_to_string(done, ', ')) END,
			message);
	END IF;
	PERFORM @extschema@.dlsm_proxy_reraise(node, state, message, detail, hint, done);
END
$$;

CREATE FUNCTION @extschema@.dlsm_create_queue(
	queue pg_catalog.text,
	channel pg_catalog.text DEFAULT NULL,
	max_attempts pg_catalog.int4 DEFAULT 5,
	retention pg_catalog.interval DEFAULT NULL)
RETURNS SETOF pg_catalog.text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	node		int4;
	done		int4[] := '{}';
	r			text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_nodes) THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	FOR node IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			r := @extschema@.dlsm_proxy_create_queue_on(node - 1, queue, channel, max_attempts, retention);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(node, done,
				pg_catalog.format('dlsm_create_queue of "%s"', queue),
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
		done := done || node;
		RETURN NEXT r;
	END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_create_queue(pg_catalog.text, pg_catalog.text, pg_catalog.int4, pg_catalog.interval) IS
'create the queue on every node; one row per node';

CREATE FUNCTION @extschema@.dlsm_drop_queue(
	queue pg_catalog.text,
	drop_table pg_catalog.bool DEFAULT false)
RETURNS SETOF pg_catalog.text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	node		int4;
	done		int4[] := '{}';
	r			text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_nodes) THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	FOR node IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			r := @extschema@.dlsm_proxy_drop_queue_on(node - 1, queue, drop_table);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(node, done,
				pg_catalog.format('dlsm_drop_queue of "%s"', queue),
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
		done := done || node;
		RETURN NEXT r;
	END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_drop_queue(pg_catalog.text, pg_catalog.bool) IS
'unregister the queue on every node (and drop its tables)';

CREATE FUNCTION @extschema@.dlsm_set_handler(
	queue pg_catalog.text,
	handler pg_catalog.text)
RETURNS SETOF pg_catalog.text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	node		int4;
	done		int4[] := '{}';
	r			text;
	lack		text;
	e_detail	text;
	e_hint		text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_nodes) THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	-- every node first: the queue and the function exist on each
	FOR node IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			lack := @extschema@.dlsm_proxy_handler_check_on(node - 1, queue, handler);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(node, '{}',
				pg_catalog.format('dlsm_set_handler of "%s"', queue),
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
		IF lack IS NOT NULL THEN
			RAISE EXCEPTION USING ERRCODE = pg_catalog.split_part(lack, ' ', 1),
				MESSAGE = pg_catalog.substr(lack, 7),
				DETAIL = pg_catalog.format('Raised on node %s of dlsm_proxy; no node was changed.', node);
		END IF;
	END LOOP;
	FOR node IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			r := @extschema@.dlsm_proxy_set_handler_on(node - 1, queue, handler);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(node, done,
				pg_catalog.format('dlsm_set_handler of "%s"', queue),
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
		done := done || node;
		RETURN NEXT r;
	END LOOP;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_set_handler(pg_catalog.text, pg_catalog.text) IS
'set the queue''s handler on every node (the function must exist on each)';

CREATE FUNCTION @extschema@.dlsm_proxy_reap_all(queue pg_catalog.text)
RETURNS SETOF pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	node		int4;
	done		int4[] := '{}';
	r			int8;
	e_detail	text;
	e_hint		text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_nodes) THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	FOR node IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			r := @extschema@.dlsm_proxy_reap_on(node - 1, queue);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(node, done,
				pg_catalog.format('dlsm_reap of "%s"', queue),
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
		done := done || node;
		RETURN NEXT r;
	END LOOP;
END
$$;

CREATE FUNCTION @extschema@.dlsm_reap(queue pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE AS $$
	SELECT coalesce(pg_catalog.sum(r), 0)::pg_catalog.int8
	  FROM @extschema@.dlsm_proxy_reap_all($1) r
$$;
COMMENT ON FUNCTION @extschema@.dlsm_reap(pg_catalog.text) IS
'the reaper''s pass on every node; rows moved in all';

-- Monitoring: every node's view, gathered node by node, with the node's
-- dlsm.node_id and its name as two more columns.  A node that cannot be
-- reached, or whose view fails, makes them fail, naming the node.

CREATE FUNCTION @extschema@.dlsm_proxy_queue_stats_on(
	node_index pg_catalog.int4,
	OUT queue pg_catalog.text,
	OUT new pg_catalog.int8,
	OUT in_progress pg_catalog.int8,
	OUT complete pg_catalog.int8,
	OUT error pg_catalog.int8,
	OUT ready pg_catalog.int8,
	OUT delayed pg_catalog.int8,
	OUT waiting_on_create pg_catalog.int8,
	OUT oldest_ready_age pg_catalog.interval,
	OUT expired_leases pg_catalog.int8,
	OUT dead_tuples pg_catalog.int8,
	OUT last_autovacuum pg_catalog.timestamptz,
	OUT oldest_claim_age pg_catalog.interval,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT s.queue::text AS queue, s.new, s.in_progress, s.complete, s.error, s.ready,
		   s.delayed, s.waiting_on_create, s.oldest_ready_age, s.expired_leases,
		   s.dead_tuples, s.last_autovacuum, s.oldest_claim_age,
		   nullif(current_setting('dlsm.node_id', true), '')::int4 AS node_id,
		   format('%s/%s', coalesce(nullif(current_setting('cluster_name'), ''),
									'port ' || current_setting('port')),
				  current_database()) AS shard
	  FROM dlsm_queue_stats s;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_queue_stats(
	OUT queue pg_catalog.text,
	OUT new pg_catalog.int8,
	OUT in_progress pg_catalog.int8,
	OUT complete pg_catalog.int8,
	OUT error pg_catalog.int8,
	OUT ready pg_catalog.int8,
	OUT delayed pg_catalog.int8,
	OUT waiting_on_create pg_catalog.int8,
	OUT oldest_ready_age pg_catalog.interval,
	OUT expired_leases pg_catalog.int8,
	OUT dead_tuples pg_catalog.int8,
	OUT last_autovacuum pg_catalog.timestamptz,
	OUT oldest_claim_age pg_catalog.interval,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	n			int4;
	e_detail	text;
	e_hint		text;
BEGIN
	FOR n IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_queue_stats_on(n - 1);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(n, '{}', 'dlsm_queue_stats',
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
	END LOOP;
END
$$;

CREATE VIEW @extschema@.dlsm_queue_stats AS
	SELECT * FROM @extschema@.dlsm_proxy_queue_stats();
COMMENT ON VIEW @extschema@.dlsm_queue_stats IS
'dlsm_queue_stats of every node, one row per queue and node';

CREATE FUNCTION @extschema@.dlsm_proxy_locks_on(
	node_index pg_catalog.int4,
	OUT name pg_catalog.text,
	OUT scope pg_catalog.text,
	OUT fence pg_catalog.int8,
	OUT holder pg_catalog.text,
	OUT acquired_at pg_catalog.timestamptz,
	OUT lease_until pg_catalog.timestamptz,
	OUT waiters pg_catalog.int4,
	OUT "position" pg_catalog.int4,
	OUT age pg_catalog.interval,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT l.name, l.scope, l.fence, l.holder, l.acquired_at, l.lease_until,
		   l.waiters, l."position", l.age,
		   nullif(current_setting('dlsm.node_id', true), '')::int4 AS node_id,
		   format('%s/%s', coalesce(nullif(current_setting('cluster_name'), ''),
									'port ' || current_setting('port')),
				  current_database()) AS shard
	  FROM dlsm_locks l;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_locks(
	OUT name pg_catalog.text,
	OUT scope pg_catalog.text,
	OUT fence pg_catalog.int8,
	OUT holder pg_catalog.text,
	OUT acquired_at pg_catalog.timestamptz,
	OUT lease_until pg_catalog.timestamptz,
	OUT waiters pg_catalog.int4,
	OUT "position" pg_catalog.int4,
	OUT age pg_catalog.interval,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	n			int4;
	e_detail	text;
	e_hint		text;
BEGIN
	FOR n IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_locks_on(n - 1);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(n, '{}', 'dlsm_locks',
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
	END LOOP;
END
$$;

CREATE VIEW @extschema@.dlsm_locks AS
	SELECT * FROM @extschema@.dlsm_proxy_locks();
COMMENT ON VIEW @extschema@.dlsm_locks IS
'dlsm_locks of every node';

CREATE FUNCTION @extschema@.dlsm_proxy_worker_status_on(
	node_index pg_catalog.int4,
	OUT database pg_catalog.name,
	OUT pid pg_catalog.int4,
	OUT started_at pg_catalog.timestamptz,
	OUT last_reap_at pg_catalog.timestamptz,
	OUT reaped pg_catalog.int8,
	OUT handled pg_catalog.int8,
	OUT errors pg_catalog.int8,
	OUT last_error pg_catalog.text,
	OUT deleted pg_catalog.int8,
	OUT wakeups pg_catalog.int8,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT w.database, w.pid, w.started_at, w.last_reap_at, w.reaped, w.handled,
		   w.errors, w.last_error, w.deleted, w.wakeups,
		   nullif(current_setting('dlsm.node_id', true), '')::int4 AS node_id,
		   format('%s/%s', coalesce(nullif(current_setting('cluster_name'), ''),
									'port ' || current_setting('port')),
				  current_database()) AS shard
	  FROM dlsm_worker_status w;
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_worker_status(
	OUT database pg_catalog.name,
	OUT pid pg_catalog.int4,
	OUT started_at pg_catalog.timestamptz,
	OUT last_reap_at pg_catalog.timestamptz,
	OUT reaped pg_catalog.int8,
	OUT handled pg_catalog.int8,
	OUT errors pg_catalog.int8,
	OUT last_error pg_catalog.text,
	OUT deleted pg_catalog.int8,
	OUT wakeups pg_catalog.int8,
	OUT node_id pg_catalog.int4,
	OUT shard pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	n			int4;
	e_detail	text;
	e_hint		text;
BEGIN
	FOR n IN SELECT x.node_id FROM @extschema@.dlsm_proxy_nodes x ORDER BY x.node_id LOOP
		BEGIN
			RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_worker_status_on(n - 1);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
			PERFORM @extschema@.dlsm_proxy_raise_on_all(n, '{}', 'dlsm_worker_status',
				SQLSTATE, SQLERRM, e_detail, e_hint);
		END;
	END LOOP;
END
$$;

CREATE VIEW @extschema@.dlsm_worker_status AS
	SELECT * FROM @extschema@.dlsm_proxy_worker_status();
COMMENT ON VIEW @extschema@.dlsm_worker_status IS
'dlsm_worker_status of every node';

-- as on a shard: the lock view for everyone, the others for pg_monitor
-- (on the router and, for the remote views, on the shards)
GRANT SELECT ON @extschema@.dlsm_locks TO PUBLIC;
GRANT SELECT ON @extschema@.dlsm_queue_stats, @extschema@.dlsm_worker_status TO pg_monitor;
REVOKE ALL ON @extschema@.dlsm_queue_stats, @extschema@.dlsm_worker_status FROM PUBLIC;

-- The router's own view of its nodes, one at a time, whether reachable.
CREATE FUNCTION @extschema@.dlsm_proxy_status(
	OUT node_id pg_catalog.int4,
	OUT reachable pg_catalog.bool,
	OUT shard pg_catalog.text,
	OUT shard_node_id pg_catalog.int4,
	OUT tags_process_ids pg_catalog.bool,
	OUT dlsm_version pg_catalog.text,
	OUT raise_fence pg_catalog.bool,
	OUT partitions pg_catalog.int4,
	OUT moving_in pg_catalog.int4,
	OUT error pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	x	record;
	p	record;
BEGIN
	FOR x IN SELECT n.node_id, n.tags_process_ids FROM @extschema@.dlsm_proxy_nodes n ORDER BY 1 LOOP
		node_id := x.node_id;
		tags_process_ids := x.tags_process_ids;
		SELECT count(*) FILTER (WHERE t.node = x.node_id),
			   count(*) FILTER (WHERE t.moving = x.node_id)
		  INTO partitions, moving_in
		  FROM @extschema@.dlsm_proxy_map m, unnest(m.nodes, m.moving) t(node, moving);
		BEGIN
			SELECT * INTO p FROM @extschema@.dlsm_proxy_probe_on(x.node_id - 1);
			reachable := true;
			shard := p.shard;
			shard_node_id := p.shard_node_id;
			dlsm_version := p.dlsm_version;
			raise_fence := p.raise_fence;
			error := NULL;
		EXCEPTION WHEN OTHERS THEN
			reachable := false;
			shard := NULL;
			shard_node_id := NULL;
			dlsm_version := NULL;
			raise_fence := NULL;
			error := SQLERRM;
		END;
		RETURN NEXT;
	END LOOP;
END
$$;

CREATE VIEW @extschema@.dlsm_proxy_status AS
	SELECT * FROM @extschema@.dlsm_proxy_status();
COMMENT ON VIEW @extschema@.dlsm_proxy_status IS
'the nodes of dlsm_proxy: reachable or not, dlsm.node_id, version, partitions held';
REVOKE ALL ON @extschema@.dlsm_proxy_status FROM PUBLIC;
GRANT SELECT ON @extschema@.dlsm_proxy_status TO pg_monitor;

CREATE VIEW @extschema@.dlsm_proxy_partitions AS
	SELECT t.p::int4 - 1 AS partition, t.node AS node_id, t.moving AS moving_to
	  FROM @extschema@.dlsm_proxy_map m,
		   unnest(m.nodes, m.moving) WITH ORDINALITY AS t(node, moving, p);
COMMENT ON VIEW @extschema@.dlsm_proxy_partitions IS
'partition of the entity hash -> node that holds it (and the node it moves to)';
GRANT SELECT ON @extschema@.dlsm_proxy_partitions TO PUBLIC;

-- Administration (superuser or the extension's owner).

-- How libpq reads connection strings (fe-connect.c: parse_connection_string,
-- conninfo_parse, conninfo_uri_parse_options, conninfo_uri_parse_params,
-- conninfo_uri_decode, conninfo_storeval), byte for byte, for the router to
-- refuse a secret in one (dlsm_proxy_write_server).  libpq 15 to 18 differ
-- in two points: the keywords each knows (the router knows all of 18's,
-- and refuses others, a secret of a later libpq perhaps), and the spaces
-- of a URI (18 drops those at either end of a part and refuses others; 15
-- to 17 keep them), where the router reads as 18 does: a keyword that only
-- 18 reads (postgresql://h?  password=x) is read, and no string that 15 to
-- 17 read a secret in hides one from 18's reading.  The router refuses a
-- value that decodes to bytes not in the database's encoding (libpq takes
-- any byte but NUL).  Errors are 22023, and name a position rather than
-- show the string, which may hold a password.

-- A part of a URI, percent-decoded as libpq 18's conninfo_uri_decode does:
-- the spaces at either end dropped, one inside refused, %XX one byte but
-- %00.  at is the part's position in the URI, for the errors.
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_decode(part pg_catalog.bytea,
	at pg_catalog.int4)
RETURNS pg_catalog.bytea
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	n		int4 := length(part);
	i		int4 := 0;
	j		int4;
	c		int4;
	hi		int4;
	lo		int4;
	result	bytea := '';
BEGIN
	WHILE i < n AND get_byte(part, i) = 32 LOOP
		i := i + 1;
	END LOOP;
	j := n;
	WHILE j > i AND get_byte(part, j - 1) = 32 LOOP
		j := j - 1;
	END LOOP;
	WHILE i < j LOOP
		c := get_byte(part, i);
		IF c = 32 THEN
			RAISE EXCEPTION 'invalid connection string'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The URI holds a space at byte %s: libpq 18 refuses it.', at + i + 1),
					  HINT = 'Write a space in a URI as %20.';
		ELSIF c = 37 THEN
			-- %XX: both hexadecimal digits, and not %00
			hi := CASE WHEN i + 1 < n THEN get_byte(part, i + 1) END;
			lo := CASE WHEN i + 2 < n THEN get_byte(part, i + 2) END;
			hi := CASE WHEN hi BETWEEN 48 AND 57 THEN hi - 48
					   WHEN hi BETWEEN 65 AND 70 THEN hi - 55
					   WHEN hi BETWEEN 97 AND 102 THEN hi - 87 END;
			lo := CASE WHEN lo BETWEEN 48 AND 57 THEN lo - 48
					   WHEN lo BETWEEN 65 AND 70 THEN lo - 55
					   WHEN lo BETWEEN 97 AND 102 THEN lo - 87 END;
			IF hi IS NULL OR lo IS NULL OR hi * 16 + lo = 0 THEN
				RAISE EXCEPTION 'invalid connection string'
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('The %% at byte %s of the URI is no percent-encoded byte (%%00 is refused).', at + i + 1);
			END IF;
			result := result || set_byte('\x00'::bytea, 0, hi * 16 + lo);
			i := i + 3;
		ELSE
			result := result || substring(part FROM i + 1 FOR 1);
			i := i + 1;
		END IF;
	END LOOP;
	RETURN result;
END
$$;

-- The keyword and value libpq stores for one it reads (conninfo_storeval):
-- requiressl is stored as sslmode; a keyword libpq 15 to 18 does not know
-- is refused (22023), as one whose value is no text of the database.
-- Returns (keyword, value) as text.
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_store(keyword pg_catalog.bytea,
	value pg_catalog.bytea, at pg_catalog.int4,
	OUT kw pg_catalog.text, OUT val pg_catalog.text)
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF keyword = '\x7265717569726573736c'::bytea THEN		-- requiressl
		keyword := convert_to('sslmode', 'SQL_ASCII');
		value := convert_to(CASE WHEN length(value) > 0 AND get_byte(value, 0) = 49
								 THEN 'require' ELSE 'prefer' END, 'SQL_ASCII');
	END IF;
	-- escape shows every byte but a-z and _ otherwise (\ooo, \\)
	kw := encode(keyword, 'escape');
	IF kw !~ '^[a-z_]+$' OR kw <> ALL ('{service,user,password,passfile,channel_binding,'
		'connect_timeout,dbname,host,hostaddr,port,client_encoding,options,'
		'application_name,fallback_application_name,keepalives,keepalives_idle,'
		'keepalives_interval,keepalives_count,tcp_user_timeout,sslmode,'
		'sslnegotiation,sslcompression,sslcert,sslkey,sslcertmode,sslpassword,'
		'sslrootcert,sslcrl,sslcrldir,sslsni,requirepeer,require_auth,'
		'min_protocol_version,max_protocol_version,ssl_min_protocol_version,'
		'ssl_max_protocol_version,gssencmode,krbsrvname,gsslib,gssdelegation,'
		'replication,target_session_attrs,load_balance_hosts,scram_client_key,'
		'scram_server_key,oauth_issuer,oauth_client_id,oauth_client_secret,'
		'oauth_scope,sslkeylogfile}'::text[]) THEN
		RAISE EXCEPTION 'invalid connection string'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The keyword at byte %s is none that libpq 15 to 18 knows.', at + 1),
				  HINT = 'Keywords are libpq''s, in lower case.';
	END IF;
	BEGIN
		val := convert_from(value, getdatabaseencoding());
	EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
		RAISE EXCEPTION 'invalid connection string'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The value of keyword "%s" is not valid in encoding "%s".',
								  kw, getdatabaseencoding());
	END;
END
$$;

-- The keyword = value pairs of a connection string (libpq's
-- conninfo_parse), as dlsm_proxy_conninfo_parse returns them.
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_pairs(b pg_catalog.bytea,
	OUT keyword pg_catalog.text, OUT value pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	n		int4 := length(b);
	p		int4 := 0;
	s		int4;
	c		int4;
	k		bytea;
	v		bytea;
BEGIN
	WHILE p < n LOOP
		-- spaces before the keyword
		IF get_byte(b, p) IN (9, 10, 11, 12, 13, 32) THEN
			p := p + 1;
			CONTINUE;
		END IF;
		-- the keyword, to an = or a space; spaces, then the =
		s := p;
		WHILE p < n AND get_byte(b, p) NOT IN (61, 9, 10, 11, 12, 13, 32) LOOP
			p := p + 1;
		END LOOP;
		k := substring(b FROM s + 1 FOR p - s);
		WHILE p < n AND get_byte(b, p) IN (9, 10, 11, 12, 13, 32) LOOP
			p := p + 1;
		END LOOP;
		IF p >= n OR get_byte(b, p) <> 61 THEN
			RAISE EXCEPTION 'invalid connection string'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('The word at byte %s is followed by no =.', s + 1),
					  HINT = 'Write keyword = value pairs, as libpq reads them, or a URI.';
		END IF;
		p := p + 1;
		WHILE p < n AND get_byte(b, p) IN (9, 10, 11, 12, 13, 32) LOOP
			p := p + 1;
		END LOOP;
		-- the value: 'quoted', or to a space; \ takes the next byte
		v := '';
		IF p < n AND get_byte(b, p) = 39 THEN
			p := p + 1;
			LOOP
				IF p >= n THEN
					RAISE EXCEPTION 'invalid connection string'
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = format('The quoted value of the keyword at byte %s has no closing quote.', s + 1);
				END IF;
				c := get_byte(b, p);
				IF c = 92 THEN
					p := p + 1;
					IF p < n THEN
						v := v || substring(b FROM p + 1 FOR 1);
						p := p + 1;
					END IF;
				ELSIF c = 39 THEN
					p := p + 1;
					EXIT;
				ELSE
					v := v || substring(b FROM p + 1 FOR 1);
					p := p + 1;
				END IF;
			END LOOP;
		ELSE
			WHILE p < n LOOP
				c := get_byte(b, p);
				p := p + 1;
				EXIT WHEN c IN (9, 10, 11, 12, 13, 32);
				IF c = 92 THEN
					IF p < n THEN
						v := v || substring(b FROM p + 1 FOR 1);
						p := p + 1;
					END IF;
				ELSE
					v := v || substring(b FROM p FOR 1);
				END IF;
			END LOOP;
		END IF;
		SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store(k, v, s);
		RETURN NEXT;
	END LOOP;
END
$$;

-- The keywords and values libpq stores for a connection string, in the
-- order it reads them (a keyword given twice comes twice: libpq keeps the
-- last), as PQconninfoParse: a URI when the string starts with
-- postgresql:// or postgres:// (case counts), keyword = value pairs
-- otherwise.  A URI's user part runs to the first @ when one comes before
-- any /, its password after the user's first :; then hosts, each [an IPv6
-- address] or a name up to : / ? or ",", each with a port after :; the
-- database name after /; the parameters after ?, key=value separated by
-- &.  Every part but the keyword of a pair is percent-decoded, ssl=true
-- is sslmode=require.  In keyword = value pairs spaces (ASCII's, as C's
-- isspace) separate, a value is 'quoted' or runs to a space, and a
-- backslash takes the next byte as it is.
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_parse(connstr pg_catalog.text,
	OUT keyword pg_catalog.text, OUT value pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	b		bytea := convert_to(connstr, getdatabaseencoding());
	n		int4 := length(convert_to(connstr, getdatabaseencoding()));
	p		int4;
	s		int4;
	ks		int4;
	c		int4;
	k		bytea;
	v		bytea;
	hosts	bytea := '';
	ports	bytea := '';
	prev	int4;
BEGIN
	IF substring(b FROM 1 FOR 13) = '\x706f737467726573716c3a2f2f'::bytea THEN
		p := 13;
	ELSIF substring(b FROM 1 FOR 11) = '\x706f7374677265733a2f2f'::bytea THEN
		p := 11;
	ELSE
		RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_conninfo_pairs(b);
		RETURN;
	END IF;
	-- the user part: an @ before any /
	s := p;
	WHILE p < n AND get_byte(b, p) NOT IN (64, 47) LOOP
		p := p + 1;
	END LOOP;
	IF p < n AND get_byte(b, p) = 64 THEN
		p := s;
		WHILE get_byte(b, p) NOT IN (58, 64) LOOP
			p := p + 1;
		END LOOP;
		IF p > s THEN
			SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store('user',
				@extschema@.dlsm_proxy_conninfo_decode(substring(b FROM s + 1 FOR p - s), s), s);
			RETURN NEXT;
		END IF;
		IF get_byte(b, p) = 58 THEN
			p := p + 1;
			s := p;
			WHILE get_byte(b, p) <> 64 LOOP
				p := p + 1;
			END LOOP;
			IF p > s THEN
				SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store('password',
					@extschema@.dlsm_proxy_conninfo_decode(substring(b FROM s + 1 FOR p - s), s), s);
				RETURN NEXT;
			END IF;
		END IF;
		p := p + 1;
	ELSE
		p := s;
	END IF;
	-- hosts, each with its port
	LOOP
		IF p < n AND get_byte(b, p) = 91 THEN
			p := p + 1;
			s := p;
			WHILE p < n AND get_byte(b, p) <> 93 LOOP
				p := p + 1;
			END LOOP;
			IF p >= n OR p = s THEN
				RAISE EXCEPTION 'invalid connection string'
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format(CASE WHEN p >= n THEN 'The [ at byte %s of the URI has no ].'
											   ELSE 'The IPv6 address at byte %s of the URI is empty.' END, s);
			END IF;
			hosts := hosts || substring(b FROM s + 1 FOR p - s);
			p := p + 1;
			IF p < n AND get_byte(b, p) NOT IN (58, 47, 63, 44) THEN
				RAISE EXCEPTION 'invalid connection string'
					USING ERRCODE = 'invalid_parameter_value',
						  DETAIL = format('The IPv6 address of the URI is followed at byte %s by none of : / ? ",".', p + 1);
			END IF;
		ELSE
			s := p;
			WHILE p < n AND get_byte(b, p) NOT IN (58, 47, 63, 44) LOOP
				p := p + 1;
			END LOOP;
			hosts := hosts || substring(b FROM s + 1 FOR p - s);
		END IF;
		prev := CASE WHEN p < n THEN get_byte(b, p) END;
		IF prev = 58 THEN
			p := p + 1;
			s := p;
			WHILE p < n AND get_byte(b, p) NOT IN (47, 63, 44) LOOP
				p := p + 1;
			END LOOP;
			ports := ports || substring(b FROM s + 1 FOR p - s);
			prev := CASE WHEN p < n THEN get_byte(b, p) END;
		END IF;
		EXIT WHEN prev IS DISTINCT FROM 44;
		p := p + 1;
		hosts := hosts || '\x2c'::bytea;
		ports := ports || '\x2c'::bytea;
	END LOOP;
	IF length(hosts) > 0 THEN
		SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store('host',
			@extschema@.dlsm_proxy_conninfo_decode(hosts, 0), 0);
		RETURN NEXT;
	END IF;
	IF length(ports) > 0 THEN
		SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store('port',
			@extschema@.dlsm_proxy_conninfo_decode(ports, 0), 0);
		RETURN NEXT;
	END IF;
	-- the database name after /
	IF prev = 47 THEN
		p := p + 1;
		s := p;
		WHILE p < n AND get_byte(b, p) <> 63 LOOP
			p := p + 1;
		END LOOP;
		IF p > s THEN
			SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store('dbname',
				@extschema@.dlsm_proxy_conninfo_decode(substring(b FROM s + 1 FOR p - s), s), s);
			RETURN NEXT;
		END IF;
		prev := CASE WHEN p < n THEN get_byte(b, p) END;
	END IF;
	-- the parameters after ?
	IF prev IS NULL THEN
		RETURN;
	END IF;
	p := p + 1;
	WHILE p < n LOOP
		ks := p;
		s := p;
		k := NULL;
		LOOP
			c := CASE WHEN p < n THEN get_byte(b, p) END;
			IF c = 61 THEN
				IF k IS NOT NULL THEN
					RAISE EXCEPTION 'invalid connection string'
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = format('The URI parameter at byte %s has a second =.', ks + 1);
				END IF;
				k := substring(b FROM s + 1 FOR p - s);
				p := p + 1;
				v := NULL;
				s := p;
			ELSIF c = 38 OR c IS NULL THEN
				IF k IS NULL THEN
					RAISE EXCEPTION 'invalid connection string'
						USING ERRCODE = 'invalid_parameter_value',
							  DETAIL = format('The URI parameter at byte %s has no =.', ks + 1);
				END IF;
				v := substring(b FROM s + 1 FOR p - s);
				IF c IS NOT NULL THEN
					p := p + 1;
				END IF;
				EXIT;
			ELSE
				p := p + 1;
			END IF;
		END LOOP;
		k := @extschema@.dlsm_proxy_conninfo_decode(k, ks);
		v := @extschema@.dlsm_proxy_conninfo_decode(v, s);
		IF k = '\x73736c'::bytea AND v = '\x74727565'::bytea THEN	-- ssl=true
			k := convert_to('sslmode', 'SQL_ASCII');
			v := convert_to('require', 'SQL_ASCII');
		END IF;
		SELECT * INTO keyword, value FROM @extschema@.dlsm_proxy_conninfo_store(k, v, ks);
		RETURN NEXT;
	END LOOP;
END
$$;

-- The keywords of a connection string, in the order libpq reads them (a
-- password in a URI's user part is keyword password).
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_keys(connstr pg_catalog.text)
RETURNS pg_catalog.text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
	SELECT COALESCE(array_agg(k.keyword ORDER BY k.n), '{}')
	  FROM @extschema@.dlsm_proxy_conninfo_parse(connstr) WITH ORDINALITY AS k(keyword, value, n)
$$;

-- The keywords of libpq that give a secret: those PQconndefaults shows as
-- passwords (password, sslpassword, oauth_client_secret), and the SCRAM
-- keys a client may give instead of its password.
CREATE FUNCTION @extschema@.dlsm_proxy_conninfo_secrets()
RETURNS pg_catalog.text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	SELECT '{password,sslpassword,oauth_client_secret,scram_client_key,scram_server_key}'::pg_catalog.text[]
$$;

-- Rewrites the SQL/MED server dlsm_shards from dlsm_proxy_nodes: PL/Proxy
-- partition n - 1 is node n.  Every role reads a server's options in
-- pg_foreign_server: a connection string libpq reads a secret in is
-- refused (22023), as one it cannot read; passwords go in user mappings of
-- dlsm_shards or in .pgpass.
CREATE FUNCTION @extschema@.dlsm_proxy_write_server()
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	have	text[];
	node	record;
	secret	text;
BEGIN
	FOR node IN SELECT x.node_id, x.connstr FROM @extschema@.dlsm_proxy_nodes x ORDER BY 1 LOOP
		SELECT k.keyword INTO secret
		  FROM @extschema@.dlsm_proxy_conninfo_parse(node.connstr) k
		 WHERE k.keyword OPERATOR(pg_catalog.=) ANY (@extschema@.dlsm_proxy_conninfo_secrets())
		 LIMIT 1;
		IF secret IS NOT NULL THEN
			RAISE EXCEPTION 'connection string of node % holds a password', node.node_id
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('It gives "%s"; connection strings become options of server dlsm_shards, which every role can read in pg_foreign_server.', secret),
					  HINT = 'Give passwords in user mappings (CREATE USER MAPPING FOR <role> SERVER dlsm_shards OPTIONS (user ''<role on the shards>'', password ''...'')) or in the router server''s .pgpass file.';
		END IF;
	END LOOP;
	SELECT array_agg(split_part(o, '=', 1)) INTO have
	  FROM pg_catalog.pg_foreign_server s, unnest(s.srvoptions) o
	 WHERE s.srvname = 'dlsm_shards';
	IF have IS NULL THEN
		EXECUTE format('CREATE SERVER dlsm_shards FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping ''1'', connection_lifetime ''1800'', %s)',
					   (SELECT string_agg(format('p%s %L', n.node_id - 1, n.connstr), ', ' ORDER BY n.node_id)
						  FROM @extschema@.dlsm_proxy_nodes n));
		CREATE USER MAPPING FOR PUBLIC SERVER dlsm_shards;
	ELSE
		EXECUTE format('ALTER SERVER dlsm_shards OPTIONS (%s)',
					   (SELECT string_agg(format('%s p%s %L',
												 CASE WHEN 'p' || (n.node_id - 1) = ANY (have) THEN 'SET' ELSE 'ADD' END,
												 n.node_id - 1, n.connstr), ', ' ORDER BY n.node_id)
						  FROM @extschema@.dlsm_proxy_nodes n));
	END IF;
END
$$;

-- Learn from each node whether it tags its process ids with its node id.
CREATE FUNCTION @extschema@.dlsm_proxy_refresh()
RETURNS SETOF @extschema@.dlsm_proxy_status
LANGUAGE plpgsql AS $$
DECLARE
	s	record;
BEGIN
	FOR s IN SELECT * FROM @extschema@.dlsm_proxy_status() LOOP
		IF s.reachable AND s.shard_node_id IS NOT NULL AND s.shard_node_id <> s.node_id
		   AND s.shard_node_id <> 0 THEN
			RAISE EXCEPTION 'node % of dlsm_proxy has dlsm.node_id = %', s.node_id, s.shard_node_id
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = format('Node %s is %s.', s.node_id, s.shard),
					  HINT = format('Set dlsm.node_id = %s in that shard''s postgresql.conf and reload it, or fix the connection string with dlsm_proxy_set_node.', s.node_id);
		END IF;
		UPDATE @extschema@.dlsm_proxy_nodes n
		   SET tags_process_ids = coalesce(s.reachable AND s.shard_node_id = s.node_id, false)
		 WHERE n.node_id = s.node_id;
	END LOOP;
	RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_status();
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_refresh() IS
'check every node''s dlsm.node_id and learn which nodes tag their process ids';

CREATE FUNCTION @extschema@.dlsm_proxy_configure(
	shards pg_catalog.text[],
	partitions pg_catalog.int4 DEFAULT 256)
RETURNS SETOF @extschema@.dlsm_proxy_status
LANGUAGE plpgsql AS $$
DECLARE
	n	int4 := cardinality(shards);
BEGIN
	IF EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_map) THEN
		RAISE EXCEPTION 'dlsm_proxy is configured already'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Changing the map of a running layout would move entities without draining them.',
				  HINT = 'Add a node with dlsm_proxy_add_node and move partitions to it with CALL dlsm_proxy_move.';
	END IF;
	IF n IS NULL OR n < 1 OR n > 255 OR pg_catalog.array_position(shards, NULL) IS NOT NULL THEN
		RAISE EXCEPTION 'shards must hold 1 to 255 connection strings'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF partitions IS NULL OR partitions < n OR partitions > 65536
	   OR (partitions & (partitions - 1)) <> 0 THEN
		RAISE EXCEPTION 'partitions must be a power of 2 between the number of shards and 65536'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	INSERT INTO @extschema@.dlsm_proxy_nodes (node_id, connstr)
	SELECT o::int4, c FROM unnest(shards) WITH ORDINALITY AS t(c, o);
	-- partitions dealt round robin: partition p on node p % n + 1
	INSERT INTO @extschema@.dlsm_proxy_map (nodes, moving)
	SELECT array_agg(p % n + 1 ORDER BY p), array_fill(NULL::int4, ARRAY[partitions])
	  FROM generate_series(0, partitions - 1) p;
	PERFORM @extschema@.dlsm_proxy_write_server();
	RETURN QUERY SELECT * FROM @extschema@.dlsm_proxy_refresh();
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_configure(pg_catalog.text[], pg_catalog.int4) IS
'set up the router: node i is shards[i]; partitions of the entity hash dealt round robin';

CREATE FUNCTION @extschema@.dlsm_proxy_add_node(connstr pg_catalog.text)
RETURNS pg_catalog.int4
LANGUAGE plpgsql AS $$
DECLARE
	id	int4;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_map) THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	SELECT coalesce(max(node_id), 0) + 1 INTO id FROM @extschema@.dlsm_proxy_nodes;
	INSERT INTO @extschema@.dlsm_proxy_nodes (node_id, connstr) VALUES (id, connstr);
	PERFORM @extschema@.dlsm_proxy_write_server();
	PERFORM @extschema@.dlsm_proxy_refresh();
	RETURN id;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_add_node(pg_catalog.text) IS
'add a node (the next node id) holding no partition yet; move partitions to it with CALL dlsm_proxy_move';

CREATE FUNCTION @extschema@.dlsm_proxy_set_node(node_id pg_catalog.int4, connstr pg_catalog.text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE @extschema@.dlsm_proxy_nodes n SET connstr = dlsm_proxy_set_node.connstr
	 WHERE n.node_id = dlsm_proxy_set_node.node_id;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'node % of dlsm_proxy does not exist', node_id
			USING ERRCODE = 'undefined_object';
	END IF;
	PERFORM @extschema@.dlsm_proxy_write_server();
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_proxy_set_node(pg_catalog.int4, pg_catalog.text) IS
'point a node at another server (its promoted standby, a new address)';

-- One value from a query on a node, through dblink (administration only).
-- It connects as PL/Proxy does: the node's connection string, then user
-- and password from the caller's user mapping of dlsm_shards (else the
-- PUBLIC one), the user being the calling role when the mapping names none.
CREATE FUNCTION @extschema@.dlsm_proxy_remote(node pg_catalog.int4, query pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql AS $$
DECLARE
	c		text;
	s		text;
	v		text;
	opts	text[];
	e_detail	text;
	e_hint		text;
BEGIN
	SELECT n.connstr INTO c FROM @extschema@.dlsm_proxy_nodes n WHERE n.node_id = node;
	SELECT coalesce(u.umoptions, '{}') INTO opts
	  FROM pg_catalog.pg_user_mappings u
	 WHERE u.srvname OPERATOR(pg_catalog.=) 'dlsm_shards'
	   AND u.usename OPERATOR(pg_catalog.=) ANY (ARRAY[CURRENT_USER, 'public']::pg_catalog.name[])
	 ORDER BY u.usename OPERATOR(pg_catalog.=) 'public'::pg_catalog.name
	 LIMIT 1;
	opts := coalesce(opts, '{}');
	IF NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(opts) o WHERE o LIKE 'user=%') THEN
		opts := opts || ('user=' || CURRENT_USER);
	END IF;
	-- libpq takes a keyword's last value: the mapping's win
	SELECT c || pg_catalog.string_agg(pg_catalog.format(' %s=''%s''',
			pg_catalog.split_part(o, '=', 1),
			pg_catalog.replace(pg_catalog.replace(
				pg_catalog.substr(o, pg_catalog.strpos(o, '=') + 1), '\', '\\'), '''', '\''')), '')
	  INTO c FROM pg_catalog.unnest(opts) o;
	SELECT e.extnamespace::regnamespace::text INTO s
	  FROM pg_catalog.pg_extension e WHERE e.extname = 'dblink';
	BEGIN
		EXECUTE format('SELECT t.v FROM %s.dblink($1, $2) AS t(v text)', s) INTO v USING c, query;
	EXCEPTION WHEN OTHERS THEN
		-- the node's error (or dblink's, reaching it), naming the node
		GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
		PERFORM @extschema@.dlsm_proxy_reraise(node, SQLSTATE, SQLERRM, e_detail, e_hint);
	END;
	RETURN v;
END
$$;

-- Resharding: move partitions of the entity hash to another node.
--
--  1. mark the partitions moving: from now on the router refuses new work
--     for their entities (dlsm_enqueue, dlsm_try_lock: 55006, retry);
--  2. wait until every router transaction begun before the mark has ended,
--     so that no enqueue that passed the old map is still on its way;
--  3. drain: wait until the nodes that hold them have no open request (new
--     or in-progress) of those entities in any queue and no live lease of
--     such a lock name; consumers keep claiming and settling meanwhile;
--  4. fences: take a fresh fence on every source node (a transaction-scope
--     lock, above every fence it gave) and raise the target's fences above
--     the largest with dlsm_raise_fence (setval of dlsm_fence_seq on a dlsm
--     without it); refused when the target cannot go that high (22023: the
--     sources' fences lie in a later timeline than the target's);
--  5. copy the terminal create of each moved entity to the target (one
--     create per entity, and updates of a failed create fail, as before);
--  6. switch the map and clear the mark.
-- Any failure before 6 clears the mark and changes no map: the entities stay
-- where they were.  Needs the same queues on every node, and every enqueue
-- of those entities to come through the routers.  With several routers,
-- mark and switch on each (see README).
--
-- CALL dlsm_proxy_move runs the steps and commits between them; each step
-- is one function below (administration only, as dlsm_proxy_remote).  In
-- the statements run on a node, moved is the list of moved partitions as
-- an SQL literal (%L::pg_catalog.int4[]) and nparts the number of
-- partitions of the map.

-- Before a move: lock the map, check the arguments, and which of parts
-- move (those not on to_node already; NULL: none) from which nodes.
CREATE FUNCTION @extschema@.dlsm_proxy_move_check(
	parts pg_catalog.int4[], to_node pg_catalog.int4,
	OUT to_move pg_catalog.int4[], OUT sources pg_catalog.int4[], OUT nparts pg_catalog.int4)
LANGUAGE plpgsql AS $$
DECLARE
	m	record;
BEGIN
	SELECT * INTO m FROM @extschema@.dlsm_proxy_map FOR UPDATE;
	IF NOT FOUND THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	nparts := cardinality(m.nodes);
	IF NOT EXISTS (SELECT 1 FROM @extschema@.dlsm_proxy_nodes n WHERE n.node_id = to_node) THEN
		RAISE EXCEPTION 'node % of dlsm_proxy does not exist', to_node
			USING ERRCODE = 'undefined_object';
	END IF;
	IF parts IS NULL OR EXISTS (SELECT 1 FROM unnest(parts) x WHERE x IS NULL OR x < 0 OR x >= nparts) THEN
		RAISE EXCEPTION 'partitions must lie between 0 and %', nparts - 1
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF EXISTS (SELECT 1 FROM unnest(m.moving) x WHERE x IS NOT NULL) THEN
		RAISE EXCEPTION 'a move is under way already'
			USING ERRCODE = 'object_in_use';
	END IF;
	SELECT array_agg(DISTINCT x ORDER BY x) INTO to_move
	  FROM unnest(parts) x WHERE m.nodes[x + 1] <> to_node;
	SELECT array_agg(DISTINCT m.nodes[x + 1]) INTO sources FROM unnest(to_move) x;
END
$$;

-- Step 1: mark the partitions moving to to_node (the map is locked).
CREATE FUNCTION @extschema@.dlsm_proxy_move_mark(parts pg_catalog.int4[], to_node pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	mv	int4[];
	p	int4;
BEGIN
	SELECT m.moving INTO mv FROM @extschema@.dlsm_proxy_map m;
	FOREACH p IN ARRAY parts LOOP
		mv[p + 1] := to_node;
	END LOOP;
	UPDATE @extschema@.dlsm_proxy_map SET moving = mv, changed_at = now();
END
$$;

-- Step 2: wait until no other session of this router's database has a
-- transaction begun before the mark (55P03 at give_up).
CREATE FUNCTION @extschema@.dlsm_proxy_move_wait_old(marked_at pg_catalog.timestamptz,
													  give_up pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	blocker	text;
BEGIN
	LOOP
		PERFORM pg_catalog.pg_stat_clear_snapshot();
		SELECT string_agg(a.pid::text, ', ') INTO blocker
		  FROM pg_catalog.pg_stat_activity a
		 WHERE a.datid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
		   AND a.pid <> pg_catalog.pg_backend_pid()
		   AND a.backend_type = 'client backend'
		   AND a.xact_start < marked_at;
		EXIT WHEN blocker IS NULL;
		IF clock_timestamp() > give_up THEN
			RAISE EXCEPTION 'transactions begun before the move are still open: pid %', blocker
				USING ERRCODE = 'lock_not_available';
		END IF;
		PERFORM pg_catalog.pg_sleep(0.05);
	END LOOP;
END
$$;

-- The queues of a node (its dlsm_queues), with their column names.
CREATE FUNCTION @extschema@.dlsm_proxy_move_queues(node pg_catalog.int4)
RETURNS TABLE (queue pg_catalog.text, status pg_catalog.text, kind pg_catalog.text,
			   entity pg_catalog.text, id pg_catalog.text)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY SELECT * FROM jsonb_to_recordset(@extschema@.dlsm_proxy_remote(node,
		'SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(''queue'', q.queue::pg_catalog.text, ''status'', q.status_column, ''kind'', q.kind_column, ''entity'', q.entity_column, ''id'', q.id_column)), ''[]'')::pg_catalog.text FROM dlsm_queues q')::jsonb)
		AS x(queue text, status text, kind text, entity text, id text);
END
$$;

-- How many open requests (new or in-progress) of the moved partitions a
-- node has in all its queues, and live leases of their lock names.
CREATE FUNCTION @extschema@.dlsm_proxy_move_open_count(node pg_catalog.int4, nparts pg_catalog.int4,
														moved pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql AS $$
DECLARE
	q			record;
	open_rows	int8 := 0;
BEGIN
	FOR q IN SELECT * FROM @extschema@.dlsm_proxy_move_queues(node) LOOP
		open_rows := open_rows + @extschema@.dlsm_proxy_remote(node, format(
			'SELECT pg_catalog.count(*)::pg_catalog.text FROM %s WHERE %I OPERATOR(pg_catalog.=) ANY (''{new,in-progress}''::pg_catalog.text[]) AND (pg_catalog.hashtext(%I) OPERATOR(pg_catalog.&) %s) OPERATOR(pg_catalog.=) ANY (%s)',
			q.queue, q.status, q.entity, nparts - 1, moved))::int8;
	END LOOP;
	RETURN open_rows + @extschema@.dlsm_proxy_remote(node, format(
		'SELECT pg_catalog.count(*)::pg_catalog.text FROM dlsm_leases WHERE lease_until OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp() AND (pg_catalog.hashtext(name) OPERATOR(pg_catalog.&) %s) OPERATOR(pg_catalog.=) ANY (%s)',
		nparts - 1, moved))::int8;
END
$$;

-- Which requests of the moved partitions are open on the nodes, for the
-- error of a drain that timed out: a few of each queue, '; '-separated.
CREATE FUNCTION @extschema@.dlsm_proxy_move_open_list(nodes pg_catalog.int4[], nparts pg_catalog.int4,
													   moved pg_catalog.text)
RETURNS pg_catalog.text
LANGUAGE plpgsql AS $$
DECLARE
	node	int4;
	q		record;
	list	text;
BEGIN
	FOREACH node IN ARRAY nodes LOOP
		FOR q IN SELECT * FROM @extschema@.dlsm_proxy_move_queues(node) LOOP
			list := concat_ws('; ', list, @extschema@.dlsm_proxy_remote(node, format(
				'SELECT pg_catalog.string_agg(pg_catalog.format(''node %s %s: request %%s (%%s of "%%s", %%s, run_at %%s, lease until %%s)'', t.%I, t.%I, t.%I, t.%I, t.run_at, t.lease_until), ''; '')
				   FROM (SELECT * FROM %s WHERE %I OPERATOR(pg_catalog.=) ANY (''{new,in-progress}''::pg_catalog.text[])
							AND (pg_catalog.hashtext(%I) OPERATOR(pg_catalog.&) %s) OPERATOR(pg_catalog.=) ANY (%s)
						  ORDER BY %I LIMIT 3) t',
				node, q.queue, q.id, q.kind, q.entity, q.status, q.queue, q.status, q.entity,
				nparts - 1, moved, q.id)));
		END LOOP;
	END LOOP;
	RETURN list;
END
$$;

-- Step 3: wait until the sources have nothing open of the moved
-- partitions, with a notice every 2 s from next_note on (55P03 at give_up,
-- naming what is open).
CREATE FUNCTION @extschema@.dlsm_proxy_move_drain(
	sources pg_catalog.int4[], nparts pg_catalog.int4, moved pg_catalog.text,
	give_up pg_catalog.timestamptz, drain_timeout pg_catalog.interval,
	next_note pg_catalog.timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	src			int4;
	open_rows	int8;
BEGIN
	LOOP
		open_rows := 0;
		FOREACH src IN ARRAY sources LOOP
			open_rows := open_rows + @extschema@.dlsm_proxy_move_open_count(src, nparts, moved);
		END LOOP;
		EXIT WHEN open_rows = 0;
		IF clock_timestamp() > next_note THEN
			RAISE NOTICE '%', format(CASE WHEN open_rows = 1
										 THEN 'draining: %s open request or lease left on node %s'
										 ELSE 'draining: %s open requests and leases left on node %s' END,
									open_rows, sources);
			next_note := clock_timestamp() + interval '2 s';
		END IF;
		IF clock_timestamp() > give_up THEN
			RAISE EXCEPTION USING
				MESSAGE = format(CASE WHEN open_rows = 1
					THEN 'the partitions did not drain within %s: %s open request or lease left on node %s'
					ELSE 'the partitions did not drain within %s: %s open requests and leases left on node %s' END,
					drain_timeout, open_rows, sources),
				ERRCODE = 'lock_not_available',
				DETAIL = coalesce('Open: ' || @extschema@.dlsm_proxy_move_open_list(sources, nparts, moved),
								  'Open: leases of lock names.'),
				HINT = 'Keep consumers running, or give a longer drain_timeout.';
		END IF;
		PERFORM pg_catalog.pg_sleep(0.2);
	END LOOP;
END
$$;

-- Step 4: raise the fences of to_node above every fence the sources gave;
-- returns the largest fence of the sources.
CREATE FUNCTION @extschema@.dlsm_proxy_move_raise_fences(sources pg_catalog.int4[],
														  to_node pg_catalog.int4)
RETURNS pg_catalog.int8
LANGUAGE plpgsql AS $$
DECLARE
	src		int4;
	probe	int8;
	fmax	int8 := 0;
	tprobe	int8;
BEGIN
	FOREACH src IN ARRAY sources LOOP
		probe := @extschema@.dlsm_proxy_remote(src, format(
			'SELECT dlsm_try_lock(%L)::pg_catalog.text', 'dlsm_proxy/fence-probe/' || gen_random_uuid()))::int8;
		fmax := greatest(fmax, probe);
	END LOOP;
	IF @extschema@.dlsm_proxy_remote(to_node,
			'SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc WHERE proname OPERATOR(pg_catalog.=) ''dlsm_raise_fence'')::pg_catalog.text')::boolean THEN
		PERFORM @extschema@.dlsm_proxy_remote(to_node, format('SELECT dlsm_raise_fence(%s)::pg_catalog.text', fmax));
	ELSE
		-- a dlsm whose fences are the values of dlsm_fence_seq
		PERFORM @extschema@.dlsm_proxy_remote(to_node, format(
			'SELECT pg_catalog.setval(s.oid::pg_catalog.regclass, greatest(%s, (SELECT q.last_value FROM dlsm_fence_seq q)))::pg_catalog.text
			   FROM pg_catalog.pg_class s
			  WHERE s.relname OPERATOR(pg_catalog.=) ''dlsm_fence_seq'' AND s.relkind OPERATOR(pg_catalog.=) ''S''', fmax));
	END IF;
	tprobe := @extschema@.dlsm_proxy_remote(to_node, format(
		'SELECT dlsm_try_lock(%L)::pg_catalog.text', 'dlsm_proxy/fence-probe/' || gen_random_uuid()))::int8;
	IF tprobe <= fmax THEN
		RAISE EXCEPTION 'the fences of node % could not be raised above %', to_node, fmax
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = format('Its next fence is %s.', tprobe);
	END IF;
	RETURN fmax;
END
$$;

-- Copy the terminal creates of the moved partitions in queue q of node src
-- to the same queue of to_node, 500 rows at a time, as the queue's owner
-- there; returns how many were sent (those to_node had already are not
-- copied twice).
CREATE FUNCTION @extschema@.dlsm_proxy_move_copy_queue(
	src pg_catalog.int4, to_node pg_catalog.int4,
	queue pg_catalog.text, kind pg_catalog.text, status pg_catalog.text,
	entity pg_catalog.text, id pg_catalog.text,
	nparts pg_catalog.int4, moved pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql AS $$
DECLARE
	cols		text;
	owner		text;
	last_id		text := '-9223372036854775808';
	chunk		text;
	copied		int8 := 0;
BEGIN
	IF @extschema@.dlsm_proxy_remote(to_node, format(
			'SELECT pg_catalog.count(*)::pg_catalog.text FROM dlsm_queues WHERE queue OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%L)', queue)) <> '1' THEN
		RAISE EXCEPTION 'queue % of node % is not a queue on node %', queue, src, to_node
			USING ERRCODE = 'undefined_object',
				  HINT = 'Create the queues on every node (dlsm_create_queue through the router does).';
	END IF;
	cols := @extschema@.dlsm_proxy_remote(to_node, format(
		'SELECT pg_catalog.string_agg(pg_catalog.quote_ident(attname), '', '' ORDER BY attnum) FROM pg_catalog.pg_attribute
		  WHERE attrelid OPERATOR(pg_catalog.=) %L::pg_catalog.regclass AND attnum OPERATOR(pg_catalog.>) 0
			AND NOT attisdropped AND attgenerated OPERATOR(pg_catalog.=) ''''
			AND attname OPERATOR(pg_catalog.<>) %L', queue, id));
	-- the copy runs the queue owner's code (triggers, defaults) as that
	-- owner, never as the administrator who moves (under the
	-- administrator's search_path: the owner gains nothing)
	owner := @extschema@.dlsm_proxy_remote(to_node, format(
		'SELECT pg_catalog.jsonb_build_object(''owner'', pg_catalog.quote_ident(r.rolname),
				''queue'', pg_catalog.format(''%%I.%%I'', n.nspname, c.relname))::pg_catalog.text
		   FROM pg_catalog.pg_class c
		   JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) c.relowner
		   JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		  WHERE c.oid OPERATOR(pg_catalog.=) %L::pg_catalog.regclass', queue));
	LOOP
		chunk := @extschema@.dlsm_proxy_remote(src, format(
			'SELECT pg_catalog.jsonb_build_object(''rows'', pg_catalog.jsonb_agg(pg_catalog.to_jsonb(t)), ''last'', pg_catalog.max(t.%I))::pg_catalog.text
			   FROM (SELECT * FROM %s WHERE %I OPERATOR(pg_catalog.=) ''create''
						AND %I OPERATOR(pg_catalog.=) ANY (''{complete,error}''::pg_catalog.text[])
						AND %I OPERATOR(pg_catalog.>) %s
						AND (pg_catalog.hashtext(%I) OPERATOR(pg_catalog.&) %s) OPERATOR(pg_catalog.=) ANY (%s)
					  ORDER BY %I LIMIT 500) t',
			id, queue, kind, status, id, last_id, entity, nparts - 1,
			moved, id));
		EXIT WHEN chunk::jsonb->'rows' = 'null'::jsonb;
		last_id := chunk::jsonb->>'last';
		PERFORM @extschema@.dlsm_proxy_remote(to_node, format(
			'SET LOCAL ROLE %6$s;
			 WITH i AS (INSERT INTO %1$s (%2$s)
						SELECT %2$s FROM pg_catalog.jsonb_populate_recordset(NULL::%1$s, %3$L) r
						 WHERE NOT EXISTS (SELECT 1 FROM %1$s x
											WHERE x.%4$I OPERATOR(pg_catalog.=) r.%4$I
											  AND x.%5$I OPERATOR(pg_catalog.=) ''create'')
						RETURNING 1)
			 SELECT pg_catalog.count(*)::pg_catalog.text FROM i',
			owner::jsonb->>'queue', cols, chunk::jsonb->'rows', entity, kind,
			owner::jsonb->>'owner'));
		copied := copied + jsonb_array_length(chunk::jsonb->'rows');
	END LOOP;
	RETURN copied;
END
$$;

-- Step 5: copy the creates of the moved partitions, every queue of every
-- source; returns how many were sent.
CREATE FUNCTION @extschema@.dlsm_proxy_move_copy_creates(
	sources pg_catalog.int4[], to_node pg_catalog.int4,
	nparts pg_catalog.int4, moved pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql AS $$
DECLARE
	src		int4;
	q		record;
	copied	int8 := 0;
BEGIN
	FOREACH src IN ARRAY sources LOOP
		FOR q IN SELECT * FROM @extschema@.dlsm_proxy_move_queues(src) LOOP
			copied := copied + @extschema@.dlsm_proxy_move_copy_queue(src, to_node, q.queue, q.kind,
																	   q.status, q.entity, q.id,
																	   nparts, moved);
		END LOOP;
	END LOOP;
	RETURN copied;
END
$$;

-- Step 6: the moved partitions are on to_node; no move under way.
CREATE FUNCTION @extschema@.dlsm_proxy_move_switch(parts pg_catalog.int4[], to_node pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	m	record;
	p	int4;
BEGIN
	SELECT * INTO m FROM @extschema@.dlsm_proxy_map FOR UPDATE;
	FOREACH p IN ARRAY parts LOOP
		m.nodes[p + 1] := to_node;
	END LOOP;
	UPDATE @extschema@.dlsm_proxy_map SET nodes = m.nodes,
										  moving = array_fill(NULL::int4, ARRAY[cardinality(m.nodes)]),
										  changed_at = now();
END
$$;

-- After a failed step: no move under way, the map as it was.
CREATE FUNCTION @extschema@.dlsm_proxy_move_unmark(nparts pg_catalog.int4)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	UPDATE @extschema@.dlsm_proxy_map SET moving = array_fill(NULL::int4, ARRAY[nparts]),
										  changed_at = now();
END
$$;

CREATE PROCEDURE @extschema@.dlsm_proxy_move(
	parts pg_catalog.int4[],
	to_node pg_catalog.int4,
	drain_timeout pg_catalog.interval DEFAULT '5 minutes')
LANGUAGE plpgsql AS $$
DECLARE
	plan		record;
	moved		text;
	marked_at	timestamptz;
	give_up		timestamptz;
	fmax		int8 := 0;
	copied		int8 := 0;
	failure		text;
	failure_state text;
	failure_detail text;
	failure_hint text;
	next_note	timestamptz := clock_timestamp() + interval '2 s';
BEGIN
	SELECT * INTO plan FROM @extschema@.dlsm_proxy_move_check(parts, to_node);
	IF plan.to_move IS NULL THEN
		RAISE NOTICE 'node % holds those partitions already', to_node;
		RETURN;
	END IF;
	moved := format('%L::pg_catalog.int4[]', plan.to_move);

	PERFORM @extschema@.dlsm_proxy_move_mark(plan.to_move, to_node);
	COMMIT;
	marked_at := clock_timestamp();
	give_up := marked_at + drain_timeout;
	RAISE NOTICE '%', format(CASE WHEN cardinality(plan.to_move) = 1
								 THEN 'moving %s partition from node %s to node %s'
								 ELSE 'moving %s partitions from node %s to node %s' END,
							cardinality(plan.to_move), plan.sources, to_node);

	BEGIN
		PERFORM @extschema@.dlsm_proxy_move_wait_old(marked_at, give_up);
		PERFORM @extschema@.dlsm_proxy_move_drain(plan.sources, plan.nparts, moved, give_up,
												  drain_timeout, next_note);
		fmax := @extschema@.dlsm_proxy_move_raise_fences(plan.sources, to_node);
		copied := @extschema@.dlsm_proxy_move_copy_creates(plan.sources, to_node, plan.nparts, moved);
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS failure = MESSAGE_TEXT, failure_state = RETURNED_SQLSTATE,
								failure_detail = PG_EXCEPTION_DETAIL, failure_hint = PG_EXCEPTION_HINT;
	END;

	IF failure IS NOT NULL THEN
		-- nothing moved: clear the mark
		PERFORM @extschema@.dlsm_proxy_move_unmark(plan.nparts);
		COMMIT;
		RAISE EXCEPTION 'dlsm_proxy_move: nothing moved: %', failure
			USING ERRCODE = failure_state, DETAIL = coalesce(failure_detail, ''),
				  HINT = coalesce(failure_hint, '');
	END IF;

	PERFORM @extschema@.dlsm_proxy_move_switch(plan.to_move, to_node);
	COMMIT;
	RAISE NOTICE '%', format('moved %s %s to node %s: fences there above %s, %s %s copied',
							cardinality(plan.to_move),
							CASE WHEN cardinality(plan.to_move) = 1 THEN 'partition' ELSE 'partitions' END,
							to_node, fmax, copied,
							CASE WHEN copied = 1 THEN 'create' ELSE 'creates' END);
END
$$;

COMMENT ON PROCEDURE @extschema@.dlsm_proxy_move(pg_catalog.int4[], pg_catalog.int4, pg_catalog.interval) IS
'move partitions of the entity hash to a node: refuse new work, drain, raise fences, switch';

REVOKE EXECUTE ON FUNCTION @extschema@.dlsm_proxy_configure(pg_catalog.text[], pg_catalog.int4),
	@extschema@.dlsm_proxy_add_node(pg_catalog.text),
	@extschema@.dlsm_proxy_set_node(pg_catalog.int4, pg_catalog.text),
	@extschema@.dlsm_proxy_refresh(),
	@extschema@.dlsm_proxy_remote(pg_catalog.int4, pg_catalog.text),
	@extschema@.dlsm_proxy_write_server(),
	@extschema@.dlsm_proxy_status()
	FROM PUBLIC;
GRANT EXECUTE ON FUNCTION @extschema@.dlsm_proxy_status() TO pg_monitor;
REVOKE EXECUTE ON PROCEDURE @extschema@.dlsm_proxy_move(pg_catalog.int4[], pg_catalog.int4, pg_catalog.interval)
	FROM PUBLIC;
-- dlsm_proxy_move's steps: administration only, as dlsm_proxy_move
REVOKE EXECUTE ON FUNCTION
	@extschema@.dlsm_proxy_move_check(pg_catalog.int4[], pg_catalog.int4),
	@extschema@.dlsm_proxy_move_mark(pg_catalog.int4[], pg_catalog.int4),
	@extschema@.dlsm_proxy_move_wait_old(pg_catalog.timestamptz, pg_catalog.timestamptz),
	@extschema@.dlsm_proxy_move_queues(pg_catalog.int4),
	@extschema@.dlsm_proxy_move_open_count(pg_catalog.int4, pg_catalog.int4, pg_catalog.text),
	@extschema@.dlsm_proxy_move_open_list(pg_catalog.int4[], pg_catalog.int4, pg_catalog.text),
	@extschema@.dlsm_proxy_move_drain(pg_catalog.int4[], pg_catalog.int4, pg_catalog.text,
									  pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.timestamptz),
	@extschema@.dlsm_proxy_move_raise_fences(pg_catalog.int4[], pg_catalog.int4),
	@extschema@.dlsm_proxy_move_copy_queue(pg_catalog.int4, pg_catalog.int4, pg_catalog.text,
										   pg_catalog.text, pg_catalog.text, pg_catalog.text,
										   pg_catalog.text, pg_catalog.int4, pg_catalog.text),
	@extschema@.dlsm_proxy_move_copy_creates(pg_catalog.int4[], pg_catalog.int4, pg_catalog.int4,
											 pg_catalog.text),
	@extschema@.dlsm_proxy_move_switch(pg_catalog.int4[], pg_catalog.int4),
	@extschema@.dlsm_proxy_move_unmark(pg_catalog.int4)
	FROM PUBLIC;

-- ---------------------------------------------------------------------
-- 1.1
-- ---------------------------------------------------------------------
-- 1.1: dlsm_enqueue takes dlsm 1.3's group_key, dedup_key and
-- dedup_window, and passes them to the entity's shard; dlsm_enqueue_-
-- deduplicated() says whether the session's last dlsm_enqueue through the
-- router returned an existing request.  A dedup key is the shard's: two
-- requests with one key go to one shard only when they have one entity.
-- An enqueue without a group or dedup key calls the shard as 1.0 did, so
-- that shards still at dlsm 1.2 keep working.

DROP FUNCTION @extschema@.dlsm_enqueue(pg_catalog.text, pg_catalog.text,
	pg_catalog.text, pg_catalog.jsonb, pg_catalog.timestamptz);

CREATE FUNCTION @extschema@.dlsm_proxy_enqueue_keyed_on(
	p_queue pg_catalog.text, p_entity pg_catalog.text, p_kind pg_catalog.text,
	p_payload pg_catalog.jsonb, p_run_at pg_catalog.timestamptz,
	p_group_key pg_catalog.text, p_dedup_key pg_catalog.text,
	p_dedup_window pg_catalog.interval,
	OUT id pg_catalog.int8, OUT deduplicated pg_catalog.bool)
RETURNS record
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON @extschema@.dlsm_proxy_route_entity(p_entity);
	SELECT dlsm_enqueue(p_queue, p_entity, p_kind, p_payload, p_run_at,
						group_key => p_group_key, dedup_key => p_dedup_key,
						dedup_window => p_dedup_window) AS id,
		   dlsm_enqueue_deduplicated() AS deduplicated;
$$;

CREATE FUNCTION @extschema@.dlsm_enqueue(
	queue pg_catalog.text,
	entity pg_catalog.text,
	kind pg_catalog.text DEFAULT 'create',
	payload pg_catalog.jsonb DEFAULT NULL,
	run_at pg_catalog.timestamptz DEFAULT NULL,
	group_key pg_catalog.text DEFAULT NULL,
	dedup_key pg_catalog.text DEFAULT NULL,
	dedup_window pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	v_id		pg_catalog.int8;
	v_found		pg_catalog.bool := false;
	e_detail	text;
	e_hint		text;
BEGIN
	IF group_key IS NULL AND dedup_key IS NULL AND dedup_window IS NULL THEN
		v_id := @extschema@.dlsm_proxy_enqueue_on(queue, entity, kind, payload,
												  run_at);
	ELSE
		SELECT k.id, k.deduplicated INTO v_id, v_found
		  FROM @extschema@.dlsm_proxy_enqueue_keyed_on(queue, entity, kind,
			payload, run_at, group_key, dedup_key, dedup_window) k;
	END IF;
	PERFORM pg_catalog.set_config('dlsm_proxy.deduplicated',
								  v_found::pg_catalog.text, false);
	RETURN v_id;
EXCEPTION WHEN OTHERS THEN
	IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
		PERFORM @extschema@.dlsm_proxy_raise_unreachable(
			@extschema@.dlsm_proxy_route_name(entity) + 1,
			format('dlsm_enqueue of "%s"', entity), SQLERRM);
	END IF;
	GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
	PERFORM @extschema@.dlsm_proxy_reraise(@extschema@.dlsm_proxy_route_name(entity) + 1, SQLSTATE, SQLERRM, e_detail, e_hint);
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue(pg_catalog.text, pg_catalog.text, pg_catalog.text, pg_catalog.jsonb, pg_catalog.timestamptz, pg_catalog.text, pg_catalog.text, pg_catalog.interval) IS
'add a request to the queue on the entity''s shard; its id is unique on that shard';

CREATE FUNCTION @extschema@.dlsm_enqueue_deduplicated()
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE AS $$
	SELECT NULLIF(pg_catalog.current_setting('dlsm_proxy.deduplicated', true), '')::pg_catalog.bool
$$;
COMMENT ON FUNCTION @extschema@.dlsm_enqueue_deduplicated() IS
'whether this session''s last dlsm_enqueue through the router returned an existing request (NULL before the first)';

-- Dead letters through the router: request ids are per shard, so
-- dlsm_requeue and dlsm_cancel take the node that holds the requests.

CREATE FUNCTION @extschema@.dlsm_proxy_requeue_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_ids pg_catalog.int8[])
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_requeue(p_queue, p_ids);
$$;

CREATE FUNCTION @extschema@.dlsm_proxy_cancel_on(
	node_index pg_catalog.int4, p_queue pg_catalog.text, p_ids pg_catalog.int8[])
RETURNS pg_catalog.int8
LANGUAGE plproxy AS $$
	CLUSTER 'dlsm_shards';
	RUN ON node_index;
	SELECT dlsm_cancel(p_queue, p_ids);
$$;

-- A dead-letter call (what: dlsm_requeue or dlsm_cancel) on node node_id,
-- checked: 22004 for NULL, 22023 for a node the router does not have; the
-- shard's errors are its own, named with the node.
CREATE FUNCTION @extschema@.dlsm_proxy_dead_letter(
	what pg_catalog.text, node_id pg_catalog.int4, queue pg_catalog.text,
	ids pg_catalog.int8[])
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	all_nodes	int4[];
	e_detail	text;
	e_hint		text;
BEGIN
	IF node_id IS NULL THEN
		RAISE EXCEPTION 'argument "node_id" must not be null'
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	SELECT pg_catalog.array_agg(x.node_id ORDER BY x.node_id) INTO all_nodes
	  FROM @extschema@.dlsm_proxy_nodes x;
	IF all_nodes IS NULL THEN
		PERFORM @extschema@.dlsm_proxy_not_configured();
	END IF;
	IF NOT node_id OPERATOR(pg_catalog.=) ANY (all_nodes) THEN
		RAISE EXCEPTION 'no such node of dlsm_proxy among %', ARRAY[node_id]
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The nodes are %s.', all_nodes);
	END IF;
	BEGIN
		IF what = 'dlsm_requeue' THEN
			RETURN @extschema@.dlsm_proxy_requeue_on(node_id - 1, queue, ids);
		END IF;
		RETURN @extschema@.dlsm_proxy_cancel_on(node_id - 1, queue, ids);
	EXCEPTION WHEN OTHERS THEN
		IF @extschema@.dlsm_proxy_unreachable(SQLSTATE, SQLERRM) THEN
			PERFORM @extschema@.dlsm_proxy_raise_unreachable(node_id, what,
															  SQLERRM);
		END IF;
		GET STACKED DIAGNOSTICS e_detail = PG_EXCEPTION_DETAIL,
								e_hint = PG_EXCEPTION_HINT;
		PERFORM @extschema@.dlsm_proxy_reraise(node_id, SQLSTATE, SQLERRM,
											   e_detail, e_hint);
		RETURN NULL;
	END;
END
$$;

CREATE FUNCTION @extschema@.dlsm_requeue_on(
	node_id pg_catalog.int4, queue pg_catalog.text, ids pg_catalog.int8[])
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE AS $$
	SELECT @extschema@.dlsm_proxy_dead_letter('dlsm_requeue', $1, $2, $3)
$$;
COMMENT ON FUNCTION @extschema@.dlsm_requeue_on(pg_catalog.int4, pg_catalog.text, pg_catalog.int8[]) IS
'send requests in error back to new, on the node that holds them';

CREATE FUNCTION @extschema@.dlsm_cancel_on(
	node_id pg_catalog.int4, queue pg_catalog.text, ids pg_catalog.int8[])
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE AS $$
	SELECT @extschema@.dlsm_proxy_dead_letter('dlsm_cancel', $1, $2, $3)
$$;
COMMENT ON FUNCTION @extschema@.dlsm_cancel_on(pg_catalog.int4, pg_catalog.text, pg_catalog.int8[]) IS
'cancel new requests (to error), on the node that holds them';
