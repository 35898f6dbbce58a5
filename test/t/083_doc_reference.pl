# Copyright (c) 2026, dlsm developers
#
# The reference names everything the extension creates (issue 33), compared
# with the catalog of a cluster with dlsm installed:
#   - every function of the extension is in doc/reference.md's summary
#     (a table row naming it), and every function a user calls has an entry
#     ("### name") in doc/reference-queues.md or doc/reference-locks.md;
#   - every view of the extension is in doc/reference.md's summary;
#   - every dlsm.* setting (GUC) has a row in doc/configuration.md's summary
#     and an entry "## name" there;
#   - and the other way round: every dlsm_* function or view the summary
#     names, and every setting configuration.md names, exists.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $reference = slurp_file("$ENV{TESTDIR}/doc/reference.md");
my $entries = slurp_file("$ENV{TESTDIR}/doc/reference-queues.md")
  . slurp_file("$ENV{TESTDIR}/doc/reference-locks.md");
my $configuration = slurp_file("$ENV{TESTDIR}/doc/configuration.md");
my ($summary) = $reference =~ /^## Summary\n(.*?)^## /ms;
ok(defined $summary, 'doc/reference.md has a summary');
$summary //= '';

my $node = dlsm_node('doc_reference');
ok(install_dlsm($node), 'dlsm installed');

sub members
{
	my ($catalog, $name) = @_;
	return split /\n/, $node->safe_psql('postgres', qq{
		SELECT DISTINCT o.$name FROM pg_depend d
		  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm'
		  JOIN $catalog o ON o.oid = d.objid
		 WHERE d.classid = '$catalog'::regclass AND d.deptype = 'e'
		 ORDER BY 1});
}
my @functions = members('pg_proc', 'proname');
my @views = grep { /^dlsm_/ } split /\n/, $node->safe_psql('postgres', q{
	SELECT c.relname FROM pg_depend d
	  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm'
	  JOIN pg_class c ON c.oid = d.objid
	 WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e' AND c.relkind = 'v'
	 ORDER BY 1});
my @gucs = split /\n/, $node->safe_psql('postgres',
	q{SELECT name FROM pg_settings WHERE name LIKE 'dlsm.%' ORDER BY 1});
cmp_ok(scalar(@functions), '>=', 30, 'the extension has its functions (' . scalar(@functions) . ')');
cmp_ok(scalar(@views), '>=', 5, 'and its views (' . scalar(@views) . ')');
cmp_ok(scalar(@gucs), '>=', 13, 'and its settings (' . scalar(@gucs) . ')');

# a row of a summary table that names $name (as a link, in backquotes, or with
# its arguments)
sub in_table
{
	my ($text, $name) = @_;
	return $text =~ /^\| *(?:\[|`)?\Q$name\E\b/m;
}

my @internal = qw(dlsm_wake dlsm_capture_trigger dlsm_forget_dropped dlsm_launcher_wake
  dlsm_fence_start dlsm_queue_stats dlsm_worker_status dlsm_locks dlsm_group_state
  dlsm_shared_tables);
my %internal = map { $_ => 1 } @internal;
is(join(', ', grep { !in_table($summary, $_) } @functions), '',
	'every function is in the summary of doc/reference.md');
is(join(', ', grep { !$internal{$_} && $entries !~ /^### \Q$_\E$/m } @functions), '',
	'every function a user calls has an entry in doc/reference-queues.md or -locks.md');
is(join(', ', grep { !in_table($summary, $_) } @views), '',
	'every view is in the summary of doc/reference.md');
is(join(', ', grep { !in_table($configuration, $_) } @gucs), '',
	'every setting is in the summary of doc/configuration.md');
is(join(', ', grep { $configuration !~ /^## \Q$_\E$/m } @gucs), '',
	'every setting has an entry in doc/configuration.md');

my %exists = map { $_ => 1 } @functions, @views, @gucs;
my %named;
$named{$1} = 1 while $summary =~ /^\| *(?:\[|`)?(dlsm_\w+)/mg;
$named{$1} = 1 while $configuration =~ /^\| *(?:\[|`)?(dlsm\.\w+)/mg;
is(join(', ', grep { !$exists{$_} } sort keys %named), '',
	'every function, view and setting the summaries name exists');

done_testing();
