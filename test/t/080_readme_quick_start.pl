# Copyright (c) 2026, dlsm developers
#
# README's Quick start runs as printed: its SQL block, taken from README.md
# as it stands, pasted into psql against a fresh cluster with dlsm, stops
# at no error and leaves what it says (three requests complete).
use strict;
use warnings;

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

my $node = dlsm_node('readme');
ok(install_dlsm($node), 'dlsm installed');
my ($ret, $out, $err) = $node->psql('postgres', $block // '',
	extra_params => [ '-v', 'ON_ERROR_STOP=1' ]);
is($ret, 0, 'the Quick start runs as printed, with no error') or diag $err;
unlike($err, qr/ERROR/, 'no ERROR on the way');
is($node->safe_psql('postgres',
	q{SELECT string_agg(status || ' ' || n, ', ') FROM
	  (SELECT status, count(*) AS n FROM spreadsheets.request_queue GROUP BY status) s}),
	'complete 3', 'it leaves the three requests complete');

done_testing();
