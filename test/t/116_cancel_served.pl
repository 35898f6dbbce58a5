# Copyright (c) 2026, dlsm developers
#
# A cancel sent to the worker is served, never lost nor left to fall on
# what comes next (issue 41, blocker 2): pg_cancel_backend() during a
# handler's call fails that call alone ("canceling statement due to user
# request", the unit back to new with that detail, the next unit handled
# by the same worker); during a reaping step's lock wait it fails that
# step alone; sent to a worker between steps it ends nothing.  After a
# handler that caught its own timeout's cancel, a cancel sent during its
# next call is served too.  The worker that ends a step that went on
# past its cancel ends by its own terminate signal, and says why.  A
# cancel sent to the launcher or to a relay between its passes ends
# nothing either (they used to exit with code 1, and come back).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('cancel', qq{
dlsm.reap_interval = 200
dlsm.step_timeout = '60s'
dlsm.lock_timeout = '60s'
dlsm.handler_timeout = '60s'
dlsm.max_handler_timeout = '60s'
});
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sub worker_pid
{
	return sql(q{SELECT pid FROM pg_stat_activity
		WHERE backend_type = 'dlsm worker' AND datname = 'postgres'});
}

# wait until the worker (or its reaper) waits on $event; its pid
sub waiting_on
{
	my ($event, $types) = @_;
	$types //= q{'dlsm worker', 'dlsm reaper'};
	my $pid;
	ok( $node->poll_query_until('postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type IN ($types) AND datname = 'postgres' AND wait_event = '$event'}),
		"a worker waits on $event");
	return sql(qq{SELECT pid FROM pg_stat_activity
 WHERE backend_type IN ($types) AND datname = 'postgres' AND wait_event = '$event'});
}

# the unit of entity in queue q failed once, with detail like reason, and
# waits a day before its retry
sub failed_once
{
	my ($q, $entity, $reason, $label) = @_;
	ok( $node->poll_query_until('postgres', qq{
SELECT status = 'new' AND attempts = 1 FROM $q WHERE entity = '$entity'}),
		$label);
	like(sql(qq{SELECT detail FROM $q WHERE entity = '$entity'}),
		$reason, "$entity: $reason");
	sql(qq{UPDATE $q SET run_at = now() + interval '1 day' WHERE entity = '$entity'});
}

sql(q{
CREATE TABLE calls (n serial, entity text, at timestamptz DEFAULT clock_timestamp());
SELECT dlsm_create_queue('hq');
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO calls (entity) VALUES (h.entity);
	IF h.entity LIKE 'sleep%' AND kind = 'create' THEN PERFORM pg_sleep(30); END IF;
END $$;
SELECT dlsm_set_handler('hq', 'h');
});
my $worker = worker_pid();

# 1. a cancel during a handler's call
sql(q{SELECT dlsm_enqueue('hq', 'sleep1', 'create')});
my $pid = waiting_on('PgSleep', q{'dlsm worker'});
is($pid, $worker, 'the call runs in the worker');
my $offset = -s $node->logfile;
sql("SELECT pg_cancel_backend($pid)");
failed_once('hq', 'sleep1', qr/canceling statement due to user request/,
	'the cancelled call\'s unit is back to new');
sql(q{SELECT dlsm_enqueue('hq', 'after1', 'create')});
ok($node->poll_query_until('postgres',
		q{SELECT status = 'complete' FROM hq WHERE entity = 'after1'}),
	'the next unit is handled');
is(worker_pid(), $worker, 'by the same worker');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/terminating background worker|exited with exit code/, 'the cancel ends no process');

# 2. a cancel between steps ends nothing
ok( $node->poll_query_until('postgres', qq{
SELECT state = 'idle' FROM pg_stat_activity WHERE pid = $worker}),
	'the worker waits between steps');
$offset = -s $node->logfile;
sql("SELECT pg_cancel_backend($worker)");
sql(q{SELECT dlsm_enqueue('hq', 'after2', 'create')});
ok($node->poll_query_until('postgres',
		q{SELECT status = 'complete' FROM hq WHERE entity = 'after2'}),
	'a unit enqueued after it is handled');
is(worker_pid(), $worker, 'by the same worker');

# 3. a cancel during a reaping step's lock wait: the reaper (or the
# worker) waits for the queue's table, which the test holds
sql(q{SELECT dlsm_create_queue('rq')});
sql(q{SELECT dlsm_enqueue('rq', 'r1', 'create')});
sql(q{SELECT id FROM dlsm_claim('rq', lease => '1 s')});
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN; LOCK TABLE rq IN ACCESS EXCLUSIVE MODE});
$pid = waiting_on('relation');
$offset = -s $node->logfile;
sql("SELECT pg_cancel_backend($pid)");
ok( $node->wait_for_log(qr/canceling statement due to user request\n[^\n]*CONTEXT:[^\n]*reap a queue/, $offset),
	'the reaping step is cancelled');
$holder->query_safe('COMMIT');
$holder->quit;
ok( $node->poll_query_until('postgres', q{SELECT status = 'new' FROM rq WHERE entity = 'r1'}),
	'and the next pass reaps the lease');
is(worker_pid(), $worker, 'the worker lives on');
$log = slurp_file($node->logfile, $offset);
unlike($log, qr/terminating background worker|exited with exit code/, 'no process of dlsm ended');

# 4. a handler that caught its own timeout's cancel (its unit fails as the
# call returns), then a cancel sent during the next call
sql(q{
CREATE FUNCTION h_caught(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF h_caught.entity = 'caught' THEN
		BEGIN PERFORM pg_sleep(30); EXCEPTION WHEN query_canceled THEN END;
	ELSE
		PERFORM pg_sleep(30);
	END IF;
END $$;
SELECT dlsm_create_queue('cq');
SELECT dlsm_alter_queue('cq', handler_timeout => '10 s');
SELECT dlsm_set_handler('cq', 'h_caught');
SELECT dlsm_enqueue('cq', 'caught', 'create');
});
failed_once('cq', 'caught', qr/canceling statement due to statement timeout/,
	'the call that caught its timeout\'s cancel fails');
sql(q{SELECT dlsm_enqueue('cq', 'next', 'create')});
$pid = waiting_on('PgSleep', q{'dlsm worker'});
sql("SELECT pg_cancel_backend($pid)");
failed_once('cq', 'next', qr/canceling statement due to user request/,
	'the next call is cancelled, by the cancel sent to it');
is(worker_pid(), $worker, 'the worker lives on');

# 5. a handler that catches every cancel: the worker ends, by its own
# terminate signal one dlsm.step_timeout after the call's cancel, and
# says why
sql(q{ALTER SYSTEM SET dlsm.step_timeout = '1s'; SELECT pg_reload_conf();});
sql(q{
CREATE FUNCTION h_stubborn(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN PERFORM pg_sleep(100); EXCEPTION WHEN query_canceled THEN END;
	END LOOP;
END $$;
SELECT dlsm_create_queue('sq');
SELECT dlsm_alter_queue('sq', handler_timeout => '1 s');
});
$offset = -s $node->logfile;
sql(q{SELECT dlsm_set_handler('sq', 'h_stubborn'); SELECT dlsm_enqueue('sq', 's1', 'create');});
ok( $node->wait_for_log(
		qr/FATAL:  terminating background worker "dlsm worker" due to administrator command\n[^\n]*CONTEXT:  (?:[^\n]*\n)*?\tdlsm worker: call a handler, queue "sq"\n\tdlsm worker: the step went on for another "dlsm.step_timeout" \(1000 ms\) after its cancel, so the worker ends/,
		$offset),
	'the worker ends, saying why');
ok($node->wait_for_log(qr/dlsm worker leaves [^\n]* alone until [^\n]*\n.*DETAIL:  [^\n]* queue "sq"[^\n]* went on after its cancel/, $offset),
	'and its queue is left alone');

# 6. the launcher and a relay, cancelled between passes, go on: the same
# processes do their work after it
my $launcher = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm launcher'});
ok( $node->poll_query_until('postgres', qq{
SELECT wait_event IN ('DlsmLauncherMain', 'Extension') FROM pg_stat_activity WHERE pid = $launcher}),
	'the launcher waits between passes');
$offset = -s $node->logfile;
sql("SELECT pg_cancel_backend($launcher)");
sql('CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION dlsm');
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND datname = 'other'}),
	'after a cancel, the launcher starts the worker of a new database');
is(sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm launcher'}),
	$launcher, 'the same launcher');

sql(q{ALTER SYSTEM SET dlsm.notify_relay = on;
ALTER SYSTEM SET dlsm.relay_idle_timeout = '10min'; SELECT pg_reload_conf();});
sql(q{SELECT dlsm_create_queue('nq')});
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN nq');
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm relay' AND datname = 'postgres'}),
	'a LISTEN starts the relay');
my $relay = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm relay'});
ok( $node->poll_query_until('postgres', qq{
SELECT wait_event IN ('DlsmRelayMain', 'Extension') FROM pg_stat_activity WHERE pid = $relay}),
	'the relay waits between passes');
sql("SELECT pg_cancel_backend($relay)");
sql(q{SELECT dlsm_enqueue('nq', 'n1')});
my $senders = '';
for (my $i = 0; $i < 500 && $senders eq ''; $i++)
{
	my $out = $listener->query('SELECT 1');
	$senders = join(',', $out =~ /Asynchronous notification "nq" received from server process with PID (\d+)/g);
	usleep(20_000) if $senders eq '';
}
is($senders, $relay, 'after a cancel, the same relay notifies the enqueue');
$listener->quit;
$log = slurp_file($node->logfile, $offset);
unlike($log, qr/"dlsm (?:launcher|relay)" \(PID \d+\) exited with exit code/,
	'neither exited');

done_testing();
