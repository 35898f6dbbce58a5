# Copyright (c) 2026, dlsm developers
#
# One worker per database: dlsm.databases limits them (reload), a second
# database gets its own worker with its own counters, CREATE DATABASE ...
# TEMPLATE, ALTER DATABASE ... RENAME and DROP DATABASE (without FORCE)
# succeed while the database has a worker, and DROP EXTENSION stops the
# worker while CREATE EXTENSION brings it back.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval usleep);

my $node = dlsm_node('databases', qq{
dlsm.reap_interval = 200
dlsm.databases = 'postgres'
});

sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

sub workers_in
{
	my ($db) = @_;
	return qq{SELECT count(*) FROM pg_stat_activity
			  WHERE backend_type = 'dlsm worker' AND datname = '$db'};
}

sub one_worker_in
{
	my ($db) = @_;
	return "SELECT (" . workers_in($db) . ") = 1";
}

sub worker_pid_in
{
	my ($db) = @_;
	return sql('postgres',
		qq{SELECT pid FROM pg_stat_activity
		   WHERE backend_type = 'dlsm worker' AND datname = '$db'});
}

# Wait for the launcher's first look, so that CREATE EXTENSION does not
# race with it.
wait_first_look($node);
sql('postgres', q{
CREATE EXTENSION dlsm;
-- the largest number of workers seen in a database over a window
CREATE FUNCTION max_workers(db name, samples int, step float8)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE m bigint := 0; c bigint;
BEGIN
	FOR i IN 1 .. samples LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT count(*) INTO c FROM pg_stat_activity
		 WHERE backend_type = 'dlsm worker' AND datname = db;
		m := greatest(m, c);
		PERFORM pg_sleep(step);
	END LOOP;
	RETURN m;
END $$;
});
ok($node->poll_query_until('postgres', one_worker_in('postgres')),
	'the worker of postgres runs');

# ---------------------------------------------------------------------
# dlsm.databases keeps a database without a worker; a reload lifts it
# ---------------------------------------------------------------------
is(sql('postgres', q{SHOW dlsm.databases}), 'postgres',
	'dlsm.databases is postgres');
sql('postgres', 'CREATE DATABASE db2');
# CREATE EXTENSION pokes the launcher, which must leave db2 alone
sql('db2', q{CREATE EXTENSION dlsm; SELECT dlsm_create_queue('q2')});
is(sql('postgres', q{SELECT max_workers('db2', 20, 0.1)}),
	'0', 'no worker for a database left out of dlsm.databases');

sql('postgres', q{ALTER SYSTEM SET dlsm.databases = ''; SELECT pg_reload_conf()});
my $t = poll_within($node, 'postgres', one_worker_in('db2'), 20);
ok(defined $t, 'after the reload the second database gets its own worker');
note sprintf('worker of db2 started %.1f s after the reload', $t // -1);
ok($node->poll_query_until('postgres', one_worker_in('db2')),
	'one worker in db2');
is(sql('postgres', workers_in('postgres')),
	'1', 'still one worker in postgres');

is( sql('db2',
		q{SELECT string_agg(database || ':' || (pid IS NOT NULL), ','
			ORDER BY database) FROM dlsm_worker_status}),
	'db2:true,postgres:true',
	'dlsm_worker_status lists both workers');

# db2's worker does db2's work and counts it in db2's row
my $reaped_postgres = sql('postgres',
	q{SELECT reaped FROM dlsm_worker_status WHERE database = 'postgres'});
sql('db2', q{SELECT dlsm_enqueue('q2', 'x');
			 SELECT count(*) FROM dlsm_claim('q2', lease => '300 ms')});
ok( $node->poll_query_until(
		'db2', q{SELECT status = 'new' AND attempts = 1 FROM q2}),
	'the lease in db2 is reaped by its worker');
is( sql('db2',
		q{SELECT reaped >= 1 FROM dlsm_worker_status WHERE database = 'db2'}),
	't', 'db2\'s counters count it');
is( sql('postgres',
		q{SELECT reaped FROM dlsm_worker_status WHERE database = 'postgres'}),
	$reaped_postgres,
	'postgres\'s counters do not');

# ---------------------------------------------------------------------
# CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... RENAME stop the
# worker first, so they succeed; the workers come back after the pause.
# ---------------------------------------------------------------------
my $pid2 = worker_pid_in('db2');
my ($ret, $out, $err) = $node->psql('postgres',
	'CREATE DATABASE db3 TEMPLATE db2');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of a database with a worker');
is($err, '', 'without an error') or diag $err;

ok($node->poll_query_until('postgres', one_worker_in('db3')),
	'the copy gets a worker');
($ret, $out, $err) = $node->psql('postgres',
	'ALTER DATABASE db3 RENAME TO db3r');
is($ret, 0, 'ALTER DATABASE ... RENAME of a database with a worker')
  or diag $err;

ok( $node->poll_query_until(
		'postgres',
		one_worker_in('db2') . " AND (SELECT pid <> $pid2 FROM pg_stat_activity
			 WHERE backend_type = 'dlsm worker' AND datname = 'db2')"),
	'the template gets a new worker after the pause');
ok($node->poll_query_until('postgres', one_worker_in('db3r')),
	'the renamed database has a worker after the pause');
is(sql('db3r', q{SELECT count(*) FROM dlsm_queues}),
	'1', 'the copy has the template\'s queue');

# ---------------------------------------------------------------------
# DROP DATABASE without FORCE while the database has a worker
# ---------------------------------------------------------------------
my $start = [gettimeofday];
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE db2');
my $drop_s = tv_interval($start);
is($ret, 0, 'DROP DATABASE of a database with a worker, without FORCE')
  or diag $err;
cmp_ok($drop_s, '<', 5, sprintf('and quickly (%.2f s)', $drop_s));
is(sql('postgres', workers_in('db2')), '0', 'its worker is gone');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 0 FROM dlsm_worker_status WHERE database = 'db2'}),
	'dlsm_worker_status forgets it');
is(sql('postgres', workers_in('postgres')),
	'1', 'the worker of postgres is untouched');

# ---------------------------------------------------------------------
# DROP EXTENSION: the worker goes away; CREATE EXTENSION: it comes back
# ---------------------------------------------------------------------
my $pid3 = worker_pid_in('db3r');
sql('db3r', q{SELECT dlsm_drop_queue('q2', true); DROP EXTENSION dlsm});
ok( $node->poll_query_until(
		'postgres', "SELECT (" . workers_in('db3r') . ") = 0"),
	'the worker stops when its database drops the extension');
ok( $node->log_contains(
		qr/dlsm worker for database "db3r" stops\n.*DETAIL:  The extension dlsm is not installed in that database/),
	'and says why');
is( sql('postgres',
		q{SELECT count(*) FROM dlsm_worker_status WHERE database = 'db3r'}),
	'0', 'dlsm_worker_status no longer lists it');

sql('db3r', 'CREATE EXTENSION dlsm');
# The exiting worker paused its database for 60 s; CREATE EXTENSION's poke
# ends that pause (fixed in c0a447b: it used to stay, 60-65 s).
$t = poll_within($node, 'postgres', one_worker_in('db3r'), 15);
ok(defined $t, 'CREATE EXTENSION brings the worker back within 15 s');
note 'worker back after CREATE EXTENSION: '
  . (defined $t ? sprintf('%.1f s', $t) : 'not within 15 s');
ok($node->poll_query_until('postgres', one_worker_in('db3r')),
	'the database that got the extension back has a worker');
is(sql('postgres', workers_in('postgres')), '1',
	'and postgres still has its one');

$node->stop;
done_testing();
