# Copyright (c) 2026, dlsm developers
#
# Entity locks are keyed by a hash of the entity seeded with the queue's
# OID, which anyone can read, and the hash (PostgreSQL's hash_bytes) can be
# run backwards: a name whose key equals another entity's is computed here
# in a moment.  A claim that holds the lock of that name makes other claims
# pass over the other entity while its transaction lasts; nothing is claimed
# twice, and the other entity is claimed as soon as the transaction ends.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('collision', "dlsm.reap_interval = '1h'\n");
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# PostgreSQL's hash_bytes_extended (src/common/hashfn.c), for keys of a
# multiple of 12 bytes: the state after each 12-byte block.
my $M = 0xFFFFFFFF;
sub rot { my ($x, $k) = @_; return (($x << $k) | ($x >> (32 - $k))) & $M; }

sub mix
{
	my ($a, $b, $c) = @_;
	$a = ($a - $c) & $M; $a ^= rot($c, 4);  $c = ($c + $b) & $M;
	$b = ($b - $a) & $M; $b ^= rot($a, 6);  $a = ($a + $c) & $M;
	$c = ($c - $b) & $M; $c ^= rot($b, 8);  $b = ($b + $a) & $M;
	$a = ($a - $c) & $M; $a ^= rot($c, 16); $c = ($c + $b) & $M;
	$b = ($b - $a) & $M; $b ^= rot($a, 19); $a = ($a + $c) & $M;
	$c = ($c - $b) & $M; $c ^= rot($b, 4);  $b = ($b + $a) & $M;
	return ($a, $b, $c);
}

# the state after the first block of a 24-byte key, with the seed
sub first_block
{
	my ($block, $seed) = @_;
	my $a = my $b = my $c = (0x9e3779b9 + 24 + 3923095) & $M;
	($a, $b, $c) = mix($a, ($b + $seed) & $M, $c) if $seed;
	my @w = unpack('V3', $block);
	return mix(($a + $w[0]) & $M, ($b + $w[1]) & $M, ($c + $w[2]) & $M);
}

# A 24-byte name of the same key as $victim: its second block makes up for
# the difference after a first block of our choosing; bytes 1 to 127 only.
sub colliding_name
{
	my ($victim, $seed) = @_;
	my @v = first_block(substr($victim, 0, 12), $seed);
	my @g = unpack('V3', substr($victim, 12, 12));
	for my $i (0 .. 10_000_000)
	{
		my $first = sprintf('atk%09d', $i);
		my @s = first_block($first, $seed);
		my $second =
		  pack('V3', map { ($g[$_] + $v[$_] - $s[$_]) & $M } 0 .. 2);
		return $first . $second if $second =~ /\A[\x01-\x7f]{12}\z/;
	}
	die 'no colliding name found';
}

sql(q{SELECT dlsm_create_queue('eq')});
my $oid = sql(q{SELECT 'eq'::regclass::oid});
my $victim = 'victim-entity-0000000001';
my $hex = unpack('H*', colliding_name($victim, $oid));
my $name = "convert_from('\\x$hex'::bytea, 'UTF8')";
is( sql(qq{SELECT hashtextextended('$victim', $oid) = hashtextextended($name, $oid)
		 AND '$victim' <> $name}),
	't', 'a name of the same entity lock key, seeded with the queue OID, is computed');

sql(qq{SELECT dlsm_enqueue('eq', $name, 'create');
	   SELECT dlsm_enqueue('eq', '$victim', 'create')});
my $holder = $node->background_psql('postgres');
$holder->query_safe(q{BEGIN});
is($holder->query_safe(qq{SELECT entity = $name FROM dlsm_claim('eq')}),
	't', 'one transaction claims the colliding entity and keeps it open');
is(sql(q{SELECT count(*) FROM dlsm_claim('eq')}),
	'0', 'meanwhile claims pass over the other entity: only its availability suffers');
$holder->query_safe(q{COMMIT});
$holder->quit;
is(sql(q{SELECT entity FROM dlsm_claim('eq', lease => '1 hour')}),
	$victim, 'once the transaction ended, the other entity is claimed');
is( sql(q{SELECT count(*) FILTER (WHERE status = 'in-progress'),
				 count(DISTINCT process_id), max(attempts) FROM eq}),
	'2|2|1', 'each request was claimed once, by one claim');

$node->stop;
done_testing();
