# Copyright (c) 2026, dlsm developers
#
# Version skew: the library serves one version of the SQL objects, and a
# database may hold an older one (every database after a library upgrade,
# until ALTER EXTENSION dlsm UPDATE).  For every released version (each
# sql/dlsm--X.sql), the extension is created at that version under the
# current library and every function that version declares, read from its
# catalog, is called by an ordinary role with good, NULL and odd
# arguments: each answers, or fails with a clean 55000 asking for the
# update.  Then ALTER EXTENSION dlsm UPDATE, and every function of the
# current version is called the same way: each answers or fails with an
# SQLSTATE other than XX000.  No server process ends by a signal.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('skew', qq{
dlsm.reap_interval = 500
restart_after_crash = on
});
wait_first_look($node);

my ($current) =
  slurp_file("$ENV{TESTDIR}/dlsm.control") =~ /default_version = '([^']+)'/;
my @versions = sort { $a <=> $b } map { m{/dlsm--([0-9.]+)\.sql$} ? $1 : () }
  glob("$ENV{TESTDIR}/sql/dlsm--*.sql");
ok(scalar(@versions) >= 7 && $versions[-1] eq $current,
	"versions 1.0 to $current: @versions");

$node->safe_psql('postgres', 'CREATE ROLE skewer LOGIN');

# Call every function in $db as skewer in each mode; returns a list of
# "function (mode): state message" for the calls whose state is not in
# %$allowed, or undef after a lost session.
sub call_all
{
	my ($db, $allowed, $count) = @_;
	my @bad;
	for my $mode (qw(good null odd))
	{
		my $rows = call_every($node, $db, 'skewer', 'skew.t', 'skew.t',
			'00000000-0000-0000-0000-000000000001', 1, $mode);
		if (!defined $rows)
		{
			# after a crash the server restarts: wait for it
			$node->poll_query_until('postgres', 'SELECT true');
			return undef;
		}
		for my $r (@$rows)
		{
			$$count++;
			push @bad, "$r->[0] ($mode): $r->[1] $r->[2]"
			  unless $allowed->($r->[1]);
		}
	}
	return \@bad;
}

for my $v (@versions)
{
	(my $db = "skew_$v") =~ s/\./_/g;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, qq{
CREATE EXTENSION dlsm VERSION '$v';
CREATE SCHEMA skew AUTHORIZATION skewer;
SET ROLE skewer;
CREATE TABLE skew.t (id int PRIMARY KEY, entity text);
});
	install_caller($node, $db);
	my $calls = 0;
	if ($v ne $current)
	{
		# 42501: EXECUTE is not granted to PUBLIC (PostgreSQL says so first)
		my $bad = call_all($db,
			sub { $_[0] eq '00000' || $_[0] eq '55000' || $_[0] eq '42501' },
			\$calls);
		ok(defined $bad && @$bad == 0,
			"$v: every function answers or fails with 55000 ($calls calls)")
		  or diag(defined $bad ? join("\n", @$bad[ 0 .. ($#$bad < 15 ? $#$bad : 15) ])
			: 'the session was lost');
		my $refused = $node->safe_psql($db,
			"SET ROLE skewer; SELECT count(*) FROM public.dlsm_call_every('skew.t', 'skew.t', NULL, 1, 'good') WHERE state = '55000' AND message LIKE 'extension \"dlsm\" is at version $v, but its library serves version $current'");
		cmp_ok($refused, '>', 10, "$v: the functions ask for the update");
		$node->safe_psql($db, 'ALTER EXTENSION dlsm UPDATE');
	}
	$calls = 0;
	my $bad = call_all($db, sub { $_[0] ne 'XX000' }, \$calls);
	ok(defined $bad && @$bad == 0,
		"$v updated to $current: no internal error ($calls calls)")
	  or diag(defined $bad ? join("\n", @$bad) : 'the session was lost');
}

my $log = slurp_file($node->logfile);
unlike($log,
	qr/terminated by signal|was terminated by exception|all server processes terminated; reinitializing/,
	'no server process ended by a signal');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server answers');

$node->stop;
done_testing();
