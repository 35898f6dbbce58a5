# Copyright (c) 2026, dlsm developers
#
# What dlsm stores survives pg_dump + pg_restore, renames and redeploys, or
# fails loudly; it never silently stops working.  Each dump is
# restored into a fresh database of the same preloaded cluster, with the
# worker running.
#
#  a. a handler whose name is overloaded (public.process(int) besides the
#     handler's signature) is still registered after the restore, and runs;
#  b. a capture of a table with a dropped column: the entity and the
#     watched columns are the same columns after the restore;
#  c. a queue renamed (and moved to another schema) keeps receiving the
#     captured changes, without a WARNING;
#  d. two queues of one name in two schemas capture one table, and
#     dlsm_uncapture removes only the one it is asked to; a queue with a
#     long non-ASCII name gets valid trigger names, and dumps and restores;
#  e. a handler dropped and re-created (same signature) is called in its new
#     body; a handler dropped and not re-created leaves the rows new and
#     says so in dlsm_worker_status.last_error.
use strict;
use warnings;

use Encode qw(decode FB_CROAK);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('names', qq{
dlsm.reap_interval = 200
max_worker_processes = 24
dlsm.max_workers = 20
});
wait_first_look($node);

# The output of $sql in $db; on an error, the error (so that what follows
# fails as an assertion instead of ending the test).
sub sql
{
	my ($db, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql);
	return $out if $ret == 0;
	diag "in $db: $sql\n$err";
	return "<error: $err>";
}

# A new UTF8 database with dlsm, and its worker running.
sub new_db
{
	my ($db) = @_;
	sql('postgres',
		qq{CREATE DATABASE $db ENCODING 'UTF8' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'});
	sql($db, 'CREATE EXTENSION dlsm');
	worker_in($db);
}

sub worker_in
{
	my ($db) = @_;
	ok( defined poll_within($node, 'postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND datname = '$db'}, 30),
		"a worker serves $db");
}

# pg_dump -Fc of $src, pg_restore into a new database $dst: both succeed,
# without an error.
sub dump_restore
{
	my ($src, $dst) = @_;
	my $file = "$PostgreSQL::Test::Utils::tmp_check/$src.dump";
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'pg_dump', '-Fc', '-f', $file, '-d', $node->connstr($src) ],
		'>', \$out, '2>', \$err);
	ok($ok, "pg_dump of $src") or diag $err;
	sql('postgres',
		qq{CREATE DATABASE $dst ENCODING 'UTF8' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'});
	($out, $err) = ('', '');
	$ok = IPC::Run::run([ 'pg_restore', '-d', $node->connstr($dst), $file ],
		'>', \$out, '2>', \$err);
	ok($ok, "pg_restore of $src into $dst succeeds") or diag $err;
	unlike($err, qr/error/i, "pg_restore into $dst reports no error");
	worker_in($dst);
}

# ---------------------------------------------------------------------
# a. An overloaded handler name
# ---------------------------------------------------------------------
new_db('src_a');
sql('src_a', q{
SELECT dlsm_create_queue('hq');
CREATE TABLE done_a (id bigint, body text);
CREATE FUNCTION public.process(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO public.done_a SELECT unnest(ids), 'process' $$;
CREATE FUNCTION public.process(int) RETURNS int LANGUAGE sql AS $$ SELECT $1 $$;
SELECT dlsm_set_handler('hq',
	'public.process(text, text, bigint[], jsonb[])'::regprocedure::oid::regproc);
SELECT dlsm_enqueue('hq', 'a1');
});
ok( defined poll_within($node, 'src_a',
		q{SELECT status = 'complete' FROM hq WHERE entity = 'a1'}, 30),
	'a: the handler runs in the source database');
dump_restore('src_a', 'dst_a');
# (whatever the registry stores for a handler: the next test shows that
# it is the right function)
is( sql('dst_a', q{
SELECT count(*) FROM dlsm_queues
 WHERE queue = 'hq'::regclass AND handler::text LIKE '%process%'}),
	'1', 'a: after the restore dlsm_queues holds the queue and its handler');
sql('dst_a', q{SELECT dlsm_enqueue('hq', 'a2')});
ok( defined poll_within($node, 'dst_a',
		q{SELECT status = 'complete' FROM hq WHERE entity = 'a2'}, 30),
	'a: an enqueue in the restored database is handled by the worker');
is( sql('dst_a', q{
SELECT count(*) FROM done_a d JOIN hq ON hq.id = d.id WHERE hq.entity = 'a2'}),
	'1', 'a: by the handler');

# ---------------------------------------------------------------------
# b. A captured table with a dropped column
# ---------------------------------------------------------------------
new_db('src_b');
sql('src_b', q{
CREATE TABLE cust (junk int, id int PRIMARY KEY, name text, email text);
ALTER TABLE cust DROP COLUMN junk;
SELECT dlsm_create_queue('cq');
SELECT dlsm_create_queue('cq_name');
SELECT dlsm_capture('cust', 'cq');
SELECT dlsm_capture('cust', 'cq_name', columns => '{name}');
});
dump_restore('src_b', 'dst_b');
for my $db ('src_b', 'dst_b')
{
	sql($db, q{INSERT INTO cust VALUES (42, 'zed', 'z@x')});
	is( sql($db, q{SELECT string_agg(entity, ',') FROM cq}),
		'42', "b ($db): the captured INSERT's entity is the primary key, 42");
	is( sql($db, q{SELECT string_agg(entity, ',') FROM cq_name}),
		'42', "b ($db): the INSERT reaches the queue watching {name} too");
	sql($db, q{UPDATE cust SET email = 'y@x' WHERE id = 42});
	is(sql($db, q{SELECT count(*) FROM cq_name}),
		'1', "b ($db): an UPDATE of email is not captured into the queue watching {name}");
	sql($db, q{UPDATE cust SET name = 'zz' WHERE id = 42});
	is( sql($db, q{
SELECT count(*) || ':' || string_agg(DISTINCT payload->'new'->>'name', ',')
  FROM cq_name WHERE payload->>'op' = 'UPDATE'}),
		'1:zz', "b ($db): an UPDATE of name is");
}

# ---------------------------------------------------------------------
# c. A queue renamed, then moved to another schema
# ---------------------------------------------------------------------
new_db('src_c');
sql('src_c', q{
CREATE TABLE orders (id int PRIMARY KEY, v text);
SELECT dlsm_create_queue('order_changes');
SELECT dlsm_capture('orders', 'order_changes');
INSERT INTO orders VALUES (1, 'a');
ALTER TABLE order_changes RENAME TO order_changes_v2;
CREATE SCHEMA archive;
});
my ($ret, $out, $err) = $node->psql('src_c', q{INSERT INTO orders VALUES (2, 'b')});
is($ret, 0, 'c: a write after the queue\'s rename succeeds');
unlike($err, qr/WARNING/, 'c: without a WARNING') or diag $err;
is( sql('src_c', q{SELECT string_agg(entity, ',' ORDER BY id) FROM order_changes_v2}),
	'1,2', 'c: the write is enqueued into the renamed queue');
sql('src_c', q{ALTER TABLE order_changes_v2 SET SCHEMA archive});
($ret, $out, $err) = $node->psql('src_c', q{INSERT INTO orders VALUES (3, 'c')});
is($ret, 0, 'c: a write after the queue moved to another schema succeeds');
unlike($err, qr/WARNING/, 'c: without a WARNING') or diag $err;
is( sql('src_c', q{SELECT string_agg(entity, ',' ORDER BY id) FROM archive.order_changes_v2}),
	'1,2,3', 'c: the write is enqueued into the moved queue');

# ---------------------------------------------------------------------
# d. Same queue name in two schemas; a long non-ASCII queue name
# ---------------------------------------------------------------------
new_db('src_d');
sql('src_d', q{
CREATE SCHEMA qs;
SELECT dlsm_create_queue('qs.cq');
SELECT dlsm_create_queue('public.cq');
CREATE TABLE s (id int PRIMARY KEY, v text);
SELECT dlsm_capture('s', 'qs.cq');
});
($ret, $out, $err) = $node->psql('src_d', q{SELECT dlsm_capture('s', 'public.cq')});
is($ret, 0, 'd: s is captured into public.cq as well as qs.cq') or diag $err;
sql('src_d', q{INSERT INTO s VALUES (1, 'a')});
is( sql('src_d', q{SELECT (SELECT count(*) FROM qs.cq) || '/' || (SELECT count(*) FROM public.cq)}),
	'1/1', 'd: a write reaches both queues');
($ret, $out, $err) = $node->psql('src_d', q{SELECT dlsm_uncapture('s', 'public.cq')});
is($ret, 0, 'd: dlsm_uncapture(s, public.cq) succeeds') or diag $err;
sql('src_d', q{INSERT INTO s VALUES (2, 'b')});
is( sql('src_d', q{SELECT (SELECT count(*) FROM qs.cq) || '/' || (SELECT count(*) FROM public.cq)}),
	'2/1', 'd: it removed only that capture: writes still reach qs.cq, not public.cq');

my $long = q{quote_ident('a' || repeat(chr(233), 26))};
($ret, $out, $err) = $node->psql('src_d', qq{
SELECT dlsm_create_queue($long);
CREATE TABLE s2 (id int PRIMARY KEY);
SELECT dlsm_capture('s2', $long\::regclass);
INSERT INTO s2 VALUES (1);
});
is($ret, 0, 'd: a queue named a || repeat(é, 26) is created and captured into')
  or diag $err;
is( sql('src_d', qq{SELECT count(*) FROM pg_class WHERE oid = to_regclass($long)
					AND EXISTS (SELECT 1 FROM dlsm_queues WHERE queue::oid = pg_class.oid)}),
	'1', 'd: it is a registered queue');
sql('src_d', qq{
CREATE FUNCTION long_count() RETURNS bigint LANGUAGE plpgsql AS \$\$
DECLARE n bigint;
BEGIN
	EXECUTE 'SELECT count(*) FROM ' || $long INTO n;
	RETURN n;
END \$\$;
});
is(sql('src_d', q{SELECT long_count()}), '1', 'd: the write to s2 reached it');

# every name, as bytes: valid UTF-8
sub invalid_names
{
	my ($db, $query) = @_;
	my @bad;
	for my $hex (split /\n/, sql($db, $query))
	{
		my $bytes = pack('H*', $hex);
		eval { decode('UTF-8', $bytes, FB_CROAK); 1 } or push @bad, $hex;
	}
	return join(',', @bad);
}
is( invalid_names('src_d',
		q{SELECT encode(textsend(tgname::text), 'hex') FROM pg_trigger}),
	'', 'd: every trigger name is valid UTF-8');
is( invalid_names('src_d',
		q{SELECT encode(textsend(relname::text), 'hex') FROM pg_class
		   WHERE relnamespace = 'public'::regnamespace}),
	'', 'd: every relation name (the queue\'s indexes) is valid UTF-8');
dump_restore('src_d', 'dst_d');
sql('dst_d', q{INSERT INTO s2 VALUES (2); INSERT INTO s VALUES (3, 'c')});
is( sql('dst_d', q{
SELECT long_count() || '/' || (SELECT count(*) FROM qs.cq)
	   || '/' || (SELECT count(*) FROM public.cq)}),
	'2/3/1', 'd: after the restore the captures go on as before');

# ---------------------------------------------------------------------
# e. A handler redeployed; a handler dropped
# ---------------------------------------------------------------------
new_db('src_e');
sql('src_e', q{
SELECT dlsm_create_queue('hr', max_attempts => 3);
CREATE TABLE done_e (id bigint, body text);
CREATE FUNCTION redeploy_h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO done_e SELECT unnest(ids), 'v1' $$;
SELECT dlsm_set_handler('hr', 'redeploy_h');
SELECT dlsm_enqueue('hr', 'e1');
});
ok( defined poll_within($node, 'src_e',
		q{SELECT status = 'complete' FROM hr WHERE entity = 'e1'}, 30),
	'e: the first body handles e1');
my $log_offset = -s $node->logfile;
sql('src_e', q{
BEGIN;
DROP FUNCTION redeploy_h(text, text, bigint[], jsonb[]);
CREATE FUNCTION redeploy_h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO done_e SELECT unnest(ids), 'v2' $$;
COMMIT;
SELECT dlsm_enqueue('hr', 'e2');
SELECT dlsm_enqueue('hr', 'e3');
});
ok( defined poll_within($node, 'src_e',
		q{SELECT count(*) = 2 FROM hr WHERE entity IN ('e2', 'e3') AND status = 'complete'}, 30),
	'e: after DROP and CREATE of the handler, later units complete');
is( sql('src_e', q{
SELECT string_agg(hr.entity || ':' || d.body, ',' ORDER BY hr.entity)
  FROM hr JOIN done_e d ON d.id = hr.id WHERE hr.entity IN ('e2', 'e3')}),
	'e2:v2,e3:v2', 'e: handled by the new body');
is(sql('src_e', q{SELECT count(*) FROM hr WHERE status = 'error'}),
	'0', 'e: no request in error');
unlike(slurp_file($node->logfile, $log_offset), qr/cache lookup failed/,
	'e: no "cache lookup failed" in the server log');
unlike(
	sql('src_e', q{SELECT coalesce(last_error, '') FROM dlsm_worker_status
				   WHERE database = current_database()}),
	qr/cache lookup failed/, 'e: nor in last_error');

sql('src_e', q{
SELECT dlsm_create_queue('hx', max_attempts => 1);
CREATE FUNCTION gone_h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT 1 $$;
SELECT dlsm_set_handler('hx', 'gone_h');
DROP FUNCTION gone_h(text, text, bigint[], jsonb[]);
SELECT dlsm_enqueue('hx', 'x' || g) FROM generate_series(1, 2) g;
});
ok( defined poll_within($node, 'src_e', q{
SELECT last_error LIKE '%gone_h%' FROM dlsm_worker_status
 WHERE database = current_database()}, 30),
	'e: with the handler dropped, last_error names the missing function');
my $seen = sql('src_e', q{SELECT clock_timestamp()});
ok( defined poll_within($node, 'src_e', qq{
SELECT last_reap_at > '$seen'::timestamptz + interval '1 s' FROM dlsm_worker_status
 WHERE database = current_database()}, 30),
	'e: the worker went on for more passes');
is( sql('src_e', q{SELECT string_agg(status, ',' ORDER BY id) FROM hx}),
	'new,new', 'e: the rows of the queue whose handler is gone stay new (max_attempts 1)');

$node->stop;
done_testing();
