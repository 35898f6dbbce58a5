# Copyright (c) 2026, dlsm developers
#
# One queue's owner cannot stall the worker for other queues: every lock
# wait of the worker is bounded by dlsm.lock_timeout, every handler call by
# its statement timeout.  bob owns a queue whose handler sleeps 40 s: with
# dlsm.handler_timeout = 1000 the call is cut after a second, and dave's
# expired lease in another queue is reaped within seconds.  Then bob holds
# ACCESS EXCLUSIVE on his queue in an open transaction: within
# dlsm.lock_timeout the worker skips his queue, reaps and handles the
# others, and says so in dlsm_worker_status.last_error.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('bounds', "dlsm.reap_interval = 200\n");
ok(install_dlsm($node), 'the worker runs');

# The output of $sql (as $role), or the error.
sub sql
{
	my ($sql, $role) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ defined $role ? ('-U', $role) : () ]);
	return $out if $ret == 0;
	diag "$sql\n$err";
	return "<error: $err>";
}

sub last_error
{
	return sql(q{SELECT coalesce(last_error, '') FROM dlsm_worker_status
				 WHERE database = current_database()});
}

# ---------------------------------------------------------------------
# The settings
# ---------------------------------------------------------------------
is(sql(q{SELECT current_setting('dlsm.handler_timeout')}),
	'10s', 'dlsm.handler_timeout defaults to 10 s');
is(sql(q{SELECT current_setting('dlsm.lock_timeout')}),
	'1s', 'dlsm.lock_timeout defaults to 1 s');
my ($ret, $out, $err) = $node->psql('postgres', q{
ALTER SYSTEM SET dlsm.handler_timeout = 1000;
ALTER SYSTEM SET dlsm.lock_timeout = 1000;
SELECT pg_reload_conf();
});
is($ret, 0, 'ALTER SYSTEM SET dlsm.handler_timeout = 1000 and dlsm.lock_timeout = 1000')
  or diag $err;
ok( defined poll_within($node, 'postgres', q{
SELECT current_setting('dlsm.handler_timeout') = '1s'
   AND current_setting('dlsm.lock_timeout') = '1s'}, 10),
	'the reload took them');

sql(q{
CREATE ROLE bob LOGIN;
CREATE ROLE dave LOGIN;
GRANT CREATE ON SCHEMA public TO bob, dave;
});
($ret, $out, $err) = $node->psql('postgres', q{
SELECT dlsm_create_queue('bobs_queue');
CREATE FUNCTION bob_sleep(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(40); END $$;
SELECT dlsm_set_handler('bobs_queue', 'bob_sleep');
}, extra_params => [ '-U', 'bob' ]);
is($ret, 0, 'bob makes his queue with a handler that sleeps 40 s') or diag $err;
($ret, $out, $err) = $node->psql('postgres', q{
SELECT dlsm_create_queue('daves_queue');
SELECT dlsm_create_queue('daves_handled');
CREATE TABLE dave_done (entity text);
CREATE FUNCTION dave_ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO public.dave_done VALUES (entity) $$;
SELECT dlsm_set_handler('daves_handled', 'dave_ok');
}, extra_params => [ '-U', 'dave' ]);
is($ret, 0, 'dave makes a queue he consumes himself and one the worker handles')
  or diag $err;

# dave's leased claim expires; how long until the worker reaps it
sub dave_reaped_within
{
	my ($entity, $seconds) = @_;
	my $claimed = sql(qq{
SELECT dlsm_enqueue('daves_queue', '$entity') AS id \\gset
SELECT entity FROM dlsm_claim('daves_queue', lease => '1 s', after => :id - 1);
}, 'dave');
	is($claimed, $entity, "dave claims $entity with a lease of 1 s");
	return poll_within($node, 'postgres',
		qq{SELECT status = 'new' FROM daves_queue WHERE entity = '$entity'}, $seconds);
}

sub dave_handled_within
{
	my ($entity, $seconds) = @_;
	sql(qq{SELECT dlsm_enqueue('daves_handled', '$entity')}, 'dave');
	return poll_within($node, 'postgres',
		qq{SELECT status = 'complete' FROM daves_handled WHERE entity = '$entity'},
		$seconds);
}

# ---------------------------------------------------------------------
# A handler that sleeps 40 s
# ---------------------------------------------------------------------
sql(q{SELECT dlsm_enqueue('bobs_queue', 'zzz')}, 'bob');
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND wait_event = 'PgSleep'}, 10),
	'the worker is in bob\'s handler, sleeping');
my $took = dave_reaped_within('d1', 8);
ok(defined $took, 'handler timeout: dave\'s expired lease is reaped within 8 s');
note 'reaped after ' . ($took // 'more than 8') . ' s (lease 1 s)';
ok( defined poll_within($node, 'postgres', q{
SELECT attempts >= 1 AND detail ~* 'timeout' FROM bobs_queue WHERE entity = 'zzz'}, 10),
	'handler timeout: bob\'s unit was cut short, the timeout in its detail');
note 'bobs_queue: ' . sql(q{SELECT status || ' ' || attempts || ' ' || coalesce(detail, '') FROM bobs_queue});
$took = dave_handled_within('h1', 8);
ok(defined $took, 'handler timeout: dave\'s handled queue is served within 8 s');

# ---------------------------------------------------------------------
# bob locks his queue in an open transaction
# ---------------------------------------------------------------------
# (first the sleeping handler goes, so that only the lock is in the way;
# bob's queue gets a quick handler and a request due in 2 s)
sql(q{SELECT dlsm_set_handler('bobs_queue', NULL)}, 'bob');
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) = 0 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND wait_event = 'PgSleep'}, 45),
	'the worker left bob\'s sleeping handler');
($ret, $out, $err) = $node->psql('postgres', q{
CREATE FUNCTION bob_quick(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$ BEGIN END $$;
SELECT dlsm_set_handler('bobs_queue', 'bob_quick');
SELECT dlsm_enqueue('bobs_queue', 'late', run_at => now() + interval '2 s');
}, extra_params => [ '-U', 'bob' ]);
is($ret, 0, 'bob sets a quick handler and enqueues a request due in 2 s') or diag $err;

my $before = last_error();
note "last_error before the lock: $before";
my $bob = $node->background_psql('postgres', extra_params => [ '-U', 'bob' ]);
$bob->query_safe('BEGIN; LOCK TABLE bobs_queue IN ACCESS EXCLUSIVE MODE');
$took = dave_reaped_within('d2', 8);
ok(defined $took, 'lock: dave\'s expired lease is reaped within 8 s while bob holds his lock');
note 'reaped after ' . ($took // 'more than 8') . ' s (lease 1 s)';
$took = dave_handled_within('h2', 8);
ok(defined $took, 'lock: dave\'s handled queue is served within 8 s');
# (a new report: it differs from the one before the lock, or speaks of
# the lock)
my $before_q = $before =~ s/'/''/gr;
ok( defined poll_within($node, 'postgres', qq{
SELECT last_error LIKE '%bobs_queue%'
   AND (last_error <> '$before_q' OR last_error ~* 'lock')
  FROM dlsm_worker_status WHERE database = current_database()}, 10),
	'lock: dlsm_worker_status.last_error names bobs_queue');
note 'last_error: ' . last_error();
$bob->query_safe('COMMIT');
$bob->quit;

ok( defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM bobs_queue WHERE entity = 'late'}, 15),
	'after the lock, bob\'s queue is served again');

# dlsm.lock_timeout bounds the worker's own lock waits, not a handler's:
# a handler waiting 3 s for a row lock (dlsm.lock_timeout 1 s) completes
sql(q{
ALTER SYSTEM SET dlsm.handler_timeout = 10000;
SELECT pg_reload_conf();
CREATE TABLE contended (id int PRIMARY KEY);
INSERT INTO contended VALUES (1);
SELECT dlsm_create_queue('patient');
CREATE FUNCTION wait_for_row(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS 'SELECT id FROM contended WHERE id = 1 FOR UPDATE';
SELECT dlsm_set_handler('patient', 'wait_for_row');
});
my $holder = $node->background_psql('postgres');
$holder->query_safe('BEGIN; SELECT id FROM contended WHERE id = 1 FOR UPDATE');
sql(q{SELECT dlsm_enqueue('patient', 'p1')});
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND wait_event_type = 'Lock'}, 10),
	'the handler waits for the row');
sleep(3);
$holder->query_safe('COMMIT');
$holder->quit;
ok( defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM patient WHERE entity = 'p1'}, 10),
	'a handler waits for a lock longer than dlsm.lock_timeout, within its own timeout');
is(sql(q{SELECT attempts FROM patient WHERE entity = 'p1'}), '1',
	'at its first attempt');

# a queue's owner cannot lengthen the worker's bound on a handler call
# past dlsm.max_handler_timeout: bob gives his queue a handler_timeout of
# an hour and a handler that sleeps 40 s; with the cap at 1 s the call is
# cut within seconds
is(sql(q{SELECT current_setting('dlsm.max_handler_timeout')}), '5min',
	'dlsm.max_handler_timeout defaults to 5 min');
sql(q{
ALTER SYSTEM SET dlsm.max_handler_timeout = 1000;
SELECT pg_reload_conf();
});
ok( defined poll_within($node, 'postgres',
		q{SELECT current_setting('dlsm.max_handler_timeout') = '1s'}, 10),
	'the reload took dlsm.max_handler_timeout = 1 s');
($ret, $out, $err) = $node->psql('postgres', q{
SELECT dlsm_alter_queue('bobs_queue', handler_timeout => '1 hour');
SELECT dlsm_set_handler('bobs_queue', 'bob_sleep');
SELECT dlsm_enqueue('bobs_queue', 'long');
}, extra_params => [ '-U', 'bob' ]);
is($ret, 0, 'bob asks for an hour per call of his sleeping handler') or diag $err;
ok( defined poll_within($node, 'postgres', q{
SELECT attempts >= 1 AND detail ~* 'timeout' FROM bobs_queue WHERE entity = 'long'}, 15),
	'dlsm.max_handler_timeout cuts the call all the same');

$node->stop;
done_testing();
