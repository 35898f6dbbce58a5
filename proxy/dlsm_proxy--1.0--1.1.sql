/* proxy/dlsm_proxy--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm_proxy UPDATE TO '1.1'" to load this file. \quit

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

-- 1.1: dlsm_proxy_conninfo_keys reads URIs by libpq's rules (1.0 took a
-- password holding # or ? in a URI's user part for none, so that
-- dlsm_proxy_configure stored it in pg_foreign_server).
--
-- The keywords of a libpq connection string, in keyword = value form or
-- as a URI (a password in the URI's user part counts as keyword password),
-- read by libpq's rules (fe-connect.c: uri_prefix_length,
-- conninfo_uri_parse_options, conninfo_uri_parse_params): a URI starts
-- with postgresql:// or postgres://, in that case; its user part runs to
-- the first @ when an @ comes before any /, whatever else it holds (#, ?
-- and & are no delimiters there), and holds a password when something
-- follows its first :; the parameters follow the first ? after the user
-- part, and their keywords are percent-decoded.  22023 when it reads as
-- neither form.
CREATE OR REPLACE FUNCTION @extschema@.dlsm_proxy_conninfo_keys(connstr pg_catalog.text)
RETURNS pg_catalog.text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	keys	text[] := '{}';
	rest	text := connstr;
	m		text[];
	k		text;
	plain	text;
	i		int4;
BEGIN
	IF rest ~ '^postgres(ql)?://' THEN
		rest := substring(rest FROM '^postgres(?:ql)?://(.*)$');
		-- the user part, and a password after its first :
		m := regexp_match(rest, '^([^@/]*)@(.*)$');
		IF m IS NOT NULL THEN
			IF m[1] ~ ':.' THEN
				keys := keys || 'password'::text;
			END IF;
			rest := m[2];
		END IF;
		FOR m IN SELECT regexp_matches(substring(rest FROM '\?(.*)$'), '(?:^|&)([^=&]*)=', 'g') LOOP
			-- libpq decodes the keywords of a URI
			k := m[1];
			plain := '';
			i := 1;
			WHILE i <= length(k) LOOP
				IF substr(k, i, 1) = '%' AND substr(k, i + 1, 2) ~ '^[0-9A-Fa-f]{2}$' THEN
					plain := plain || chr(('x' || substr(k, i + 1, 2))::bit(8)::int4);
					i := i + 3;
				ELSE
					plain := plain || substr(k, i, 1);
					i := i + 1;
				END IF;
			END LOOP;
			keys := keys || plain;
		END LOOP;
		RETURN keys;
	END IF;
	LOOP
		rest := substring(rest FROM '^\s*(.*)$');
		EXIT WHEN rest = '';
		-- keyword = 'quoted value' or an unquoted one (backslash escapes)
		m := regexp_match(rest,
			'^([^=\s]+)\s*=\s*(''(?:[^''\\]|\\.)*''|(?:[^\s\\'']|\\.)(?:[^\s\\]|\\.)*|)(\s.*|)$');
		IF m IS NULL THEN
			RAISE EXCEPTION 'invalid connection string "%"', connstr
				USING ERRCODE = 'invalid_parameter_value',
					  HINT = 'Write it as keyword = value pairs, as libpq reads them.';
		END IF;
		keys := keys || m[1];
		rest := m[3];
	END LOOP;
	RETURN keys;
END
$$;
