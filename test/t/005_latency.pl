# Copyright (c) 2026, dlsm developers
#
# Latency figures, printed with note() for bench/README.md, each with a
# loose bound so that a regression shows:
#   - lease expiry to reap, median over 20 leases (reap_interval 1 s);
#   - enqueue commit to handler start, median and p99 over 200 enqueues;
#   - enqueue commit to a waiting dlsm_claim(wait => '10 s') returning,
#     median and p99 over 200 enqueues;
#   - pg_notification_queue_usage() during 100,000 NOTIFYs, with the
#     worker running and with it stopped (SIGSTOP): it does not listen,
#     so it never holds the queue back.
# Commit times come from track_commit_timestamp.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval usleep);

my $node = dlsm_node('latency', qq{
dlsm.reap_interval = 1000
track_commit_timestamp = on
});

ok(install_dlsm($node), 'the worker runs');
my $worker_pid = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm worker'});

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

# median, p99 and max, in ms, of the values "$expr" over "$from"
sub figures
{
	my ($expr, $from) = @_;
	return split /\|/, sql(
		qq{SELECT count(*),
			round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2),
			round(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)::numeric, 2),
			round(max(ms)::numeric, 2), round(min(ms)::numeric, 2)
		   FROM (SELECT extract(epoch FROM $expr) * 1000 AS ms FROM $from) s});
}

# ---------------------------------------------------------------------
# Lease expiry to reap.  With max_attempts 1 the reaper settles the row
# as error, and settled_at is the reap time.
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('rq', max_attempts => 1);
SELECT dlsm_enqueue('rq', 'r' || g) FROM generate_series(1, 20) g;
-- leases of 1.17 s to 4.46 s: expiries spread over the reaping passes
SELECT count(*) FROM generate_series(1, 20) g,
	LATERAL dlsm_claim('rq', lease => make_interval(secs => 1 + g * 0.173)) c;
});
is(sql(q{SELECT count(*) FROM rq WHERE status = 'in-progress'}),
	'20', '20 leases claimed');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 20 FROM rq WHERE status = 'error'}),
	'all 20 leases reaped');
my ($n, $median, $p99, $max, $min) =
  figures('settled_at - lease_until', 'rq');
cmp_ok($min, '>=', 0, 'no lease reaped before it expired');
cmp_ok($median, '<', 1000 + 1000,
	"median lease expiry to reap ($median ms) within the interval plus a margin");
cmp_ok($max, '<', 1000 + 3000, "slowest reap $max ms");
diag "FIGURE lease expiry -> reap (reap_interval 1 s, $n leases): "
  . "median $median ms, p99 $p99 ms, max $max ms";

# ---------------------------------------------------------------------
# Enqueue commit to handler start.  A procedure commits one enqueue every
# 20 ms and records its xid; the handler records when it starts.
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('hq');
CREATE TABLE produced (request_id bigint PRIMARY KEY, x xid8 NOT NULL);
CREATE TABLE started (request_id bigint PRIMARY KEY,
					  at timestamptz NOT NULL);
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO started SELECT i, clock_timestamp() FROM unnest(ids) i $$;
SELECT dlsm_set_handler('hq', 'h');
CREATE PROCEDURE produce(q regclass, n int, gap float8)
LANGUAGE plpgsql AS $$
DECLARE
	i bigint;
BEGIN
	FOR k IN 1 .. n LOOP
		i := dlsm_enqueue(q, 'p' || k);
		INSERT INTO produced VALUES (i, pg_current_xact_id());
		COMMIT;
		PERFORM pg_sleep(gap);
	END LOOP;
END $$;
CREATE VIEW handler_latency AS
	SELECT s.at - pg_xact_commit_timestamp(p.x::text::xid) AS latency
	FROM produced p JOIN started s USING (request_id);
});
sql(q{CALL produce('hq', 200, 0.02)});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 200 FROM started}),
	'the handler ran for all 200 requests');
($n, $median, $p99, $max, $min) = figures('latency', 'handler_latency');
is($n, 200, '200 latencies measured');
cmp_ok($min, '>=', 0, 'no handler started before its enqueue committed');
# a handler queue is woken by the commit itself, not by the 1 s timer
cmp_ok($median, '<', 200,
	"median enqueue commit to handler start: $median ms, well under reap_interval");
diag "FIGURE enqueue commit -> handler start ($n enqueues, one every 20 ms): "
  . "median $median ms, p99 $p99 ms, max $max ms";

# ---------------------------------------------------------------------
# Enqueue commit to a waiting claim returning.
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('wq');
CREATE TABLE claimed (request_id bigint PRIMARY KEY, at timestamptz NOT NULL);
CREATE TABLE enqueued (request_id bigint PRIMARY KEY, x xid8 NOT NULL);
-- wait (up to 10 s) until a session sleeps on dlsm's wake-up
CREATE FUNCTION wait_for_sleeper(p int) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE stop timestamptz := clock_timestamp() + '10 s';
BEGIN
	WHILE clock_timestamp() < stop LOOP
		PERFORM pg_stat_clear_snapshot();
		PERFORM 1 FROM pg_stat_activity
		 WHERE pid = p AND state = 'active'
		   AND wait_event_type = 'Extension' AND query LIKE '%dlsm_claim%'
		   -- a name of dlsm's own from 17 on (src/waits.c)
		   AND wait_event = CASE WHEN current_setting('server_version_num')::int >= 170000
								 THEN 'DlsmClaimWait' ELSE 'Extension' END;
		IF FOUND THEN RETURN true; END IF;
		PERFORM pg_sleep(0.001);
	END LOOP;
	RETURN false;
END $$;
});
my $waiter = $node->background_psql('postgres');
my $producer = $node->background_psql('postgres');
my $waiter_pid = $waiter->query_safe('SELECT pg_backend_pid()');
my $not_asleep = 0;
my $rounds = 200;
for my $k (1 .. $rounds)
{
	$waiter->query_until(qr/claiming\n/, qq{\\echo claiming
SELECT id || ',' || clock_timestamp() FROM dlsm_claim('wq', wait => '10 s');
});
	$not_asleep++
	  if $producer->query_safe("SELECT wait_for_sleeper($waiter_pid)") ne 't';
	$producer->query_safe(
		qq{SELECT dlsm_enqueue('wq', 'w$k') AS i, pg_current_xact_id() AS x \\gset
INSERT INTO enqueued VALUES (:i, :'x')});
	my $line = $waiter->query_until(qr/\n/, '');
	chomp $line;
	my ($id, $at) = split /,/, $line;
	$producer->query_safe(qq{INSERT INTO claimed VALUES ($id, '$at')});
}
$waiter->quit;
$producer->quit;
is($not_asleep, 0, 'the waiting claim was asleep before every enqueue');
is( sql(q{SELECT count(*) FROM claimed JOIN enqueued USING (request_id)}),
	$rounds, "each of $rounds waiting claims returned the request enqueued for it");
($n, $median, $p99, $max, $min) = figures(
	'c.at - pg_xact_commit_timestamp(e.x::text::xid)',
	'claimed c JOIN enqueued e USING (request_id)');
cmp_ok($min, '>=', 0, 'no claim returned before the enqueue committed');
# woken by the commit: far sooner than the 1 s recheck of a waiting claim
cmp_ok($median, '<', 100,
	"median enqueue commit to waiting claim return: $median ms");
diag "FIGURE enqueue commit -> waiting dlsm_claim returns ($n enqueues): "
  . "median $median ms, p99 $p99 ms, max $max ms";

# ---------------------------------------------------------------------
# The worker does not listen: it never holds back the cluster's
# notification queue, even stopped.  1,000 transactions of 100 NOTIFYs
# each, half on channel dlsm, half on a queue's channel, with the worker
# running and then with it stopped (SIGSTOP); the producer samples
# pg_notification_queue_usage() after each commit.  (It did listen before,
# and stopped it let the queue grow: 2e-4 and more.)
# ---------------------------------------------------------------------
sql(q{
CREATE TABLE usage_samples (run text, usage float8);
CREATE PROCEDURE notify_burst(run text, transactions int, per_transaction int)
LANGUAGE plpgsql AS $$
BEGIN
	FOR t IN 1 .. transactions LOOP
		FOR k IN 1 .. per_transaction LOOP
			PERFORM pg_notify(CASE WHEN k % 2 = 0 THEN 'dlsm' ELSE 'wq' END,
							  run || '-' || t || '-' || k);
		END LOOP;
		COMMIT;
		INSERT INTO usage_samples VALUES (run, pg_notification_queue_usage());
		COMMIT;
	END LOOP;
END $$;
});

my $start = [gettimeofday];
sql(q{CALL notify_burst('running', 1000, 100)});
my $burst_s = tv_interval($start);
my $max_usage = sql(
	q{SELECT max(usage) FROM usage_samples WHERE run = 'running'});
# 100,000 small notifications fill about 400 pages of 8 kB, 3.7e-4 of the
# queue; 1e-4 is about 100 pages
cmp_ok($max_usage, '<', 1e-4,
	"queue usage stayed near 0 with the worker running (max $max_usage)");
diag sprintf(
	"FIGURE pg_notification_queue_usage() over 100,000 NOTIFYs in %.1f s: "
	  . "max %.3g", $burst_s, $max_usage);

# Stop it only while it sleeps, never amid a pass: no reaping pass for an
# hour (1.5 s without one shows the reload is in effect).
sql(q{ALTER SYSTEM SET dlsm.reap_interval = '1h'; SELECT pg_reload_conf()});
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT clock_timestamp() - s.last_reap_at > '1.5 s'
			 AND a.wait_event_type = 'Extension'
		   FROM dlsm_worker_status s, pg_stat_activity a
		   WHERE s.database = 'postgres' AND a.pid = $worker_pid}),
	'the worker sleeps');
END { kill 'CONT', $worker_pid if $worker_pid; }
kill 'STOP', $worker_pid or die "could not stop the worker: $!";
sql(q{CALL notify_burst('stopped', 1000, 100)});
kill 'CONT', $worker_pid;
my $stopped_usage = sql(
	q{SELECT max(usage) FROM usage_samples WHERE run = 'stopped'});
cmp_ok($stopped_usage, '<', 1e-4,
	"with the worker stopped usage stays near 0: no listener holds it back ($stopped_usage)");
is( sql(q{SELECT count(*) FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker' AND pid = } . $worker_pid),
	'1', 'the same worker is still running');

$node->stop;
done_testing();
