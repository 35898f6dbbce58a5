# Copyright (c) 2026, dlsm developers
#
# The floor of a queue (shmem.c), where claims start their scan: a row set
# back to 'new' by hand, which no commit of dlsm's reports, is claimed
# within the floor's check interval (a second); after a crash and restart
# the floors are gone and claims find every ready row from the start;
# 1,000 updates parked behind their create in progress are skipped by
# every claim, and claimed as soon as the create is settled.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval usleep);

my $node = dlsm_node('floor', qq{
dlsm.reap_interval = '1h'
});

ok(install_dlsm($node), 'the worker runs');

$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('fq');
INSERT INTO fq (entity) SELECT 'e' || g FROM generate_series(1, 100) g;
-- n claims, each settled in a transaction of its own; their entities
CREATE TABLE taken (n serial, entity text);
CREATE PROCEDURE take(q regclass, n int) LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1 .. n LOOP
		INSERT INTO taken (entity)
		SELECT entity FROM (SELECT DISTINCT entity, process_id
							FROM dlsm_claim(q)) c,
			   LATERAL dlsm_settle(q, c.process_id);
		COMMIT;
	END LOOP;
END $$;
CALL take('fq', 50);
});

# claim one request and settle it; returns its entity
sub claim_one
{
	return $node->safe_psql('postgres',
		q{SELECT entity FROM (SELECT entity, dlsm_settle('fq', process_id)
		  FROM dlsm_claim('fq')) c});
}

is(claim_one(), 'e51', 'claims go on where the settled rows end');

# a row set back by hand: found by the next claim that checks the floor
$node->safe_psql('postgres',
	q{UPDATE fq SET status = 'new' WHERE entity = 'e10'});
my $t0 = [gettimeofday];
my $found = 0;
while (!$found && tv_interval($t0) < 5)
{
	$found = claim_one() eq 'e10';
	usleep(50_000) unless $found;
}
ok($found, 'a row set back to new by hand is claimed');
cmp_ok(tv_interval($t0), '<', 3, '... within the floor check interval');

# a crash and restart: claims start from the first ready row again
$node->safe_psql('postgres',
	q{UPDATE fq SET status = 'new' WHERE entity = 'e20'});
$node->stop('immediate');
$node->start;
is(claim_one(), 'e20', 'after a restart the first ready row comes first');
my $next = $node->safe_psql('postgres',
	q{SELECT entity FROM fq WHERE status = 'new' ORDER BY id LIMIT 1});
is(claim_one(), $next, 'then the claims go on in order');

# 1,000 updates behind their create in progress, then fresh creates
$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('bq');
INSERT INTO bq (entity, kind) VALUES ('x', 'create');
SELECT count(*) FROM dlsm_claim('bq', lease => '1 hour');
INSERT INTO bq (entity, kind) SELECT 'x', 'update' FROM generate_series(1, 1000);
INSERT INTO bq (entity) SELECT 'y' || g FROM generate_series(1, 100) g;
});
my $claimed = $node->safe_psql(
	'postgres', q{
TRUNCATE taken;
CALL take('bq', 3);
SELECT string_agg(entity, ',' ORDER BY n) FROM taken});
is($claimed, 'y1,y2,y3', 'claims pass over the updates waiting for their create');
$node->safe_psql('postgres',
	q{SELECT dlsm_settle('bq', process_id) FROM bq WHERE status = 'in-progress'});
is( $node->safe_psql(
		'postgres', q{
WITH c AS MATERIALIZED (SELECT * FROM dlsm_claim('bq'))
SELECT count(*), min(kind), max(entity),
  (SELECT dlsm_settle('bq', process_id) FROM c LIMIT 1) FROM c}),
	'1000|update|x|1000',
	'the create settled: its 1,000 updates come next, as one unit');

$node->stop;
done_testing();
