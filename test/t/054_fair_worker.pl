# Copyright (c) 2026, dlsm developers
#
# A fair worker (issue 32, finding 3): one owner with many queues cannot
# stall another owner's work.  mallory (CREATE on a schema only) owns N
# queues (N = 1, 5, 20), each with a statement-level BEFORE UPDATE trigger
# that sleeps just under the bound (0.8 s of a dlsm.step_timeout of 1 s):
# no step of hers is ever cancelled, yet before the fix every reaping pass
# ran one such step per queue, and alice's handler waited for all of them.
#
# The bound (README, "The background worker"): an owner's steps take at
# most one dlsm.step_timeout of a reaping pass (its budget), plus the one
# step that crosses it; its other queues wait for the next pass, where they
# go first.  So alice's handler runs within 2 x dlsm.step_timeout +
# dlsm.reap_interval of her enqueue, and her expired lease is reaped within
# its lease + 2 x dlsm.step_timeout + dlsm.reap_interval, whatever N is
# (plus a margin for a loaded machine, noted).  Every one of mallory's
# queues is still reaped.
#
# A stubborn step (it catches its cancel) shuns all of its owner's queues,
# for ten bounds the first time and twice as long at each shun after.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $reap_ms = 500;
my $bound_ms = 1000;
my $lease_s = 1;
my $margin_s = 3;	# for a loaded machine
my $handler_limit = (2 * $bound_ms + $reap_ms) / 1000 + $margin_s;
my $lease_limit = $lease_s + (2 * $bound_ms + $reap_ms) / 1000 + $margin_s;

my $node = dlsm_node('fair', qq{
dlsm.reap_interval = $reap_ms
dlsm.step_timeout = $bound_ms
dlsm.lock_timeout = $bound_ms
dlsm.handler_timeout = $bound_ms
});
ok(install_dlsm($node), 'the worker runs');

$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE SCHEMA mal;
GRANT USAGE, CREATE ON SCHEMA mal TO mallory;
CREATE SCHEMA alice AUTHORIZATION alice;
});
$node->safe_psql('postgres', q{
CREATE FUNCTION mal.slow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(0.8); RETURN NULL; END $$;
CREATE FUNCTION mal.stubborn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN
			PERFORM pg_catalog.pg_sleep(100000);
		EXCEPTION WHEN query_canceled THEN
			RAISE LOG 'mallory caught a cancel';
		END;
	END LOOP;
END $$;
}, extra_params => [ '-U', 'mallory' ]);
$node->safe_psql('postgres', q{
SELECT dlsm_create_queue('alice.leased');
SELECT dlsm_create_queue('alice.handled');
CREATE TABLE alice.done (entity text);
CREATE FUNCTION alice.ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO alice.done VALUES (entity) $$;
SELECT dlsm_set_handler('alice.handled', 'alice.ok');
}, extra_params => [ '-U', 'alice' ]);

# mallory's queue mal.q$i: slow on every reap, with one expired lease.
sub mallory_queue
{
	my ($i) = @_;
	$node->safe_psql('postgres', qq{
SELECT dlsm_create_queue('mal.q$i', max_attempts => 1000);
SELECT dlsm_enqueue('mal.q$i', 'e1');
SELECT count(*) FROM dlsm_claim('mal.q$i', lease => '10 ms');
CREATE TRIGGER slow BEFORE UPDATE ON mal.q$i
	FOR EACH STATEMENT EXECUTE FUNCTION mal.slow();
}, extra_params => [ '-U', 'mallory' ]);
}

my $n = 0;
sub alice_handled
{
	my $e = 'h' . ++$n;
	my $start = [gettimeofday];
	$node->safe_psql('postgres', qq{SELECT dlsm_enqueue('alice.handled', '$e')},
		extra_params => [ '-U', 'alice' ]);
	my $took = poll_within($node, 'postgres',
		qq{SELECT status = 'complete' FROM alice.handled WHERE entity = '$e'}, 60);
	return defined $took ? tv_interval($start) : 999;
}

sub alice_reaped
{
	my $e = 'r' . ++$n;
	my $start = [gettimeofday];
	$node->safe_psql('postgres', qq{SELECT dlsm_enqueue('alice.leased', '$e') AS id \\gset
SELECT count(*) FROM dlsm_claim('alice.leased', lease => '$lease_s s', after => :id - 1)},
		extra_params => [ '-U', 'alice' ]);
	my $took = poll_within($node, 'postgres',
		qq{SELECT status = 'new' FROM alice.leased WHERE entity = '$e'}, 60);
	return defined $took ? tv_interval($start) : 999;
}

my $made = 0;
for my $queues (1, 5, 20)
{
	mallory_queue(++$made) while $made < $queues;
	# a steady state: a pass over the new queues has begun
	usleep(2_000_000);
	my ($handled, $reaped) = (0, 0);
	for (1 .. 3)
	{
		my $h = alice_handled();
		$handled = $h if $h > $handled;
		usleep(300_000 * $_);	# land at another point of the pass
	}
	for (1 .. 2)
	{
		my $r = alice_reaped();
		$reaped = $r if $r > $reaped;
	}
	note sprintf('N = %d: alice handled within %.1f s, reaped within %.1f s',
		$queues, $handled, $reaped);
	cmp_ok($handled, '<=', $handler_limit,
		"$queues slow queues of mallory: alice's handler within $handler_limit s "
		  . "(2 x step_timeout + reap_interval + $margin_s s margin)");
	cmp_ok($reaped, '<=', $lease_limit,
		"$queues slow queues of mallory: alice's expired lease reaped within $lease_limit s "
		  . "(lease + 2 x step_timeout + reap_interval + $margin_s s margin)");
}

ok( defined poll_within($node, 'postgres', q{
SELECT bool_and(status = 'new') FROM (
	SELECT status FROM mal.q1 UNION ALL SELECT status FROM mal.q2 UNION ALL
	SELECT status FROM mal.q3 UNION ALL SELECT status FROM mal.q4 UNION ALL
	SELECT status FROM mal.q5 UNION ALL SELECT status FROM mal.q6 UNION ALL
	SELECT status FROM mal.q7 UNION ALL SELECT status FROM mal.q8 UNION ALL
	SELECT status FROM mal.q9 UNION ALL SELECT status FROM mal.q10 UNION ALL
	SELECT status FROM mal.q11 UNION ALL SELECT status FROM mal.q12 UNION ALL
	SELECT status FROM mal.q13 UNION ALL SELECT status FROM mal.q14 UNION ALL
	SELECT status FROM mal.q15 UNION ALL SELECT status FROM mal.q16 UNION ALL
	SELECT status FROM mal.q17 UNION ALL SELECT status FROM mal.q18 UNION ALL
	SELECT status FROM mal.q19 UNION ALL SELECT status FROM mal.q20) s}, 90),
	'every one of mallory\'s 20 queues is still reaped');
ok($node->log_contains(
		qr/dlsm worker defers \d+ queues? of role "mallory" to its next pass\n.*DETAIL:  That role's steps took \d+ ms of this pass, more than "dlsm.step_timeout" \(1000 ms\)/),
	'the deferral is in the log');
ok($node->log_contains(
		qr/dlsm worker took \d+ ms to reap queue "(?:mal\.)?q\d+"\n.*DETAIL:  That is more than half of "dlsm.step_timeout" \(1000 ms\)/),
	'a slow step is in the log');

# A stubborn step shuns all of mallory's queues, longer at each shun.
$node->safe_psql('postgres', q{
DROP TRIGGER slow ON mal.q1;
CREATE TRIGGER stubborn BEFORE UPDATE ON mal.q1
	FOR EACH STATEMENT EXECUTE FUNCTION mal.stubborn();
}, extra_params => [ '-U', 'mallory' ]);
my $shun = qr/dlsm worker leaves all (\d+) queues of role "mallory" alone until [^\n]+\n.*DETAIL:  Reaping queue "(?:mal\.)?q1" went on after its cancel; this is shun (\d+) of that role, for (\d+) ms/;
$node->wait_for_log($shun);
my @shuns = slurp_file($node->logfile) =~ /$shun/g;
is_deeply([ @shuns[0 .. 2] ], [ 20, 1, 10 * $bound_ms ],
	'the first shun: all 20 of mallory\'s queues, for ten bounds');
cmp_ok(alice_handled(), '<=', $handler_limit,
	'while mallory is shunned, alice\'s handler runs within the bound');
# (the reaper that the stubborn step ended is started again, and names
# the shunned queue at its first pass: polled, not read once)
ok( poll_within(
		$node, 'postgres',
		q{SELECT last_error ~ 'is left alone until .*: a step on it went on after its cancel'
		    FROM dlsm_worker_status WHERE database = 'postgres'},
		60),
	'dlsm_worker_status names the shunned queue');
my $second = qr/dlsm worker leaves all 20 queues of role "mallory" alone until [^\n]+\n.*DETAIL:  [^\n]*; this is shun 2 of that role, for 20000 ms/;
$node->wait_for_log($second);
pass('the second shun of mallory is twice as long');
$node->safe_psql('postgres', q{DROP TRIGGER stubborn ON mal.q1},
	extra_params => [ '-U', 'mallory' ]);

$node->stop;
done_testing();
