/* proxy/dlsm_proxy--1.1--1.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlsm_proxy UPDATE TO '1.2'" to load this file. \quit

-- 1.2 (issue 40, finding 8): the router reads connection strings as libpq
-- does, byte for byte (dlsm_proxy_conninfo_parse), and refuses every one
-- that gives a secret: 1.1 read postgresql://[::1?]/db?password=secret
-- as having a keyword "]/db?password", and took it.  New functions are
-- created (an object of their name that is not the extension's makes the
-- update fail); dlsm_proxy_conninfo_keys and dlsm_proxy_write_server, the
-- extension's own, are replaced.

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
CREATE OR REPLACE FUNCTION @extschema@.dlsm_proxy_conninfo_keys(connstr pg_catalog.text)
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
CREATE OR REPLACE FUNCTION @extschema@.dlsm_proxy_write_server()
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

