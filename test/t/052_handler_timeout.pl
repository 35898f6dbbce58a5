# Copyright (c) 2026, dlsm developers
#
# A handler that runs past its handler_timeout (dlsm_alter_queue) fails its
# attempt inside its subtransaction: its effects are rolled back, its unit
# is settled as a retry (an error once max_attempts is spent) with the
# timeout as detail, the attempt is counted, and the worker goes on, the
# same process.  Handlers with a timeout of 1 s meet it in four ways:
#
#   sleep   it sleeps past it: the cancel comes while it sleeps;
#   caught  it catches the cancel (EXCEPTION WHEN query_canceled) and
#           returns, its work half done;
#   edge    its last statement runs past the timeout and checks for no
#           interrupt (lo_import of a FIFO whose writer comes 3 s after the
#           call began): the timeout fires while it runs and is still
#           pending as the handler returns;
#   edge, failing  the same, and then it fails (a division by zero): its
#           own error is its unit's detail.
#
# and one with a timeout of 5 s, which it does not reach, completes.
#
# Before issue 35's fix the caught handler completed its unit, its effects
# kept, and the edge ones' cancel surfaced in the settle, "canceling
# statement due to user request", outside the subtransaction: the whole
# unit, its claim too, was rolled back, at every pass, and no attempt was
# ever counted.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Fcntl qw(O_RDONLY O_NONBLOCK);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('handler_timeout', qq{
dlsm.reap_interval = 200
});
ok(install_dlsm($node), 'the worker runs');

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

# handled, errors, skipped and pid of the worker
sub worker
{
	return sql(q{SELECT handled || ' ' || errors || ' ' || skipped || ' ' || pid
				   FROM dlsm_worker_status WHERE database = current_database()});
}

my $timeout = 'canceling statement due to statement timeout';

# the queues are the superuser's: the edge handlers run a program and read
# a file
my $fifo_dir = $node->basedir;
sql(q{
CREATE TABLE effects (handler text, request_id bigint);
CREATE SEQUENCE edge_calls;
CREATE FUNCTION h_sleep(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO effects VALUES ('sleep', ids[1]);
	PERFORM pg_sleep(60);
END $$;
CREATE FUNCTION h_caught(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO effects VALUES ('caught', ids[1]);
	BEGIN
		PERFORM pg_sleep(60);
	EXCEPTION WHEN query_canceled THEN
		INSERT INTO effects VALUES ('caught: after its cancel', ids[1]);
	END;
END $$;
CREATE FUNCTION h_quick(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO effects VALUES ('quick', ids[1]);
	PERFORM pg_sleep(0.3);
END $$;
-- A FIFO of its own for each call, and a writer that comes in 3 s (the
-- writer ignores the SIGINT of the worker's timeout, sent to its process
-- group); the FIFO's path.
CREATE FUNCTION edge_writer() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	fifo text := '@fifo_dir@/edge-' || nextval('edge_calls') || '.fifo';
BEGIN
	EXECUTE format('COPY (SELECT 1) TO PROGRAM %L',
		format('cat >/dev/null; mkfifo %s; (sleep 3; echo x > %s) >/dev/null 2>&1 &',
			   fifo, fifo));
	RETURN fifo;
END $$;
CREATE FUNCTION h_edge(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS oid LANGUAGE plpgsql AS $$
DECLARE
	fifo text := edge_writer();
BEGIN
	INSERT INTO effects VALUES ('edge', ids[1]);
	-- waits in open() for the writer; no interrupt checked after it
	RETURN lo_import(fifo, 4242424);
END $$;
CREATE FUNCTION h_edge_fail(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	fifo text := edge_writer();
BEGIN
	INSERT INTO effects VALUES ('edge, failing', ids[1]);
	RETURN lo_import(fifo, 4242424)::bigint / 0;
END $$;
CREATE FUNCTION h_ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO effects VALUES ('ok', ids[1]) $$;
SELECT dlsm_create_queue('q_sleep', max_attempts => 2);
SELECT dlsm_create_queue('q_caught', max_attempts => 1);
SELECT dlsm_create_queue('q_edge', max_attempts => 1);
SELECT dlsm_create_queue('q_edge_fail', max_attempts => 1);
SELECT dlsm_create_queue('q_quick');
SELECT dlsm_create_queue('q_ok');
SELECT dlsm_alter_queue(q, handler_timeout => '1 s')
  FROM unnest(ARRAY['q_sleep', 'q_caught', 'q_edge', 'q_edge_fail']::regclass[]) q;
SELECT dlsm_alter_queue('q_quick', handler_timeout => '5 s');
SELECT dlsm_set_handler('q_sleep', 'h_sleep');
SELECT dlsm_set_handler('q_caught', 'h_caught');
SELECT dlsm_set_handler('q_edge', 'h_edge');
SELECT dlsm_set_handler('q_edge_fail', 'h_edge_fail');
SELECT dlsm_set_handler('q_quick', 'h_quick');
SELECT dlsm_set_handler('q_ok', 'h_ok');
} =~ s/\@fifo_dir\@/$fifo_dir/r);
my ($handled0, $errors0, $skipped0, $pid) = split / /, worker();
is("$errors0 $skipped0", '0 0', 'the worker starts with no error and no skip');
my $log_offset = -s $node->logfile;

# Enqueue one request into $queue; wait (60 s at most) for it to be
# settled for good, complete or error; its status, attempts and detail.
sub run_one
{
	my ($queue, $label) = @_;
	my $id = sql(qq{SELECT dlsm_enqueue('$queue', '$label')});
	poll_within($node, 'postgres',
		qq{SELECT status IN ('complete', 'error') FROM $queue WHERE id = $id}, 60);
	return sql(qq{SELECT status || ' | ' || attempts || ' | ' || coalesce(detail, '')
					FROM $queue WHERE id = $id});
}

# ---------------------------------------------------------------------
# sleep: the cancel comes while it sleeps
# ---------------------------------------------------------------------
is(run_one('q_sleep', 's1'),
	"error | 2 | retries exhausted after 2 attempts: $timeout",
	'sleep: two attempts (max_attempts 2), each cut by the timeout, then error');
is(sql(q{SELECT count(*) FROM effects WHERE handler = 'sleep'}), '0',
	'sleep: its effects are rolled back');

# ---------------------------------------------------------------------
# caught: it catches the cancel and returns
# ---------------------------------------------------------------------
is(run_one('q_caught', 'c1'),
	"error | 1 | retries exhausted after 1 attempt: $timeout",
	'caught: a handler that catches its cancel and returns fails its attempt all the same');
is(sql(q{SELECT count(*) FROM effects WHERE handler LIKE 'caught%'}), '0',
	'caught: its effects are rolled back, those after the cancel too');

# ---------------------------------------------------------------------
# edge: the timeout is pending as the handler returns
# ---------------------------------------------------------------------
is(run_one('q_edge', 'e1'),
	"error | 1 | retries exhausted after 1 attempt: $timeout",
	'edge: a timeout still pending as the handler returns fails its attempt, inside its subtransaction');
is(sql(q{SELECT last_value FROM edge_calls}), '1',
	'edge: the handler was called once (its unit was not rolled back and claimed again)');
is(sql(q{SELECT count(*) FROM effects WHERE handler = 'edge'}), '0',
	'edge: its effects are rolled back');
is(run_one('q_edge_fail', 'f1'),
	'error | 1 | retries exhausted after 1 attempt: division by zero',
	'edge, failing: its own error, raised with the timeout pending, is its unit\'s detail');
is(sql(q{SELECT last_value FROM edge_calls}), '2', 'edge, failing: called once');
is(sql(q{SELECT count(*) FROM effects WHERE handler = 'edge, failing'}), '0',
	'edge, failing: its effects are rolled back');

# ---------------------------------------------------------------------
# quick: well within its timeout of 5 s
# ---------------------------------------------------------------------
is(run_one('q_quick', 'q1'), 'complete | 1 | ',
	'quick: a handler within its timeout completes at its first attempt');
is(sql(q{SELECT count(*) FROM effects WHERE handler = 'quick'}), '1',
	'quick: its effects are kept');

# ---------------------------------------------------------------------
# The worker went on
# ---------------------------------------------------------------------
is(run_one('q_ok', 'k1') =~ s/ \|.*//r, 'complete',
	'a quick handler\'s unit is handled after them');
my ($handled, $errors, $skipped, $pid_after) = split / /, worker();
is($errors - $errors0, 5, 'the worker counted 5 failed attempts (sleep 2, the others 1 each)');
is($handled - $handled0, 2, 'and 2 units handled (quick, ok)');
is($skipped - $skipped0, 0, 'and no skipped step: no unit was rolled back whole');
is($pid_after, $pid, 'the same worker process throughout');
like(sql(q{SELECT last_error FROM dlsm_worker_status WHERE database = current_database()}),
	qr/^queue "q_edge_fail": call a handler: division by zero$/,
	'last_error names the queue, the call and its error');
my $log = slurp_file($node->logfile, $log_offset);
is(scalar(() = $log =~ /canceling statement due to user request/g), 0,
	'no cancel "due to user request" in the server log');

# a writer of a FIFO nobody read (before the fix: none) goes
for my $fifo (glob("$fifo_dir/edge-*.fifo"))
{
	my $fh;
	close $fh if sysopen($fh, $fifo, O_RDONLY | O_NONBLOCK);
}

$node->stop;
done_testing();
