# Copyright (c) 2026, dlsm developers
#
# What an ordinary role can make dlsm start or hold (issue 40, the
# classes; doc/security.md, the section of that name): the rows of its
# table that no other test proves, each done by mallory, a role with no
# attributes, up to the bound, with the answer at the bound.
#   - the lock manager's table: named locks, dedup keys and claimed
#     entities each take one entry of it for the caller's transaction, as
#     pg_advisory_xact_lock does, no more: mallory takes them until the
#     table is full, gets PostgreSQL's 53200 "out of shared memory" after
#     about as many as advisory locks, and once her transaction ended
#     alice's named lock and claim work;
#   - captures: a capture trigger goes only on a table the caller owns
#     (42501 on alice's table, none added);
#   - dlsm's tables: 300 lease-scope locks of mallory's are 300 rows of
#     dlsm_leases (no bound of dlsm's on their number), alice still takes
#     her own and may not release mallory's (42501), a superuser releases
#     them all; a limit or a registration only on a table the role owns
#     (42501);
#   - the worker's memory per queue: a backend keeps the descriptors and
#     plans of its 32 queues last opened (each about 200 kB), so that the
#     worker, which opens every queue of its database at each pass, does
#     not grow with the queues of one role (400 of mallory's queues: under
#     16 MB more of dlsm's own (some 23 kB a queue), beside PostgreSQL's caches of the tables it
#     read, which any backend reading them keeps; it kept every queue's,
#     222 kB a queue, 95 MB for 400);
#   - channel marks (512, never freed): mallory notifies 520 channels of
#     hers through the relay; the marks are full, and alice's channel is
#     still notified, by her producer;
#   - the relay: with dlsm.notify_relay on (the server's setting; a role's
#     own SET is refused), a role's LISTEN in template1 starts no relay
#     there, and CREATE DATABASE works after she left (a relay there made
#     every CREATE DATABASE fail with 55006: TAP 099 has the rest).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# A small lock table: 10 entries a process (the least PostgreSQL allows).
my $node = dlsm_node('role_bounds', q{
max_connections = 20
max_locks_per_transaction = 10
dlsm.reap_interval = 500
dlsm.notify_relay = on
});
ok(install_dlsm($node), 'the worker runs');
$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
GRANT CREATE ON SCHEMA public TO mallory, alice;
});

# Run $sql as $role in postgres: (SQLSTATE or '00000', stdout, stderr).
sub run_as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my $state =
		$ret == 0 ? '00000'
	  : $err =~ /(?:ERROR|FATAL):\s+([0-9A-Z]{5}):/ ? $1
	  :                                     "failed: $err";
	return ($state, $out, $err);
}

sub ok_as
{
	my ($role, $sql, $label) = @_;
	my ($state, $out, $err) = run_as($role, $sql);
	is($state, '00000', $label) or diag $err;
	return $out;
}

ok_as('mallory', q{
SELECT dlsm_create_queue('mq');
SELECT count(dlsm_enqueue('mq', 'e' || g)) FROM generate_series(1, 3000) g;
}, 'mallory makes a queue with 3,000 entities');
ok_as('alice', q{
SELECT dlsm_create_queue('aq');
SELECT dlsm_enqueue('aq', 'a1');
CREATE TABLE at (id int PRIMARY KEY, v text);
}, 'alice makes a queue and a table');

# ---------------------------------------------------------------------
# The lock manager's table: mallory takes entries until it is full, each
# kind in a transaction of its own; the count it took and the SQLSTATE at
# the bound come back as "n|state".
# ---------------------------------------------------------------------
# Take entries with \$take, one per loop, in mallory's transaction until
# one fails: (how many it took, the SQLSTATE that ended it).
sub fill
{
	my ($take) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', qq{
DO \$\$
DECLARE
	n int := 0;
	state text;
BEGIN
	BEGIN
		FOR i IN 1 .. 100000 LOOP
			$take;
			n := i;
		END LOOP;
		state := 'no bound';
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
	END;
	RAISE NOTICE 'took %|%', n, state;
END
\$\$;
}, extra_params => [ '-U', 'mallory' ]);
	my ($n, $state) = $err =~ /took (\d+)\|(\S+)/;
	return ($n // -1, $state // "failed: $err");
}

my ($adv, $adv_state) = fill('PERFORM pg_advisory_xact_lock(i)');
is($adv_state, '53200', "advisory locks: PostgreSQL's bound, 53200 after $adv");
ok($adv > 50 && $adv < 20000, "the lock table holds $adv advisory locks");

my %kinds = (
	'named locks' => q{PERFORM dlsm_try_lock('m' || i)},
	'dedup keys' =>
	  q{PERFORM dlsm_enqueue('mq', 'd' || i, dedup_key => 'k' || i)},
	'claimed entities' => q{PERFORM dlsm_claim('mq')},
);
for my $kind (sort keys %kinds)
{
	my ($n, $state) = fill($kinds{$kind});
	is($state, '53200', "$kind: the lock table's bound, 53200 after $n");
	# one entry each, as an advisory lock (a few more or fewer: the
	# relations' locks, and the partitions' shares of the table)
	ok($n >= $adv * 0.8 && $n <= $adv * 1.2,
		"$kind: about one entry of the lock table each ($n, advisory $adv)");
	ok_as('alice', q{
BEGIN;
SELECT dlsm_try_lock('alice') IS NOT NULL;
SELECT count(*) FROM dlsm_claim('aq');
ROLLBACK;
}, "$kind: at the end of mallory's transaction alice's named lock and claim work");
}
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'}),
	'0', 'no lock of mallory outlives her transactions');

# ---------------------------------------------------------------------
# Captures: only on a table the caller owns
# ---------------------------------------------------------------------
my ($state, undef, $err) = run_as('mallory', q{SELECT dlsm_capture('at', 'mq')});
is($state, '42501', 'mallory may not capture alice\'s table into her queue')
  or diag $err;
is($node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_trigger WHERE tgrelid = 'at'::regclass}),
	'0', 'no trigger was put on alice\'s table');

# ---------------------------------------------------------------------
# Rows of dlsm's tables: a role's leases have no bound of dlsm's on their
# number, but hold no other name, and a superuser removes them; limits and
# registrations only on tables the role owns
# ---------------------------------------------------------------------
ok_as('mallory',
	join('', map { "SELECT dlsm_try_lock('lease$_', lease => '1 hour');\n" } 1 .. 300),
	'mallory takes 300 lease-scope locks, each in a transaction of its own');
is($node->safe_psql('postgres', q{
SELECT count(*) FROM dlsm_leases WHERE holder_role = 'mallory'::regrole}),
	'300', 'dlsm_leases holds her 300 rows: no bound of dlsm\'s on their number');
is(ok_as('alice', q{SELECT dlsm_try_lock('lease1') IS NULL},
	'alice tries a name mallory holds'),
	't', '... and does not get it');
is(ok_as('alice', q{SELECT dlsm_try_lock('alice-lease', lease => '1 hour') IS NOT NULL},
	'alice tries a lease of her own beside them'),
	't', '... and gets it');
($state, undef, $err) = run_as('alice', q{
SELECT dlsm_unlock(name, fence) FROM dlsm_leases WHERE name = 'lease1'});
is($state, '42501', 'alice may not release mallory\'s lease') or diag $err;
$node->safe_psql('postgres', q{
SELECT count(dlsm_unlock(name, fence)) FROM dlsm_leases
WHERE holder_role = 'mallory'::regrole});
is($node->safe_psql('postgres', q{
SELECT count(*) FROM dlsm_leases WHERE holder_role = 'mallory'::regrole}),
	'0', 'a superuser releases them all');
($state, undef, $err) = run_as('mallory', q{SELECT dlsm_set_limit('aq', 'g', 1)});
is($state, '42501', 'mallory may not set a limit on alice\'s queue') or diag $err;
($state, undef, $err) = run_as('mallory', q{SELECT dlsm_register_queue('at')});
is($state, '42501', 'mallory may not register alice\'s table as a queue') or diag $err;
is($node->safe_psql('postgres', q{
SELECT count(*) FROM dlsm_queues WHERE queue = 'at'::regclass}),
	'0', 'alice\'s table is no queue');

# ---------------------------------------------------------------------
# The worker's memory per queue
# ---------------------------------------------------------------------

# The worker's memory at rest, as pg_log_backend_memory_contexts logs it.
sub worker_bytes
{
	for my $try (1 .. 50)
	{
		my $pid = $node->safe_psql('postgres',
			q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'dlsm worker'});
		$node->poll_query_until('postgres',
			"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $pid")
		  or die "the dlsm worker never came to rest";
		my $offset = -s $node->logfile;
		$node->safe_psql('postgres', "SELECT pg_log_backend_memory_contexts($pid)");
		$node->wait_for_log(qr/\[$pid\].*Grand total: \d+ bytes/, $offset);
		my $log = slurp_file($node->logfile, $offset);
		my ($bytes) = $log =~ /\[$pid\].*Grand total: (\d+) bytes/;
		# PostgreSQL's own caches of the relations and catalog rows the
		# worker read, as in any backend that reads those tables (its
		# plans, CachedPlan*, under CacheMemoryContext too, are dlsm's)
		my $catalog = 0;
		$catalog += $1
		  while $log =~ /\[$pid\].*level: \d+; (?:CacheMemoryContext|index info|relation rules): (\d+) total/g;
		return ($bytes, $catalog)
		  unless $log =~ /\[$pid\].*; (?:SPI Proc|ExecutorState): /;
		return ($bytes, $catalog) if $try == 50;
	}
}

# Wait until the worker made a whole reaping pass after now.
sub wait_pass
{
	my $t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	for (1 .. 2)
	{
		$node->poll_query_until('postgres', qq{
SELECT last_reap_at > '$t' FROM dlsm_worker_status WHERE database = 'postgres'})
		  or die 'the worker made no pass';
		$t = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
	}
}

# each queue in a transaction of its own: the lock table is small
ok_as('mallory', join('', map { "SELECT dlsm_create_queue('w$_');\n" } 1 .. 20),
	'mallory makes 20 queues');
wait_pass();
my ($before, $catalog_before) = worker_bytes();
ok_as('mallory', join('', map { "SELECT dlsm_create_queue('x$_');\n" } 1 .. 400),
	'mallory makes 400 queues more');
wait_pass();
my ($after, $catalog_after) = worker_bytes();
my $grown = ($after - $catalog_after) - ($before - $catalog_before);
note sprintf('FIGURE worker memory: %d bytes before, %d after 400 queues; '
	  . 'PostgreSQL\'s relation and catalog caches %d before, %d after; '
	  . 'dlsm\'s own %d bytes a queue',
	$before, $after, $catalog_before, $catalog_after, $grown / 400);
cmp_ok($grown, '<', 16 * 1024 * 1024,
	'400 queues of one role cost the worker less than 16 MB of its own (it kept 222 kB a queue)');

# ---------------------------------------------------------------------
# The relay: a role may not set dlsm.notify_relay itself (the server has it
# on here), and its LISTEN in template1 starts no relay there, which would
# make every CREATE DATABASE fail (55006) while it runs
# ---------------------------------------------------------------------
my ($ret, $out);
($ret, $out, $err) = $node->psql('postgres', 'SET dlsm.notify_relay = off',
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied to set parameter "dlsm.notify_relay"/,
	'mallory may not set dlsm.notify_relay');
ok_as('mallory', q{LISTEN x}, 'mallory listens in postgres with the relay on');
($ret, $out, $err) = $node->psql('template1', 'LISTEN x',
	extra_params => [ '-U', 'mallory' ]);
is($ret, 0, 'mallory listens in template1 with the relay on') or diag $err;
# the relays she started, if any, come within a few seconds
poll_within($node, 'postgres', q{
SELECT count(*) >= 2 FROM pg_stat_activity WHERE backend_type = 'dlsm relay'}, 10);
my $relays = $node->safe_psql('postgres', q{
SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_stat_activity
WHERE backend_type = 'dlsm relay'});
note "relays running after mallory left: " . ($relays || 'none');
unlike($relays // '', qr/template1/, 'no relay stays in template1');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE made_after');
is($ret, 0, 'CREATE DATABASE works after a role\'s LISTEN in template1')
  or diag $err;

# ---------------------------------------------------------------------
# Channel marks (512, never freed): mallory, with the relay on, notifies
# 520 channels of hers through the relay of postgres; the marks are full,
# and alice's channel is still notified, by her producer
# ---------------------------------------------------------------------
my $listener = $node->background_psql('postgres', extra_params => [ '-U', 'alice' ]);
$listener->query_safe('LISTEN aq');
ok(defined poll_within($node, 'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
WHERE backend_type = 'dlsm relay' AND datname = 'postgres'}, 30),
	'the relay of postgres runs');
ok_as('mallory', join('', map { "SELECT dlsm_create_queue('c$_');\n" } 421 .. 520)
	  . join('', map { "SELECT dlsm_enqueue('x$_', 'e');\n" } 1 .. 400)
	  . join('', map { "SELECT dlsm_enqueue('w$_', 'e');\n" } 1 .. 20)
	  . join('', map { "SELECT dlsm_enqueue('c$_', 'e');\n" } 421 .. 520),
	'mallory notifies 520 channels of hers through the relay, one commit each');
my ($marks, $marks_full) = split /\|/, $node->safe_psql('postgres', q{
SELECT used || '|' || times_full FROM dlsm_shared_tables WHERE name = 'channel marks'});
ok($marks == 512 && $marks_full > 0,
	"channel marks: all 512 taken ($marks), $marks_full times full");
$listener->query('SELECT 1');    # what came before
ok_as('alice', q{SELECT dlsm_enqueue('aq', 'after-marks')},
	'alice enqueues into her queue');
my $got = 0;
my $start = time;
while (time - $start < 10)
{
	my $out = $listener->query('SELECT 1');
	if ($out =~ /Asynchronous notification "aq" received/)
	{
		$got = 1;
		last;
	}
	usleep(50_000);
}
ok($got, 'channel marks full: alice\'s channel is notified all the same');
$listener->quit;

$node->stop;
done_testing();
