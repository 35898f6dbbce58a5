# Copyright (c) 2026, dlsm developers
#
# The diagrams of doc/diagrams/ tell the truth (issue 33): the states of
# request-states.dot are exactly the status values a queue's CHECK
# constraint allows, read from a queue dlsm_create_queue made, and each
# committed .svg is what Graphviz's dot renders from its .dot today.
#
# A node of request-states.dot is a state unless its name starts with "_"
# (the start and end marks); every edge joins two nodes it declares.  The
# SVGs are compared only where dot is installed (test/setup.sh installs
# graphviz); elsewhere that check is skipped.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $dir = "$ENV{TESTDIR}/doc/diagrams";
my @dots = sort glob("$dir/*.dot");
cmp_ok(scalar(@dots), '>=', 2, 'doc/diagrams has its sources (' . scalar(@dots) . ')');

# the status values a queue allows
my $node = dlsm_node('diagrams');
ok(install_dlsm($node), 'dlsm installed');
$node->safe_psql('postgres', q{SELECT dlsm_create_queue('public.q')});
my $check = $node->safe_psql('postgres', q{
	SELECT pg_get_constraintdef(oid) FROM pg_constraint
	 WHERE conrelid = 'public.q'::regclass AND contype = 'c'
	   AND pg_get_constraintdef(oid) LIKE '%status%'});
# CHECK ((status = ANY ('{new,in-progress,...}'::text[]))), or ARRAY['new', ...]
my @allowed;
if ($check =~ /'\{([^}]*)\}'/) { @allowed = split /,/, $1; }
elsif ($check =~ /ARRAY\[(.*)\]/) { @allowed = map { /'([^']*)'/ ? $1 : () } split /,/, $1; }
@allowed = sort @allowed;
note "the constraint: $check";
cmp_ok(scalar(@allowed), '>=', 4, "the status column's CHECK allows @allowed");

# the states of the diagram: its nodes, but the marks
my $dot = slurp_file("$dir/request-states.dot");
$dot =~ s{//[^\n]*}{}g;
my (%nodes, @edges);
while ($dot =~ /^\s*("[^"]+"|\w+)\s*(->\s*("[^"]+"|\w+))?\s*(?:\[|;)/mg)
{
	my ($from, $to) = ($1, $3);
	s/"//g for grep { defined } $from, $to;
	next if $from =~ /^(?:graph|node|edge)$/;
	if (defined $to) { push @edges, [ $from, $to ]; }
	else { $nodes{$from} = 1; }
}
my @states = sort grep { !/^_/ } keys %nodes;
is(join(' ', @states), join(' ', @allowed),
	'the states of request-states.dot are the values the status column allows');
cmp_ok(scalar(@edges), '>=', 8, 'the diagram has its transitions (' . scalar(@edges) . ')');
is(join(', ', map { "$_->[0] -> $_->[1]" } grep { !$nodes{ $_->[0] } || !$nodes{ $_->[1] } } @edges),
	'', 'every transition joins two declared nodes');
my %into;
$into{ $_->[1] }++ for @edges;
my %outof;
$outof{ $_->[0] }++ for @edges;
is(join(', ', grep { !$into{$_} || !$outof{$_} } @states), '',
	'every state is entered and left');

# the SVGs are what dot renders now
SKIP:
{
	my $have = `command -v dot 2>/dev/null`;
	skip 'dot (graphviz) is not installed', scalar(@dots) unless $have;
	for my $source (@dots)
	{
		(my $svg = $source) =~ s/\.dot$/.svg/;
		my $name = $svg =~ s{.*/}{}r;
		my $rendered = `dot -Tsvg "$source"`;
		ok(-f $svg && $? == 0 && $rendered eq slurp_file($svg),
			"$name is up to date with its .dot")
		  or diag "render it again: dot -Tsvg doc/diagrams/"
		  . ($source =~ s{.*/}{}r) . " -o doc/diagrams/$name";
	}
}

done_testing();
