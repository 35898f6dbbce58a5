# Copyright (c) 2026, dlsm developers
#
# dlsm_proxy 1.1 (issue 22): the router's dlsm_enqueue passes group_key,
# dedup_key and dedup_window to the entity's shard, and
# dlsm_enqueue_deduplicated() on the router says whether the session's
# last enqueue through it returned an existing request; an enqueue without
# keys calls the shard as 1.0 did; dlsm_requeue_on and dlsm_cancel_on reach
# the node that holds the requests.  A router updated from 1.0 (through
# 1.1) has the same functions, bodies and settings as one installed at the
# default version (1.2).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my @shards = map { shard_node("keys_shard$_", $_) } 1 .. 2;
my $router = router_node('keys_router');
like(configure_router($router, 4, @shards), qr/^1\|t\|.*\n2\|t\|/,
	'the router reaches its two shards');
sub rsql { return $router->safe_psql('postgres', $_[0]); }
is(rsql(q{SELECT count(*) FROM dlsm_create_queue('kq')}), '2',
	'queue kq on both shards');
is(rsql(q{SELECT extversion FROM pg_extension WHERE extname = 'dlsm_proxy'}),
	'1.2', 'the router is at 1.2');

# an entity of node 2
my $entity = rsql(q{SELECT 'e' || i FROM generate_series(1, 100) i
					 WHERE dlsm_proxy_node_of('e' || i) = 2 LIMIT 1});

is(rsql(q{SELECT dlsm_enqueue_deduplicated() IS NULL}), 't',
	'dlsm_enqueue_deduplicated() is NULL before the first enqueue');
my ($id1, $dedup1, $id2, $dedup2) = split /\|/, rsql(qq{
	SELECT dlsm_enqueue('kq', '$entity', 'job', group_key => 'tenant-a',
						dedup_key => 'send-1'), dlsm_enqueue_deduplicated(),
		   dlsm_enqueue('kq', '$entity', 'job', group_key => 'tenant-a',
						dedup_key => 'send-1'), dlsm_enqueue_deduplicated()});
ok($id1 ne '' && $id1 eq $id2, "one dedup key, one request ($id1, $id2)");
is("$dedup1|$dedup2", 'f|t',
	'the first enqueue added it, the second found it');
is( $shards[1]->safe_psql('postgres',
		q{SELECT count(*) || '|' || min(group_key) || '|' || min(dedup_key)
		  FROM kq}),
	'1|tenant-a|send-1',
	'the shard of the entity holds one request, with its group and dedup keys');
is($shards[0]->safe_psql('postgres', q{SELECT count(*) FROM kq}), '0',
	'the other shard holds none');

my ($id3, $dedup3) = split /\|/, rsql(qq{
	SELECT dlsm_enqueue('kq', '$entity', 'job'), dlsm_enqueue_deduplicated()});
ok($id3 > $id1, 'an enqueue without keys adds a request');
is($dedup3, 'f', 'and says it was not deduplicated');

# the group's limit, set on the shard, holds for claims through the router
my $other = rsql(q{SELECT 'f' || i FROM generate_series(1, 100) i
					WHERE dlsm_proxy_node_of('f' || i) = 2 LIMIT 1});
$shards[1]->safe_psql('postgres',
	q{SELECT dlsm_set_limit('kq', 'tenant-a', concurrency => 1)});
rsql(qq{SELECT dlsm_enqueue('kq', '$other', 'job', group_key => 'tenant-a')});
is( rsql(q{SELECT string_agg(entity, ',') FROM dlsm_claim_on(2, 'kq',
		   units => 10, lease => '1 minute')}),
	$entity,
	'a claim through the router takes one unit of group tenant-a (at most 1); the request without a group waits behind its entity');

# dead letters through the router, on the node that holds them: a
# request failed, requeued, then cancelled
my $dl = rsql(qq{SELECT dlsm_enqueue('kq', 'dead-$entity', 'job')});
my $dl_node = rsql(qq{SELECT dlsm_proxy_node_of('dead-$entity')});
rsql(qq{SELECT dlsm_settle('kq', process_id, 'error', 'it broke')
		FROM dlsm_claim_on($dl_node, 'kq', lease => '1 minute', units => 10)
		WHERE id = $dl});
is(rsql(qq{SELECT dlsm_requeue_on($dl_node, 'kq', ARRAY[$dl])}), '1',
	'dlsm_requeue_on sends the failed request back to new on its node');
is(rsql(qq{SELECT dlsm_cancel_on($dl_node, 'kq', ARRAY[$dl])}), '1',
	'dlsm_cancel_on cancels it there');
is( $shards[$dl_node - 1]->safe_psql('postgres',
		qq{SELECT status || '|' || (detail LIKE '%cancelled%') FROM kq WHERE id = $dl}),
	'error|true', 'the request ends in error, its detail naming the cancel');

# a bad key argument is the shard's error, named with its node
my ($ret, $out, $err) = $router->psql('postgres',
	qq{SELECT dlsm_enqueue('kq', '$entity', dedup_key => 'k',
						   dedup_window => '-1 second')});
like($err, qr/ERROR:  dedup_window must not be negative/,
	'a negative dedup_window is refused with dlsm\'s message');
like($err, qr/Raised on node 2 of dlsm_proxy/, 'by the node of the entity');

# an update from 1.0 gives the functions of a fresh 1.2
my $fresh = rsql(q{
	SELECT string_agg(p.proname || '(' || pg_get_function_arguments(p.oid) || ')', E'\n'
					  ORDER BY p.proname, pg_get_function_arguments(p.oid))
	  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
		   AND d.objid = p.oid AND d.deptype = 'e'
	 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm_proxy')});
$router->safe_psql('postgres', q{CREATE DATABASE upd});
$router->safe_psql('upd', q{CREATE EXTENSION dlsm_proxy VERSION '1.0' CASCADE;
							 ALTER EXTENSION dlsm_proxy UPDATE});
my $updated = $router->safe_psql('upd', q{
	SELECT string_agg(p.proname || '(' || pg_get_function_arguments(p.oid) || ')', E'\n'
					  ORDER BY p.proname, pg_get_function_arguments(p.oid))
	  FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
		   AND d.objid = p.oid AND d.deptype = 'e'
	 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm_proxy')});
is($updated, $fresh, 'dlsm_proxy updated from 1.0 has the functions of 1.2');
# and their bodies, languages and settings: a function 1.1 or 1.2 changed
# is replaced by the update too
my $bodies = q{
	SELECT string_agg(p.proname || ' ' || md5(p.prosrc) || ' ' || l.lanname
					  || ' ' || p.provolatile::text || ' ' || coalesce(p.proconfig::text, '-'),
					  E'\n' ORDER BY p.proname, pg_get_function_arguments(p.oid))
	  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
		   JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
		   AND d.objid = p.oid AND d.deptype = 'e'
	 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm_proxy')};
is($router->safe_psql('upd', $bodies), rsql($bodies),
	'dlsm_proxy updated from 1.0 has the function bodies of 1.2');
is( $router->safe_psql('upd',
		q{SELECT dlsm_proxy_conninfo_keys('postgresql://u:pa#ss@h/db')}),
	'{user,password,host,dbname}', 'the updated router reads a URI password holding # as libpq does');

$_->stop for ($router, @shards);
done_testing();
