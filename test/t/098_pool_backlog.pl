# Copyright (c) 2026, dlsm developers
#
# While the workers take turns, a visit that ends with handler work left
# goes on while no other database is due: one worker serves a database's
# whole backlog, not a worker start per half dlsm.reap_interval.  Two
# databases with dlsm (postgres, a), dlsm.max_workers = 1,
# dlsm.reap_interval = 6 s.  a gets 36 units of 0.1 s each (3.6 s of
# handling, more than the 3 s of one stretch) just after postgres had its
# pass, so postgres is not due before the backlog is done: every unit is
# handled by the same process.  Then a gets 100 s of work: postgres comes
# due meanwhile, the worker leaves for it, and postgres still gets its
# passes within its bound (12 s).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('backlog', qq{
dlsm.max_workers = 1
dlsm.reap_interval = 6000
});

ok(install_dlsm($node), 'the worker of postgres runs');
$node->safe_psql('postgres', 'CREATE DATABASE a');
$node->safe_psql('a', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('bq');
CREATE TABLE handled (entity text PRIMARY KEY, pid int NOT NULL,
	handled_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_sleep(0.1);
	INSERT INTO handled (entity, pid) VALUES (h.entity, pg_backend_pid());
END $$;
SELECT dlsm_set_handler('bq', 'h');
});
$node->wait_for_log(qr/dlsm workers take turns\n.*DETAIL:  2 databases may have dlsm/);

# Enqueue $n units in a just after postgres had a pass (within 0.3 s), so
# that postgres is not due for most of a dlsm.reap_interval.
sub enqueue_after_pass
{
	my ($n, $tag) = @_;
	ok( $node->poll_query_until('a', q{
SELECT last_pass_age < '0.3 s' FROM dlsm_worker_status
 WHERE database = 'postgres'}),
		"postgres had a pass before batch $tag");
	$node->safe_psql('a', qq{
SELECT dlsm_enqueue('bq', '$tag' || g) FROM generate_series(1, $n) g});
}

enqueue_after_pass(36, 'x');
ok( defined poll_within($node, 'a', q{
SELECT count(*) = 36 FROM handled WHERE entity LIKE 'x%'}, 30),
	'the backlog of 36 units is handled');
is( $node->safe_psql('a', q{
SELECT count(DISTINCT pid) FROM handled WHERE entity LIKE 'x%'}),
	'1', 'one visit served the whole backlog: postgres was not due');

# A backlog longer than a dlsm.reap_interval: postgres comes due, and the
# worker leaves a for it at the end of its stretch.
enqueue_after_pass(1000, 'y');
my $longest = $node->safe_psql('a', q{
SELECT extract(epoch FROM max(age)) FROM (
	SELECT (SELECT last_pass_age FROM dlsm_worker_status
			 WHERE database = 'postgres' AND g > 0) AS age, pg_sleep(0.1)
	  FROM generate_series(1, 140) g) s});
note "postgres waited at most $longest s for a pass";
cmp_ok($longest, '<', 12, 'postgres had its passes within its bound');
cmp_ok(
	$node->safe_psql('a', q{
SELECT count(DISTINCT pid) FROM handled WHERE entity LIKE 'y%'}),
	'>=', 2, 'the worker left a while it had work, for postgres');
ok( $node->safe_psql('a', q{
SELECT count(*) = 0 FROM dlsm_worker_status
 WHERE state = 'waiting for a worker'}),
	'no database is past its bound');
unlike(slurp_file($node->logfile),
	qr/database "postgres" waited \d+ ms for a dlsm worker/,
	'postgres never waited longer than its bound');

$node->stop;
done_testing();
