# Copyright (c) 2026, dlsm developers
#
# Installing dlsm into a schema where hostile objects were planted first:
# functions, operators, a type and an implicit cast that would capture an
# unqualified call never run, and an object already holding a dlsm name
# makes CREATE EXTENSION fail rather than be adopted.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('install', '');

$node->safe_psql('postgres', q{
CREATE DATABASE hostile;
CREATE DATABASE squatted;
});

# Everything planted records that it ran, in a table nobody else writes.
$node->safe_psql('hostile', q{
CREATE TABLE public.ran (what text);
CREATE FUNCTION public.hostile(what text) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO public.ran VALUES (what) $$;
-- functions the script calls, planted with the same names and with
-- argument types that match an unqualified call with literals better than
-- pg_catalog's own (text beats regclass for an unknown literal)
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('now'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.pg_extension_config_dump(text, text) RETURNS void
	LANGUAGE plpgsql AS $$ BEGIN PERFORM public.hostile('config_dump'); END $$;
CREATE FUNCTION public.nextval(text) RETURNS bigint LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('nextval'); RETURN 1; END $$;
CREATE FUNCTION public.gen_random_uuid(int DEFAULT 0) RETURNS uuid LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('uuid'); RETURN pg_catalog.gen_random_uuid(); END $$;
CREATE FUNCTION public.unnest(anyarray) RETURNS SETOF anyelement
	LANGUAGE plpgsql AS $$ BEGIN PERFORM public.hostile('unnest'); END $$;
-- operators the script uses, on the types it uses them with
CREATE FUNCTION public.evil_eq(int4, int4) RETURNS bool LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('int4 ='); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR public.= (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.evil_eq);
CREATE FUNCTION public.evil_gt(int4, int4) RETURNS bool LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('int4 >'); RETURN $1 OPERATOR(pg_catalog.>) $2; END $$;
CREATE OPERATOR public.> (LEFTARG = int4, RIGHTARG = int4, FUNCTION = public.evil_gt);
-- a type with a name the script uses, and an implicit cast to capture calls
CREATE TYPE public.regclass AS (x int);
CREATE FUNCTION public.to_text(int4) RETURNS text LANGUAGE plpgsql
	AS $$ BEGIN PERFORM public.hostile('cast'); RETURN $1::pg_catalog.text; END $$;
});
my ($ret, $out, $err) = $node->psql('hostile',
	q{SET search_path = public, pg_catalog; CREATE EXTENSION dlsm;});
is($ret, 0, 'dlsm installs in a schema with planted objects') or diag $err;
is($node->safe_psql('hostile', q{SELECT count(*) FROM public.ran}),
	'0', 'none of the planted code ran while installing');

# and none runs when dlsm is used with that search_path either
$node->safe_psql('hostile', q{
SET search_path = public, pg_catalog;
SELECT dlsm_create_queue('jobs', max_attempts => 3);
SELECT dlsm_enqueue('jobs', 'a');
SELECT dlsm_settle('jobs', process_id) FROM dlsm_claim('jobs');
SELECT dlsm_try_lock('x');
});
is($node->safe_psql('hostile', q{SELECT string_agg(DISTINCT what, ', ') FROM public.ran}),
	'', 'none of it ran while dlsm worked either');
is($node->safe_psql('hostile', q{SELECT status FROM public.jobs}),
	'complete', 'and dlsm worked');

# an object already holding a dlsm name is not adopted
$node->safe_psql('squatted', q{
CREATE TABLE public.dlsm_queues (queue regclass PRIMARY KEY, evil text);
});
($ret, $out, $err) = $node->psql('squatted', q{CREATE EXTENSION dlsm});
isnt($ret, 0, 'CREATE EXTENSION fails when a dlsm name is taken');
like($err, qr/already exists/, 'because the object already exists');
is($node->safe_psql('squatted',
		q{SELECT count(*) FROM pg_extension WHERE extname = 'dlsm'}),
	'0', 'and nothing of dlsm stays behind');

$node->stop;
done_testing();
