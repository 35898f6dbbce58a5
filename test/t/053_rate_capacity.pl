# Copyright (c) 2026, dlsm developers
#
# The shared table of rate limits (rate.c) cannot be filled by one tenant
# (issue 32, finding 1).  mallory, a queue owner who is no superuser, asks
# in database d1 for one claim per 99 years (refused: a non-superuser's
# window is at most a day) and then per day, and claims 6,000 groups: she
# holds at most her share of the table (4,096 entries per owner); her
# groups past it are admitted with a WARNING, their rate not kept.  alice,
# in database d2 and in d1, keeps her rate limits: her groups claim once,
# then are held back.  dlsm_drop_queue gives mallory's entries back: a new
# queue of hers fills her share again without a WARNING.
#
# Before the fix, the table (4,096 entries for the server) was full after
# mallory's claims: every other rate-limited group of every database
# claimed nothing, without a word, until the entries' 99 years passed.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('rates', qq{
dlsm.reap_interval = '1h'
dlsm.databases = 'postgres'
});

# Run $sql in $db as $role; returns (SQLSTATE or '00000', stdout, stderr).
sub run_as
{
	my ($db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my $state =
		$ret == 0 ? '00000'
	  : $err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1
	  :                                     "failed: $err";
	return ($state, $out, $err);
}

# Run $sql in $db as $role, which must succeed; returns (stdout, stderr).
sub ok_as
{
	my ($db, $role, $sql, $label) = @_;
	my ($state, $out, $err) = run_as($db, $role, $sql);
	is($state, '00000', $label) or diag $err;
	return ($out, $err);
}

# The number of WARNINGs in $err that say a rate was not kept.
sub not_kept
{
	my ($err) = @_;
	my @w = $err =~ /WARNING:\s+53000: rate limits of some groups are not kept/g;
	return scalar @w;
}

$node->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE DATABASE d1;
CREATE DATABASE d2;
});
for my $db ('d1', 'd2')
{
	$node->safe_psql($db, q{
CREATE EXTENSION dlsm;
GRANT CREATE ON SCHEMA public TO mallory, alice;
});
}

# alice's queues, one in each database: group g1 at most one claim an
# hour; one claim before mallory comes
for my $db ('d1', 'd2')
{
	ok_as($db, 'alice', q{
SELECT dlsm_create_queue('aq');
SELECT dlsm_set_limit('aq', 'g1', rate => 1, per => '1 hour');
SELECT dlsm_set_limit('aq', 'g2', rate => 1, per => '1 hour');
SELECT count(dlsm_enqueue('aq', 'e' || i, group_key => 'g' || (2 - i % 2)))
  FROM generate_series(1, 6) i;
}, "$db: alice's queue and limits");
	is((ok_as($db, 'alice', q{SELECT string_agg(entity, ',') FROM dlsm_claim('aq')}))[0],
		'e1', "$db: alice claims one unit of her rate-limited group g1");
}

# mallory: a window of 99 years is refused; a day is what she may ask
ok_as('d1', 'mallory', q{SELECT dlsm_create_queue('mq')}, 'mallory: a queue');
my ($state, $out, $err) = run_as('d1', 'mallory',
	q{SELECT dlsm_set_limit('mq', NULL, rate => 1, per => '99 years')});
is($state, '22023', 'mallory may not ask for a window of 99 years');
like($err, qr/per must be at most 1 day/, '... and is told the bound');
($state) = run_as('d1', 'mallory',
	q{SELECT dlsm_set_limit('mq', NULL, rate => 1, per => '1 day 1 second')});
is($state, '22023', '... nor for a day and a second');
ok_as('d1', 'mallory', q{
SELECT dlsm_set_limit('mq', NULL, rate => 1, per => '1 day');
SELECT count(dlsm_enqueue('mq', 'e' || i, group_key => 'g' || i))
  FROM generate_series(1, 6000) i;
}, 'mallory: a queue of 6,000 groups, each one claim a day');

# her 6,000 groups, claimed in six transactions: all admitted, those past
# her share with one WARNING per claiming session and minute
my $claimed = 0;
my $warnings = 0;
for my $i (1 .. 6)
{
	($out, $err) = ok_as('d1', 'mallory',
		q{SELECT count(*) FROM dlsm_claim('mq', units => 1000)},
		"mallory's claim $i");
	$claimed += $out;
	$warnings += not_kept($err);
}
is($claimed, 6000, 'mallory claimed her 6,000 groups');
cmp_ok($warnings, '>=', 1, '... those past her share with a WARNING');
cmp_ok($warnings, '<=', 2, '... said once per claiming session at most');
like($err, qr/DETAIL:\s+The queue owner.s share of dlsm.s table of rate limits/,
	'... whose detail names the share that is full');

# her rate still holds where it could be kept: a second request of her
# first group is held back
ok_as('d1', 'mallory', q{SELECT dlsm_enqueue('mq', 'again', group_key => 'g1')},
	'mallory enqueues into her first group again');
is((ok_as('d1', 'mallory',
		q{SELECT count(*) FROM dlsm_claim('mq') WHERE entity = 'again'}))[0],
	'0', "mallory's first group is held back by its rate");

# alice, in either database: her other group claims once, then is held back
for my $db ('d2', 'd1')
{
	($out, $err) = ok_as($db, 'alice',
		q{SELECT string_agg(entity, ',') FROM dlsm_claim('aq', units => 5)},
		"$db: alice claims after mallory's");
	is($out, 'e2', "$db: alice's group g2 claims one unit, g1 none");
	is(not_kept($err), 0, "$db: ... with its rate kept (no WARNING)");
	is((ok_as($db, 'alice', q{SELECT count(*) FROM dlsm_claim('aq')}))[0],
		'0', "$db: then both her groups are held back by their rates");
	is( $node->safe_psql($db, q{
SELECT string_agg(group_key || ':' || tokens_left, ',' ORDER BY group_key)
  FROM dlsm_limits WHERE queue = 'aq'::regclass}),
		'g1:0,g2:0', "$db: dlsm_limits shows no token left in either group");
}

# dropping mallory's queue gives her entries back: a new queue of hers
# holds 4,000 groups without a WARNING
ok_as('d1', 'mallory', q{
SELECT dlsm_drop_queue('mq', true);
SELECT dlsm_create_queue('mq2');
SELECT dlsm_set_limit('mq2', NULL, rate => 1, per => '1 day');
SELECT count(dlsm_enqueue('mq2', 'e' || i, group_key => 'g' || i))
  FROM generate_series(1, 4000) i;
}, 'mallory drops her queue and makes another');
$claimed = 0;
$warnings = 0;
for my $i (1 .. 4)
{
	($out, $err) = ok_as('d1', 'mallory',
		q{SELECT count(*) FROM dlsm_claim('mq2', units => 1000)},
		"mallory's claim $i from her new queue");
	$claimed += $out;
	$warnings += not_kept($err);
}
is($claimed, 4000, 'mallory claimed the 4,000 groups of her new queue');
is($warnings, 0, '... each with its rate kept: the dropped queue gave its entries back');

# a superuser may ask for a longer window
$node->safe_psql('d1', q{
SELECT dlsm_create_queue('sq');
SELECT dlsm_set_limit('sq', 'g', rate => 1, per => '99 years');
});
is($node->safe_psql('d1', q{SELECT per FROM dlsm_group_limits
	WHERE queue = 'sq'::regclass}), '99 years',
	'a superuser may set a window of 99 years');

done_testing();
