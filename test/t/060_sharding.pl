# Copyright (c) 2026, dlsm developers
#
# dlsm sharded by entity behind a dlsm_proxy router (PL/Proxy): a router and
# three shard clusters on this machine, and a stress run through the router
# (test/stress/sharded.sql): producers, leased consumers that heartbeat,
# overrun, walk away, roll back their work, settle single units and batches;
# a killer terminating consumers; the router's shard connections killed now
# and then; one shard crashed and restarted; and a move of half of node 1's
# partitions to node 3 while everything runs.  After a drain, the
# invariants are checked over all shards at once
# (test/stress/sharded_checks.sql): nothing lost, every request terminal,
# none settled twice, no entity in two units at once, no update before its
# create, grouped updates under one process id and fence, fences rising per
# entity (also across the move), id order per entity, nothing claimed
# before run_at, the run stressed; and no unexpected error anywhere.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my $seconds = $ENV{SHARD_STRESS_SECONDS} // 30;
my $consumers = 7;
my $partitions = 64;
my $stress = "$ENV{TESTDIR}/test/stress";

my @shards = map { shard_node("shard$_", $_) } 1 .. 3;
my $router = router_node('router');

my $status = configure_router($router, $partitions, @shards);
note "nodes:\n$status";
like($status, qr/^1\|t\|shard1\/postgres\|.*\n2\|t\|shard2\/postgres\|.*\n3\|t\|shard3\/postgres\|/,
	'the router reaches its three shards');

sub rsql { return $router->safe_psql('postgres', $_[0]); }

# the queue on every shard, through the router; the history trigger on each
is(rsql(q{SELECT count(*) FROM dlsm_create_queue('sq', max_attempts => 5)}), '3',
	'dlsm_create_queue through the router creates the queue on every shard');
for my $s (@shards)
{
	$s->safe_psql('postgres', slurp_file("$stress/sharded_shard.sql"));
}
$router->safe_psql('postgres', slurp_file("$stress/sharded.sql"));

# Node 1's fences far above node 3's: entities moved from node 1 to node 3
# keep rising fences only if the move raises node 3's.
my $raise = $shards[0]->safe_psql('postgres',
	q{SELECT count(*) FROM pg_proc WHERE proname = 'dlsm_raise_fence'}) eq '1'
  ? q{SELECT dlsm_raise_fence(dlsm_try_lock('probe') + 1000000000)}
  : q{SELECT setval('dlsm_fence_seq', dlsm_try_lock('probe') + 1000000000)};
$shards[0]->safe_psql('postgres', $raise);
ok($shards[0]->safe_psql('postgres', q{SELECT dlsm_try_lock('probe')}) >
	  $shards[2]->safe_psql('postgres', q{SELECT dlsm_try_lock('probe')}) + 900000000,
	'node 1 hands out fences far above node 3\'s');
rsql(qq{INSERT INTO sh_control (run_end) VALUES (clock_timestamp() + interval '$seconds s')});

my $dir = PostgreSQL::Test::Utils::tempdir;
my $stop = "$dir/stop";
my @actors;
push @actors, start_actor($router, $dir, $stop, "sh-producer-$_",
	"CALL sh_produce('sh-producer-$_', 400, 0.02)") for 1 .. 2;
push @actors, start_actor($router, $dir, $stop, "sh-consumer-$_",
	"CALL sh_consume('sh-consumer-$_')") for 1 .. $consumers;
push @actors, start_actor($router, $dir, $stop, 'sh-killer', 'CALL sh_killer()');

# While it runs: now and then terminate one of the router's connections on
# a shard; crash shard 2 once; move half of node 1's partitions to node 3.
my $started = time();
my ($crashed, $moved, $conn_kills) = (0, 0, 0);
my $move_out = '';
while (time() - $started < $seconds)
{
	usleep(1_500_000);
	my $s = $shards[ int(rand(3)) ];
	my ($out) = ('');
	$s->psql('postgres',
		q{SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		   WHERE application_name = 'dlsm_proxy' ORDER BY random() LIMIT 1) t},
		stdout => \$out);
	$conn_kills += $out if $out =~ /^\d+$/;

	if (!$crashed && time() - $started > $seconds * 0.2)
	{
		note 'crashing shard 2 (immediate stop) and restarting it';
		$shards[1]->stop('immediate');
		$shards[1]->start;
		$crashed = 1;
	}
	if (!$moved && time() - $started > $seconds * 0.4)
	{
		note 'moving the even partitions of node 1 to node 3';
		my $parts = rsql(q{SELECT array_agg(partition ORDER BY partition) FROM dlsm_proxy_partitions
						   WHERE node_id = 1 AND partition % 2 = 0});
		my $t = time();
		my ($ret, $o, $e) = $router->psql('postgres',
			qq{CALL dlsm_proxy_move('$parts', 3, '60 s')}, on_error_stop => 1);
		$move_out = "$o$e";
		note $move_out;
		note sprintf('the move took %.1f s', time() - $t);
		is($ret, 0, 'dlsm_proxy_move moves partitions from node 1 to node 3 under load');
		$moved = 1;
	}
}
ok($moved, 'the move ran');
note "$conn_kills router connections terminated on the shards";

# The end: stop the actors, let the leases run out, drain.
rsql('UPDATE sh_control SET stop = true');
stop_actors($stop, 15, @actors);
is(rsql(q{SELECT string_agg(node_id || ':' || n, ' ' ORDER BY node_id)
		   FROM (SELECT node_id, count(*) AS n FROM dlsm_proxy_partitions GROUP BY 1) p}),
	sprintf('1:%d 2:%d 3:%d',
		scalar(grep { $_ % 3 == 0 && $_ % 2 == 1 } 0 .. $partitions - 1),
		scalar(grep { $_ % 3 == 1 } 0 .. $partitions - 1),
		scalar(grep { $_ % 3 == 2 || ($_ % 3 == 0 && $_ % 2 == 0) } 0 .. $partitions - 1)),
	'after the move, node 1 holds its odd partitions and node 3 the even ones too');
usleep(2_500_000);
rsql(q{SELECT dlsm_reap('sq')});
my ($ret, $out, $err) = $router->psql('postgres', 'CALL sh_drain(60)', on_error_stop => 1);
is($ret, 0, 'the drain through the router ran') or diag $err;

# Every shard's queue and history, on the router, for the checks.
rsql(q{
CREATE TABLE all_q AS
SELECT n.node_id AS node, t.*
  FROM dlsm_proxy_nodes n,
	   LATERAL dblink(n.connstr,
		'SELECT id, status, kind, entity, payload, process_id, fence, attempts, run_at,
				enqueued_at, claimed_at, lease_until, settled_at, detail FROM sq')
	   AS t(id bigint, status text, kind text, entity text, payload jsonb, process_id uuid,
			fence bigint, attempts int, run_at timestamptz, enqueued_at timestamptz,
			claimed_at timestamptz, lease_until timestamptz, settled_at timestamptz,
			detail text);
CREATE TABLE all_h AS
SELECT n.node_id AS node, t.*
  FROM dlsm_proxy_nodes n,
	   LATERAL dblink(n.connstr,
		'SELECT seq, id, entity, kind, old_status, new_status, old_pid, old_fence,
				process_id, fence, run_at, detail, token, at FROM sq_history')
	   AS t(seq bigint, id bigint, entity text, kind text, old_status text,
			new_status text, old_pid uuid, old_fence bigint, process_id uuid,
			fence bigint, run_at timestamptz, detail text, token text,
			at timestamptz);
CREATE INDEX ON all_q (node, id);
CREATE INDEX ON all_h (node, id);
CREATE INDEX ON all_h (old_pid);
ANALYZE all_q, all_h;
});

($ret, $out, $err) = $router->psql('postgres', slurp_file("$stress/sharded_checks.sql"),
	extra_params => [ '-v', 'min_requests=' . ($seconds * 20), '-v', 'min_kills=6' ],
	on_error_stop => 1);
is($ret, 0, 'the checks ran') or diag $err;
my @lines = grep { /^(ok|not ok) \d+ - / } split /\n/, $out;
is(scalar @lines, 10, 'ten checks');
for my $l (@lines)
{
	my ($good, $text) = $l =~ /^(ok|not ok) \d+ - (.*)$/;
	ok($good eq 'ok', $text);
}
note $_ for grep { /^sharded:/ } split /\n/, $out;

# No unexpected error: an actor stops at the first error it does not
# expect (a shard it cannot reach, a refused enqueue during the move);
# no server died by itself.
my @errors = actor_errors($dir);
is(scalar @errors, 0, 'no unexpected SQL error in the actors\' logs')
  or diag join('', @errors[ 0 .. ($#errors > 20 ? 20 : $#errors) ]);
my @faults = map { server_faults($_) } ($router, @shards);
is(scalar @faults, 0, 'no server fault') or diag join("\n", @faults);

done_testing();
