# Copyright (c) 2026, dlsm developers
#
# The reference names everything the extension creates (issue 33), compared
# with the catalog of a cluster with dlsm installed, and its entries keep
# their template, with errors tables that match the errors src/ raises.
#
# In detail:
#   - every function of the extension is in doc/reference.md's summary
#     (a table row naming it), and every function a user calls has an entry
#     ("### name") in doc/reference-queues.md, -consuming.md or -locks.md;
#   - every view of the extension is in doc/reference.md's summary;
#   - every dlsm.* setting (GUC) has a row in doc/configuration.md's summary
#     and an entry "## name" there;
#   - and the other way round: every dlsm_* function or view the summary
#     names, and every setting configuration.md names, exists;
#   - every entry follows the template of doc/reference.md ("How an entry
#     reads"), its parts in order: a purpose sentence, the signature, a
#     parameter table naming the function's arguments in the catalog's
#     order, **Privileges:**, an example that runs with what it prints
#     (test/t/081 runs it and compares), an errors table, See also;
#   - every row of an errors table names a SQLSTATE PostgreSQL knows, and,
#     unless marked "(PostgreSQL)", a message dlsm raises with that
#     SQLSTATE: an ereport of src/*.c with that errcode whose errmsg format
#     matches it (each %-conversion matching any text), an aclcheck_error
#     call of src/*.c, or a RAISE of the install script; and every SQLSTATE
#     of an errors table is in doc/errors.md.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my @entry_pages = qw(doc/reference-queues.md doc/reference-consuming.md doc/reference-locks.md);
my $reference = slurp_file("$ENV{TESTDIR}/doc/reference.md");
my $entries = join '', map { slurp_file("$ENV{TESTDIR}/$_") } @entry_pages;
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
	'every function a user calls has an entry in doc/reference-queues.md, -consuming.md or -locks.md');
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

# ---------------------------------------------------------------------
# The entries' template, and their errors tables against the code
# ---------------------------------------------------------------------

# SQLSTATEs by errcode name, from the server's errcodes.h
my %sqlstate;
my $errcodes = $node->config_data('--includedir-server') . '/utils/errcodes.h';
for (split /\n/, slurp_file($errcodes))
{
	next unless /^#define (ERRCODE_\w+)\s+MAKE_SQLSTATE\((.*)\)/;
	my ($name, $chars) = ($1, $2);
	$sqlstate{$name} = join '', $chars =~ /'(.)'/g;
}
my %known_state = map { $_ => 1 } values %sqlstate;
cmp_ok(scalar(keys %known_state), '>=', 200, 'the server\'s SQLSTATEs are read from errcodes.h');

# [SQLSTATE, errmsg format, where] of every error dlsm raises
my @raised;
for my $file (sort glob("$ENV{TESTDIR}/src/*.c"))
{
	my $c = slurp_file($file);
	my $where = $file =~ s{.*/}{}r;
	while ($c =~ /\bereport\s*\(/g)
	{
		# the ereport's text, to its closing parenthesis (strings skipped)
		my ($i, $depth) = (pos($c), 1);
		while ($depth && $i < length $c)
		{
			my $ch = substr($c, $i++, 1);
			if ($ch eq '"')
			{
				while ($i < length $c)
				{
					my $d = substr($c, $i++, 1);
					if ($d eq '\\') { $i++; next; }
					last if $d eq '"';
				}
			}
			$depth++ if $ch eq '(';
			$depth-- if $ch eq ')';
		}
		my $body = substr($c, pos($c), $i - pos($c));
		my @codes = $body =~ /errcode\((ERRCODE_\w+)\)/g;
		my @formats;
		while ($body =~ /\berrmsg(?:_plural)?\s*\(((?:\s*(?:"(?:[^"\\]|\\.)*"|U?INT64_FORMAT))+)/g)
		{
			my ($literal, $format) = ($1, '');
			while ($literal =~ /"((?:[^"\\]|\\.)*)"|(U?INT64_FORMAT)/g)
			{
				$format .= defined $1 ? $1 : '%ld';
			}
			$format =~ s/\\(["\\])/$1/g;
			push @formats, $format;
		}
		for my $code (@codes)
		{
			push @raised, map { [ $sqlstate{$code} // "?$code", $_, $where ] } @formats;
		}
	}
	while ($c =~ /aclcheck_error\(ACLCHECK_(\w+),\s*OBJECT_(\w+)/g)
	{
		my ($check, $object) = ($1, lc $2);
		push @raised, [ '42501',
			$check eq 'NOT_OWNER' ? "must be owner of $object %s" : "permission denied for $object %s",
			$where ];
	}
}
my $script = slurp_file("$ENV{TESTDIR}/sql/dlsm--"
	  . ($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'dlsm'}))
	  . '.sql');
while ($script =~ /RAISE\s+EXCEPTION\s+'((?:[^']|'')*)'.*?ERRCODE\s*=\s*'(\w+)'/sg)
{
	my ($format, $code) = ($1, $2);
	$format =~ s/''/'/g;
	$format =~ s/%/%s/g;
	push @raised, [ $code =~ /^[0-9A-Z]{5}$/ ? $code : $sqlstate{ 'ERRCODE_' . uc $code } // "?$code",
		$format, 'the install script' ];
}
cmp_ok(scalar(@raised), '>=', 80, 'the errors dlsm raises are read from src/ (' . scalar(@raised) . ')');
is(join(', ', map { "$_->[2]: $_->[1]" } grep { $_->[0] =~ /^\?/ } @raised), '',
	'each of them has a SQLSTATE');

# a format as a pattern: each conversion matches any text, even none
sub format_re
{
	my ($format) = @_;
	my $re = join '.*', map { quotemeta } split /%[-+ #0-9.]*(?:ll|l|z|h|hh)?[sdiuxXfgc]/, $format, -1;
	return qr/^$re$/;
}
my @raised_re = map { [ $_->[0], format_re($_->[1]) ] } @raised;

# the IN arguments of each function, in order
my %args;
for (split /\n/, $node->safe_psql('postgres', q{
	SELECT p.proname, coalesce(string_agg(a.name, ' ' ORDER BY a.n), '')
	  FROM pg_proc p
	  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
	  JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm'
	  LEFT JOIN LATERAL unnest(p.proargnames, coalesce(p.proargmodes::text[],
				array_fill('i'::text, ARRAY[coalesce(cardinality(p.proargnames), 0)])))
			WITH ORDINALITY AS a(name, mode, n) ON a.mode IN ('i', 'b', 'v')
	 GROUP BY p.oid, p.proname}))
{
	my ($name, $list) = split /\|/, $_, -1;
	$args{$name} = $list;
}

my (@shape, @params, @errors);
my ($n_entries, $n_rows) = (0, 0);
for my $page (@entry_pages)
{
	my $text = slurp_file("$ENV{TESTDIR}/$page");
	while ($text =~ /^### (dlsm_\w+)\n(.*?)(?=^##|\z)/msg)
	{
		my ($name, $entry) = ($1, $2);
		$n_entries++;
		# each part's position, in the template's order
		my @parts = (
			[ 'purpose sentence', qr/\A\n[A-Z][^\n]*\.\n/ ],
			[ 'signature', qr/^```sql\n\Q$name\E\(/m ],
			[ 'parameter table', qr/^\| parameter \| type \| default \| meaning \|$/m ],
			[ 'privileges', qr/\*\*Privileges:\*\*/ ],
			[ 'example with its output',
				qr/^<!-- readme-test: runs -->\n```sql\n(?:(?!```).*\n)*```\n```text\n/m ],
			[ 'errors table', qr/^\| SQLSTATE \| message \| cause \| what to do \|$/m ],
			[ 'see also', qr/^See also: /m ]);
		my $last = -1;
		for my $part (@parts)
		{
			my ($what, $re) = @$part;
			if ($entry !~ $re) { push @shape, "$page $name: no $what"; next; }
			push @shape, "$page $name: $what out of order" if $-[0] < $last;
			$last = $-[0];
		}

		# the parameter table names the catalog's arguments, in order
		my ($table) = $entry =~ /^\| parameter \|[^\n]*\n\|[-|]+\|\n((?:\|[^\n]*\n)*)/m;
		my @names = grep { $_ ne '(none)' } map { /^\| *([^|]*?) *\|/ ? $1 : () } split /\n/, $table // '';
		push @params, "$name: the table has (@names), the function (" . ($args{$name} // '?') . ')'
		  unless defined $args{$name} && join(' ', @names) eq $args{$name};

		# the errors table against the code
		my ($rows) = $entry =~ /^\| SQLSTATE \|[^\n]*\n\|[-|]+\|\n((?:\|[^\n]*\n)*)/m;
		for my $row (split /\n/, $rows // '')
		{
			my (undef, $state, $message, $cause, $todo) = split /\s*\|\s*/, $row;
			next if $state eq '(none)';
			$n_rows++;
			if (!$known_state{$state}) { push @errors, "$name: SQLSTATE $state is no SQLSTATE"; next; }
			my @messages = $message =~ /`([^`]+)`/g;
			push @errors, "$name $state: no message" unless @messages;
			push @errors, "$name $state: no cause or what to do" unless ($cause // '') ne '' && ($todo // '') ne '';
			next if $message =~ /\(PostgreSQL\)/;
			for my $m (@messages)
			{
				push @errors, "$name: $state `$m` is raised nowhere in src/"
				  unless grep { $_->[0] eq $state && $m =~ $_->[1] } @raised_re;
			}
		}
	}
}
my %in_errors_page = map { $_ => 1 } slurp_file("$ENV{TESTDIR}/doc/errors.md") =~ /\b([0-9A-Z]{5})\b/g;
my %used = map { $_ => 1 } $entries =~ /^\| ([0-9A-Z]{5}) \|/mg;
is(join(', ', grep { !$in_errors_page{$_} } sort keys %used), '',
	'every SQLSTATE of an errors table is in doc/errors.md');
cmp_ok($n_entries, '>=', 22, "the entries are read ($n_entries)");
cmp_ok($n_rows, '>=', 100, "and their errors tables ($n_rows rows)");
is(join("\n", @shape), '', 'every entry has the parts of the template, in order');
is(join("\n", @params), '', 'every parameter table names the function\'s arguments, in order');
is(join("\n", @errors), '', 'every error of an entry is raised by dlsm with that SQLSTATE, or marked (PostgreSQL)');

done_testing();
