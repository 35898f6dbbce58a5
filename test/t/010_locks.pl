# Copyright (c) 2026, dlsm developers
#
# Named locks across restarts: fences keep rising after a clean restart and
# after a crash, a lease survives a restart, and the worker deletes expired
# leases by itself.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('locks', qq{
dlsm.reap_interval = 200
restart_after_crash = on
});
$node->safe_psql('postgres', 'CREATE EXTENSION dlsm');

# a few grants in both scopes, the last fence remembered
my $before = $node->safe_psql(
	'postgres', q{
SELECT dlsm_try_lock('tx/a');
SELECT dlsm_try_lock('tx/b');
SELECT dlsm_try_lock('kept', lease => '1 hour');
SELECT max(fence) FROM dlsm_leases;
});
$before = (split /\n/, $before)[-1];
ok($before > 0, "fences granted before the restart (last $before)");

$node->restart;
my $after = $node->safe_psql('postgres', q{SELECT dlsm_try_lock('tx/a')});
ok($after > $before,
	"a fence after a clean restart is higher ($after > $before)");
is( $node->safe_psql(
		'postgres',
		q{SELECT dlsm_try_lock('kept') IS NULL AND count(*) = 1
		  FROM dlsm_leases WHERE name = 'kept'}),
	't',
	'a lease survives the restart and still holds its name');

# a crash (immediate stop): fences still rise
my $last = $node->safe_psql('postgres',
	q{SELECT dlsm_try_lock('tx/c'); SELECT dlsm_try_lock('tx/d')});
$last = (split /\n/, $last)[-1];
$node->stop('immediate');
$node->start;
my $after_crash = $node->safe_psql('postgres', q{SELECT dlsm_try_lock('tx/a')});
ok($after_crash > $last,
	"a fence after a crash is higher ($after_crash > $last)");

# the worker deletes expired leases: no settle, no call, nothing by hand
$node->safe_psql('postgres',
	q{SELECT dlsm_try_lock('short/' || n, lease => '200 ms') FROM generate_series(1, 5) n});
is($node->safe_psql('postgres', q{SELECT count(*) FROM dlsm_leases WHERE name LIKE 'short/%'}),
	'5', 'five short leases held');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 0 FROM dlsm_leases WHERE name LIKE 'short/%'}),
	'the worker deleted the expired leases');
is($node->safe_psql('postgres', q{SELECT count(*) FROM dlsm_leases WHERE name = 'kept'}),
	'1', 'the live lease is left alone');
ok( $node->safe_psql('postgres',
		q{SELECT deleted >= 5 FROM dlsm_worker_status WHERE database = 'postgres'}) eq 't',
	'the worker counted them');

$node->stop;
done_testing();
