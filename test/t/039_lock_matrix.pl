# Copyright (c) 2026, dlsm developers
#
# The lock matrix: no function of the extension makes a role without rights
# on a table queue a lock on it.  A lock request that waits makes every
# later request on the table wait behind it, so a check that comes after
# the lock lets anyone hold up the table's owner, its readers and the
# worker (issue 32, finding 2: dlsm_uncapture locked its source first).
#
# Generated from the catalog: every function of the extension with a
# regclass argument, once for each such argument.  That argument names
# alice's queue a.q (by OID: a bare OID skips even the schema's USAGE
# check, and nobody has none on a), which a prepared transaction holds in
# ACCESS EXCLUSIVE mode; every other regclass argument names a table of
# nobody's own; the arguments without a default get a valid value of their
# type.  nobody (no rights on a.q) calls it with lock_timeout = 5s: the
# cell passes when the call ends without waiting for a lock (an error of
# any other kind, or a result), and fails on 55P03 (lock timeout).  A
# function of the extension with a regclass argument the matrix has no
# value for fails the test, so a new one cannot be left out.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('lockm', qq{
dlsm.reap_interval = '1h'
max_prepared_transactions = 2
});
$node->safe_psql('postgres', q{
CREATE EXTENSION dlsm;
CREATE ROLE alice LOGIN;
CREATE ROLE nobody LOGIN;
CREATE SCHEMA a AUTHORIZATION alice;
SET ROLE alice;
SELECT dlsm_create_queue('a.q');
SELECT dlsm_create_queue('a.q2');
CREATE TABLE a.src (id int PRIMARY KEY, v text);
SELECT dlsm_capture('a.src', 'a.q');
RESET ROLE;
CREATE SCHEMA n AUTHORIZATION nobody;
SET ROLE nobody;
CREATE TABLE n.mine (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
					 status text, kind text, entity text, process_id uuid);
RESET ROLE;
});
my $queue = $node->safe_psql('postgres', q{SELECT 'a.q'::regclass::oid});
my $src = $node->safe_psql('postgres', q{SELECT 'a.src'::regclass::oid});
my $mine = $node->safe_psql('postgres', q{SELECT 'n.mine'::regclass::oid});

# a value for each argument without a default, by type (and by name)
my %value = (
	'text' => q{'e1'},
	'uuid' => q{'00000000-0000-0000-0000-000000000001'},
	'uuid[]' => q{'{00000000-0000-0000-0000-000000000001}'},
	'bigint[]' => q{'{1}'},
	'regproc' => q{'pg_catalog.now'},
	'interval' => q{'1 hour'},
	'integer' => '1',
	'boolean' => 'false');

my @functions = split /\n/, $node->safe_psql('postgres', q{
SELECT p.oid::regprocedure || '|' || p.proname || '|' ||
	   array_to_string(ARRAY(
		SELECT coalesce(p.proargnames[i + 1], '$' || (i + 1)) || ':' ||
			   format_type(p.proargtypes[i], NULL)
		  FROM generate_series(0, p.pronargs - p.pronargdefaults - 1) i
		 ORDER BY i), ',') || '|' ||
	   array_to_string(ARRAY(
		SELECT i FROM generate_series(0, p.pronargs - 1) i
		 WHERE p.proargtypes[i] = 'regclass'::regtype ORDER BY i), ',')
  FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm'
 WHERE 'regclass'::regtype = ANY (p.proargtypes)
 ORDER BY 1});
ok(@functions >= 15, scalar(@functions) . ' functions of dlsm take a regclass');

# hold a.q and a.src in ACCESS EXCLUSIVE mode, with nobody connected
$node->safe_psql('postgres', q{
BEGIN;
LOCK TABLE a.q, a.src IN ACCESS EXCLUSIVE MODE;
PREPARE TRANSACTION 'hold';
});

my ($cells, $waited) = (0, 0);
for my $f (@functions)
{
	my ($signature, $name, $required, $regclass) = split /\|/, $f, -1;
	my @required = split /,/, $required;
	my %position = map { $_ => 1 } split /,/, $regclass;
	my @args = @required;
	for my $target (sort keys %position)
	{
		for my $held ($queue, $src)
		{
			# arguments by position: the regclass ones first in the list of
			# those without a default, or the first argument otherwise
			my @call;
			my $missing;
			for my $i (0 .. $#args)
			{
				my ($arg, $type) = split /:/, $args[$i], 2;
				if ($type eq 'regclass')
				{
					push @call, ($i == $target ? $held : $mine) . '::oid::regclass';
				}
				elsif (exists $value{$type})
				{
					push @call, "$value{$type}::$type";
				}
				else
				{
					$missing = "$arg $type";
				}
			}
			if (!@args)
			{
				push @call, "$held\::oid::regclass";
			}
			if (defined $missing)
			{
				fail("$signature: no value for argument $missing");
				next;
			}
			my $call = "SELECT * FROM $name(" . join(', ', @call) . ')';
			my ($ret, $out, $err) = $node->psql('postgres',
				"SET lock_timeout = '5s';\n\\set VERBOSITY sqlstate\n$call",
				extra_params => [ '-U', 'nobody' ]);
			$cells++;
			my $state = $ret == 0 ? 'ok' : ($err =~ /ERROR:\s+(\w{5})/ ? $1 : $err);
			$waited++ if $state eq '55P03';
			isnt($state, '55P03',
				"$name, argument " . ($target + 1) . ($held eq $queue ? ' a.q' : ' a.src')
				  . ": nobody does not wait for a lock ($state)");
		}
		last if !@args;
	}
}
note("lock matrix: $cells cells, $waited waited for a lock");
ok($cells >= 30, "the matrix has $cells cells");

$node->safe_psql('postgres', q{ROLLBACK PREPARED 'hold'});
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_prepared_xacts}),
	'0', 'the lock is given back');
$node->stop;
done_testing();
