# Copyright (c) 2026, dlsm developers
#
# PostgreSQL 17 added transaction_timeout, which ends the whole process
# (FATAL) when it fires.  A database's default must not end the worker's
# long steps: the worker sets it to 0 as an override, which such defaults
# cannot change.  A queue owner's code can still set it for its own
# transaction (SET LOCAL beats any override) and end the worker: that
# owner's queues are then shunned, as when a step goes on after its cancel,
# so the owner cannot kill the worker again and again while other owners
# wait (before, the worker died, a new one came back to the same queue, and
# no shun followed).  15 and 16 have no such setting: skipped there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('txtimeout', "dlsm.reap_interval = 200\n");
if ($node->pg_version < 17)
{
	$node->stop;
	plan skip_all => 'transaction_timeout is new in PostgreSQL 17';
}
ok(install_dlsm($node), 'the worker runs');
my $worker_q = q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm worker'};
my $pid = $node->safe_psql('postgres', $worker_q);
$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO mallory, alice;
SET ROLE mallory;
SELECT dlsm_create_queue('mq');
CREATE FUNCTION kill_worker(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_catalog.set_config('transaction_timeout', '200ms', true);
	PERFORM pg_sleep(0.6);
END $$;
SELECT dlsm_set_handler('mq', 'kill_worker');
SET ROLE alice;
SELECT dlsm_create_queue('aq');
CREATE TABLE done (entity text);
CREATE FUNCTION slow(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(0.6);
	INSERT INTO done VALUES (entity);
END $$;
SELECT dlsm_set_handler('aq', 'slow');
RESET ROLE;
-- a worker connecting from now on has this default
ALTER DATABASE postgres SET transaction_timeout = '300ms';
});

# mallory's handler ends the worker; her queues are shunned
$node->safe_psql('postgres', q{SELECT dlsm_enqueue('mq', 'm1')});
ok( $node->wait_for_log(
		qr/dlsm worker leaves [^\n]* alone until [^\n]*\n.*DETAIL:  A step on queue "mq" ended the worker with a FATAL error/),
	'the owner whose code ended the worker is shunned');
ok( $node->poll_query_until('postgres',
		qq{SELECT count(*) = 1 FROM pg_stat_activity
		    WHERE backend_type = 'dlsm worker' AND pid <> $pid}),
	'a new worker runs');

# the new worker has the database's default of 300 ms, overridden: alice's
# handler of 0.6 s completes
$node->safe_psql('postgres', q{SELECT dlsm_enqueue('aq', 'a1')});
ok( defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM aq WHERE entity = 'a1'}, 20),
	'another owner\'s handler longer than the database\'s transaction_timeout completes');
is($node->safe_psql('postgres', 'SELECT count(*) FROM done'), '1',
	'its work is done once');
is( $node->safe_psql('postgres', q{SELECT status FROM mq WHERE entity = 'm1'}),
	'new', 'mallory\'s request waits while her queues are shunned');
my $log = slurp_file($node->logfile);
my $fatals = () = $log =~ /terminating connection due to transaction timeout/g;
is($fatals, 1, 'the worker was ended once, not again and again');
$node->stop;
done_testing();
