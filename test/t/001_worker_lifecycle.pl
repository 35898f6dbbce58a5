# Copyright (c) 2026, dlsm developers
#
# The worker's life: started by the launcher, one per database, restarted
# after kill -9 (the postmaster's crash-restart, then the launcher); after
# a worker, its reaper or the launcher exits, the next one takes its slot
# (each clears its own pid at exit, none is probed by signal); and
# what a crash or an immediate shutdown leaves behind: rows claimed in an
# open transaction are new again, leases committed before the crash
# survive it and are reaped once they expire, nothing is lost.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval usleep);

my $node = dlsm_node('lifecycle', qq{
dlsm.reap_interval = 200
restart_after_crash = on
});

my $workers_q = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'postgres'};
my $one_worker_q = q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'postgres'};

sub worker_pid
{
	return $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker' AND datname = 'postgres'});
}

# The launcher runs from the start; no worker until the extension exists.
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm launcher'}),
	'the launcher runs');
# at startup the launcher tries every database; this one has no dlsm yet
ok( $node->wait_for_log(
		qr/dlsm worker for database "postgres" stops\n.*DETAIL:  The extension dlsm is not installed in that database/
	),
	'the worker of a database without the extension stops');
is($node->safe_psql('postgres', $workers_q),
	'0', 'no worker in a database without the extension');

$node->safe_psql(
	'postgres', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('jobs', max_attempts => 10);
SELECT dlsm_create_queue('hq');
CREATE TABLE done (request_id bigint PRIMARY KEY, entity text,
				   handled_by int DEFAULT pg_backend_pid());
CREATE FUNCTION handle(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO done (request_id, entity) SELECT i, entity FROM unnest(ids) i $$;
SELECT dlsm_set_handler('hq', 'handle');
-- the largest number of dlsm processes seen over a window, sampled
CREATE FUNCTION max_dlsm_procs(btype text, samples int, step float8)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE m bigint := 0; c bigint;
BEGIN
	FOR i IN 1 .. samples LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT count(*) INTO c FROM pg_stat_activity
		 WHERE backend_type = btype AND datname IS NOT DISTINCT FROM
			   CASE WHEN btype = 'dlsm worker' THEN current_database() END;
		m := greatest(m, c);
		PERFORM pg_sleep(step);
	END LOOP;
	RETURN m;
END $$;
});

# CREATE EXTENSION pokes the launcher at commit: a worker starts within
# seconds, even though the launcher had already tried this database at
# startup, found no extension and paused it for 60 s (fixed in c0a447b:
# the poke used to leave that pause in place).
my $waited = poll_within($node, 'postgres', $one_worker_q, 15);
ok(defined $waited,
	'CREATE EXTENSION after the no-extension pause starts a worker within 15 s');
note 'worker after CREATE EXTENSION: '
  . (defined $waited ? sprintf('%.1f s', $waited) : 'not within 15 s');
ok($node->poll_query_until('postgres', $one_worker_q),
	'a worker runs once the database has the extension');
my $pid1 = worker_pid();
like($pid1, qr/^\d+$/, 'exactly one worker pid');
is( $node->safe_psql(
		'postgres', q{SELECT application_name FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker'}),
	'dlsm worker',
	'the worker sets its application_name');
# asleep, the launcher and the worker show wait events of dlsm's own name
# from PostgreSQL 17 on (src/waits.c), the bare Extension before
my ($launcher_wait, $worker_wait) =
  $node->pg_version >= 17
  ? ('DlsmLauncherMain', 'DlsmWorkerMain')
  : ('Extension', 'Extension');
ok( $node->poll_query_until(
		'postgres', qq{SELECT count(DISTINCT backend_type) = 2 FROM pg_stat_activity
		  WHERE wait_event_type = 'Extension' AND
				(backend_type, wait_event) IN (('dlsm launcher', '$launcher_wait'),
											  ('dlsm worker', '$worker_wait'))}),
	"asleep, the launcher waits on $launcher_wait, the worker on $worker_wait");
is( $node->safe_psql(
		'postgres', "SELECT database, pid FROM dlsm_worker_status"),
	"postgres|$pid1",
	'dlsm_worker_status shows the worker');

# the handler queue works before the crash
$node->safe_psql('postgres',
	q{SELECT dlsm_enqueue('hq', 'before-' || g) FROM generate_series(1, 10) g});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 10 FROM done}),
	'the handler runs before the crash');

# ---------------------------------------------------------------------
# kill -9 of the worker: the postmaster reinitializes, the launcher
# starts a new worker, exactly one, and it does its work.
# ---------------------------------------------------------------------
my $log_offset = -s $node->logfile;
kill 'KILL', $pid1 or die "could not kill $pid1: $!";

ok( $node->poll_query_until(
		'postgres',
		qq{SELECT count(*) = 1 AND bool_and(pid <> $pid1)
		   FROM pg_stat_activity
		   WHERE backend_type = 'dlsm worker' AND datname = 'postgres'}),
	'a new worker runs after kill -9 of the worker');
ok( $node->log_contains(
		qr/background worker "dlsm worker" \(PID $pid1\) was terminated by signal 9/,
		$log_offset),
	'the postmaster saw the worker killed');
ok( $node->log_contains(
		qr/all server processes terminated; reinitializing/, $log_offset),
	'the postmaster reinitialized');
my $pid2 = worker_pid();
is( $node->safe_psql('postgres', 'SELECT pid FROM dlsm_worker_status'),
	$pid2, 'dlsm_worker_status shows the new worker');
is( $node->safe_psql(
		'postgres',
		q{SELECT used FROM dlsm_shared_tables WHERE name = 'worker slots'}),
	'1', 'after the crash-restart the new worker holds the one slot');

# Over a launcher rescan (5 s) and pokes, never a second worker.
$node->safe_psql('postgres', 'SELECT dlsm_launcher_wake()');
is( $node->safe_psql('postgres',
		q{SELECT max_dlsm_procs('dlsm worker', 70, 0.1)}),
	'1',
	'never more than one worker for the database after the crash');
is( $node->safe_psql('postgres',
		q{SELECT max_dlsm_procs('dlsm launcher', 10, 0.05)}),
	'1', 'one launcher after the crash');
is(worker_pid(), $pid2, 'the new worker kept running');

# work resumes: the handler queue is handled, a lease gets reaped
$node->safe_psql('postgres',
	q{SELECT dlsm_enqueue('hq', 'after-' || g) FROM generate_series(1, 10) g});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 20 FROM done}),
	'the handler runs after the crash');
is( $node->safe_psql(
		'postgres',
		qq{SELECT count(DISTINCT handled_by) FILTER (WHERE done.entity LIKE 'after-%'),
				  bool_and(handled_by = $pid2) FILTER (WHERE done.entity LIKE 'after-%'),
				  count(*) FILTER (WHERE status = 'complete')
		   FROM done JOIN hq ON hq.id = done.request_id}),
	'1|t|20',
	'the new worker handled the new requests, all complete');

$node->safe_psql(
	'postgres', q{
SELECT dlsm_enqueue('jobs', 'lease-after-crash');
SELECT count(*) FROM dlsm_claim('jobs', lease => '300 ms');
});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT status = 'new' AND detail LIKE 'lease of process % expired%'
		  FROM jobs WHERE entity = 'lease-after-crash'}),
	'the new worker reaps an expired lease');

# ---------------------------------------------------------------------
# kill -9 of a client backend holding a transactional claim
# ---------------------------------------------------------------------
$node->safe_psql('postgres',
	q{SELECT dlsm_create_queue('txq');
	  SELECT dlsm_enqueue('txq', 'tx-' || g) FROM generate_series(1, 5) g});
my $client = $node->background_psql('postgres', on_error_stop => 0);
my $client_pid = $client->query_safe('SELECT pg_backend_pid()');
$client->query_safe(
	q{BEGIN; SELECT count(*) FROM dlsm_claim('txq', units => 5)});
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM
		  (SELECT id FROM txq FOR UPDATE SKIP LOCKED) s}),
	'0',
	'the client holds its five claimed rows');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM dlsm_claim('txq', units => 5)}),
	'0',
	'nobody else can claim them meanwhile');

$pid2 = worker_pid();
$log_offset = -s $node->logfile;
kill 'KILL', $client_pid or die "could not kill $client_pid: $!";
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT count(*) = 1 AND bool_and(pid <> $pid2)
		   FROM pg_stat_activity
		   WHERE backend_type = 'dlsm worker' AND datname = 'postgres'}),
	'the cluster restarted after kill -9 of a client, with a new worker');
ok( $node->log_contains(
		qr/\(PID $client_pid\) was terminated by signal 9/, $log_offset),
	'the postmaster saw the client killed');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*), count(*) FILTER (WHERE status = 'new'
			AND process_id IS NULL AND attempts = 0)
		  FROM txq}),
	'5|5',
	"the killed client's claimed rows are new again, untouched");
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM dlsm_claim('txq', units => 10)}),
	'5',
	'and can be claimed again');
eval { $client->quit; };

# ---------------------------------------------------------------------
# SIGTERM of the worker (pg_terminate_backend): a clean exit, the launcher
# starts another one, no crash-restart.
# ---------------------------------------------------------------------
my $pid3 = worker_pid();
# past the launcher's 1 s pause between two starts of a worker
ok( $node->poll_query_until(
		'postgres',
		q{SELECT clock_timestamp() - started_at > '1.5 s'
		  FROM dlsm_worker_status WHERE database = 'postgres'}),
	'the worker has run for a while');
$log_offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid3)"),
	't', 'the worker can be terminated');
my $new_worker_q = qq{SELECT count(*) = 1 AND bool_and(pid <> $pid3)
	FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'postgres'};
# the postmaster tells the launcher (bgw_notify_pid): no need to wait for
# its next look at the databases, 5 s later
$waited = poll_within($node, 'postgres', $new_worker_q, 4);
ok(defined $waited, 'the launcher starts a new worker promptly after SIGTERM');
note 'new worker after SIGTERM: '
  . (defined $waited ? sprintf('%.1f s', $waited) : 'not within 4 s');
ok($node->poll_query_until('postgres', $new_worker_q),
	'one new worker after SIGTERM');
ok( !$node->log_contains(qr/reinitializing/, $log_offset),
	'SIGTERM of the worker is no crash');

# ---------------------------------------------------------------------
# Each process clears its own pid from the shared state as it exits, and
# the next one takes the slot on that alone: no pid is probed with a
# signal, since PIDs are reused (pool.c, "Liveness").  After the SIGTERM
# above: the database keeps one slot, its new worker in it.  Then the
# reaper, and the launcher, each ended in turn: the next one attaches.
# ---------------------------------------------------------------------
my $pid_after = worker_pid();
is( $node->safe_psql(
		'postgres', q{SELECT count(*), min(pid) FROM dlsm_worker_status}),
	"1|$pid_after",
	'after the SIGTERM: one row in dlsm_worker_status, the new worker');
is( $node->safe_psql(
		'postgres',
		q{SELECT used FROM dlsm_shared_tables WHERE name = 'worker slots'}),
	'1', 'after the SIGTERM: the new worker took the slot again');

my $reaper_q = q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'dlsm reaper' AND datname = 'postgres'};
ok( $node->poll_query_until(
		'postgres', "SELECT count(*) = 1 FROM ($reaper_q) r"),
	'a reaper runs beside the worker of the handler queue');
my $reaper1 = $node->safe_psql('postgres', $reaper_q);
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($reaper1)"),
	't', 'the reaper can be terminated');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 AND bool_and(pid <> $reaper1) FROM ($reaper_q) r"),
	'the worker starts a new reaper, which takes the slot again');
$node->safe_psql('postgres',
	q{SELECT dlsm_enqueue('jobs', 'lease-after-reaper');
	  SELECT count(*) FROM dlsm_claim('jobs', lease => '300 ms')});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT status = 'new' FROM jobs WHERE entity = 'lease-after-reaper'}),
	'the new reaper (or its worker) reaps an expired lease');

my $launcher_q = q{SELECT pid FROM pg_stat_activity
	WHERE backend_type = 'dlsm launcher'};
my $launcher1 = $node->safe_psql('postgres', $launcher_q);
$log_offset = -s $node->logfile;
is($node->safe_psql('postgres', "SELECT pg_terminate_backend($launcher1)"),
	't', 'the launcher can be terminated');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 AND bool_and(pid <> $launcher1) FROM ($launcher_q) l"),
	'the postmaster starts a new launcher');
ok($node->wait_for_log(qr/dlsm launcher started/, $log_offset),
	'the new launcher took the launcher\'s place');
ok(!$node->log_contains(qr/dlsm launcher already running/, $log_offset),
	'no launcher was refused');
is( $node->safe_psql('postgres',
		q{SELECT max_dlsm_procs('dlsm worker', 30, 0.1)}),
	'1',
	'the new launcher starts no second worker beside the running one');
is(worker_pid(), $pid_after, 'the worker kept its slot');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid_after)");
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT count(*) = 1 AND bool_and(pid <> $pid_after)
		   FROM pg_stat_activity
		   WHERE backend_type = 'dlsm worker' AND datname = 'postgres'}),
	'the new launcher starts the next worker, which takes the slot again');
ok( !$node->log_contains(qr/reinitializing/, $log_offset),
	'the reaper, the launcher and the worker ended without a crash');

# ---------------------------------------------------------------------
# kill -9 of the launcher: a crash-restart too, then launcher and worker
# ---------------------------------------------------------------------
my $launcher = $node->safe_psql('postgres',
	q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm launcher'});
my $pid4 = worker_pid();
kill 'KILL', $launcher or die "could not kill $launcher: $!";
ok( $node->poll_query_until(
		'postgres',
		qq{SELECT count(*) FILTER (WHERE backend_type = 'dlsm launcher') = 1
			  AND count(*) FILTER (WHERE backend_type = 'dlsm worker') = 1
			  AND bool_and(pid NOT IN ($launcher, $pid4))
		   FROM pg_stat_activity
		   WHERE backend_type IN ('dlsm launcher', 'dlsm worker')}),
	'after kill -9 of the launcher: a new launcher and a new worker');

# ---------------------------------------------------------------------
# immediate shutdown with leases outstanding, then restart
# ---------------------------------------------------------------------
$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('shut');
SELECT dlsm_enqueue('shut', 'e' || g, payload => jsonb_build_object('g', g))
  FROM generate_series(1, 100) g;
-- 10 short leases, 10 long leases, 10 settled complete
SELECT count(*) FROM dlsm_claim('shut', lease => '4 s', units => 10);
SELECT count(*) FROM dlsm_claim('shut', lease => '1 h', units => 10);
SELECT count(dlsm_settle('shut', c.process_id))
  FROM dlsm_claim('shut', lease => '1 h', units => 10) c;
});
my $before = $node->safe_psql(
	'postgres', q{
SELECT count(*), sum((payload->>'g')::int),
	   count(*) FILTER (WHERE status = 'new'),
	   count(*) FILTER (WHERE status = 'in-progress'),
	   count(*) FILTER (WHERE status = 'complete')
FROM shut});
is($before, '100|5050|70|20|10', 'the queue before the shutdown');

# 10 more claimed in a transaction that is open at the shutdown
my $open = $node->background_psql('postgres', on_error_stop => 0);
$open->query_safe(
	q{BEGIN; SELECT count(*) FROM dlsm_claim('shut', lease => '1 h', units => 10)});

$node->stop('immediate');
eval { $open->quit; };
$node->start;

is( $node->safe_psql(
		'postgres', q{SELECT count(*), sum((payload->>'g')::int),
		  count(*) FILTER (WHERE status = 'complete') FROM shut}),
	'100|5050|10',
	'nothing lost in the immediate shutdown');
ok($node->poll_query_until('postgres', $one_worker_q),
	'the worker runs after the restart');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) FILTER (WHERE status = 'new') = 80
			 AND count(*) FILTER (WHERE status = 'in-progress') = 10
			 AND count(*) FILTER (WHERE status = 'complete') = 10
		  FROM shut}),
	'after the restart: expired leases reaped, long leases kept');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE attempts = 1 AND detail LIKE 'lease of process % expired%'),
	   count(*) FILTER (WHERE attempts = 0 AND process_id IS NULL),
	   count(*) FILTER (WHERE status = 'in-progress' AND lease_until > now() + '50 min')
FROM shut}),
	'10|70|10',
	'10 reaped with one attempt, 70 never claimed (60 + 10 rolled back), 10 still leased');

$node->stop;
done_testing();
