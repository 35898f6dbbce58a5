# Copyright (c) 2026, dlsm developers
#
# Retention: the worker deletes settled rows older than a queue's
# retention, in batches, and leaves the rest of the history and every open
# request alone; a queue without retention keeps its history.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('retention', qq{
dlsm.reap_interval = 200
dlsm.retention_batch = 100
});
$node->safe_psql(
	'postgres', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('kept_short', retention => '1 day');
SELECT dlsm_create_queue('kept_all');
INSERT INTO kept_short (entity) SELECT 'e' || n FROM generate_series(1, 1000) n;
INSERT INTO kept_all (entity) SELECT 'e' || n FROM generate_series(1, 100) n;
SELECT count(*) FROM dlsm_settle_many('kept_short',
	ARRAY(SELECT process_id FROM dlsm_claim('kept_short', units => 900)));
SELECT count(*) FROM dlsm_settle_many('kept_all',
	ARRAY(SELECT process_id FROM dlsm_claim('kept_all', units => 100)));
-- 700 of the settled rows (and all of kept_all) are two days old
UPDATE kept_short SET settled_at = now() - interval '2 days' WHERE id <= 700;
UPDATE kept_all SET settled_at = now() - interval '2 days';
});

ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 300 FROM kept_short}),
	'the worker deleted the settled rows past the retention');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FILTER (WHERE status = 'new') || '/' ||
	   count(*) FILTER (WHERE status = 'complete' AND settled_at > now() - interval '1 day')
  FROM kept_short}),
	'100/200',
	'open requests and recent history stay');
is($node->safe_psql('postgres', q{SELECT count(*) FROM kept_all}),
	'100', 'a queue without retention keeps its history');
ok( $node->safe_psql('postgres',
		q{SELECT deleted >= 700 FROM dlsm_worker_status WHERE database = 'postgres'})
	  eq 't',
	'the worker counted the deleted rows');
$node->stop;
done_testing();
