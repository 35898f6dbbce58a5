# Copyright (c) 2026, dlsm developers
#
# One shard down behind the dlsm_proxy router: the calls that need it fail
# at once with 08006 naming the node (enqueues of its entities, locks of
# its names, settles and heartbeats of its claims, settle_many reporting
# NULL for them); everything else goes on: enqueues, claims (the down node
# skipped, not spun on), settles and locks of the other nodes.  With every
# shard down a claim fails with 08006.  When the shard is back, its claims
# made before the outage are reaped and done again, and nothing is lost.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my @shards = map { shard_node("shard$_", $_) } 1 .. 3;
my $router = router_node('router');
configure_router($router, 64, @shards);

sub rsql { return $router->safe_psql('postgres', $_[0]); }

# psql on the router, errors shown with their SQLSTATE: (ret, out, err)
sub rtry
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $router->psql('postgres', "\\set VERBOSITY verbose\n$sql");
	return ($ret, $out, $err);
}

rsql(q{SELECT dlsm_create_queue('dq')});
rsql(q{
CREATE TABLE acked (entity text, kind text, node int, id bigint);
INSERT INTO acked
SELECT e, 'create', dlsm_proxy_node_of(e), dlsm_enqueue('dq', e)
  FROM (SELECT 'e' || g AS e FROM generate_series(1, 300) g) s;
});
my %on = map { split /\|/ } split /\n/,
  rsql(q{SELECT node, count(*) FROM acked GROUP BY node ORDER BY node});
ok($on{1} > 50 && $on{2} > 50 && $on{3} > 50, "300 entities spread over the shards: $on{1}, $on{2}, $on{3}");

my $e1 = rsql(q{SELECT min(entity) FROM acked WHERE node = 1});
my $e2 = rsql(q{SELECT min(entity) FROM acked WHERE node = 2});
my $e3 = rsql(q{SELECT min(entity) FROM acked WHERE node = 3});
my $name2 = rsql(q{SELECT n FROM (SELECT 'lock/' || g AS n FROM generate_series(1, 100) g) s
				   WHERE dlsm_proxy_node_of(n) = 2 LIMIT 1});
my $name1 = rsql(q{SELECT n FROM (SELECT 'lock/' || g AS n FROM generate_series(1, 100) g) s
				   WHERE dlsm_proxy_node_of(n) = 1 LIMIT 1});

# Claims held on node 2 and node 1 when node 2 goes down (3 s leases), a
# lease lock on node 2.
my ($id2, $pid2) = split /\|/,
  rsql(q{SELECT id, process_id FROM dlsm_claim_on(2, 'dq', lease => '3 s')});
my $pid1 = rsql(q{SELECT process_id FROM dlsm_claim_on(1, 'dq', lease => '30 s')});
my $fence2 = rsql(qq{SELECT dlsm_try_lock('$name2', lease => '1 min')});
ok($pid2 && $pid1 && $fence2, 'claims on nodes 1 and 2 and a lock on node 2 taken through the router');

$shards[1]->stop('fast');
note 'shard 2 stopped';

my ($ret, $out, $err) = rtry(qq{SELECT dlsm_enqueue('dq', '$e2', 'update')});
isnt($ret, 0, 'an enqueue for an entity of node 2 fails');
like($err, qr/ERROR:  08006: dlsm_enqueue of "$e2": node 2 of dlsm_proxy cannot be reached/,
	'with 08006, naming the entity and the node');
like($err, qr/DETAIL:  .*connection to server.*failed/, 'the detail says why');
note $err;

my $t0 = time();
rsql(q{
INSERT INTO acked
SELECT e, 'update', dlsm_proxy_node_of(e), dlsm_enqueue('dq', e, 'update')
  FROM (SELECT entity AS e FROM acked WHERE node <> 2 AND kind = 'create' LIMIT 100) s;
});
pass('enqueues for the entities of nodes 1 and 3 go on');

($ret, $out, $err) = rtry(qq{SELECT dlsm_try_lock('$name2', lease => '1 min')});
like($err, qr/08006: dlsm_try_lock of "$name2": node 2 of dlsm_proxy cannot be reached/,
	'a lock whose name lives on node 2 fails with 08006');
my $f1 = rsql(qq{SELECT dlsm_try_lock('$name1', lease => '1 min')});
ok($f1 > 0, 'a lock whose name lives on node 1 is granted');
is(rsql(qq{SELECT dlsm_unlock('$name1', $f1)}), 't', 'and released');

($ret, $out, $err) = rtry(qq{SELECT dlsm_settle('dq', '$pid2')});
like($err, qr/08006: dlsm_settle of process id $pid2.*node 2 of dlsm_proxy cannot be reached/,
	'a settle of a claim on node 2 fails with 08006');
($ret, $out, $err) = rtry(qq{SELECT dlsm_heartbeat('dq', '$pid2', '3 s')});
like($err, qr/08006: dlsm_heartbeat of process id $pid2.*node 2 of dlsm_proxy cannot be reached/,
	'so does its heartbeat');
($ret, $out, $err) = rtry(qq{SELECT process_id, settled FROM dlsm_settle_many('dq', ARRAY['$pid1', '$pid2']::uuid[])});
is($out, "$pid1|1\n$pid2|", 'dlsm_settle_many settles the claim on node 1 and reports NULL for node 2');
like($err, qr/WARNING:  01000: dlsm_settle_many: node \{2\} of dlsm_proxy cannot be reached/,
	'with a warning');

# Claims go on, from nodes 1 and 3 only, without spinning on node 2: a
# consumer through the router drains both, each claim one round trip or
# a few, never an error.
rsql(q{CREATE TABLE handled (node int, entity text, n int, at timestamptz DEFAULT clock_timestamp());
		CREATE TABLE claims (n int)});
my $stats = rsql(q{
DO $$
DECLARE
	c record;
	claims int := 0;
BEGIN
	LOOP
		SELECT min(entity) AS entity, min(process_id::text)::uuid AS pid, count(*) AS n INTO c
		  FROM dlsm_claim('dq', lease => '30 s', units => 1);
		claims := claims + 1;
		EXIT WHEN c.n = 0 OR claims > 2000;
		INSERT INTO handled (node, entity, n)
		VALUES (dlsm_proxy_node_of_process(c.pid), c.entity, c.n);
		PERFORM dlsm_settle('dq', c.pid);
	END LOOP;
	INSERT INTO claims VALUES (claims);
END $$;
SELECT string_agg(node || ':' || n, ' ' ORDER BY node)
  FROM (SELECT node, sum(n) AS n FROM handled GROUP BY node) s;
});
is($stats,
	rsql(q{SELECT string_agg(node || ':' || n, ' ' ORDER BY node)
			 FROM (SELECT node, count(*) - CASE WHEN node = 1 THEN 1 ELSE 0 END AS n
					 FROM acked WHERE node <> 2 GROUP BY node) s}),
	'claims through the router drained nodes 1 and 3 (all but the claim settled above), none from node 2');
is(rsql(q{SELECT n - (SELECT count(*) FROM handled) FROM claims}), '1',
	'every claim but the last returned work: none spun on the down node');
my $took = time() - $t0;
ok($took < 60, sprintf('in %.1f s', $took));

is(rsql(q{SELECT string_agg(node_id || ':' || reachable, ' ' ORDER BY node_id) FROM dlsm_proxy_status}),
	'1:true 2:false 3:true', 'dlsm_proxy_status shows node 2 unreachable');
($ret, $out, $err) = rtry(q{SELECT count(*) FROM dlsm_queue_stats});
isnt($ret, 0, 'dlsm_queue_stats (every node) fails while a node is down');
like($err, qr/ERROR:  08006: dlsm_queue_stats: node 2 of dlsm_proxy cannot be reached/,
	'naming the node');

# every shard down: a claim fails instead of returning nothing
$_->stop('fast') for ($shards[0], $shards[2]);
($ret, $out, $err) = rtry(q{SELECT * FROM dlsm_claim('dq', lease => '30 s')});
like($err, qr/ERROR:  08006: dlsm_claim: no shard could be reached/,
	'with every shard down a claim fails with 08006');
$_->start for @shards;
note 'every shard started again';

# Back: node 2's claim made before the outage is reaped when its lease
# ends and done again; the lock is still held; everything is drained.
ok(poll_within($router, 'postgres',
		q{SELECT count(*) = 3 FROM dlsm_proxy_status WHERE reachable}, 30),
	'the router reaches the three shards again');
is(rsql(qq{SELECT dlsm_unlock('$name2', $fence2)}), 't', 'the lock taken on node 2 before the outage is released');
rsql(q{
DO $$
DECLARE
	c record;
	deadline timestamptz := clock_timestamp() + interval '60 s';
BEGIN
	WHILE clock_timestamp() < deadline LOOP
		SELECT min(entity) AS entity, min(process_id::text)::uuid AS pid, count(*) AS n INTO c
		  FROM dlsm_claim('dq', lease => '30 s', wait => '200 ms');
		IF c.n = 0 THEN
			EXIT WHEN (SELECT sum(new + in_progress) FROM dlsm_queue_stats WHERE queue = 'dq') = 0;
			CONTINUE;
		END IF;
		INSERT INTO handled (node, entity, n)
		VALUES (dlsm_proxy_node_of_process(c.pid), c.entity, c.n);
		PERFORM dlsm_settle('dq', c.pid);
	END LOOP;
END $$;
});
is(rsql(q{SELECT sum(new + in_progress) FROM dlsm_queue_stats WHERE queue = 'dq'}), '0',
	'after the outage every request of every shard is settled');

# nothing lost: every acknowledged enqueue is on its node, once
rsql(q{
CREATE TABLE all_q AS
SELECT n.node_id AS node, t.*
  FROM dlsm_proxy_nodes n,
	   LATERAL dblink(n.connstr, 'SELECT id, entity, kind, status, detail FROM dq')
	   AS t(id bigint, entity text, kind text, status text, detail text);
});
is(rsql(q{
SELECT count(*) FILTER (WHERE q.id IS NULL) || ' missing, ' ||
	   count(*) FILTER (WHERE a.id IS NULL) || ' not acknowledged, ' ||
	   count(*) FILTER (WHERE q.status <> 'complete') || ' not complete'
  FROM acked a FULL JOIN all_q q ON q.node = a.node AND q.id = a.id
 WHERE coalesce(a.entity, q.entity) IS NOT NULL
}), '0 missing, 0 not acknowledged, 0 not complete',
	'nothing lost: the queues of the three shards hold exactly the acknowledged requests, all complete');
is(rsql(qq{SELECT count(*) FROM all_q WHERE entity = '$e2' AND kind = 'update'}), '0',
	'the refused enqueue is nowhere');
is($shards[1]->safe_psql('postgres', qq{SELECT attempts FROM dq WHERE id = $id2}), '2',
	'the request claimed on node 2 before the outage was reaped when its lease ended and claimed again');

done_testing();
