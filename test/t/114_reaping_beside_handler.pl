# Copyright (c) 2026, dlsm developers
#
# Reaping never waits behind a handler (issue 40, finding 5): alice owns a
# handler queue whose handler sleeps 20 s a unit (handler_timeout 30 s:
# nothing is cancelled); bob owns a queue with a claim whose lease expires
# while alice's handler sleeps.  Before the fix the worker ran handler calls
# and reaping passes in one loop, so bob's row stayed in progress until
# alice's call returned (about 18 s after its lease expired).
#
# The bounds (doc/security.md, "No owner holds the worker"): bob's expired
# lease is reaped within 2 x dlsm.step_timeout + dlsm.reap_interval of its
# expiry, whatever alice's handlers do, since reaping runs in a process of
# its own (the dlsm reaper); and bob's handler waits for at most the call of
# alice's that is under way, then one dlsm.reap_interval and the claim and
# settle steps (2 x dlsm.step_timeout): it runs before alice's next call.
# Each with a margin for a loaded machine, far below alice's 20 s.
# DROP DATABASE stops a reaper with its worker.
#
# Then with no background worker process free for a reaper: the log says
# so, once, and the worker reaps itself, between its handler calls; and a
# database's worker that finds no process makes every reaper give way.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $reap_ms = 1000;
my $bound_ms = 1000;
my $call_s = 20;
my $lease_s = 2;
my $margin_s = 5;	# for a loaded machine
my $reap_limit = (2 * $bound_ms + $reap_ms) / 1000 + $margin_s;
my $handler_limit = (2 * $bound_ms + $reap_ms) / 1000 + $margin_s;

my $node = dlsm_node('beside', qq{
dlsm.reap_interval = $reap_ms
dlsm.step_timeout = $bound_ms
});
ok(install_dlsm($node), 'the worker runs');

$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
CREATE SCHEMA bob AUTHORIZATION bob;
});
$node->safe_psql('postgres', qq{
CREATE TABLE alice.done (entity text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION alice.slow(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
	PERFORM pg_catalog.pg_sleep($call_s);
	INSERT INTO alice.done (entity) VALUES (entity);
END \$\$;
SELECT dlsm_create_queue('alice.slow');
SELECT dlsm_alter_queue('alice.slow', handler_timeout => '30 s');
SELECT dlsm_set_handler('alice.slow', 'alice.slow');
}, extra_params => [ '-U', 'alice' ]);
$node->safe_psql('postgres', q{
CREATE TABLE bob.done (entity text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION bob.quick(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO bob.done (entity) VALUES (entity) $$;
SELECT dlsm_create_queue('bob.leased');
SELECT dlsm_create_queue('bob.handled');
SELECT dlsm_set_handler('bob.handled', 'bob.quick');
}, extra_params => [ '-U', 'bob' ]);

# alice's two units: her handler sleeps in the first call
$node->safe_psql('postgres',
	q{SELECT dlsm_enqueue('alice.slow', 'a1'), dlsm_enqueue('alice.slow', 'a2')},
	extra_params => [ '-U', 'alice' ]);
ok( defined poll_within($node, 'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker' AND wait_event = 'PgSleep'}, 30),
	"alice's handler sleeps in the worker");
ok( defined poll_within($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm reaper' AND datname = 'postgres'}, 30),
	'the database has its reaper beside its worker');

# bob's claim, whose lease expires while alice's call sleeps, and bob's
# handler unit, enqueued meanwhile
my $claimed = $node->safe_psql('postgres', qq{
SELECT dlsm_enqueue('bob.handled', 'h1') IS NOT NULL;
SELECT dlsm_enqueue('bob.leased', 'b1') IS NOT NULL;
SELECT entity FROM dlsm_claim('bob.leased', lease => '$lease_s s');
}, extra_params => [ '-U', 'bob' ]);
like($claimed, qr/^b1$/m, "bob's row is claimed");

my $took = poll_within($node, 'postgres',
	q{SELECT status = 'new' FROM bob.leased WHERE entity = 'b1'}, 3 * $call_s);
my $after_expiry = defined $took ? $took - $lease_s : 999;
my $calls_done = $node->safe_psql('postgres', q{SELECT count(*) FROM alice.done});
note sprintf("bob's expired lease reaped %.1f s after its expiry, after %d of alice's calls",
	$after_expiry, $calls_done);
cmp_ok($after_expiry, '<=', $reap_limit,
	"bob's expired lease is reaped within $reap_limit s of its expiry "
	  . "(2 x step_timeout + reap_interval + $margin_s s margin), beside alice's $call_s s call");
is($calls_done, '0', "bob's lease is reaped while alice's first call still sleeps");

# bob's handler: right after alice's first call, before her second ends
ok( defined poll_within($node, 'postgres',
		q{SELECT count(*) = 1 FROM bob.done}, 3 * $call_s),
	"bob's handler runs");
my ($waited, $before) = split /\|/, $node->safe_psql('postgres', q{
SELECT round(extract(epoch FROM b.at - a.at)::numeric, 1),
       (SELECT count(*) FROM alice.done d WHERE d.at < b.at)
  FROM bob.done b, (SELECT min(at) AS at FROM alice.done) a});
note "bob's handler ran $waited s after alice's first call returned";
cmp_ok($waited, '<=', $handler_limit,
	"bob's handler runs within $handler_limit s of the end of alice's call under way "
	  . "(reap_interval + 2 x step_timeout + $margin_s s margin)");
is($before, '1', "bob's handler runs before alice's second call ends");

# DROP DATABASE stops a database's reaper with its worker
$node->safe_psql('postgres', 'CREATE DATABASE d2');
$node->safe_psql('d2', q{
CREATE EXTENSION dlsm;
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS 'SELECT';
SELECT dlsm_create_queue('q');
SELECT dlsm_set_handler('q', 'h');
});
ok( defined poll_within($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm reaper' AND datname = 'd2'}, 30),
	'database d2 has its reaper');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE d2');
is($ret, 0, 'DROP DATABASE stops the reaper too') or diag $err;

# bob claims a new row $e with a lease: the seconds from its expiry until
# it is reaped, or undef
sub bob_reaped
{
	my ($e) = @_;
	my $claimed = $node->safe_psql('postgres', qq{
SELECT dlsm_enqueue('bob.leased', '$e') AS id \\gset
SELECT entity FROM dlsm_claim('bob.leased', lease => '$lease_s s', after => :id - 1);
}, extra_params => [ '-U', 'bob' ]);
	is($claimed, $e, "bob claims $e");
	my $t = poll_within($node, 'postgres',
		qq{SELECT status = 'new' FROM bob.leased WHERE entity = '$e'}, 30);
	return defined $t ? $t - $lease_s : undef;
}

# No process free for a reaper (max_worker_processes 3: the launcher,
# the logical replication launcher, the worker): said once, and the worker
# reaps itself, between its handler calls, as before
$node->safe_psql('postgres', q{
CREATE FUNCTION alice.quick(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO alice.done (entity) VALUES (entity) $$;
SELECT dlsm_set_handler('alice.slow', 'alice.quick');
}, extra_params => [ '-U', 'alice' ]);
$node->append_conf('postgresql.conf', 'max_worker_processes = 3');
my $log_offset = -s $node->logfile;
$node->restart;
ok( $node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'postgres'}),
	'the worker runs with max_worker_processes = 3');
ok( defined poll_within($node, 'postgres', q{SELECT count(*) = 2 FROM alice.done}, 30),
	"alice's second unit is handled");
like(slurp_file($node->logfile, $log_offset),
	qr/LOG:  could not start dlsm reaper for database "postgres"\n.*DETAIL:  Its worker reaps between handler calls: a handler call delays the reaping of every queue there until it returns\.\n.*HINT:  You may need to increase "max_worker_processes"\./,
	'the log says that no process was free for the reaper');
$took = bob_reaped('b2');
ok(defined $took && $took <= $reap_limit,
	"without a reaper, the worker reaps bob's expired lease itself")
  or diag 'took ' . ($took // 'more than 30') . ' s after its expiry';
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'dlsm reaper'}),
	'0', 'no reaper runs');
my $said = () = slurp_file($node->logfile, $log_offset) =~ /could not start dlsm reaper/g;
is($said, 1, 'said once');

# A database's worker comes before another's reaper: with room for the
# launcher, the logical replication launcher, postgres's worker and its
# reaper only, the worker of a new database d3 finds no process; every
# reaper gives way, and d3's worker starts
$node->append_conf('postgresql.conf', 'max_worker_processes = 4');
$node->restart;
ok( defined poll_within($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm reaper' AND datname = 'postgres'}, 30),
	'with max_worker_processes = 4, postgres has its reaper');
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE DATABASE d3');
$node->safe_psql('d3', 'CREATE EXTENSION dlsm');
ok( defined poll_within($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'd3'}, 30),
	"d3's worker starts: postgres's reaper gave way");
like(slurp_file($node->logfile, $log_offset),
	qr/could not start dlsm worker for database "d3"/,
	'the first start of it found no process');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'dlsm reaper'}),
	'0', 'no reaper runs meanwhile');
$took = bob_reaped('b3');
ok(defined $took && $took <= $reap_limit,
	"postgres's worker reaps bob's expired lease itself")
  or diag 'took ' . ($took // 'more than 30') . ' s after its expiry';

$node->stop;
done_testing();
