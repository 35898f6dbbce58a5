# Copyright (c) 2026, dlsm developers
#
# The reaper: leased claims left to expire go back to new within the reap
# interval, with their attempts counted, then to error once max_attempts
# is spent; the old claimant's late settle or heartbeat fails with 55000;
# a heartbeat keeps a lease alive, and a row locked by a live transaction
# is not reaped.  NOTIFY dlsm, 'reap' and the creation of a queue wake the
# worker (it does not listen); a reload (SIGHUP) changes
# dlsm.reap_interval.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval usleep);

my $node = dlsm_node('reaper', qq{
dlsm.reap_interval = 200
});

ok(install_dlsm($node), 'the worker runs');

$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('lq', max_attempts => 3);
-- every move the reaper makes, with the time it made it
CREATE TABLE reap_log (id bigint, lease_until timestamptz, status text,
	attempts int, detail text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION log_reap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.status = 'in-progress' AND NEW.status <> 'in-progress'
	   AND NEW.detail LIKE 'lease of process %' THEN
		INSERT INTO reap_log (id, lease_until, status, attempts, detail)
		VALUES (NEW.id, OLD.lease_until, NEW.status, NEW.attempts, NEW.detail);
	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER log_reap AFTER UPDATE ON lq
	FOR EACH ROW EXECUTE FUNCTION log_reap();
-- the SQLSTATE and message of a settle or heartbeat, or its result
CREATE FUNCTION try_settle(q regclass, p uuid) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN dlsm_settle(q, p)::text;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE FUNCTION try_heartbeat(q regclass, p uuid) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN dlsm_heartbeat(q, p, '1 h')::text;
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
-- how many reaping passes the worker made over a window, and the median
-- time between them, in ms
CREATE FUNCTION reap_passes(seconds float8, OUT passes int, OUT median_ms float8)
LANGUAGE plpgsql AS $$
DECLARE
	seen timestamptz[] := '{}';
	t timestamptz;
	stop timestamptz := clock_timestamp() + make_interval(secs => seconds);
BEGIN
	WHILE clock_timestamp() < stop LOOP
		SELECT last_reap_at INTO t FROM dlsm_worker_status
		 WHERE database = current_database();
		IF t IS NOT NULL AND (cardinality(seen) = 0 OR seen[cardinality(seen)] <> t) THEN
			seen := seen || t;
		END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
	passes := cardinality(seen) - 1;	-- the first one seen is older
	SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) INTO median_ms
	  FROM (SELECT extract(epoch FROM seen[i] - seen[i - 1]) * 1000 AS d
			  FROM generate_series(2, cardinality(seen)) i) s;
END $$;
});

sub status
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sub worker_counter
{
	my ($column) = @_;
	return status(
		"SELECT $column FROM dlsm_worker_status WHERE database = 'postgres'");
}

# ---------------------------------------------------------------------
# A lease left to expire: reaped within the interval, attempts counted,
# error after max_attempts, the old claimant's settle fails with 55000.
# ---------------------------------------------------------------------
my $id = status(q{SELECT dlsm_enqueue('lq', 'a')});
my @claimants;
for my $attempt (1 .. 3)
{
	my $p = status(
		q{SELECT process_id FROM dlsm_claim('lq', lease => '1 s')});
	like($p, qr/^[0-9a-f-]{36}$/, "claim $attempt with a lease of 1 s");
	push @claimants, $p;
	is( status("SELECT status, attempts FROM lq WHERE id = $id"),
		"in-progress|$attempt",
		"claim $attempt: in progress, attempt $attempt counted");
	ok( $node->poll_query_until(
			'postgres', "SELECT count(*) = $attempt FROM reap_log"),
		"lease $attempt reaped");
	my $expect = $attempt < 3 ? 'new' : 'error';
	is( status(
			qq{SELECT status, attempts FROM lq WHERE id = $id}),
		"$expect|$attempt",
		"after lease $attempt: $expect, $attempt attempts");
	my ($delay, $row) = split /\|/, status(
		qq{SELECT round(extract(epoch FROM at - lease_until) * 1000),
				  detail LIKE 'lease of process $p expired at %'
		   FROM reap_log ORDER BY at DESC LIMIT 1});
	ok($delay >= 0, "lease $attempt not reaped before it expired ($delay ms)");
	# reap_interval 200 ms; the margin absorbs a loaded machine
	cmp_ok($delay, '<', 200 + 2000,
		"lease $attempt reaped within the reap interval plus a margin");
	is($row, 't', "the detail names process $attempt and its lease");
	note "lease $attempt reaped $delay ms after it expired";

	like(
		status(qq{SELECT try_settle('lq', '$p')}),
		qr/^55000: process id $p holds no request in progress/,
		"the late settle of claimant $attempt fails with 55000");
	like(
		status(qq{SELECT try_heartbeat('lq', '$p')}),
		qr/^55000: /,
		"the late heartbeat of claimant $attempt fails with 55000");
}
is( status(
		qq{SELECT status, attempts, settled_at IS NOT NULL,
				  detail LIKE '%retries exhausted after 3 attempts%'
		   FROM lq WHERE id = $id}),
	'error|3|t|t',
	'error after max_attempts (3), settled, with the reason');
is(status(q{SELECT count(*) FROM dlsm_claim('lq')}),
	'0', 'an errored request is not claimed again');
cmp_ok(worker_counter('reaped'), '>=', 3, 'the worker counted its reaps');

# ---------------------------------------------------------------------
# A heartbeat keeps a lease; a row locked by a live transaction (its
# claimant settling it) is not reaped.
# ---------------------------------------------------------------------
status(q{SELECT dlsm_enqueue('lq', 'b'); SELECT dlsm_enqueue('lq', 'c')});
my $pb = status(
	q{SELECT process_id FROM dlsm_claim('lq', lease => '1 s')});
my $pc = status(
	q{SELECT process_id FROM dlsm_claim('lq', lease => '1 s')});
like(status(qq{SELECT try_heartbeat('lq', '$pb')}),
	qr/^\d{4}-/, 'a heartbeat in time extends the lease');

my $settler = $node->background_psql('postgres');
$settler->query_safe(
	q{BEGIN; SELECT 1 FROM lq WHERE entity = 'c' FOR UPDATE});
# both leases were of 1 s; let them pass, and several reaping passes
usleep(2_500_000);
is( status(
		qq{SELECT string_agg(entity || ':' || status, ',' ORDER BY entity)
		   FROM lq WHERE entity IN ('b', 'c')}),
	'b:in-progress,c:in-progress',
	'neither the heartbeated lease nor the locked row was reaped');
is($settler->query_safe(qq{SELECT dlsm_settle('lq', '$pc'); COMMIT}),
	'1', 'the claimant holding the row settles it, late but not lost');
is(status(q{SELECT status FROM lq WHERE entity = 'c'}),
	'complete', 'the locked row ends complete');
$settler->quit;
is(status(qq{SELECT dlsm_settle('lq', '$pb')}),
	'1', 'the heartbeated claim settles');

# ---------------------------------------------------------------------
# SIGHUP: a long reap interval; notifications wake the worker
# ---------------------------------------------------------------------
my $passes = status(q{SELECT passes FROM reap_passes(1.0)});
cmp_ok($passes, '>=', 3, "reap_interval 200 ms: $passes passes in 1 s");

status(q{ALTER SYSTEM SET dlsm.reap_interval = '30s'; SELECT pg_reload_conf()});
# the reload makes a pass at once, then none for 30 s
ok( $node->poll_query_until(
		'postgres',
		q{SELECT clock_timestamp() - last_reap_at > '1.5 s'
		  FROM dlsm_worker_status WHERE database = current_database()}),
	'after the reload to 30 s the worker stops reaping every 200 ms');
is(status(q{SELECT passes FROM reap_passes(1.5)}),
	'0', 'reap_interval 30 s: no pass in 1.5 s');

# the worker does not listen: a queue created while it sleeps (30 s
# interval) is served at once, because the creation's commit asks it to
# read the registry again (shared memory and its latch); its handler runs
# on the enqueue's commit
status(q{
SELECT dlsm_create_queue('hq2');
CREATE TABLE handled2 (id bigint);
CREATE FUNCTION h2(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO handled2 SELECT unnest(ids) $$;
SELECT dlsm_set_handler('hq2', 'h2');
});
my $wakeups = worker_counter('wakeups');
status(q{SELECT dlsm_enqueue('hq2', 'x')});
# (the next pass would come 30 s later: 15 s tell them apart under load)
my $took = poll_within($node, 'postgres',
	q{SELECT count(*) = 1 FROM handled2}, 15);
ok(defined $took,
	'a queue created while the worker sleeps is handled at once (registry read on request)');
cmp_ok(worker_counter('wakeups'), '>', $wakeups,
	'the wakeups counter grew (latch)');

# an expired lease waits for the next pass, or for NOTIFY dlsm, 'reap'
status(q{SELECT dlsm_enqueue('lq', 'd')});
my $pd = status(
	q{SELECT process_id FROM dlsm_claim('lq', lease => '500 ms')});
usleep(2_000_000);
is(status(q{SELECT status FROM lq WHERE entity = 'd'}),
	'in-progress', 'with a 30 s interval an expired lease is not reaped yet');
my $reaped = worker_counter('reaped');
$wakeups = worker_counter('wakeups');
my $notified_at = status(q{SELECT clock_timestamp(); NOTIFY dlsm, 'reap'});
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'new' FROM lq WHERE entity = 'd'}),
	q{NOTIFY dlsm, 'reap' reaps it});
my $latency = status(
	qq{SELECT round(extract(epoch FROM at - '$notified_at') * 1000)
	   FROM reap_log WHERE detail LIKE '%$pd%'});
cmp_ok($latency, '<', 5000,
	"reaped $latency ms after the NOTIFY, long before the 30 s pass");
note "NOTIFY dlsm, 'reap' to reap: $latency ms";
cmp_ok(worker_counter('reaped'), '>', $reaped, 'the reaped counter grew');
cmp_ok(worker_counter('wakeups'), '>', $wakeups, 'the wakeups counter grew');

# ---------------------------------------------------------------------
# SIGHUP back to a short interval: leases are reaped quickly again
# ---------------------------------------------------------------------
status(q{ALTER SYSTEM SET dlsm.reap_interval = 100; SELECT pg_reload_conf()});
ok( $node->poll_query_until(
		'postgres', q{SELECT passes >= 3 FROM reap_passes(0.5)}),
	'after the reload to 100 ms the worker reaps often again');
my ($passes100, $median100) =
  split /\|/, status(q{SELECT passes, round(median_ms) FROM reap_passes(1.0)});
cmp_ok($median100, '<', 500,
	"reap_interval 100 ms: $passes100 passes in 1 s, median $median100 ms apart");

is( status(
		q{SELECT dlsm_settle('lq', process_id) FROM dlsm_claim('lq')
		  WHERE entity = 'd'}),
	'1',
	'the reaped request is claimed again and settled');
status(q{SELECT dlsm_enqueue('lq', 'e' || g) FROM generate_series(1, 5) g});
is( status(
		q{SELECT string_agg(entity, ',' ORDER BY entity)
		  FROM dlsm_claim('lq', lease => '500 ms', units => 5)}),
	'e1,e2,e3,e4,e5',
	'five claims with a lease of 500 ms');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 5 FROM reap_log r JOIN lq USING (id)
		  WHERE lq.entity LIKE 'e%'}),
	'five short leases reaped');
my ($max100, $median_reap100) = split /\|/, status(
	q{SELECT round(max(d)), round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d))
	  FROM (SELECT extract(epoch FROM r.at - r.lease_until) * 1000 d
			FROM reap_log r JOIN lq USING (id) WHERE lq.entity LIKE 'e%') s});
cmp_ok($max100, '<', 100 + 1500,
	"reap_interval 100 ms: reaped at most $max100 ms after expiry");
note "reap_interval 100 ms: expiry to reap median $median_reap100 ms, max $max100 ms";

# and 1 s: about one pass a second
status(q{ALTER SYSTEM SET dlsm.reap_interval = '1s'; SELECT pg_reload_conf()});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT clock_timestamp() - last_reap_at > '500 ms'
		  FROM dlsm_worker_status WHERE database = current_database()}),
	'after the reload to 1 s passes are further apart');
my ($passes1000, $median1000) =
  split /\|/, status(q{SELECT passes, round(median_ms) FROM reap_passes(3.5)});
ok( $passes1000 >= 2 && $passes1000 <= 5 && $median1000 >= 900
	  && $median1000 < 2500,
	"reap_interval 1 s: $passes1000 passes in 3.5 s, median $median1000 ms apart");

$node->stop;
done_testing();
