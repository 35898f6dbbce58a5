# Copyright (c) 2026, dlsm developers
#
# A change of the registry that commits while a backend reads a queue's
# descriptor is not lost: the backend reads the descriptor again at its
# next use.  A descriptor is read from the registry under one snapshot,
# and the catalog lookups after it may take locks, which deliver the
# invalidations that came meanwhile; one that came for a queue whose
# descriptor was being read must leave the new descriptor stale, or the
# backend keeps what the snapshot saw for good.  In the worker that was a
# handler set just as the worker first read its queue: the worker kept
# the queue without a handler, and its units waited (048_stall_matrix
# failed so, about once in seven runs under load).
#
# The race is made certain here: the worker's first read of a queue in a
# schema it never saw waits for pg_namespace (locked by a session of the
# test) after its snapshot; the handler is set meanwhile.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# (the worker's wait for the lock must outlast the test's steps)
my $node = dlsm_node('descriptor', qq{
dlsm.reap_interval = 300
dlsm.lock_timeout = 60000
dlsm.step_timeout = 60000
});
ok(install_dlsm($node), 'the worker runs');

$node->safe_psql('postgres', q{
CREATE SCHEMA race;
CREATE TABLE race.done (entity text);
CREATE FUNCTION race.h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO race.done VALUES (entity) $$;
SELECT dlsm_create_queue('race.warm');
SELECT dlsm_set_handler('race.warm', 'race.h');
CREATE SCHEMA fresh;
});

# the owner's session: its catalog caches know schema fresh and what the
# calls below look up, so that it needs no lock on pg_namespace below
my $owner = $node->background_psql('postgres', timeout => 60);
$owner->query_safe(q{SELECT 'fresh'::regnamespace::oid::regnamespace,
	'race'::regnamespace::oid::regnamespace, 'race.h'::regproc;
SELECT dlsm_create_queue('race.warm2');
SELECT dlsm_set_handler('race.warm2', 'race.h');
SELECT dlsm_enqueue('race.warm2', 'w')});

my $locker = $node->background_psql('postgres', timeout => 60);
$locker->query_safe('BEGIN; LOCK TABLE pg_catalog.pg_namespace IN ACCESS EXCLUSIVE MODE');

# the worker reads the new queue's descriptor, and waits for pg_namespace
# for the name of its schema
$owner->query_safe(q{SELECT dlsm_create_queue('fresh.q')});
my $waiting = 0;
for (my $i = 0; $i < 300 && !$waiting; $i++)
{
	$waiting = $locker->query_safe(q{
SELECT count(*) FROM pg_catalog.pg_locks l
  JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
 WHERE NOT l.granted AND l.relation = 'pg_catalog.pg_namespace'::regclass
   AND a.backend_type = 'dlsm worker'}) =~ /1/;
	select(undef, undef, undef, 0.1) unless $waiting;
}
ok($waiting, "the worker's read of the new queue waits for pg_namespace");

# the handler is set meanwhile, and the lock goes
$owner->query_safe(q{SELECT dlsm_set_handler('fresh.q', 'race.h')});
$locker->query_safe('COMMIT');
$locker->quit;
$owner->query_safe(q{SELECT dlsm_enqueue('fresh.q', 'e1')});
$owner->quit;

ok( defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM fresh.q WHERE entity = 'e1'}, 20),
	'the worker runs the handler set while it read the queue')
  or diag $node->safe_psql('postgres',
	q{SELECT status || ' ' || attempts FROM fresh.q});
is($node->safe_psql('postgres', q{SELECT count(*) FROM race.done WHERE entity = 'e1'}),
	'1', 'the unit was handled once');

$node->stop;
done_testing();
