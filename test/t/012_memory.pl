# Copyright (c) 2026, dlsm developers
#
# Memory stays flat: 100,000 claim and settle cycles, and 1,000
# invalidations of the registry and of a queue (each followed by a call
# that looks the queue up again), in one backend and in the worker, leave
# the process's memory where a warm-up left it.  A backend reads its own
# contexts from pg_backend_memory_contexts; the worker's are logged by
# pg_log_backend_memory_contexts.  The figures are printed as FIGURE lines.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# growth allowed after the warm-up (catalog caches and message buffers
# move by a few hundred kB): far below a leak of 8 bytes per cycle (800 kB)
# or of one plan (~4 kB) per invalidation (4 MB)
my $slack = 256 * 1024;

my $node = dlsm_node('memory', "dlsm.reap_interval = 1000\ndlsm.handler_batch = 1000\n");
ok(install_dlsm($node), 'the worker runs');
$node->safe_psql('postgres', q{
SELECT dlsm_create_queue('mq');
SELECT dlsm_create_queue('hq');
CREATE ROLE bob;
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS 'SELECT';
CREATE PROCEDURE cycles(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		PERFORM dlsm_enqueue('mq', 'e' || (i % 100), 'job');
		PERFORM dlsm_settle('mq', c.process_id) FROM dlsm_claim('mq') c;
		COMMIT;
	END LOOP;
END $$;
CREATE PROCEDURE invalidations(n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		EXECUTE CASE WHEN i % 2 = 0 THEN 'GRANT SELECT ON dlsm_queues TO bob'
					 ELSE 'REVOKE SELECT ON dlsm_queues FROM bob' END;
		EXECUTE CASE WHEN i % 2 = 0 THEN 'GRANT SELECT ON mq TO bob'
					 ELSE 'REVOKE SELECT ON mq FROM bob' END;
		PERFORM dlsm_enqueue('mq', 'inv', 'job');
		PERFORM dlsm_settle('mq', c.process_id) FROM dlsm_claim('mq') c;
		COMMIT;
	END LOOP;
END $$;
});

# ---------------------------------------------------------------------
# One backend
# ---------------------------------------------------------------------
my $session = $node->background_psql('postgres');
# quiet: query_safe fails on any stderr, and the queue may grow without
# statistics (a NOTICE) until autovacuum analyses it
$session->query_safe('SET client_min_messages = warning');
my $total = q{SELECT sum(total_bytes) FROM pg_backend_memory_contexts};

$session->query_safe('CALL cycles(5000)');
$session->query_safe('CALL invalidations(100)');
my $before = $session->query_safe($total);
$session->query_safe('CALL cycles(100000)');
my $after_cycles = $session->query_safe($total);
$session->query_safe('CALL invalidations(1000)');
my $after_inval = $session->query_safe($total);
diag("FIGURE backend memory: $before bytes after the warm-up, $after_cycles after "
	  . "100,000 cycles, $after_inval after 1,000 invalidations");
ok($after_cycles - $before < $slack,
	'100,000 claim and settle cycles leave a backend\'s memory flat');
ok($after_inval - $after_cycles < $slack,
	'1,000 invalidations leave a backend\'s memory flat');
is($session->query_safe(q{SELECT count(*) FROM mq WHERE status <> 'complete'}),
	'0', 'every cycle settled its request');
$session->quit;

# ---------------------------------------------------------------------
# The worker
# ---------------------------------------------------------------------

# The worker's memory, in bytes, as it logs it when asked, at rest.  The
# worker may be between passes when polled and inside one (its reaping
# pass runs every second) when it serves the request: its log then shows
# an executor's or SPI's contexts, and it is asked again.
sub worker_memory
{
	my $pid = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm worker'});
	for my $try (1 .. 50)
	{
		# measured at rest, waiting on its latch between passes: inside a
		# pass its transaction's memory is still there
		$node->poll_query_until('postgres',
			"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid")
		  or die "the dlsm worker never came to rest";
		my $offset = -s $node->logfile;
		$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
		$node->wait_for_log(qr/\[$pid\].*Grand total: \d+ bytes/, $offset);
		my $log = slurp_file($node->logfile, $offset);
		my ($bytes) = $log =~ /\[$pid\].*Grand total: (\d+) bytes/;
		return $bytes unless $log =~ /\[$pid\].*; (?:SPI Proc|ExecutorState): /;
		diag("the worker was inside a pass when it logged its memory "
			  . "($bytes bytes, try $try)");
		# a context of a pass that stays at rest is a leak too: counted
		return $bytes if $try == 50;
	}
}

# Enqueue n requests into the handler queue and wait for the worker.
sub handle
{
	my ($n) = @_;
	$node->safe_psql('postgres',
		"SELECT count(dlsm_enqueue('hq', 'w' || g, 'job')) FROM generate_series(1, $n) g");
	return $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM hq WHERE status <> 'complete'});
}

$node->safe_psql('postgres', q{SELECT dlsm_set_handler('hq', 'h')});
ok(handle(5000), 'the worker handles a warm-up of 5,000 units');
$node->safe_psql('postgres', 'CALL invalidations(100)');
$node->safe_psql('postgres', q{NOTIFY dlsm, 'reap'});
my $w_before = worker_memory();
ok(handle(100000), 'the worker handles 100,000 units');
my $w_cycles = worker_memory();
$node->safe_psql('postgres', 'CALL invalidations(1000)');
$node->safe_psql('postgres', q{NOTIFY dlsm, 'reap'});
ok(handle(10), 'and more after 1,000 invalidations');
my $w_inval = worker_memory();
diag("FIGURE worker memory: $w_before bytes after the warm-up, $w_cycles after "
	  . "100,000 handled units, $w_inval after 1,000 invalidations");
ok($w_cycles - $w_before < $slack,
	'100,000 handled units leave the worker\'s memory flat');
ok($w_inval - $w_cycles < $slack,
	'1,000 invalidations leave the worker\'s memory flat');

$node->stop;
done_testing();
