# Copyright (c) 2026, dlsm developers
#
# A shared table full (issue 34): each fixed-size table of dlsm's shared
# memory counts the times it had no room (dlsm_shared_tables.times_full,
# the exporter's dlsm_shared_table_full_total), and the launcher says so
# in the server log once for each table, in a WARNING:
#   - a claim of 300 units in one open transaction fills 'rows in flight,
#     per queue' (256): the view counts the 44 rows left out, and the
#     launcher's WARNING names the table, once;
#   - filled again, the count grows and nothing more is said;
#   - no other table is said to be full.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('full', '');
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $full = q{SELECT times_full FROM dlsm_shared_tables
	WHERE name = 'rows in flight, per queue'};
my $said = qr/WARNING:  dlsm's shared table "rows in flight, per queue" had no room for an entry/;

sql(q{
SELECT dlsm_create_queue('mi');
SELECT count(dlsm_enqueue('mi', 'e' || i)) FROM generate_series(1, 600) i;
});
is(sql($full), '0', 'the table has had room so far');

# 300 rows claimed in one open transaction: 256 kept, 44 left out
my $offset = -s $node->logfile;
my $held = $node->background_psql('postgres');
$held->query_safe(q{BEGIN; SELECT count(*) FROM dlsm_claim('mi', units => 300)});
is(sql($full), '44', 'the view counts the 44 rows left out');
sql('SELECT dlsm_launcher_wake()');
ok($node->wait_for_log($said, $offset), 'the launcher says the table had no room');
like(slurp_file($node->logfile, $offset),
	qr/DETAIL:  It holds 256 entries; dlsm_shared_tables counts the times it had no room\./,
	'with its capacity');
$held->query_safe('COMMIT');

# again: counted, not said again
$held->query_safe(q{BEGIN; SELECT count(*) FROM dlsm_claim('mi', units => 300)});
is(sql($full), '88', 'filled again, the count grows');
$held->query_safe('COMMIT');
sql('SELECT dlsm_launcher_wake(), pg_sleep(2)');
sql('SELECT dlsm_launcher_wake(), pg_sleep(1)');
my $log = slurp_file($node->logfile, $offset);
my @said = ($log =~ /$said/g);
is(scalar @said, 1, 'the WARNING is in the log once');
unlike($log, qr/shared table "(?!rows in flight)[^"]*" had no room/,
	'and no other table is said to be full');

$held->quit;
$node->stop;
done_testing();
