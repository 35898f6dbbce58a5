# Copyright (c) 2026, dlsm developers
#
# The floor of a queue (floor.c), where claims start their scan: a row set
# back to 'new' by hand, which no commit of dlsm's reports, is claimed
# within the floor's check interval (a second); after a crash and restart
# the floors are gone and claims find every ready row from the start;
# 1,000 updates parked behind their create in progress are skipped by
# every claim, and claimed as soon as the create is settled; claims with a
# high after, looping, do not hold a row set back by hand past the check.
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

# A claim with a high after that takes the floor's check scans only above
# its after.  It must not keep claims from the start from finding a row set
# back by hand for longer than the check interval: it moves the floor's base
# up to its after, and claims below it then scan from their own after.
$node->safe_psql(
	'postgres', q{
SELECT count(*) FROM (SELECT DISTINCT process_id
					  FROM dlsm_claim('fq', units => 1000)) c,
	 LATERAL dlsm_settle('fq', c.process_id);
SELECT count(*) FROM dlsm_claim('fq');
CREATE PROCEDURE high_after(q regclass, x bigint, seconds float8)
LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() < t + seconds * interval '1 s' LOOP
		PERFORM count(*) FROM dlsm_claim(q, after => x);
		COMMIT;
		PERFORM pg_sleep(0.002);
	END LOOP;
END $$;
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM fq WHERE status <> 'complete'}),
	'0', 'every request of fq is complete');
my $top = $node->safe_psql('postgres', q{SELECT max(id) FROM fq});
# a row due in an hour stops the floor's walk: the floor reaches $top, and
# claims after $top fall within it and may take its check
$node->safe_psql(
	'postgres', q{
INSERT INTO fq (entity, run_at) VALUES ('later', now() + interval '1 hour');
SELECT count(*) FROM dlsm_claim('fq');
});
my $high = $node->background_psql('postgres');
$high->query_until(qr/looping\n/,
	"\\echo looping\nCALL high_after('fq', $top, 8);\n");
# the loop has taken the check at least once before the row is set back
usleep(1_500_000);
$node->safe_psql('postgres',
	q{UPDATE fq SET status = 'new' WHERE entity = 'e30'});
$t0 = [gettimeofday];
$found = 0;
while (!$found && tv_interval($t0) < 5)
{
	$found = claim_one() eq 'e30';
	usleep(50_000) unless $found;
}
ok($found, 'with claims after the top looping, a row set back by hand is claimed');
cmp_ok(tv_interval($t0), '<', 3, '... within the floor check interval');
diag sprintf('found after %.2f s with the high-after loop running',
	tv_interval($t0));
$high->query_safe('SELECT 1');
$high->quit;

$node->stop;
done_testing();
