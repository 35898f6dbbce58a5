# Copyright (c) 2026, dlsm developers
#
# The capacity matrix (issue 32, "Shared memory one tenant can fill"): for
# each fixed-size table of dlsm's shared memory, mallory (no superuser,
# owner of queues in database d1) fills it past its capacity where a
# tenant can, and alice's queue in database d2 keeps its behaviour: her
# claims (a group at its concurrency limit, a rate-limited group), her
# named lock and her reap each answer right and within BOUND_S seconds.
# Each table is listed with its capacity, its bound per tenant and what it
# does when full (doc/security.md, "Shared tables and their bounds").
#
# The list is checked against the code: every capacity an owner of shared
# state defines (#define DLSM_MAX_* in floor, rate, pool, namedlock,
# notify) and every structure it creates in shared memory (ShmemInitStruct,
# ShmemInitHash) must be in the matrix, and the view dlsm_shared_tables
# must show exactly the matrix's tables with the capacities of the code.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

use constant BOUND_S => 5;

# ---------------------------------------------------------------------
# The matrix: one entry per table, by the code's capacity macro (or the
# setting that sizes it); view: its row in dlsm_shared_tables; tenant:
# what one tenant can hold of it; full: what happens when it is full.
# ---------------------------------------------------------------------
my %matrix = (
	DLSM_MAX_RATES => {
		view => 'rates', capacity => 16384,
		tenant => 'a queue owner 4,096, a database 8,192 (rate.h)',
		full => 'the claim is admitted with a WARNING, its rate not kept'
	},
	DLSM_MAX_RATE_HOLDERS => {
		view => 'rate holders', capacity => 128,
		tenant => 'one per role and one per database holding rates: 2',
		full => 'the claim is admitted, its rate not kept, as above'
	},
	DLSM_MAX_FLOORS => {
		view => 'floors', capacity => 128,
		tenant => 'none: taken in turn by the queues that claim',
		full => 'the next floor in turn is taken: that queue scans from its line in the sand'
	},
	DLSM_MAX_PARKED_GROUPS => {
		view => 'parked groups', capacity => 16384,
		tenant => 'none: entries of a dropped or truncated queue are freed',
		full => 'the group is not parked: each walk asks it again'
	},
	DLSM_MAX_IN_FLIGHT => {
		view => 'rows in flight, per queue', capacity => 256,
		tenant => 'a queue\'s own: no other queue\'s',
		full => 'the row is not kept: other claims\' walks of that queue stop at it'
	},
	DLSM_MAX_PARKED => {
		view => 'parked entities, per queue', capacity => 8,
		tenant => 'a queue\'s own: no other queue\'s',
		full => 'the walk stops its queue\'s floor below the entity it cannot park'
	},
	DLSM_MAX_NAMED => {
		view => 'named-lock entries', capacity => 256,
		tenant => 'none: one per lock held or waited for by a transaction',
		full => 'the lock works as well; dlsm_locks does not show it'
	},
	DLSM_MAX_DATABASES => {
		view => 'listening databases', capacity => 64,
		tenant => 'one per database: making databases needs CREATEDB',
		full => 'every NOTIFY dlsm would skip is sent'
	},
	DLSM_MAX_CHANNELS => {
		view => 'channel marks', capacity => 512,
		tenant => 'one per queue channel notified through the relay (dlsm.notify_relay on)',
		full => 'a channel without a mark is notified by its producers, as with the relay off'
	},
	'dlsm.max_databases' => {
		view => 'worker slots', capacity => 8,
		tenant => 'one per database: making databases needs CREATEDB',
		full => 'a database waits for a free slot, shown in dlsm_worker_status'
	},
	DLSM_MAX_WITHOUT => {
		view => 'databases without dlsm', capacity => 4096,
		tenant => 'one per database: making databases needs CREATEDB',
		full => 'such a database keeps its slot'
	},
	DLSM_MAX_SLOTLESS => {
		view => 'databases shown without a slot', capacity => 64,
		tenant => 'one per database: making databases needs CREATEDB',
		full => 'the database is not shown; it still waits for a slot'
	},
	DLSM_MAX_SHUNNED => {
		view => 'shunned owners, per database', capacity => 8,
		tenant => 'one per queue owner, in each database',
		full => 'the shun that ends first ends now'
	},
);

# The structures each owner creates, and the matrix entries that cover them.
my %structures = (
	'dlsm floors' => [qw(DLSM_MAX_FLOORS DLSM_MAX_IN_FLIGHT DLSM_MAX_PARKED)],
	'dlsm parked groups' => ['DLSM_MAX_PARKED_GROUPS'],
	'dlsm rates' => [qw(DLSM_MAX_RATES DLSM_MAX_RATE_HOLDERS)],
	'dlsm named locks' => ['DLSM_MAX_NAMED'],
	'dlsm listeners' => [qw(DLSM_MAX_DATABASES DLSM_MAX_CHANNELS)],
	'dlsm' => [qw(DLSM_MAX_SLOTLESS)],
	'dlsm slots' => [ 'dlsm.max_databases', 'DLSM_MAX_SHUNNED' ],
	'dlsm slots by database' => ['dlsm.max_databases'],
	'dlsm databases without dlsm' => ['DLSM_MAX_WITHOUT'],
	'dlsm waits' => [],    # a condition variable: no entries
);

# ---------------------------------------------------------------------
# The matrix against the code
# ---------------------------------------------------------------------
my (%macros, %created);
for my $file (glob("$ENV{TESTDIR}/src/*.[ch]"))
{
	my $text = slurp_file($file);
	# a module's private header (floor_internals.h) holds its capacities
	my ($module) = $file =~ m{/(\w+?)(?:_internals)?\.[ch]$};
	my $c = -e "$ENV{TESTDIR}/src/$module.c" ? slurp_file("$ENV{TESTDIR}/src/$module.c") : '';
	next unless $c =~ /ShmemInitStruct|DLSM_SHMEM_INIT_HASH/;
	$macros{$1} = $2 while $text =~ /^#define (DLSM_MAX_\w+) (\d+)/mg;
	$created{$1} = 1
	  while $text =~ /(?:ShmemInitStruct|DLSM_SHMEM_INIT_HASH)\("([^"]+)"/g;
}
ok(keys %macros >= 10 && keys %created >= 8,
	'the capacities and structures are read from src/ ('
	  . scalar(keys %macros) . ' capacities, '
	  . scalar(keys %created) . ' structures)');
my @unlisted = grep { !$matrix{$_} } sort keys %macros;
is("@unlisted", '', 'every capacity an owner of shared state defines is in the matrix');
is(join(',', map { "$_=$macros{$_}" } grep { $matrix{$_} && $matrix{$_}{capacity} != $macros{$_} } sort keys %macros),
	'', 'the matrix has the capacities of the code');
my @uncovered = grep { !$structures{$_} } sort keys %created;
is("@uncovered", '', 'every structure in shared memory is in the matrix');
my %covered = map { $_ => 1 } map { @$_ } values %structures;
is(join(' ', grep { !$covered{$_} } sort keys %matrix), '',
	'every table of the matrix lies in a structure of the code');

# ---------------------------------------------------------------------
# The cluster: mallory in d1, alice in d2 (and d1)
# ---------------------------------------------------------------------
my $node = dlsm_node('capacity', q{
dlsm.reap_interval = '1h'
dlsm.databases = 'postgres'
dlsm.max_databases = 8
});

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

sub ok_as
{
	my ($db, $role, $sql, $label) = @_;
	my ($state, $out, $err) = run_as($db, $role, $sql);
	is($state, '00000', $label) or diag $err;
	return ($out, $err);
}

# A row of dlsm_shared_tables: (used, times_full).
sub usage
{
	my ($view) = @_;
	my $row = $node->safe_psql('d1', qq{
SELECT used || '|' || times_full FROM dlsm_shared_tables WHERE name = '$view'});
	return split /\|/, $row;
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

# alice's queue: group g at most one unit at once, group r one claim an
# hour; a unit of g in progress
ok_as('d2', 'alice', q{
SELECT dlsm_create_queue('aq');
SELECT dlsm_set_limit('aq', 'g', concurrency => 1);
SELECT dlsm_set_limit('aq', 'r', rate => 1, per => '1 hour');
}, "alice's queue in d2");

# The view shows exactly the matrix's tables, with the code's capacities.
my %view = map { split /\|/ } split /\n/, $node->safe_psql('d1',
	q{SELECT name || '|' || capacity FROM dlsm_shared_tables});
is(join(',', sort keys %view),
	join(',', sort map { $_->{view} } values %matrix),
	'dlsm_shared_tables shows every table of the matrix, and no other');
is(join(',', map { "$_->{view}=$view{$_->{view}}" }
		grep { ($view{ $_->{view} } // -1) != $_->{capacity} } values %matrix),
	'', '... with the capacities of the code');

# alice's behaviour, checked after each fill: each step right, in BOUND_S;
# $cells counts the rounds in which all of it was.
my $cells = 0;
my $round = 0;

sub alice_keeps
{
	my ($table) = @_;
	$round++;
	my $t0 = [gettimeofday];
	my ($out) = ok_as('d2', 'alice', qq{
SELECT dlsm_enqueue('aq', 'g$round-1', group_key => 'g') IS NOT NULL;
SELECT dlsm_enqueue('aq', 'g$round-2', group_key => 'g') IS NOT NULL;
SELECT dlsm_enqueue('aq', 'r$round-1', group_key => 'r') IS NOT NULL;
SELECT dlsm_enqueue('aq', 'r$round-2', group_key => 'r') IS NOT NULL;
CREATE TEMP TABLE c AS SELECT * FROM dlsm_claim('aq', units => 10, lease => '1 hour');
SELECT string_agg(entity, ',' ORDER BY id) FROM c;
SELECT count(*) FROM dlsm_claim('aq', units => 10);
SELECT sum(dlsm_settle('aq', process_id)) FROM c WHERE entity LIKE 'g%';
SELECT string_agg(entity, ',') FROM dlsm_claim('aq', units => 10);
SELECT dlsm_try_lock('alice-lock') IS NOT NULL;
SELECT dlsm_reap('aq') >= 0;
}, "after $table: alice's statements run");
	my $took = tv_interval($t0);
	my @lines = split /\n/, $out;
	# the first round finds r free; later rounds find it held by its rate
	my $first = $round == 1 ? "g$round-1,r$round-1" : "g$round-1";
	my $kept = is("@lines[4..8]", "$first 0 1 g$round-2 t",
		"after $table: g claims one unit, then its second at once when the first is settled; "
		  . 'r claims at most once an hour; the named lock is granted')
	  or diag $out;
	$kept = ok(($lines[9] // '') eq 't' && $took < BOUND_S,
		sprintf('after %s: alice\'s reap answers, all within %d s (%.1f s)',
			$table, BOUND_S, $took)) && $kept;
	# her settled unit of g is complete; the second stays in progress
	$node->safe_psql('d2', q{UPDATE aq SET status = 'complete' WHERE status = 'in-progress' AND group_key = 'g'});
	$cells++ if $kept;
}

alice_keeps('nothing');

# ---------------------------------------------------------------------
# The cells
# ---------------------------------------------------------------------

# rates: mallory fills her share (4,096) and more
ok_as('d1', 'mallory', q{
SELECT dlsm_create_queue('mr');
SELECT dlsm_set_limit('mr', NULL, rate => 1, per => '1 day');
SELECT count(dlsm_enqueue('mr', 'e' || i, group_key => 'g' || i))
  FROM generate_series(1, 4200) i;
}, 'rates: mallory, 4,200 groups each one claim a day');
my ($out, $err);
for my $i (1 .. 5)
{
	($out, $err) = ok_as('d1', 'mallory', q{SELECT count(*) FROM dlsm_claim('mr', units => 1000)},
		"rates: mallory's claim $i");
}
my ($used, $full) = usage('rates');
ok($used >= 4096 && $used <= 4200 && $full > 0,
	"rates: mallory holds her share ($used used), past it not kept ($full times)");
like($err, qr/WARNING:\s+53000: rate limits of some groups are not kept/,
	'rates: ... with a WARNING');
($used) = usage('rate holders');
ok($used <= 4, "rate holders: $used in use (mallory's role and database, alice's)");
alice_keeps('rates');

# floors: mallory's 130 queues, each claimed, take every floor in turn
ok_as('d1', 'mallory', q{
DO $$
BEGIN
	FOR i IN 1 .. 130 LOOP
		PERFORM dlsm_create_queue('mf' || i);
		PERFORM dlsm_enqueue(('mf' || i)::regclass, 'e');
	END LOOP;
END $$;
}, 'floors: mallory, 130 queues');
$node->safe_psql('d1', 'SET ROLE mallory;'
	  . join('', map { "SELECT count(*) FROM dlsm_claim('mf$_');" } 1 .. 130));
($used, $full) = usage('floors');
ok($used == 128 && $full > 0, "floors: all 128 in use, taken in turn ($full times)");
alice_keeps('floors');

# rows in flight: mallory holds 300 rows claimed in one open transaction
ok_as('d1', 'mallory', q{
SELECT dlsm_create_queue('mi');
SELECT count(dlsm_enqueue('mi', 'e' || i)) FROM generate_series(1, 300) i;
}, 'rows in flight: mallory, 300 requests');
my $held = $node->background_psql('d1');
$held->query_safe(q{SET ROLE mallory; BEGIN; SELECT count(*) FROM dlsm_claim('mi', units => 300)});
($used, $full) = usage('rows in flight, per queue');
ok($used == 256 && $full >= 44, "rows in flight: 256 of mallory's kept, $full left out");
alice_keeps('rows in flight');
$held->query_safe('COMMIT');

# parked entities: 10 of mallory's entities wait for their create
ok_as('d1', 'mallory', q{
SELECT dlsm_create_queue('mp', updates_wait_for_create => true);
SELECT count(dlsm_enqueue('mp', 'e' || i, 'update')) FROM generate_series(1, 10) i;
SELECT count(*) FROM dlsm_claim('mp');
}, 'parked entities: mallory, 10 updates waiting for their create');
($used, $full) = usage('parked entities, per queue');
# a walk parks at most 8 and stops its floor below the ninth (claim.c);
# times_full counts the publishes a full list refused
ok($used == 8, "parked entities: her queue's list is full ($used; $full publishes refused)");
alice_keeps('parked entities');

# named-lock entries: mallory holds 300 names in one open transaction
$held->query_safe(q{BEGIN; SELECT count(dlsm_try_lock('m' || i)) FROM generate_series(1, 300) i});
($used, $full) = usage('named-lock entries');
ok($used == 256 && $full >= 44, "named-lock entries: all 256 mallory's, $full left out");
alice_keeps('named-lock entries');
$held->query_safe('COMMIT');

# parked groups: 16,500 of mallory's groups at their limit
my $t0 = [gettimeofday];
ok_as('d1', 'mallory', q{
SELECT dlsm_create_queue('mg');
SELECT dlsm_set_limit('mg', NULL, concurrency => 1);
SELECT count(dlsm_enqueue('mg', 'a' || i, group_key => 'g' || i))
  FROM generate_series(1, 16500) i;
}, 'parked groups: mallory, 16,500 groups at most one unit at once');
$node->safe_psql('d1', 'SET ROLE mallory;'
	  . q{SELECT count(*) FROM dlsm_claim('mg', units => 1000, lease => '1 hour');} x 17);
ok_as('d1', 'mallory', q{
SELECT count(dlsm_enqueue('mg', 'b' || i, group_key => 'g' || i))
  FROM generate_series(1, 16500) i;
SELECT count(*) FROM dlsm_claim('mg', units => 10);
}, 'parked groups: a second request in each, and a claim that parks them');
($used, $full) = usage('parked groups');
ok($used == 16384 && $full > 0,
	sprintf('parked groups: all 16,384 mallory\'s, %d left out (%.0f s)', $full, tv_interval($t0)));
alice_keeps('parked groups');

# dropped: mallory's queues give their entries back
ok_as('d1', 'mallory', q{SELECT dlsm_drop_queue('mg', drop_table => true)},
	'mallory drops her queue of parked groups');
($used) = usage('parked groups');
is($used, 0, 'parked groups: none left after the drop');

# tables a tenant cannot fill: the databases' and the workers'
my ($state) = run_as('d1', 'mallory', 'CREATE DATABASE m2');
is($state, '42501',
	'worker slots, databases without dlsm, shown without a slot, listening databases: '
	  . 'mallory may not make databases');
ok_as('d1', 'mallory', join('', map { "LISTEN m$_;" } 1 .. 100),
	'listening databases: mallory listens on 100 channels');
($used) = usage('listening databases');
ok($used <= 1, "listening databases: her database counts once ($used)");
($used) = usage('shunned owners, per database');
is($used, 0, 'shunned owners: one per owner and database; none shunned here');
alice_keeps('the rest');

for my $k (sort { $matrix{$a}{view} cmp $matrix{$b}{view} } keys %matrix)
{
	my $t = $matrix{$k};
	note sprintf('%-32s %6d  per tenant: %s; when full: %s',
		$t->{view}, $t->{capacity}, $t->{tenant}, $t->{full});
}
is(join(',', sort map { $_->{view} } grep { !$_->{tenant} || !$_->{full} } values %matrix),
	'', sprintf('the capacity matrix: each of its %d tables says what a tenant can hold and what happens when it is full',
		scalar(keys %matrix)));
is("$cells of $round", '8 of 8',
	'the capacity matrix: alice\'s behaviour kept in each of its 8 rounds (before any fill, then after each)');

$node->stop;
done_testing();
