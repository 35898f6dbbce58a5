# Copyright (c) 2026, dlsm developers
#
# The relay (issue 34): while dlsm is preloaded and dlsm.notify_relay is
# on, a producer's commit only
# marks the queue's channel in shared memory, and the database's relay
# (backend_type 'dlsm relay') sends the NOTIFY:
#   - the first LISTEN starts it, and the notifications come from it;
#   - no wake-up is lost: a consumer that looks at the queue only when
#     notified (it notes the rows it sees), under 8 producers enqueueing
#     batches for 5 s, sees every row, each soon after its commit; then 40 enqueues one at a time (each
#     the last of its stream) are each notified;
#   - the latency, commit to notification, median, as a note (the figures
#     under load are bench/notify_ab.sh's);
#   - a handler that sleeps 5 s does not hold notifications back;
#   - a relay terminated is started again by the next enqueue (not by
#     the postmaster: test/t/099), and notifications keep coming;
#   - DROP DATABASE stops the relay of the database;
#   - with dlsm.notify_relay off (the default; the test turns it on), a
#     LISTEN starts no relay and the producer notifies, as before;
#   - without preloading, the producer's transaction notifies, as before.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(gettimeofday tv_interval usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('relay', qq{
dlsm.notify_relay = on
track_commit_timestamp = on
max_connections = 50
});
ok(install_dlsm($node), 'the worker runs');

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sql(q{
SELECT dlsm_create_queue('rq');
CREATE TABLE seen (id bigint PRIMARY KEY, seen_at timestamptz NOT NULL);
});

my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN rq');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm relay' AND datname = 'postgres'}),
	'a LISTEN starts the relay of its database');
my $relay_pid = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm relay'});

# The notifications of rq the listener got (psql prints them after a
# query's result), with the pids that sent them.
sub notified
{
	my ($bg) = @_;
	my $out = $bg->query('SELECT 1');
	return ($out =~ /Asynchronous notification "rq" received from server process with PID (\d+)/g);
}

# Wait up to $seconds for a notification of rq; returns the sender pids.
sub wait_notified
{
	my ($bg, $seconds) = @_;
	my $start = [gettimeofday];
	while (tv_interval($start) < $seconds)
	{
		my @pids = notified($bg);
		return @pids if @pids;
		usleep(2_000);
	}
	return ();
}

sql(q{SELECT dlsm_enqueue('rq', 'first')});
my @pids = wait_notified($listener, 10);
is_deeply(\@pids, [$relay_pid], 'an enqueue is notified by the relay');

# ---------------------------------------------------------------------
# A stream: 8 producers, batches of 1 to 3 rows, about 300 batches a
# second for 5 s; the consumer notes what it sees, and looks only when notified.
# ---------------------------------------------------------------------
my $script = $node->basedir . '/enqueue.sql';
open my $fh, '>', $script or die;
print $fh q{\set n random(1, 3)
SELECT dlsm_enqueue('rq', 'e' || g || '-' || random()) FROM generate_series(1, :n) g;
};
close $fh;
my ($pgb_out, $pgb_err) = ('', '');
my $pgbench = IPC::Run::start(
	[
		'pgbench', '-n', '-c', '8', '-j', '2', '-T', '5', '-R', '300',
		'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$pgb_out, '2>', \$pgb_err);
my $consume = q{INSERT INTO seen SELECT id, clock_timestamp() FROM rq
ON CONFLICT (id) DO NOTHING};
my $wakeups = 0;
my $quiet_since;
while (1)
{
	my @got = notified($listener);
	while (@got)
	{
		# psql prints what came during the look after it: a wake-up too
		$wakeups++;
		@got = ($listener->query($consume) =~ /Asynchronous notification "rq"/g);
		$quiet_since = undef;
	}
	if ($pgbench->pumpable)
	{
		$pgbench->pump_nb;
	}
	else
	{
		$quiet_since //= [gettimeofday];
		last if tv_interval($quiet_since) > 2;
	}
	usleep(1_000);
}
$pgbench->finish;
my $enqueued = sql(q{SELECT count(*) FROM rq WHERE entity <> 'first'});
cmp_ok($enqueued, '>', 500, "the producers enqueued ($enqueued rows)");
is(sql(q{SELECT count(*) FROM rq WHERE entity <> 'first' AND id NOT IN (SELECT id FROM seen)}), '0',
	"a consumer woken only by notifications found every row ($wakeups wake-ups)");
my ($late, $max_ms) = split /\|/, sql(q{
SELECT count(*) FILTER (WHERE seen_at - pg_xact_commit_timestamp(q.xmin) > '1 s'),
	round(max(extract(epoch FROM seen_at - pg_xact_commit_timestamp(q.xmin)) * 1000))
  FROM rq q JOIN seen USING (id) WHERE entity <> 'first'});
is($late, '0', "each row was found within 1 s of its commit (at most $max_ms ms)");

# ---------------------------------------------------------------------
# One at a time, each the last of its stream: each is notified.  The
# latency: the commit to the poll that saw the notification.
# ---------------------------------------------------------------------
my $producer = $node->background_psql('postgres');
my @latency;
my $missed = 0;
for my $i (1 .. 40)
{
	my $id = $producer->query_safe(qq{SELECT dlsm_enqueue('rq', 'one$i')});
	my $committed = $producer->query_safe(
		qq{SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin)) FROM rq WHERE id = $id});
	if (!wait_notified($listener, 5))
	{
		$missed++;
		next;
	}
	my $now = $listener->query_safe('SELECT extract(epoch FROM clock_timestamp())');
	push @latency, ($now - $committed) * 1000;
	usleep(20_000);
}
is($missed, 0, 'each of 40 enqueues, one at a time, is notified');
@latency = sort { $a <=> $b } @latency;
my $median = @latency ? $latency[ int(@latency / 2) ] : -1;
cmp_ok($median, '<', 1000, 'the relay notifies within a second');
note sprintf('FIGURE enqueue commit to notification seen (polling every 2 ms): median %.2f ms over %d', $median, scalar @latency);

# ---------------------------------------------------------------------
# A handler that sleeps 5 s: the worker runs it; the relay does not wait.
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('hq');
CREATE FUNCTION h_sleep(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(5) $$;
SELECT dlsm_set_handler('hq', 'h_sleep');
SELECT dlsm_enqueue('hq', 'sleeper');
});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker' AND wait_event = 'PgSleep'}),
	'the worker sleeps in the handler');
notified($listener);
my $start = [gettimeofday];
sql(q{SELECT dlsm_enqueue('rq', 'during the handler')});
@pids = wait_notified($listener, 10);
my $took = tv_interval($start);
is_deeply(\@pids, [$relay_pid], 'notified by the relay while the handler sleeps');
cmp_ok($took, '<', 2, sprintf('... at once (%.3f s), not after the handler', $took));

# ---------------------------------------------------------------------
# The relay terminated: the next enqueue, notified by its producer, starts
# another; no notification is lost.
# ---------------------------------------------------------------------
sql(qq{SELECT pg_terminate_backend($relay_pid)});
sql(q{SELECT dlsm_enqueue('rq', 'relay gone')});
ok(scalar(wait_notified($listener, 10)), 'an enqueue just after the relay was terminated is notified');
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm relay' AND pid <> $relay_pid}),
	'the enqueue starts the relay again');
$relay_pid = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm relay'});
sql(q{SELECT dlsm_enqueue('rq', 'relay back')});
@pids = wait_notified($listener, 10);
is_deeply(\@pids, [$relay_pid], 'the new relay notifies');

# ---------------------------------------------------------------------
# DROP DATABASE stops the relay of the database dropped.
# ---------------------------------------------------------------------
sql(q{CREATE DATABASE other});
$node->safe_psql('other', q{CREATE EXTENSION dlsm; LISTEN anything});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm relay' AND datname = 'other'}),
	'a LISTEN in another database starts its relay');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE other');
is($ret, 0, "DROP DATABASE of a database with a relay works $err");
sleep 2;
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm relay'}),
	'1', 'its relay is not restarted');

# ---------------------------------------------------------------------
# dlsm.notify_relay off (the default): a LISTEN in a new database starts
# no relay, and the producer notifies in its own commit.
# ---------------------------------------------------------------------
sql(q{ALTER SYSTEM SET dlsm.notify_relay = off; SELECT pg_reload_conf()});
sql(q{CREATE DATABASE third});
$node->safe_psql('third', q{SET client_min_messages = error; CREATE EXTENSION dlsm; SELECT dlsm_create_queue('rq')});
my $off_listener = $node->background_psql('third');
$off_listener->query_safe('LISTEN rq');
my $off_producer = $node->background_psql('third');
my $off_pid = $off_producer->query_safe('SELECT pg_backend_pid()');
$off_producer->query_safe(q{SELECT dlsm_enqueue('rq', 'off')});
@pids = wait_notified($off_listener, 10);
is_deeply(\@pids, [$off_pid], 'dlsm.notify_relay off: the producer notifies');
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm relay' AND datname = 'third'}),
	'0', '... and no relay starts');
$off_listener->quit;
$off_producer->quit;
$listener->quit;
$producer->quit;

# ---------------------------------------------------------------------
# Without preloading: the producer's transaction notifies, as before.
# ---------------------------------------------------------------------
$node->stop;
my $plain = PostgreSQL::Test::Cluster->new('plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', q{SET client_min_messages = error; CREATE EXTENSION dlsm; SELECT dlsm_create_queue('rq')});
my $plain_listener = $plain->background_psql('postgres');
$plain_listener->query_safe('LISTEN rq');
my $plain_producer = $plain->background_psql('postgres');
my $producer_pid = $plain_producer->query_safe('SELECT pg_backend_pid()');
$plain_producer->query_safe(q{SELECT dlsm_enqueue('rq', 'plain')});
@pids = wait_notified($plain_listener, 10);
is_deeply(\@pids, [$producer_pid], 'not preloaded: the producer notifies');
is($plain->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm relay'}),
	'0', '... and no relay runs');
$plain_listener->quit;
$plain_producer->quit;
$plain->stop;

done_testing();
