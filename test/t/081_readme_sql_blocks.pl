# Copyright (c) 2026, dlsm developers
#
# The documentation's SQL runs as printed (issue 24, point 3; issue 33):
# every SQL block of README.md and doc/ is a signature or marked; the
# marked ones run, in order, on one server or on three shards and a router,
# and leave what they say; the reference's examples print what their pages
# show.
#
# The files of @DOCS below are read in that order, as one text: README.md,
# then the pages of doc/ (every doc/*.md and doc/design/*.md must be
# listed).  Every ```sql block of them is either a function's signature (its
# first line is "dlsm_name(") or carries a marker on the line before it:
#   <!-- readme-test: runs -->            pasted into psql in one database,
#                                         mydb, in the order of @DOCS
#   <!-- readme-test: runs on each shard -->, <!-- readme-test: runs on the
#   router, ... -->, <!-- readme-test: runs on the router as app -->
#                                         doc/sharding.md, against three
#                                         shards and a router
#   <!-- readme-test: not run (why) -->   left out, for the reason given
# Each block that runs must end without an error (psql ON_ERROR_STOP), and
# what the blocks say they leave is checked.  A block that runs on one
# server and is followed at once by a ```text block (the reference's
# examples) must print that text: psql's aligned output as pasted, compared
# with blanks collapsed and with UUIDs, times and fences (16 digits or more)
# masked, as they differ from run to run.  The router's
# dlsm_proxy_configure gets the test's shards for README's shard1..3.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

# The order the blocks run in: what a reader does, page by page.
my @DOCS = qw(
  README.md
  doc/install.md
  doc/upgrading.md
  doc/concepts.md
  doc/security.md
  doc/errors.md
  doc/reference.md
  doc/reference-queues.md
  doc/reference-consuming.md
  doc/reference-locks.md
  doc/clients.md
  doc/worker.md
  doc/configuration.md
  doc/monitoring.md
  doc/comparison.md
  doc/tuning.md
  doc/high-availability.md
  doc/sharding.md
  doc/troubleshooting.md
  doc/design/claims.md
  doc/design/deduplication.md
  doc/design/fences.md
  doc/design/performance.md
);
{
	my %listed = map { $_ => 1 } @DOCS;
	my @missing = grep { !$listed{$_} }
	  map { s{^\Q$ENV{TESTDIR}/\E}{}r } glob("$ENV{TESTDIR}/doc/*.md $ENV{TESTDIR}/doc/design/*.md");
	is(join(', ', @missing), '', 'every page of doc/ is in the list of files whose SQL runs');
}

# The SQL blocks: [ marker or '', "file line N", text, printed text or undef ]
my @blocks;
for my $doc (@DOCS)
{
	my @lines = split /\n/, slurp_file("$ENV{TESTDIR}/$doc"), -1;
	for (my $i = 0; $i < @lines; $i++)
	{
		next unless $lines[$i] eq '```sql';
		my $marker = $i > 0 && $lines[ $i - 1 ] =~ /^<!-- readme-test: (.*) -->$/ ? $1 : '';
		my $start = "$doc line " . ($i + 1);
		my @text;
		for ($i++; $i < @lines && $lines[$i] ne '```'; $i++)
		{
			push @text, $lines[$i];
		}
		my $printed;
		if ($i + 1 < @lines && $lines[ $i + 1 ] eq '```text')
		{
			my @out;
			for ($i += 2; $i < @lines && $lines[$i] ne '```'; $i++)
			{
				push @out, $lines[$i];
			}
			$printed = join("\n", @out) . "\n";
		}
		push @blocks, [ $marker, $start, join("\n", @text) . "\n", $printed ];
	}
}
cmp_ok(scalar(@blocks), '>=', 35, 'the docs have their SQL blocks (' . scalar(@blocks) . ')');

my (@single, @shard, @router, @app);
my @unmarked;
for my $b (@blocks)
{
	my ($marker, $line, $text) = @$b;
	if ($marker eq 'runs') { push @single, $b; }
	elsif ($marker eq 'runs on each shard') { push @shard, $b; }
	elsif ($marker =~ /^runs on the router as app$/) { push @app, $b; }
	elsif ($marker =~ /^runs on the router\b/) { push @router, $b; }
	elsif ($marker =~ /^not run \(.+\)$/) { }
	elsif ($text =~ /^dlsm_\w+\(/) { }
	else { push @unmarked, "$line ($marker)"; }
}
is(join(', ', @unmarked), '', 'every SQL block is a signature or marked runs / not run (why)');
cmp_ok(scalar(@single), '>=', 14, 'blocks that run on one server: ' . scalar(@single));
is(scalar(@shard) . ' ' . scalar(@router) . ' ' . scalar(@app), '1 1 1',
	'one block each for the shards, the router and the application on the router');

# Run $sql in $db of $node as psql would take it pasted: (ret, out, err)
sub paste
{
	my ($node, $db, $sql, @params) = @_;
	return $node->psql($db, $sql,
		extra_params => [ '-v', 'ON_ERROR_STOP=1', @params ]);
}

# Run $sql in $db of $node as a user pastes it into plain psql (aligned
# output, command tags): (ret, out, err)
sub paste_plain
{
	my ($node, $db, $sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			$node->installed_command('psql'), '-X', '-d', $node->connstr($db),
			'-v', 'ON_ERROR_STOP=1', '-f', '-'
		],
		'<', \$sql, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

# psql's output with what differs from run to run masked and blanks collapsed
sub shape
{
	my ($text) = @_;
	my @out;
	for my $line (split /\n/, $text)
	{
		$line =~ s/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/<uuid>/g;
		$line =~ s/\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d(?::\d\d)?)?/<time>/g;
		$line =~ s/\b\d{16,}\b/<fence>/g;
		$line =~ s/^\s+|\s+$//g;
		$line =~ s/\s+/ /g;
		$line =~ s/-+/-/g if $line =~ /^[-+]+$/;
		push @out, $line;
	}
	return join("\n", @out) . "\n";
}

# ---------------------------------------------------------------------
# One server, database mydb, in the order of @DOCS
# ---------------------------------------------------------------------
my $node = dlsm_node('readme_blocks');
wait_first_look($node);
$node->safe_psql('postgres', 'CREATE DATABASE mydb');
like($single[0][2], qr/^CREATE EXTENSION dlsm;/, 'the first block creates the extension');
my $printed = 0;
for my $b (@single)
{
	my ($marker, $line, $text, $shown) = @$b;
	my ($ret, $out, $err) = paste_plain($node, 'mydb', $text);
	is($ret, 0, "$line runs as printed") or diag "$text$err";
	unlike($err, qr/ERROR/, "$line: no ERROR");
	next unless defined $shown;
	$printed++;
	is(shape($out), shape($shown), "$line prints what the page shows") or diag "psql printed:\n$out";
}
cmp_ok($printed, '>=', 22, "blocks whose output is checked: $printed");
is($node->safe_psql('mydb',
	q{SELECT string_agg(status || ' ' || n, ', ' ORDER BY status) FROM
	  (SELECT status, count(*) AS n FROM spreadsheets.request_queue
		WHERE dedup_key IS NULL GROUP BY status) s}),
	'complete 8, error 1, new 1',
	"the examples' requests without a dedup key: complete (the Quick start's three, the "
	  . "reference's, the psql back end's), one cancelled, one retried later");
is($node->safe_psql('mydb',
	q{SELECT string_agg(queue::text || ' ' || coalesce(handler, '-'), ', ' ORDER BY queue::text)
	    FROM dlsm_queues}),
	'spreadsheets.exports spreadsheets.export_sheet, spreadsheets.legacy_queue -, '
	  . 'spreadsheets.request_queue -',
	'the queues of the examples, and the handler of dlsm_set_handler\'s');

# ---------------------------------------------------------------------
# doc/sharding.md: three shards and a router
# ---------------------------------------------------------------------
my @shards = map { shard_node("readme_shard$_", $_) } 1 .. 3;
for my $i (0 .. $#shards)
{
	my ($ret, $out, $err) = paste($shards[$i], 'postgres', $shard[0][2]);
	is($ret, 0, 'the shards\' block runs on shard ' . ($i + 1)) or diag $err;
}

my $router = PostgreSQL::Test::Cluster->new('readme_router');
$router->init;
$router->start;
my $rblock = $router[0][2];
for my $n (1 .. 3)
{
	my $conn = shard_connstr($shards[ $n - 1 ]);
	ok($rblock =~ s/'host=shard$n dbname=mydb application_name=dlsm_proxy'/'$conn'/,
		"the router's block names shard$n");
}
my ($ret, $out, $err) = paste($router, 'postgres', $rblock);
is($ret, 0, "the router's block runs (its shards the test's)") or diag "$rblock$err";
unlike($err, qr/ERROR/, "the router's block: no ERROR");

($ret, $out, $err) = paste($router, 'postgres', $app[0][2], '-U', 'app', '-A', '-t');
is($ret, 0, 'the application\'s block runs on the router as app') or diag "$app[0][2]$err";
my @out = split /\n/, $out;
my $node_of = $out[3] // '';
like($node_of, qr/^[123]$/, "dlsm_proxy_node_of names sheet-1's node ($node_of)");
is(join(' ', @out[ 4 .. $#out ]), '1 2', 'the create settles one row, the two updates two');
if ($node_of =~ /^[123]$/)
{
	is($shards[ $node_of - 1 ]->safe_psql('postgres',
		q{SELECT string_agg(kind || ' ' || status, ', ' ORDER BY id) FROM spreadsheets.request_queue}),
		'create complete, update complete, update complete',
		"sheet-1's three requests are complete on its shard");
}

done_testing();
