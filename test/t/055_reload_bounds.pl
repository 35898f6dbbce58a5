# Copyright (c) 2026, dlsm developers
#
# A reload that lowers dlsm.max_handler_timeout holds from the worker's
# next handler call, not from its next pass.  The worker was reading the
# configuration only between its passes, so a handler pass under way (or
# a reload that came as it began) ran every call of the pass under the old
# bound: a queue owner's handler could run for minutes after the server
# lowered the cap (TAP 042 caught it once under load).
#
# Made certain here: the worker is inside the first of two calls of one
# queue's handler (each sleeps 3 s; the pass may run for a minute) when
# the cap goes from 5 minutes to 1 s: the first call completes, under the
# bound it started with; the second is cut after a second.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('reload', qq{
dlsm.reap_interval = '60s'
dlsm.handler_batch = 10
});
ok(install_dlsm($node), 'the worker runs');
$node->safe_psql('postgres', q{
SELECT dlsm_create_queue('slow', max_attempts => 5);
CREATE FUNCTION sleep3(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3); END $$;
SELECT dlsm_set_handler('slow', 'sleep3');
BEGIN;
SELECT dlsm_enqueue('slow', 'first');
SELECT dlsm_enqueue('slow', 'second');
COMMIT;
});
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND wait_event = 'PgSleep'}, 30),
	'the worker is inside the first call');
$node->safe_psql('postgres', q{
ALTER SYSTEM SET dlsm.max_handler_timeout = 1000;
SELECT pg_reload_conf();
});
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) = 2 FROM slow WHERE status <> 'new' AND status <> 'in-progress' OR attempts > 0}, 30),
	'both calls ended');
is( $node->safe_psql('postgres',
		q{SELECT status FROM slow WHERE entity = 'first'}),
	'complete', 'the call under way kept the bound it started with');
is( $node->safe_psql('postgres', q{
SELECT attempts >= 1 AND detail ~ 'statement timeout' FROM slow WHERE entity = 'second'}),
	't', 'the next call of the same pass is cut after a second');
$node->stop;
done_testing();
