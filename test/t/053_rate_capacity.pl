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
#
# The table is split into 16 partitions, each under its own lock (issue
# 41, blocker 3); the limits hold across them.  bob's 2,000 groups, spread
# over the partitions, each claim exactly once, then are held back.
# carol's 4,096 groups (her share) of one claim a second are spent a
# second later, and her next 4,096 groups are all kept: the sweep freed
# her spent entries in every partition.  Four owners in two databases try
# 20,000 groups: every claim is admitted, the table is nearly full, and a
# group of a third database gets the WARNING that the table is full, while
# alice's groups stay held back.
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

# The table is split into 16 partitions of 1,024 entries, each under a
# lock of its own; a group's key, hashed, picks its partition.  What
# follows shows the limits kept across the partitions.

# The rates' entries in use and times full (dlsm_shared_tables).
sub rates_used
{
	return split /\|/, $node->safe_psql('d1', q{
SELECT used || '|' || times_full FROM dlsm_shared_tables WHERE name = 'rates'});
}

# Claims of $queue in $db as $role, $calls of 1,000 units each; returns
# the units claimed and the WARNINGs that a rate was not kept.
sub claim_all
{
	my ($db, $role, $queue, $calls, $label) = @_;
	my ($units, $warned) = (0, 0);
	for my $i (1 .. $calls)
	{
		my ($out, $err) = ok_as($db, $role,
			qq{SELECT count(*) FROM dlsm_claim('$queue', units => 1000)},
			"$label: claim $i");
		$units += $out;
		$warned += not_kept($err);
	}
	return ($units, $warned);
}

# $role's queue $queue in $db of $n groups, $rows rows each, under the
# rate limit $per
sub rated_queue
{
	my ($db, $role, $queue, $n, $rows, $per, $prefix) = @_;
	ok_as($db, $role, qq{
SELECT dlsm_create_queue('$queue');
SELECT dlsm_set_limit('$queue', NULL, rate => 1, per => '$per');
SELECT count(dlsm_enqueue('$queue', '$prefix' || g || '-' || k,
                          group_key => '$prefix' || g))
  FROM generate_series(1, $n) g, generate_series(1, $rows) k;
}, "$queue: ${role}'s queue in $db, $n groups of $rows, one claim per $per");
}

$node->safe_psql('postgres', q{
CREATE ROLE bob LOGIN;
CREATE ROLE carol LOGIN;
CREATE ROLE dave LOGIN;
CREATE ROLE erin LOGIN;
CREATE DATABASE d3;
});
for my $db ('d1', 'd2', 'd3')
{
	$node->safe_psql($db, ($db eq 'd3' ? 'CREATE EXTENSION dlsm;' : '')
		  . 'GRANT CREATE ON SCHEMA public TO bob, carol, dave, erin');
}
my ($used0) = rates_used();
is($used0, 4004, "rates: mallory's 4,000 entries and alice's 4 in use");

# many keys over the partitions: bob's 2,000 groups, three requests each,
# one claim an hour: each group claims exactly once, then is held back
rated_queue('d2', 'bob', 'bq', 2000, 3, '1 hour', 'b');
my ($units, $warned) = claim_all('d2', 'bob', 'bq', 7, 'bq');
is($units, 2000, 'bq: 2,000 units claimed, one per group');
is($warned, 0, 'bq: ... each with its rate kept (no WARNING)');
is( $node->safe_psql('d2', q{
SELECT count(DISTINCT group_key) FROM bq WHERE status = 'in-progress'}),
	'2000', 'bq: ... from 2,000 different groups');
is((ok_as('d2', 'bob', q{SELECT count(*) FROM dlsm_claim('bq', units => 1000)}))[0],
	'0', 'bq: then every group is held back by its rate');
is((rates_used())[0], 4004 + 2000, 'rates: bob holds 2,000 entries more');

# expiry: carol's 4,096 groups (her share), one claim a second, spread
# over every partition; once spent, her next 4,096 groups are all kept:
# the sweep freed her spent entries in every partition (one partition
# holds about 256 of them)
rated_queue('d2', 'carol', 'cq', 4096, 1, '1 second', 'c');
($units, $warned) = claim_all('d2', 'carol', 'cq', 5, 'cq');
is($units, 4096, 'cq: carol claims her 4,096 groups');
is($warned, 0, 'cq: ... each with its rate kept');
ok(poll_within($node, 'd1', q{
SELECT used = 6004 FROM dlsm_shared_tables WHERE name = 'rates'}, 60),
	"cq: carol's entries are spent a second later");
rated_queue('d2', 'carol', 'cq2', 4096, 1, '1 hour', 'n');
($units, $warned) = claim_all('d2', 'carol', 'cq2', 5, 'cq2');
is($units, 4096, 'cq2: carol claims 4,096 new groups');
is($warned, 0, 'cq2: ... each with its rate kept: her spent entries were swept from every partition');
is((rates_used())[0], 6004 + 4096, 'rates: carol holds 4,096 entries');

# the table full: the queues above dropped, four owners in two databases
# (8,192 each, the table's 16,384 in all) try 5,000 groups each; every
# claim is admitted, the table is nearly full (at least 15,500 entries: a
# group may go to 64 entries of its partition only, and one that finds
# them taken goes without), and a group of a third database
# finds no entry: it is admitted with the table's WARNING
ok_as('d1', 'mallory', q{SELECT dlsm_drop_queue('mq2', true)}, 'mallory drops mq2');
ok_as('d2', 'bob', q{SELECT dlsm_drop_queue('bq', true)}, 'bob drops bq');
ok_as('d2', 'carol', q{SELECT dlsm_drop_queue('cq', true); SELECT dlsm_drop_queue('cq2', true)},
	'carol drops cq and cq2');
is((rates_used())[0], 4, "rates: only alice's 4 entries left");
my (undef, $full0) = rates_used();
my %fill = (mallory => 'd1', dave => 'd1', bob => 'd2', carol => 'd2');
$units = 0;
for my $role (sort keys %fill)
{
	rated_queue($fill{$role}, $role, "f_$role", 5000, 1, '1 day', 'f');
	my ($u) = claim_all($fill{$role}, $role, "f_$role", 5, "f_$role");
	$units += $u;
}
is($units, 20000, 'full: the four owners claimed their 20,000 groups');
my ($used, $full) = rates_used();
ok($used >= 15500 && $used <= 16384,
	"full: the table holds $used of its 16,384 entries");
is($full - $full0, 20000 + 4 - $used,
	'full: every group without an entry counted in times_full');
rated_queue('d3', 'erin', 'eq', 500, 1, '1 day', 'e');
my $err3;
($state, $out, $err3) = run_as('d3', 'erin',
	q{SELECT count(*) FROM dlsm_claim('eq', units => 1000)});
is($out, '500', 'full: erin, in a third database, claims her 500 groups');
like($err3, qr/DETAIL:\s+dlsm's table of rate limits \(16384 groups\) is full where the group would go/,
	'full: ... with the WARNING that the table is full');
is((ok_as('d1', 'alice', q{SELECT count(*) FROM dlsm_claim('aq', units => 5)}))[0],
	'0', "full: alice's groups are still held back (a full table takes no entry from them)");

# a superuser may ask for a longer window
$node->safe_psql('d1', q{
SELECT dlsm_create_queue('sq');
SELECT dlsm_set_limit('sq', 'g', rate => 1, per => '99 years');
});
is($node->safe_psql('d1', q{SELECT per FROM dlsm_group_limits
	WHERE queue = 'sq'::regclass}), '99 years',
	'a superuser may set a window of 99 years');

done_testing();
