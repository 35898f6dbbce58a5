# Copyright (c) 2026, dlsm developers
#
# README's Quick start runs as printed and prints what README shows: its SQL
# block, taken from README.md as it stands, pasted into psql (plain psql,
# aligned output) against a fresh cluster with dlsm preloaded, stops at no
# error, leaves what it says (three requests complete), and prints the
# ```text block that follows it, but for the claim's process id and fence,
# which differ from run to run.
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

open my $fh, '<', "$ENV{TESTDIR}/README.md" or die "cannot read README.md: $!";
my $readme = do { local $/; <$fh> };
close $fh;
my ($section) = $readme =~ /^## Quick start\n(.*?)^## /ms;
ok(defined $section, 'README has a Quick start');
my ($block) = ($section // '') =~ /^```sql\n(.*?)^```$/ms;
ok(defined $block && $block =~ /dlsm_claim/, 'its SQL block claims');
like($block // '', qr/^CREATE EXTENSION dlsm;/, 'it starts with CREATE EXTENSION');
my ($shown) = ($section // '') =~ /^```sql\n.*?^```\n.*?^```text\n(.*?)^```$/ms;
ok(defined $shown, 'README shows what psql prints');

my $node = dlsm_node('readme');
wait_first_look($node);
my ($out, $err) = ('', '');
my $ok = IPC::Run::run(
	[
		$node->installed_command('psql'), '-X', '-d', $node->connstr('postgres'),
		'-v', 'ON_ERROR_STOP=1', '-f', '-'
	],
	'<', \($block // ''), '>', \$out, '2>', \$err);
ok($ok, 'the Quick start runs as printed, with no error') or diag $err;
unlike($err, qr/ERROR/, 'no ERROR on the way');
is($node->safe_psql('postgres',
	q{SELECT string_agg(status || ' ' || n, ', ') FROM
	  (SELECT status, count(*) AS n FROM spreadsheets.request_queue GROUP BY status) s}),
	'complete 3', 'it leaves the three requests complete');

# what psql printed, as README shows it: trailing blanks cut, the claim's
# process id and fence replaced
sub normal
{
	my ($text) = @_;
	$text =~ s/[ \t]+$//mg;
	$text =~ s/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/PROCESS-ID/g;
	$text =~ s/\b\d{16,19}\b/FENCE/g;
	$text =~ s/\n+\z/\n/;
	return $text;
}
is(normal($out), normal($shown // ''), 'psql prints what README shows');

done_testing();
