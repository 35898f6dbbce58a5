# Copyright (c) 2026, dlsm developers
#
# A shard's error, through the router, arrives as dlsm's own (issue 24,
# points 10 and 5): its message without PL/Proxy's wrapping
# ("dlsm_proxy_settle_on(6): [postgres] REMOTE ERROR: ..."), its SQLSTATE,
# its detail and hint without "Remote detail: " and "Remote hint: ", and
# the node that raised it named in the detail, for each call routed to one
# node: dlsm_enqueue, dlsm_claim, dlsm_settle, dlsm_heartbeat,
# dlsm_settle_many, dlsm_try_lock, dlsm_unlock, dlsm_refresh_lock.  The
# calls on every node (dlsm_create_queue, dlsm_drop_queue, dlsm_set_handler,
# dlsm_reap) name the node that failed and the nodes they were done on
# already; dlsm_set_handler changes no node when the function is missing on
# one (it was set on shard 1 before, with an error for shard 2).  A gathered
# view (dlsm_queue_stats) failing on one node names it, and so does
# dlsm_proxy_remote (dlsm_proxy_move's dblink connection).  A move of
# one partition says "1 partition" and "1 create copied".
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my @shards = map { shard_node("err_shard$_", $_) } 1 .. 2;
my $router = router_node('err_router');
like(configure_router($router, 4, @shards), qr/^1\|t\|.*\n2\|t\|/,
	'the router reaches its two shards');
is($router->safe_psql('postgres', q{SELECT count(*) FROM dlsm_create_queue('q')}), '2',
	'queue q on both shards');

# An entity and a lock name of node 2
my ($entity, $lock) = split /\|/, $router->safe_psql('postgres', q{
	SELECT (SELECT 'e' || i FROM generate_series(1, 100) i
			 WHERE dlsm_proxy_node_of('e' || i) = 2 LIMIT 1),
		   (SELECT 'l' || i FROM generate_series(1, 100) i
			 WHERE dlsm_proxy_node_of('l' || i) = 2 LIMIT 1)});
# a process id of node 2, held nowhere
my $pid = '00000000-0000-4000-8000-000000000002';

# (the call, SQLSTATE, dlsm's message, the detail, the hint or undef)
my @cases = (
	[ qq{SELECT dlsm_enqueue('nosuch', '$entity')},
	  '42P01', 'relation "nosuch" does not exist', 'Raised on node 2 of dlsm_proxy.' ],
	[ q{SELECT * FROM dlsm_claim_on(2, 'nosuch', lease => '1 minute')},
	  '42P01', 'relation "nosuch" does not exist', 'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT dlsm_settle('q', '$pid')},
	  '55000', qq{process id $pid holds no request in progress in queue "q"},
	  'Raised on node 2 of dlsm_proxy.',
	  'The claim was settled already, or it was lost: its lease expired and its requests were reaped or claimed again.' ],
	[ qq{SELECT dlsm_settle('q', '$pid', 'maybe')},
	  '22023', 'unrecognized outcome "maybe"', 'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT dlsm_heartbeat('q', '$pid')},
	  '55000', qq{process id $pid holds no request in progress in queue "q"},
	  'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT * FROM dlsm_settle_many('q', ARRAY['$pid'::uuid], 'maybe')},
	  '22023', 'unrecognized outcome "maybe"', 'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT dlsm_try_lock('$lock', lease => '-1 s')},
	  '22023', 'lease must be greater than zero', 'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT dlsm_unlock('$lock', NULL)},
	  '22004', 'argument "fence" must not be null', 'Raised on node 2 of dlsm_proxy.' ],
	[ qq{SELECT dlsm_refresh_lock('$lock', 1, '-1 s')},
	  '22023', 'lease must be greater than zero', 'Raised on node 2 of dlsm_proxy.' ],
	# calls on every node
	[ q{SELECT dlsm_set_handler('q', 'only_one')},
	  '42883', 'function "only_one" does not exist',
	  'Raised on node 2 of dlsm_proxy; no node was changed.' ],
	[ q{SELECT dlsm_create_queue('taken')},
	  '42P07', 'relation "taken" already exists',
	  'Raised on node 2 of dlsm_proxy. Done already on node 1, and not undone there.' ],
	[ q{SELECT dlsm_drop_queue('nosuch')},
	  '42P01', 'relation "nosuch" does not exist', 'Raised on node 1 of dlsm_proxy.' ],
	[ q{SELECT dlsm_reap('nosuch')},
	  '42P01', 'relation "nosuch" does not exist', 'Raised on node 1 of dlsm_proxy.' ],
);
# a handler on shard 1 only; a table named taken on shard 2 only
$shards[0]->safe_psql('postgres', q{CREATE FUNCTION only_one(text, text, bigint[], jsonb[])
	RETURNS void LANGUAGE sql AS ''});
$shards[1]->safe_psql('postgres', q{CREATE TABLE taken (x int)});
for my $c (@cases)
{
	my ($call, $state, $msg, $detail, $hint) = @$c;
	my ($ret, $out, $err) = $router->psql('postgres',
		"\\set VERBOSITY verbose\n$call");
	my ($got_state, $got_msg) = $err =~ /ERROR:  (\w{5}): (.*)$/m;
	my ($got_detail) = $err =~ /^DETAIL:  (.*)$/m;
	my ($got_hint) = $err =~ /^HINT:  (.*)$/m;
	is($got_state // '', $state, "$call: SQLSTATE $state") or diag $err;
	is($got_msg // '', $msg, "$call: dlsm's message, unwrapped");
	unlike($err, qr/REMOTE|Remote (detail|hint)/, "$call: nothing of PL/Proxy's wrapping");
	is($got_detail // '', $detail, "$call: the detail names the node");
	is($got_hint, $hint, "$call: the hint, unwrapped") if defined $hint;
}
is($shards[0]->safe_psql('postgres',
	q{SELECT coalesce(handler, 'none') FROM dlsm_queues WHERE queue = 'q'::regclass}),
	'none', 'dlsm_set_handler with the function missing on node 2 left node 1 unchanged');

# a gathered view that fails on one node names it: watcher may read the
# views on node 1 (pg_monitor there), not on node 2
$router->safe_psql('postgres', q{CREATE ROLE watcher LOGIN IN ROLE pg_monitor;
	GRANT USAGE ON FOREIGN SERVER dlsm_shards TO watcher});
$shards[0]->safe_psql('postgres', q{CREATE ROLE watcher LOGIN IN ROLE pg_monitor});
$shards[1]->safe_psql('postgres', q{CREATE ROLE watcher LOGIN});
{
	my ($ret, $out, $err) = $router->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT count(*) FROM dlsm_queue_stats",
		extra_params => [ '-U', 'watcher' ]);
	like($err, qr/ERROR:  42501: permission denied for view dlsm_queue_stats$/m,
		'dlsm_queue_stats through the router: node 2\'s own error, unwrapped') or diag $err;
	like($err, qr/^DETAIL:  Raised on node 2 of dlsm_proxy\.$/m, 'naming node 2');
}

# dlsm_proxy_remote, the dblink connection of dlsm_proxy_move, names the node
{
	my ($ret, $out, $err) = $router->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT dlsm_proxy_remote(2, 'SELECT (1/0)::text')");
	like($err, qr/ERROR:  22012: division by zero$/m,
		'dlsm_proxy_remote: the node\'s error') or diag $err;
	like($err, qr/^DETAIL:  Raised on node 2 of dlsm_proxy\.$/m, 'naming node 2');
}

# one partition moved: its notices say "1 partition", "0 creates", and a
# create moved with its partition "1 create"
$shards[0]->safe_psql('postgres', q{SELECT dlsm_drop_queue('taken', true)});
my $part = $router->safe_psql('postgres',
	qq{SELECT dlsm_proxy_partition_of('$entity', 4)});
my $home = $router->safe_psql('postgres', qq{SELECT dlsm_proxy_node_of('$entity')});
$router->safe_psql('postgres', qq{SELECT dlsm_enqueue('q', '$entity')});
is($router->safe_psql('postgres', qq{SELECT dlsm_settle('q', process_id)
	FROM dlsm_claim_on($home, 'q', lease => '1 min')}), '1',
	"the entity's create is complete: nothing left to drain");
my $to = 3 - $home;
my ($ret, $out, $err) = $router->psql('postgres',
	qq{CALL dlsm_proxy_move('{$part}', $to, '10 s')});
is($ret, 0, "partition $part moved from node $home to node $to") or diag $err;
like($err, qr/NOTICE:  moving 1 partition from node \{$home\} to node $to$/m,
	'the move says "1 partition"');
like($err, qr/NOTICE:  moved 1 partition to node $to: fences there above \d+, 1 create copied$/m,
	'and "1 create copied"') or diag $err;

done_testing();
