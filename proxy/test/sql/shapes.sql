-- The shape of the router's API (dlsm_proxy): every function and procedure
-- of the extension with its arguments (defaults included), result,
-- language, volatility, strictness, SECURITY, settings and whether PUBLIC
-- may call it; the row type of dlsm_claim, and the views' columns.  A
-- change here is a change of the API: an installed dlsm_proxy is not changed,
-- so a changed signature needs an update script and a new version.
CREATE EXTENSION dlsm_proxy CASCADE;
SELECT e.extversion, e.extrelocatable, e.extnamespace::regnamespace AS schema,
	   v.superuser, v.requires
  FROM pg_extension e
  JOIN pg_available_extension_versions v ON v.name = e.extname AND v.version = e.extversion
 WHERE e.extname = 'dlsm_proxy';

-- the functions and procedures of the extension
CREATE TEMP VIEW router_functions AS
SELECT p.oid, p.proname, p.prokind, p.proacl,
	   pg_get_function_arguments(p.oid) AS arguments,
	   pg_get_function_result(p.oid) AS result,
	   l.lanname AS language,
	   CASE p.provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END AS volatility,
	   p.proisstrict AS strict,
	   CASE WHEN p.prosecdef THEN 'definer' ELSE 'invoker' END AS security,
	   p.proconfig AS settings,
	   p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
								   WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public_may_call
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm_proxy';

SELECT count(*) AS functions,
	   count(*) FILTER (WHERE prokind = 'p') AS procedures,
	   count(*) FILTER (WHERE language = 'plproxy') AS plproxy,
	   count(*) FILTER (WHERE security = 'definer') AS security_definer,
	   count(*) FILTER (WHERE NOT public_may_call) AS not_for_public
  FROM router_functions;

-- one line each: name|kind|arguments|result|language|volatility|strict|
-- security|settings|public_may_call
\pset format unaligned
SELECT proname, prokind, arguments, result, language, volatility, strict,
	   security, settings, public_may_call
  FROM router_functions
 ORDER BY proname, arguments;
\pset format aligned

-- who may call what besides PUBLIC
SELECT f.proname, a.grantee::regrole AS grantee, a.privilege_type
  FROM router_functions f, aclexplode(f.proacl) a
 WHERE a.grantee <> 0 AND a.grantee <> a.grantor
 ORDER BY 1, 2;

-- what dlsm_claim and dlsm_claim_on return
SELECT a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type
  FROM pg_attribute a
 WHERE a.attrelid = 'dlsm_proxy_claimed'::regclass AND a.attnum > 0
 ORDER BY a.attnum;

-- the tables and views, their columns
SELECT c.relname, c.relkind, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
	   a.attnotnull AS not_null
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm_proxy'
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relkind IN ('r', 'v')
 ORDER BY c.relname, a.attnum;

-- who may read them besides the owner
SELECT c.relname, a.grantee::regrole AS grantee, a.privilege_type
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm_proxy',
	   aclexplode(c.relacl) a
 WHERE a.grantee <> a.grantor
 ORDER BY 1, 2, 3;

-- column grants (the routing code of every caller reads the node ids)
SELECT c.relname, a.attname, g.grantee::regrole AS grantee, g.privilege_type
  FROM pg_class c
  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm_proxy'
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND a.attacl IS NOT NULL,
	   aclexplode(a.attacl) g
 ORDER BY 1, 2, 3, 4;
