# Copyright (c) 2026, dlsm developers
#
# Without shared_preload_libraries = 'dlsm' every SQL function works but no
# worker runs: nothing reaps expired leases, runs handlers or deletes
# expired named locks.  dlsm says so where it matters (issue 24 #2): a
# WARNING at CREATE EXTENSION, at dlsm_set_handler and at a claim with a
# lease, once per session for each; never when preloaded.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = PostgreSQL::Test::Cluster->new('plain');
$node->init;
$node->start;

sub stderr_of
{
	my ($n, $sql) = @_;
	my ($ret, $out, $err) = $n->psql('postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $err;
}

my $err = stderr_of($node, 'CREATE EXTENSION dlsm');
like($err, qr/WARNING:  55000: dlsm is not loaded through shared_preload_libraries/,
	'CREATE EXTENSION warns that dlsm is not preloaded (55000)');
like($err, qr/DETAIL:  Without it no dlsm worker runs: expired leases are not reaped, handlers do not run and expired named locks are not deleted\./,
	'... and says what does not work');
like($err, qr/HINT:  Add dlsm to shared_preload_libraries in postgresql\.conf and restart the server\./,
	'... and how to fix it');

$node->safe_psql('postgres', q{
SELECT dlsm_create_queue('q');
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT dlsm_enqueue('q', 'e' || g) FROM generate_series(1, 4) g;
});
$err = stderr_of($node, q{SELECT dlsm_set_handler('q', 'h')});
like($err, qr/WARNING:  55000: the handler of queue "q" will not run\nDETAIL:  The dlsm library is not loaded through shared_preload_libraries: no dlsm worker runs\./,
	'dlsm_set_handler warns that the handler will not run');
$err = stderr_of($node, q{SELECT dlsm_set_handler('q', NULL)});
is($err, '', 'removing the handler does not warn');

$err = stderr_of($node, q{
SELECT count(*) FROM dlsm_claim('q');
SELECT count(*) FROM dlsm_claim('q', lease => '1 min');
SELECT count(*) FROM dlsm_claim('q', lease => '1 min');
});
my @warnings = $err =~ /(WARNING:  55000: expired leases of queue "q" will not be reaped\nDETAIL:  The dlsm library is not loaded through shared_preload_libraries)/g;
is(scalar @warnings, 1,
	'a claim with a lease warns that expired leases will not be reaped, once per session');
like($err, qr/HINT:  Add dlsm to shared_preload_libraries in postgresql\.conf and restart the server, or call dlsm_reap\(\) on a schedule\./,
	'... with the hint');
is($node->safe_psql('postgres', q{SELECT count(*) FROM q WHERE status = 'in-progress'}),
	'3', 'the claims worked all the same');

# preloaded: none of these warnings
my $pre = dlsm_node('preloaded');
$err = stderr_of($pre, q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('q');
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT dlsm_set_handler('q', 'h');
SELECT dlsm_enqueue('q', 'e');
SELECT count(*) FROM dlsm_claim('q', lease => '1 min');
});
is($err, '', 'preloaded: no warning');

done_testing();
