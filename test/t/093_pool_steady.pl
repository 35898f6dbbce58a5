# Copyright (c) 2026, dlsm developers
#
# With no more databases with dlsm than dlsm.max_workers, each keeps its
# own long-lived worker: a database without dlsm does not count, also when
# another database drops and creates the extension again (its poke must
# not make the launcher count the databases without dlsm, start taking
# turns, and send the long-lived workers away).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('steady', qq{
dlsm.reap_interval = 200
dlsm.max_workers = 2
});
ok(install_dlsm($node), 'the worker of postgres runs');
$node->safe_psql('postgres', 'CREATE DATABASE plain');
$node->safe_psql('postgres', 'CREATE DATABASE a');
$node->safe_psql('a', 'CREATE EXTENSION dlsm');
$node->wait_for_log(
	qr/dlsm worker for database "plain" stops\n.*DETAIL:  The extension dlsm is not installed in that database/);
ok( $node->poll_query_until('a', q{
SELECT count(*) = 2 FROM dlsm_worker_status
 WHERE database IN ('postgres', 'a') AND state = 'serving'}),
	'postgres and a have a worker each; plain, without dlsm, none');

my $pid = $node->safe_psql('a',
	q{SELECT pid FROM dlsm_worker_status WHERE database = 'postgres'});
my $offset = -s $node->logfile;

# a drops the extension and creates it again
$node->safe_psql('a', 'DROP EXTENSION dlsm');
$node->wait_for_log(
	qr/dlsm worker for database "a" stops\n.*DETAIL:  The extension dlsm is not installed in that database/,
	$offset);
$node->safe_psql('a', 'CREATE EXTENSION dlsm');
ok( $node->poll_query_until('a', q{
SELECT count(*) = 1 FROM dlsm_worker_status
 WHERE database = 'a' AND state = 'serving'}),
	'a has its worker again');
sleep 2;
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/dlsm workers take turns/,
	'the workers never took turns: plain still does not count');
is( $node->safe_psql('a',
		q{SELECT pid FROM dlsm_worker_status WHERE database = 'postgres'}),
	$pid, 'the worker of postgres stayed');

$node->stop;
done_testing();
