# Copyright (c) 2026, dlsm developers
#
# dlsm on a hot standby, where every function that writes fails with 25006
# and no worker runs (F2), and across failovers, asynchronous and
# synchronous (F3).
#
# F2: on a standby every dlsm function that would write fails with SQLSTATE
# 25006 and a hint to call it on the primary, naming no address (the host
# and port of primary_conninfo, which only superusers may read); dlsm_queue_stats, dlsm_locks and dlsm_worker_status
# work there; no dlsm worker runs there, and one starts within
# dlsm.reap_interval (plus the launcher's start-up) of the promotion.  The
# same calls succeed on the promoted server, so the arguments were valid.
#
# F3, asynchronous replication: a transactional claim in flight on the old
# primary is gone (its rows are new on the new primary); a leased claim
# that committed and replicated is in progress on the new primary, reaped by
# its worker once the lease runs out, and the old client's late settle gets
# 55000.  What the standby never received is undone: a request claimed and
# settled on the old primary after the standby was cut off is new again, a
# leased request settled there is in progress again (and reaped), an
# acknowledged enqueue is lost, a leased claim is undone (its settle gets
# 55000), a lease lock's name is free again.
#
# F3, synchronous replication (synchronous_standby_names = '*',
# synchronous_commit = on): a client enqueues, claims and settles (in one
# transaction, and leased) until the primary is killed mid-run; after the
# promotion every enqueue and settle the client saw commit is there.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(gettimeofday tv_interval usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $reap_ms = 1000;
my $conf = qq{
shared_preload_libraries = 'dlsm'
dlsm.reap_interval = $reap_ms
max_connections = 30
};
# the launcher's start-up after a promotion, on a loaded two-core machine
my $startup_margin = 5;

# ---------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------

# Run $sql on $node; returns (SQLSTATE or undef, hint or '', stderr).
sub run_error
{
	my ($node, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql(
		'postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 1);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	my ($hint) = $err =~ /HINT:\s+(.*?)(?:\n(?:[A-Z]+:|psql:)|\s*\z)/s;
	return ($state, $hint // '', $err);
}

sub dlsm_workers
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'});
}

# The calls that write, each with arguments that are valid on a primary
# (checked at the end on the promoted server).  Filled in once the
# objects exist.
my @write_calls;

# ---------------------------------------------------------------------
# Primary P and standby S
# ---------------------------------------------------------------------
my $node_p = PostgreSQL::Test::Cluster->new('primary_p');
$node_p->init(allows_streaming => 1);
$node_p->append_conf('postgresql.conf', $conf);
$node_p->start;
ok(install_dlsm($node_p), 'the worker runs on the primary');

$node_p->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('jobs');
SELECT dlsm_create_queue('dropme');
SELECT dlsm_create_queue('sq');
SELECT count(dlsm_enqueue('jobs', 'e' || i)) FROM generate_series(1, 50) i;
-- a table of the shape of the article "Implementing a Distributed Lock
-- State Machine", not registered yet
CREATE TABLE plain (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text NOT NULL DEFAULT 'new', kind text NOT NULL DEFAULT 'create',
	entity text NOT NULL, process_id uuid);
CREATE TABLE src (id int PRIMARY KEY, v text);
CREATE TABLE src2 (id int PRIMARY KEY, v text);
SELECT dlsm_capture('src2', 'jobs');
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
	RETURNS void LANGUAGE sql AS 'SELECT';
-- two leased claims held for an hour, and a lease lock
SELECT process_id FROM dlsm_claim('jobs', lease => '1 hour');
SELECT process_id FROM dlsm_claim('jobs', lease => '1 hour');
SELECT dlsm_try_lock('held', lease => '1 hour');
-- updates of an entity without a create, for dlsm_group_updates
SELECT dlsm_enqueue('jobs', 'u1', 'update');
SELECT dlsm_enqueue('jobs', 'u1', 'update');
});
my ($pid_held, $pid_held2, $fence_held) = split /\n/, $node_p->safe_psql(
	'postgres', q{
SELECT process_id FROM jobs WHERE status = 'in-progress' ORDER BY id;
SELECT fence FROM dlsm_leases WHERE name = 'held';
});
like($pid_held2 // '', qr/^[0-9a-f-]{36}$/, 'two leased claims held on the primary');

@write_calls = (
	[ 'dlsm_enqueue',         q{SELECT dlsm_enqueue('jobs', 'standby-e')} ],
	[ 'dlsm_claim',           q{SELECT * FROM dlsm_claim('jobs')} ],
	[ 'dlsm_claim (leased)',  q{SELECT * FROM dlsm_claim('jobs', lease => '1 min')} ],
	[ 'dlsm_heartbeat',       qq{SELECT dlsm_heartbeat('jobs', '$pid_held')} ],
	[ 'dlsm_settle',          qq{SELECT dlsm_settle('jobs', '$pid_held')} ],
	[ 'dlsm_settle_many',     qq{SELECT * FROM dlsm_settle_many('jobs', ARRAY['$pid_held2']::uuid[])} ],
	[ 'dlsm_reap',            q{SELECT dlsm_reap('jobs')} ],
	[ 'dlsm_group_updates',   q{SELECT dlsm_group_updates('jobs', 'u1', gen_random_uuid())} ],
	[ 'dlsm_requeue',         q{SELECT dlsm_requeue('jobs', ARRAY[0])} ],
	[ 'dlsm_cancel',          q{SELECT dlsm_cancel('jobs', ARRAY[0])} ],
	[ 'dlsm_try_lock',        q{SELECT dlsm_try_lock('standby/tx')} ],
	[ 'dlsm_try_lock (lease)', q{SELECT dlsm_try_lock('standby/lease', lease => '1 min')} ],
	[ 'dlsm_refresh_lock',    qq{SELECT dlsm_refresh_lock('held', $fence_held, '1 hour')} ],
	[ 'dlsm_unlock',          qq{SELECT dlsm_unlock('held', $fence_held)} ],
	[ 'dlsm_create_queue',    q{SELECT dlsm_create_queue('standby_q')} ],
	[ 'dlsm_register_queue',  q{SELECT dlsm_register_queue('plain')} ],
	[ 'dlsm_set_handler',     q{SELECT dlsm_set_handler('jobs', 'h')} ],
	[ 'dlsm_capture',         q{SELECT dlsm_capture('src', 'jobs')} ],
	[ 'dlsm_uncapture',       q{SELECT dlsm_uncapture('src2', 'jobs')} ],
	[ 'dlsm_drop_queue',      q{SELECT dlsm_drop_queue('dropme')} ],
);

$node_p->backup('p_base');
my $node_s = PostgreSQL::Test::Cluster->new('standby_s');
$node_s->init_from_backup($node_p, 'p_base', has_streaming => 1);
$node_s->start;
$node_p->wait_for_catchup($node_s);

# ---------------------------------------------------------------------
# F2: the standby refuses every write, naming no address
# ---------------------------------------------------------------------
my $p_port = $node_p->port;
my $p_host = $node_p->host;
for my $c (@write_calls)
{
	my ($name, $sql) = @$c;
	my ($state, $hint, $err) = run_error($node_s, $sql);
	is($state // 'none', '25006', "standby: $name fails with 25006")
	  or diag $err;
	is($hint, 'Call it on the primary server.',
		"standby: the hint of $name names no address");
	unlike($err, qr/\b$p_port\b|\Q$p_host\E/,
		"standby: the error of $name shows neither the primary's port nor its host");
}

# the views work, and show the primary's state
is( $node_s->safe_psql('postgres',
		q{SELECT new, in_progress FROM dlsm_queue_stats WHERE queue = 'jobs'::regclass}),
	$node_p->safe_psql('postgres',
		q{SELECT count(*) FILTER (WHERE status = 'new'),
				 count(*) FILTER (WHERE status = 'in-progress') FROM jobs}),
	'standby: dlsm_queue_stats works and counts the queue');
is( $node_s->safe_psql('postgres',
		q{SELECT count(*) FROM dlsm_locks WHERE name = 'held'}),
	'1', 'standby: dlsm_locks works and shows the lease lock');
{
	my ($state, undef, $err) =
	  run_error($node_s, q{SELECT count(*) FROM dlsm_worker_status});
	ok(!defined $state, 'standby: dlsm_worker_status works') or diag $err;
}

# no dlsm worker there, watched over three reaping intervals
{
	my $seen = 0;
	for (1 .. 30)
	{
		$seen += dlsm_workers($node_s);
		usleep($reap_ms * 100);
	}
	is($seen, 0, 'standby: no dlsm worker runs, watched for 3 reap intervals');
}

# ---------------------------------------------------------------------
# F3, asynchronous: work in flight when the primary dies
# ---------------------------------------------------------------------
# a leased claim (10 s) and a second one to be settled after the cut
my ($id_l, $pid_l) = split /\|/, $node_p->safe_psql('postgres',
	q{SELECT id, process_id FROM dlsm_claim('jobs', lease => '10 s')});
my ($id_l2, $pid_l2) = split /\|/, $node_p->safe_psql('postgres',
	q{SELECT id, process_id FROM dlsm_claim('jobs', lease => '10 s')});

# a transactional claim, settled, not committed
my $bg = $node_p->background_psql('postgres', on_error_stop => 0);
$bg->query_safe('BEGIN');
my ($id_t, $pid_t) = split /\|/,
  $bg->query_safe(q{SELECT id, process_id FROM dlsm_claim('jobs')});
$bg->query_safe(qq{SELECT dlsm_settle('jobs', '$pid_t')});
like($id_t // '', qr/^\d+$/, "a transactional claim of request $id_t in flight");

# a commit after it flushes its WAL too: the standby has everything so far
$node_p->safe_psql('postgres', q{SELECT dlsm_enqueue('jobs', 'marker')});
$node_p->wait_for_catchup($node_s);
is( $node_s->safe_psql('postgres',
		qq{SELECT string_agg(status, ',' ORDER BY id) FROM jobs WHERE id IN ($id_l, $id_l2)}),
	'in-progress,in-progress', 'the leased claims reached the standby');

# cut the standby off; then settle and claim on the primary
$node_s->append_conf('postgresql.conf', "primary_conninfo = ''");
$node_s->reload;
ok( $node_s->poll_query_until('postgres',
		'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
	  && $node_p->poll_query_until('postgres',
		'SELECT count(*) = 0 FROM pg_stat_replication'),
	'the standby no longer receives WAL');
is($node_p->safe_psql('postgres', qq{SELECT dlsm_settle('jobs', '$pid_l2')}),
	'1', "request $id_l2 (leased) settled on the old primary only");
my $id_x = $node_p->safe_psql(
	'postgres', q{
SELECT c.id FROM dlsm_claim('jobs') c WHERE dlsm_settle('jobs', c.process_id) = 1});
like($id_x, qr/^\d+$/,
	"request $id_x claimed and settled in one transaction on the old primary only");

# and an enqueue, a leased claim and a lease lock, all acknowledged
is($node_p->safe_psql('postgres', q{SELECT dlsm_enqueue('jobs', 'lost-e') > 0}),
	't', 'an enqueue acknowledged by the old primary only');
my ($id_c, $pid_c) = split /\|/, $node_p->safe_psql('postgres',
	q{SELECT id, process_id FROM dlsm_claim('jobs', lease => '1 hour')});
like($pid_c // '', qr/^[0-9a-f-]{36}$/,
	"request $id_c claimed (leased) on the old primary only");
like($node_p->safe_psql('postgres', q{SELECT dlsm_try_lock('cut/lease', lease => '1 hour')}),
	qr/^\d+$/, 'a lease lock granted by the old primary only');

$node_p->stop('immediate');
eval { $bg->quit };

my $t0 = [gettimeofday];
$node_s->promote;
my $promoted_in = tv_interval($t0);
my $t_promoted = [gettimeofday];

is( $node_s->safe_psql('postgres',
		qq{SELECT status, process_id IS NULL, attempts FROM jobs WHERE id = $id_t}),
	'new|t|0',
	"the transactional claim in flight is gone: request $id_t is new on the new primary");
is( $node_s->safe_psql('postgres',
		qq{SELECT status, process_id = '$pid_l', lease_until > now() FROM jobs WHERE id = $id_l}),
	'in-progress|t|t',
	"the leased claim survives: request $id_l in progress under its process id, lease alive");
is( $node_s->safe_psql('postgres',
		qq{SELECT status, process_id IS NULL FROM jobs WHERE id = $id_x}),
	'new|t',
	"asynchronous: request $id_x, settled on the old primary after the cut, is new again");
is( $node_s->safe_psql('postgres',
		qq{SELECT status, process_id = '$pid_l2' FROM jobs WHERE id = $id_l2}),
	'in-progress|t',
	"asynchronous: request $id_l2, settled there too, is in progress again");

is( $node_s->safe_psql('postgres',
		q{SELECT count(*) FROM jobs WHERE entity = 'lost-e'}),
	'0', 'asynchronous: the enqueue the old primary acknowledged is lost');
is( $node_s->safe_psql('postgres',
		qq{SELECT status, process_id IS NULL FROM jobs WHERE id = $id_c}),
	'new|t',
	"asynchronous: request $id_c, claimed on the old primary after the cut, is new");
{
	my ($state, undef, $err) =
	  run_error($node_s, qq{SELECT dlsm_settle('jobs', '$pid_c')});
	is($state // 'none', '55000',
		'asynchronous: the settle of that claim fails with 55000 on the new primary')
	  or diag $err;
}
like($node_s->safe_psql('postgres', q{SELECT dlsm_try_lock('cut/lease', lease => '1 hour')}),
	qr/^\d+$/,
	'asynchronous: the name of the lease lock granted by the old primary after the cut is free');

# a worker starts within the reap interval plus the launcher's start-up,
# counted from the end of the promotion
my $bound = $reap_ms / 1000 + $startup_margin;
my $started;
while (tv_interval($t_promoted) < $bound)
{
	if (dlsm_workers($node_s) > 0) { $started = tv_interval($t_promoted); last; }
	usleep(50_000);
}
ok(defined $started,
	sprintf('after promotion a dlsm worker starts within %.1f s (%s s after the promotion returned, %.2f s to promote)',
		$bound, defined $started ? sprintf('%.2f', $started) : 'not', $promoted_in));

# the new primary's worker reaps the leases once they run out
ok( defined poll_within(
		$node_s, 'postgres',
		qq{SELECT count(*) = 2 FROM jobs WHERE id IN ($id_l, $id_l2) AND status = 'new'},
		10 + $reap_ms / 1000 + 10),
	'both leases reaped by the new primary');
is( $node_s->safe_psql('postgres',
		qq{SELECT detail LIKE 'lease of process $pid_l expired at %', attempts
		     FROM jobs WHERE id = $id_l}),
	't|1', "request $id_l: the detail names the expired lease, one attempt counted");
cmp_ok(
	$node_s->safe_psql('postgres',
		q{SELECT reaped FROM dlsm_worker_status WHERE database = 'postgres'}),
	'>=', 2, 'the new primary\'s worker did the reaping');

# the old primary's clients come back late
{
	my ($state, undef, $err) =
	  run_error($node_s, qq{SELECT dlsm_settle('jobs', '$pid_l')});
	is($state // 'none', '55000',
		"the late settle of $pid_l on the new primary fails with 55000")
	  or diag $err;
	($state, undef, $err) =
	  run_error($node_s, qq{SELECT dlsm_heartbeat('jobs', '$pid_l')});
	is($state // 'none', '55000', 'so does its late heartbeat') or diag $err;
}

# the calls the standby refused are valid: on the primary they all succeed
{
	my $all = join(";\n", map { $_->[1] } @write_calls);
	my ($state, undef, $err) =
	  run_error($node_s, "BEGIN;\n$all;\nROLLBACK;");
	ok(!defined $state,
		'every call the standby refused succeeds on the promoted server')
	  or diag $err;
}

# ---------------------------------------------------------------------
# F3, synchronous: nothing committed is lost
# ---------------------------------------------------------------------
$node_s->backup('s_base');
my $node_s2 = PostgreSQL::Test::Cluster->new('standby_s2');
$node_s2->init_from_backup($node_s, 's_base', has_streaming => 1);
$node_s2->start;
$node_s->wait_for_catchup($node_s2);

{
	my ($state, $hint, $err) = run_error($node_s2, q{SELECT * FROM dlsm_claim('sq')});
	my $s_port = $node_s->port;
	ok(($state // '') eq '25006' && $err !~ /\b$s_port\b/,
		"the second standby refuses with 25006, without its primary's port $s_port");
}
is(dlsm_workers($node_s2), '0', 'no dlsm worker on the second standby');

$node_s->append_conf('postgresql.conf', qq{
synchronous_standby_names = '*'
synchronous_commit = on
});
$node_s->reload;
ok( $node_s->poll_query_until('postgres',
		q{SELECT sync_state = 'sync' FROM pg_stat_replication}),
	'the standby is synchronous');

# the client: per round two enqueues, a claim settled in its transaction,
# a leased claim settled in a second one; each line of output is a commit
# the client saw
my $script = "$PostgreSQL::Test::Utils::tmp_check/sync_client.sql";
my $outfile = "$PostgreSQL::Test::Utils::tmp_check/sync_client.out";
{
	open my $fh, '>', $script or die $!;
	for my $i (1 .. 20000)
	{
		print $fh qq{SELECT 'E', dlsm_enqueue('sq', 'e$i-a');
SELECT 'E', dlsm_enqueue('sq', 'e$i-b');
SELECT 'S', c.id, c.process_id FROM dlsm_claim('sq') c WHERE dlsm_settle('sq', c.process_id) = 1;
SELECT id AS lid, process_id AS lpid FROM dlsm_claim('sq', lease => '1 hour') \\gset
SELECT 'S', :lid, :'lpid' WHERE dlsm_settle('sq', :'lpid') = 1;
};
	}
	close $fh;
}
my $client = IPC::Run::start(
	[
		'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1',
		'-d', $node_s->connstr('postgres'), '-f', $script
	],
	'>', $outfile, '2>&1');
ok( $node_s->poll_query_until('postgres',
		q{SELECT count(*) >= 600 FROM sq WHERE status = 'complete'}),
	'the client runs against the synchronous primary');
$node_s->stop('immediate');
$client->finish;
my $t1 = [gettimeofday];
$node_s2->promote;

my (@enq, %settled);
my $cut = 0;
{
	open my $fh, '<', $outfile or die $!;
	while (my $line = <$fh>)
	{
		chomp $line;
		if ($line =~ /^E\|(\d+)$/) { push @enq, $1; }
		elsif ($line =~ /^S\|(\d+)\|([0-9a-f-]{36})$/) { $settled{$1} = $2; }
		elsif ($line =~ /server closed the connection|terminating connection|connection to server/)
		{
			$cut = 1;
		}
	}
	close $fh;
}
ok($cut && @enq < 40000,
	sprintf('the primary died in the middle of the run (%d enqueues, %d settles seen committed)',
		scalar @enq, scalar keys %settled));

my $enq_list = join(',', @enq);
is( $node_s2->safe_psql('postgres',
		qq{SELECT count(*) FROM unnest('{$enq_list}'::bigint[]) i
		    WHERE NOT EXISTS (SELECT 1 FROM sq WHERE id = i)}),
	'0',
	'synchronous: every enqueue the client saw commit is on the new primary');
my $pairs = join(',', map { "($_, '$settled{$_}'::uuid)" } sort { $a <=> $b } keys %settled);
is( $node_s2->safe_psql('postgres',
		qq{SELECT count(*) FROM (VALUES $pairs) v(id, pid)
		    WHERE NOT EXISTS (SELECT 1 FROM sq WHERE sq.id = v.id
		                        AND status = 'complete' AND process_id = v.pid)}),
	'0',
	'synchronous: every settle the client saw commit is complete on the new primary, under its process id');

# and the new primary works on
ok( defined poll_within(
		$node_s2, 'postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE backend_type = 'dlsm worker'},
		$reap_ms / 1000 + $startup_margin),
	'a dlsm worker runs on the promoted second standby');
like($node_s2->safe_psql('postgres', q{SELECT dlsm_enqueue('sq', 'after')}),
	qr/^\d+$/, 'the promoted second standby takes enqueues');

$node_s2->stop;
done_testing();
