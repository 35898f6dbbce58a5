# Copyright (c) 2026, dlsm developers
#
# More databases than the default slots: 100 databases, 70 with dlsm and 30
# without, dlsm.max_databases = 128, a pool of 3 workers.  Every database
# with dlsm gets a pass (dlsm_worker_status shows one for each), and each
# database without dlsm is visited once: its worker's "the extension is not
# installed there" is in the log once, not at every launcher pass, however
# many passes the pool makes.  Restarted with dlsm.max_databases = 64, no
# database with dlsm loses its slot to another: the databases left without
# one are said once each in the log, naming the setting, and shown with
# state 'no slot' in dlsm_worker_status; the others are served.
# dlsm.max_databases takes effect at a restart only.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval);

my $node = dlsm_node('many', qq{
max_worker_processes = 8
dlsm.max_workers = 3
dlsm.reap_interval = 500
dlsm.max_databases = 128
dlsm.databases = 'postgres'
});

sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

wait_first_look($node);
is(sql('postgres', 'SHOW dlsm.max_databases'), '128', 'dlsm.max_databases');
my ($rc, $out, $err) =
  $node->psql('postgres', 'SET dlsm.max_databases = 256');
like(
	$err,
	qr/parameter "dlsm.max_databases" cannot be changed without restarting the server/,
	'dlsm.max_databases is set at server start');
sql('postgres', 'CREATE DATABASE tmpl');
sql('tmpl', 'CREATE EXTENSION dlsm');
sql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');

# m1 .. m70 with dlsm, p1 .. p30 without, interleaved in pg_database
my @with = map { "m$_" } 1 .. 70;
my @without = map { "p$_" } 1 .. 30;
my $start = [gettimeofday];
my ($nm, $np) = (0, 0);
for my $i (1 .. 100)
{
	if (grep { $i % 10 == $_ } 0, 3, 7)
	{
		sql('postgres', 'CREATE DATABASE p' . ++$np);
	}
	else
	{
		sql('postgres', 'CREATE DATABASE m' . ++$nm . ' TEMPLATE tmpl');
	}
}
note sprintf('100 databases created in %.1f s', tv_interval($start));
is( sql('postgres',
		q{SELECT count(*) FROM pg_database WHERE datname ~ '^[mp][0-9]+$'}),
	'100', '100 databases: 70 with dlsm, 30 without');

# the workers may now serve every database
my $offset = -s $node->logfile;
sql('postgres', q{ALTER SYSTEM SET dlsm.databases = ''});
sql('postgres', 'SELECT pg_reload_conf()');

my $served = q{
SELECT count(*) = 70 FROM dlsm_worker_status
 WHERE database ~ '^m[0-9]+$' AND last_reap_at IS NOT NULL};
my $took = poll_within($node, 'm1', $served, 90);
ok(defined $took, 'every one of the 70 databases with dlsm got a pass');
note 'served: ' . sql('m1', q{
SELECT count(*) FILTER (WHERE last_reap_at IS NOT NULL) || ' of ' || count(*)
  FROM dlsm_worker_status WHERE database ~ '^m[0-9]+$'});
note sprintf('all served after %.1f s', $took) if defined $took;

# several launcher passes more: each database with dlsm is visited again
# (a turn every 0.5 s, 3 workers: every few seconds), those without are not
sleep 10;
my $log = slurp_file($node->logfile, $offset);
my %stops;
$stops{$1}++
  while $log =~
  /dlsm worker for database "([mp][0-9]+)" stops\n.*DETAIL:  The extension dlsm is not installed in that database/g;
my @never = grep { !$stops{$_} } @without;
my @again = grep { ($stops{$_} // 0) > 1 } @without;
my $starts = 0;
$starts += $stops{$_} // 0 for @without;
note "worker starts in the 30 databases without dlsm: $starts";
is(scalar(@never), 0, 'each database without dlsm was visited')
  or diag "never visited: @never";
is(scalar(@again), 0,
	'no database without dlsm was visited again (its mark was kept)')
  or diag 'visited again: '
  . join(', ', map { "$_ x$stops{$_}" } @again);
is(scalar(grep { $stops{$_} } @with), 0,
	'no database with dlsm was said to be without it');
unlike($log, qr/dlsm cannot serve database/,
	'no database was left without a slot');

# a CREATE EXTENSION in a database marked without dlsm is seen at once
sql('p1', 'CREATE EXTENSION dlsm');
ok( defined poll_within($node, 'p1', q{
SELECT count(*) = 1 FROM dlsm_worker_status
 WHERE database = 'p1' AND last_reap_at IS NOT NULL}, 60),
	'p1, whose extension came later, is served');
sql('p1', 'DROP EXTENSION dlsm');

# fewer slots than databases with dlsm
$node->append_conf('postgresql.conf', "dlsm.max_databases = 64\n");
$node->restart;
$offset = 0;
my $slotless = q{
SELECT count(*) FROM dlsm_worker_status
 WHERE database ~ '^m[0-9]+$' AND state = 'no slot'};
ok( defined poll_within($node, 'm1', qq{
SELECT ($slotless) > 0 AND count(*) + ($slotless) = 70
  FROM dlsm_worker_status
 WHERE database ~ '^m[0-9]+\$' AND last_reap_at IS NOT NULL}, 90),
	'with 64 slots the databases with dlsm that have one are served, the others shown without one'
);
sleep 6;
my $n_slotless = sql('m1', $slotless);
note "databases with dlsm left without a slot: $n_slotless";
$log = slurp_file($node->logfile);
my %said;
$said{$1}++
  while $log =~
  /dlsm cannot serve database "([mp][0-9]+)"\n.*DETAIL:  Every one of dlsm's 64 slots is taken/g;
ok(scalar(keys %said) >= $n_slotless,
	'each database left without a slot is said in the log');
is(scalar(grep { $said{$_} > 1 } keys %said), 0, '... once');
like($log, qr/increase "dlsm\.max_databases"/, 'the hint names the setting');
is( sql('m1', qq{
SELECT count(*) FROM dlsm_worker_status
 WHERE database ~ '^m[0-9]+\$' AND last_reap_at IS NOT NULL}),
	70 - $n_slotless, 'no database with dlsm lost its slot to another');

$node->stop;
done_testing();
