# Copyright (c) 2026, dlsm developers
#
# Fences never go backwards across a failover.
#
# A primary and a streaming standby.  The standby's WAL receiver is
# stopped (primary_conninfo emptied), then the primary hands out fences in
# every way dlsm has (transactional claims, leased claims, transaction-scope
# and lease-scope named locks), more of them than a sequence logs ahead, so
# that the standby never sees them.  The primary is killed (immediate
# stop), the standby promoted: its next claim's and lock's fences exceed
# every fence either server handed out.  The old primary is rebuilt as a
# standby of the new one (a fresh base backup), cut off the same way while
# the new primary hands out fences, and promoted in turn: again the next
# fences exceed all before.  Last, DROP EXTENSION dlsm CASCADE and CREATE
# EXTENSION dlsm: the next fences exceed every earlier one, those of the
# current timeline included.  Fences carry the timeline in their top bits
# (fence >> 52 = timeline ID).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $conf = qq{
shared_preload_libraries = 'dlsm'
dlsm.reap_interval = 200
max_connections = 30
};

# The largest of a list of fences, compared as integers: fences pass 2^53,
# where List::Util's max, comparing doubles, can pick the wrong one.
sub max
{
	my $m;
	for (@_) { $m = $_ if !defined $m || $_ > $m; }
	return $m;
}

# how many fences of each kind a phase takes; well over the 32 values a
# sequence logs ahead, so that a standby that missed them cannot be ahead
my $n_unreplicated = 40;

# ---------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------

# Take $n fences of each kind on $node, names tagged with $tag: claims
# settled in the same transaction, leased claims left in progress,
# transaction-scope locks, lease-scope locks.  Returns a hash of lists.
sub take_fences
{
	my ($node, $tag, $n, $queue) = @_;
	$queue //= 'fq';
	my %f;
	$f{claim} = $node->safe_psql(
		'postgres', qq{
SELECT string_agg(s.fence::text, ',')
  FROM (SELECT c.fence, dlsm_settle('$queue', c.process_id)
		  FROM (SELECT DISTINCT process_id, fence
				  FROM dlsm_claim('$queue', units => $n)) c) s});
	$f{leased} = $node->safe_psql(
		'postgres', qq{
SELECT string_agg(fence::text, ',')
  FROM dlsm_claim('$queue', lease => '1 hour', units => $n)});
	$f{txlock} = $node->safe_psql(
		'postgres', qq{
SELECT string_agg(dlsm_try_lock('$tag/tx/' || i)::text, ',')
  FROM generate_series(1, $n) i});
	$f{leaselock} = $node->safe_psql(
		'postgres', qq{
SELECT string_agg(dlsm_try_lock('$tag/lease/' || i, lease => '1 hour')::text, ',')
  FROM generate_series(1, $n) i});
	for my $k (keys %f)
	{
		$f{$k} = [ grep { $_ ne '' } split /,/, $f{$k} ];
	}
	is( join(' ', map { scalar @{ $f{$_} } } qw(claim leased txlock leaselock)),
		"$n $n $n $n",
		"$tag: $n fences of each kind (claim, leased claim, transaction lock, lease lock) on "
		  . $node->name);
	return \%f;
}

sub all_fences
{
	return map { @{ $_->{claim} }, @{ $_->{leased} }, @{ $_->{txlock} },
		  @{ $_->{leaselock} } } @_;
}

# The next fence of each kind on $node, one call each.
sub next_fences
{
	my ($node, $tag, $queue) = @_;
	$queue //= 'fq';
	return {
		claim => $node->safe_psql(
			'postgres', qq{
SELECT c.fence FROM (SELECT DISTINCT process_id, fence FROM dlsm_claim('$queue')) c
 WHERE dlsm_settle('$queue', c.process_id) = 1}),
		leased => $node->safe_psql('postgres',
			qq{SELECT fence FROM dlsm_claim('$queue', lease => '1 hour')}),
		txlock =>
		  $node->safe_psql('postgres', qq{SELECT dlsm_try_lock('$tag/tx')}),
		leaselock => $node->safe_psql('postgres',
			qq{SELECT dlsm_try_lock('$tag/lease', lease => '1 hour')}),
	};
}

# Every next fence exceeds $bound.
sub next_exceed
{
	my ($next, $bound, $what) = @_;
	for my $k (qw(claim leased txlock leaselock))
	{
		my $f = $next->{$k};
		ok( defined $f && $f =~ /^\d+$/ && $f > $bound,
			"$what: the next $k fence exceeds all earlier ones ("
			  . ($f // 'none') . " > $bound)");
	}
}

# The timeline the node writes WAL on.
sub timeline
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		q{SELECT ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int}
	);
}

sub fences_carry_timeline
{
	my ($node, $next, $what) = @_;
	my $tli = timeline($node);
	my @bad = grep { !defined $_ || $_ !~ /^\d+$/ || ($_ >> 52) != $tli }
	  map { $next->{$_} } qw(claim leased txlock leaselock);
	ok(!@bad, "$what: the fences carry timeline $tli in their top bits (fence >> 52)")
	  or diag 'fences: '
	  . join(' ', map { $next->{$_} // 'none' } qw(claim leased txlock leaselock));
}

# Stop $standby's WAL receiver: whatever its primary writes from now on
# never reaches it.
sub cut_off
{
	my ($primary, $standby) = @_;
	$standby->append_conf('postgresql.conf', "primary_conninfo = ''");
	$standby->reload;
	ok( $standby->poll_query_until('postgres',
			'SELECT count(*) = 0 FROM pg_stat_wal_receiver')
		  && $primary->poll_query_until('postgres',
			'SELECT count(*) = 0 FROM pg_stat_replication'),
		$standby->name . ' no longer receives WAL from ' . $primary->name);
}

# The standby saw none of the fences of $f (and none of the leases tagged $tag).
sub never_reached
{
	my ($standby, $f, $tag, $queue) = @_;
	$queue //= 'fq';
	my @claimed = (@{ $f->{claim} }, @{ $f->{leased} });
	my $list = join(',', @claimed);
	is( $standby->safe_psql(
			'postgres', qq{
SELECT (SELECT count(*) FROM $queue WHERE fence IN ($list))
	 + (SELECT count(*) FROM dlsm_leases WHERE name LIKE '$tag/%')}),
		'0',
		"$tag: none of those claims and leases reached " . $standby->name);
}

# ---------------------------------------------------------------------
# The primary A and its standby B
# ---------------------------------------------------------------------
my $node_a = PostgreSQL::Test::Cluster->new('primary_a');
$node_a->init(allows_streaming => 1);
$node_a->append_conf('postgresql.conf', $conf);
$node_a->start;
ok(install_dlsm($node_a), 'the worker runs on primary A');
$node_a->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('fq');
SELECT count(dlsm_enqueue('fq', 'e' || i)) FROM generate_series(1, 3000) i;
});

$node_a->backup('a_base');
my $node_b = PostgreSQL::Test::Cluster->new('standby_b');
$node_b->init_from_backup($node_a, 'a_base', has_streaming => 1);
$node_b->start;

# fences the standby sees
my $f_a0 = take_fences($node_a, 'a0', 10);
$node_a->wait_for_catchup($node_b);
is( $node_b->safe_psql('postgres',
		q{SELECT count(*) FROM dlsm_leases WHERE name LIKE 'a0/%'}),
	'10', 'B replayed the lease locks of A');

# fences it never sees
cut_off($node_a, $node_b);
my $f_a1 = take_fences($node_a, 'a1', $n_unreplicated);
never_reached($node_b, $f_a1, 'a1');

my $max_before = max(all_fences($f_a0, $f_a1));
note "highest fence handed out by A: $max_before";

# ---------------------------------------------------------------------
# Failover 1: A dies, B is promoted
# ---------------------------------------------------------------------
$node_a->stop('immediate');
$node_b->promote;
is($node_b->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'B is promoted');
is(timeline($node_b), '2', 'B writes on timeline 2');

my $next_b = next_fences($node_b, 'b_first');
next_exceed($next_b, $max_before, 'after failover A -> B');
fences_carry_timeline($node_b, $next_b, 'after failover A -> B');

# ---------------------------------------------------------------------
# A rebuilt as a standby of B (fresh base backup), then failover 2
# ---------------------------------------------------------------------
$node_b->backup('b_base');
my $node_a2 = PostgreSQL::Test::Cluster->new('rebuilt_a');
$node_a2->init_from_backup($node_b, 'b_base', has_streaming => 1);
$node_a2->start;

my $f_b0 = take_fences($node_b, 'b0', 10);
$node_b->wait_for_catchup($node_a2);
is( $node_a2->safe_psql('postgres',
		q{SELECT count(*) FROM dlsm_leases WHERE name LIKE 'b0/%'}),
	'10', 'rebuilt A replayed the lease locks of B');

cut_off($node_b, $node_a2);
my $f_b1 = take_fences($node_b, 'b1', $n_unreplicated);
never_reached($node_a2, $f_b1, 'b1');

$max_before = max($max_before, values %$next_b, all_fences($f_b0, $f_b1));
note "highest fence handed out by A and B: $max_before";

$node_b->stop('immediate');
$node_a2->promote;
is($node_a2->safe_psql('postgres', 'SELECT pg_is_in_recovery()'),
	'f', 'rebuilt A is promoted');

my $next_a2 = next_fences($node_a2, 'a2_first');
next_exceed($next_a2, $max_before, 'after failover B -> rebuilt A');
fences_carry_timeline($node_a2, $next_a2, 'after failover B -> rebuilt A');
is(timeline($node_a2), '3', 'rebuilt A writes on timeline 3');

# ---------------------------------------------------------------------
# DROP EXTENSION dlsm CASCADE + CREATE EXTENSION dlsm
# ---------------------------------------------------------------------
my $f_c0 = take_fences($node_a2, 'c0', 10);
$max_before = max($max_before, values %$next_a2, all_fences($f_c0));
note "highest fence before the extension is dropped: $max_before";

$node_a2->safe_psql(
	'postgres', q{
DROP EXTENSION dlsm CASCADE;
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('fq2');
SELECT count(dlsm_enqueue('fq2', 'e' || i)) FROM generate_series(1, 10) i;
});
my $next_c = next_fences($node_a2, 'c_first', 'fq2');
next_exceed($next_c, $max_before, 'after DROP EXTENSION + CREATE EXTENSION');

# and on: fences of a later batch exceed those
my $f_c1 = take_fences($node_a2, 'c1', 3, 'fq2');
my @c1 = all_fences($f_c1);
ok(!grep({ $_ <= max(values %$next_c) } @c1),
	'fences keep rising after the re-creation');

$node_a2->stop;
done_testing();
