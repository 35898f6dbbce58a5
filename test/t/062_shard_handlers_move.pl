# Copyright (c) 2026, dlsm developers
#
# Per-shard consumers and resharding behind the dlsm_proxy router.
#
# Handlers and capture keep working per shard: a handler set through the
# router runs on every shard, each shard's worker handling the entities of
# that shard only; a table captured on each shard feeds that shard's queue.
#
# Resharding: a third node is added and half of the partitions of the two
# others are moved to it (CALL dlsm_proxy_move).  A move is refused, and
# changes nothing, when the target lacks a queue of the sources or when the
# partitions do not drain in time.  After the move: the moved entities'
# new requests go to node 3 and are handled there; fences keep rising per
# entity across the move; a moved entity keeps its create (a second create
# is refused, 23505) and the updates of an entity whose create failed fail
# there too.  With a dlsm that has dlsm_raise_fence, raising beyond the
# timeline's fence space is refused with 22023.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my @shards = map { shard_node("shard$_", $_) } 1 .. 3;
my $router = router_node('router');
configure_router($router, 16, @shards[ 0 .. 1 ]);

sub rsql { return $router->safe_psql('postgres', $_[0]); }

sub rtry
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $router->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($ret, $out, $err);
}

# What every shard needs for the handlers: functions and result tables.
my $shard_setup = q{
CREATE TABLE handled (entity text, kind text, ids bigint[], fence bigint,
					  node text DEFAULT current_setting('cluster_name'),
					  at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION handle(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF entity LIKE 'bad%' AND kind = 'create' THEN
		RAISE EXCEPTION 'cannot create %', entity;
	END IF;
	INSERT INTO public.handled (entity, kind, ids, fence)
	SELECT entity, kind, ids, (SELECT max(q.fence) FROM public.hq q WHERE q.id = ANY (ids));
END $$;
CREATE TABLE orders (id int PRIMARY KEY, customer text NOT NULL, amount int);
CREATE TABLE captured (customer text, ops text[], node text DEFAULT current_setting('cluster_name'));
CREATE FUNCTION handle_cq(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$
	INSERT INTO public.captured (customer, ops)
	SELECT entity, array_agg(p->>'op') FROM unnest(payloads) p
$$;
};
$_->safe_psql('postgres', $shard_setup) for @shards;

rsql(q{SELECT dlsm_create_queue('hq', max_attempts => 1)});
rsql(q{SELECT dlsm_create_queue('cq')});
rsql(q{SELECT dlsm_create_queue('late')});
is(rsql(q{SELECT count(*) FROM dlsm_set_handler('hq', 'handle')}), '2',
	'dlsm_set_handler through the router sets the handler on both nodes');
rsql(q{SELECT dlsm_set_handler('cq', 'handle_cq')});

# ---------------------------------------------------------------------
# Handlers: each shard's worker handles its own entities
# ---------------------------------------------------------------------
rsql(q{
SELECT dlsm_enqueue('hq', e, 'create') FROM (
	SELECT 'e' || g AS e FROM generate_series(1, 200) g
	UNION ALL SELECT 'bad' || g FROM generate_series(1, 10) g) s;
SELECT dlsm_enqueue('hq', e, 'update', jsonb_build_object('n', k)) FROM (
	SELECT 'e' || g AS e FROM generate_series(1, 200) g
	UNION ALL SELECT 'bad' || g FROM generate_series(1, 10) g) s, generate_series(1, 2) k;
});
ok(poll_within($router, 'postgres',
		q{SELECT sum(new + in_progress) = 0 FROM dlsm_queue_stats WHERE queue = 'hq'}, 60),
	'the handlers of both shards handled every request');

sub gather
{
	my ($table, $cols) = @_;
	# the columns named, not *: a queue has more columns than it reads
	my $names = join(', ', map { (split ' ', $_)[0] } split /,\s*/, $cols);
	return rsql(qq{
DROP TABLE IF EXISTS all_$table;
CREATE TABLE all_$table AS
SELECT n.node_id AS node_id, t.*
  FROM dlsm_proxy_nodes n,
	   LATERAL dblink(n.connstr, 'SELECT $names FROM $table') AS t($cols);
});
}
gather('handled', 'entity text, kind text, ids bigint[], fence bigint, node text, at timestamptz');
is(rsql(q{SELECT string_agg(node || ':' || n, ' ' ORDER BY node)
		   FROM (SELECT node, count(DISTINCT entity) AS n FROM all_handled GROUP BY node) s}),
	rsql(q{SELECT string_agg('shard' || n || ':' || c, ' ' ORDER BY n)
		   FROM (SELECT dlsm_proxy_node_of('e' || g) AS n, count(*) AS c
				   FROM generate_series(1, 200) g GROUP BY 1) s}),
	'the handler ran on each shard, for the entities of that shard');
is(rsql(q{SELECT count(*) FROM all_handled
		   WHERE node <> 'shard' || dlsm_proxy_node_of(entity) OR node_id <> dlsm_proxy_node_of(entity)}),
	'0', 'no entity was handled on another shard than its own');
is(rsql(q{SELECT count(*) || ' ' || count(DISTINCT (node_id, id))
		   FROM all_handled, unnest(ids) id WHERE entity LIKE 'e%'}), '600 600',
	'200 creates and 400 updates, each handled once');
is(rsql(q{SELECT string_agg(shard || ':' || (handled > 0), ' ' ORDER BY shard) FROM dlsm_worker_status}),
	'shard1/postgres:true shard2/postgres:true', 'dlsm_worker_status through the router: both workers handled');

# Capture: orders written on the shard of their customer are captured into
# that shard's queue and handled there.
my %by_node;
for my $c (1 .. 40)
{
	my $n = rsql(qq{SELECT dlsm_proxy_node_of('c$c')});
	push @{ $by_node{$n} }, $c;
}
for my $n (1, 2)
{
	my $s = $shards[ $n - 1 ];
	$s->safe_psql('postgres', q{SELECT dlsm_capture('orders', 'cq', entity_column => 'customer')});
	my $values = join(', ', map { "($_, 'c$_', $_)" } @{ $by_node{$n} });
	$s->safe_psql('postgres',
		"BEGIN; INSERT INTO orders VALUES $values; UPDATE orders SET amount = amount + 1; COMMIT;");
}
ok(poll_within($router, 'postgres',
		q{SELECT sum(new + in_progress) = 0 AND sum(complete) = 80 FROM dlsm_queue_stats WHERE queue = 'cq'}, 60),
	'the changes captured on each shard are handled by that shard');
gather('captured', 'customer text, ops text[], node text');
is(rsql(q{SELECT count(*) FILTER (WHERE node = 'shard' || dlsm_proxy_node_of(customer)
								  AND ops = '{INSERT,UPDATE}') || ' of ' || count(*) FROM all_captured}),
	'40 of 40', 'each customer\'s INSERT and UPDATE handled as one unit, on its own shard');

# ---------------------------------------------------------------------
# Resharding: node 3 joins, half of the partitions move to it
# ---------------------------------------------------------------------
$shards[2]->safe_psql('postgres', q{
SELECT dlsm_create_queue('hq', max_attempts => 1);
SELECT dlsm_create_queue('cq');
SELECT dlsm_set_handler('hq', 'handle');
});
is(rsql(q{SELECT dlsm_proxy_add_node('} . shard_connstr($shards[2]) . q{')}), '3', 'node 3 added');
is(rsql(q{SELECT count(*) FROM dlsm_proxy_partitions WHERE node_id = 3}), '0', 'holding no partition yet');

my $fences_before = rsql(q{SELECT string_agg(node_id || ':' || f, ' ' ORDER BY node_id) FROM (
	SELECT node_id, max(fence) AS f FROM all_handled GROUP BY node_id) s});
my $max_before = rsql(q{SELECT max(fence) FROM all_handled});
my $parts = rsql(q{SELECT array_agg(partition ORDER BY partition) FROM dlsm_proxy_partitions
				   WHERE partition % 4 IN (0, 1)});
my $moved_entity = rsql(qq{SELECT min(e) FROM (SELECT 'e' || g AS e FROM generate_series(1, 200) g) s
						   WHERE dlsm_proxy_partition_of(e, 16) = ANY ('$parts')});

# refused: node 3 has no queue "late"
my ($ret, $out, $err) = rtry(qq{CALL dlsm_proxy_move('$parts', 3, '30 s')});
like($err, qr/dlsm_proxy_move: nothing moved: queue late of node \d is not a queue on node 3/,
	'a move to a node without a queue of the sources is refused');
is(rsql(q{SELECT count(*) FILTER (WHERE node_id = 3) || '/' || count(moving_to) FROM dlsm_proxy_partitions}),
	'0/0', 'and changes nothing: no partition on node 3, none moving');
ok(rsql(qq{SELECT dlsm_enqueue('hq', '$moved_entity', 'update', '{"n": 3}') > 0}),
	'the entities stay where they were and take work');
$shards[2]->safe_psql('postgres', q{SELECT dlsm_create_queue('late')});

# refused: a claim with a long lease does not drain in time
my $held = rsql(qq{SELECT min(e) FROM (SELECT 'x' || g AS e FROM generate_series(1, 100) g) s
				   WHERE dlsm_proxy_partition_of(e, 16) = ANY ('$parts')});
rsql(qq{SELECT dlsm_enqueue('late', '$held')});
my $held_pid = rsql(q{SELECT process_id FROM dlsm_claim('late', lease => '1 min')});
($ret, $out, $err) = rtry(qq{CALL dlsm_proxy_move('$parts', 3, '1 s')});
like($err, qr/55P03: dlsm_proxy_move: nothing moved: the partitions did not drain within 00:00:01: 1 open request or lease left on node/,
	'a move whose partitions hold a claim past the drain timeout is refused');
like($err, qr/^DETAIL:  Open: node \d late: request \d+ \(create of "\Q$held\E", in-progress, run_at [^,]+, lease until [^)]+\)\.?$/m,
	'its detail names the open request: node, queue, id, kind, entity, status') or diag $err;
like($err, qr/^HINT:  Keep consumers running, or give a longer drain_timeout\.$/m,
	'and the hint says what to do');
is(rsql(q{SELECT count(*) FILTER (WHERE node_id = 3) || '/' || count(moving_to) FROM dlsm_proxy_partitions}),
	'0/0', 'and changes nothing');
is(rsql(qq{SELECT dlsm_settle('late', '$held_pid')}), '1', 'the claim is settled');

# the move
($ret, $out, $err) = rtry(qq{CALL dlsm_proxy_move('$parts', 3, '60 s')});
is($ret, 0, 'the move of 8 partitions to node 3 succeeds') or diag $err;
note $err;
my $creates = rsql(qq{SELECT count(*) + 1 FROM (
	SELECT 'e' || g AS e FROM generate_series(1, 200) g
	UNION ALL SELECT 'bad' || g FROM generate_series(1, 10) g) s
	WHERE dlsm_proxy_partition_of(e, 16) = ANY ('$parts')});
like($err, qr/moved 8 partitions to node 3: fences there above \d+, $creates creates copied/,
	"the creates of the moved entities were copied ($creates: those of hq and the one of late)");
is(rsql(q{SELECT string_agg(node_id || ':' || n, ' ' ORDER BY node_id)
		   FROM (SELECT node_id, count(*) AS n FROM dlsm_proxy_partitions GROUP BY 1) s}),
	'1:4 2:4 3:8', 'node 3 holds half of the partitions');
is(rsql(qq{SELECT dlsm_proxy_node_of('$moved_entity')}), '3', 'a moved entity lives on node 3');

# After the move: updates of every entity, a second create of a moved one
rsql(q{SELECT dlsm_enqueue('hq', e, 'update', '{"n": 4}') FROM (
	SELECT 'e' || g AS e FROM generate_series(1, 200) g
	UNION ALL SELECT 'bad' || g FROM generate_series(1, 10) g) s});
($ret, $out, $err) = rtry(qq{SELECT dlsm_enqueue('hq', '$moved_entity', 'create')});
like($err, qr/23505/, 'a second create of a moved entity is refused on its new node, as on one server');
ok(poll_within($router, 'postgres',
		q{SELECT sum(new + in_progress) = 0 FROM dlsm_queue_stats WHERE queue = 'hq'}, 60),
	'every request handled after the move');
gather('handled', 'entity text, kind text, ids bigint[], fence bigint, node text, at timestamptz');
my $on3 = rsql(q{SELECT count(*) FROM all_handled WHERE node_id = 3});
ok($on3 > 40, "node 3's handler handled the moved entities' updates ($on3 units)");
is(rsql(q{SELECT count(*) FROM all_handled WHERE node_id = 3 AND dlsm_proxy_node_of(entity) <> 3}),
	'0', 'node 3 handled moved entities only');
is(rsql(q{SELECT count(*) FROM (SELECT fence, lag(fence) OVER (PARTITION BY entity ORDER BY at) AS prev
								  FROM all_handled) s WHERE prev >= fence}), '0',
	'fences strictly increase per entity across the move');
ok(rsql(qq{SELECT min(fence) > $max_before FROM all_handled WHERE node_id = 3}) eq 't',
	"node 3's fences start above every fence the sources gave before the move ($fences_before)");

gather('hq', 'id bigint, status text, kind text, entity text, payload jsonb, process_id uuid, fence bigint, attempts int, run_at timestamptz, enqueued_at timestamptz, claimed_at timestamptz, lease_until timestamptz, settled_at timestamptz, detail text');
is(rsql(q{SELECT count(*) || ' ' || count(*) FILTER (WHERE detail LIKE 'create request % ended in error')
		   FROM all_hq WHERE entity LIKE 'bad%' AND kind = 'update' AND status = 'error'
			 AND node_id = 3 AND dlsm_proxy_node_of(entity) = 3 AND payload->>'n' = '4'}),
	rsql(q{SELECT n || ' ' || n FROM (SELECT count(*) AS n FROM generate_series(1, 10) g
				   WHERE dlsm_proxy_node_of('bad' || g) = 3) s}),
	'on node 3, the updates of a moved entity whose create failed fail with it');
is(rsql(q{SELECT count(*) FROM all_hq WHERE status NOT IN ('complete', 'error')}), '0',
	'every request of every node is settled');

# dlsm_raise_fence (the fence API the move uses) refuses a value beyond
# the timeline's fence space
SKIP:
{
	skip 'the installed dlsm has no dlsm_raise_fence', 1
	  unless $shards[2]->safe_psql('postgres',
		q{SELECT count(*) FROM pg_proc WHERE proname = 'dlsm_raise_fence'}) eq '1';
	my ($r, $o, $e) = $shards[2]->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT dlsm_raise_fence(9223372036854775000)");
	like($e, qr/22023/, 'dlsm_raise_fence beyond the timeline\'s fence space is refused with 22023');
}

done_testing();
