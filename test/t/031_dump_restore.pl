# Copyright (c) 2026, dlsm developers
#
# pg_dump and pg_restore of a database using dlsm: queues with their history
# and in-progress rows, an adopted table, a capture, a capture of a
# partitioned table, a handler, leases and the fence sequence come back,
# and dlsm keeps working on them.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('dump', "dlsm.reap_interval = '1h'\n");
$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('jobs', max_attempts => 3);
INSERT INTO jobs (entity) SELECT 'e' || n FROM generate_series(1, 10) n;
SELECT dlsm_settle('jobs', process_id) FROM dlsm_claim('jobs', units => 4);
SELECT count(*) FROM dlsm_claim('jobs', lease => '1 hour', units => 2);
CREATE TABLE adopted (rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
					  st text, k text DEFAULT 'create', ent text, pid text);
SELECT dlsm_register_queue('adopted', id => 'rid', status => 'st', kind => 'k',
						   entity => 'ent', process_id => 'pid');
CREATE TABLE src_table (id int PRIMARY KEY, v text);
SELECT dlsm_capture('src_table', 'jobs');
INSERT INTO src_table VALUES (1, 'a');
SELECT dlsm_try_lock('kept', lease => '1 hour');
CREATE TABLE parted (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
SELECT dlsm_capture('parted', 'jobs', kind => 'parted');
});
my $fence_before = $node->safe_psql('src', q{SELECT max(fence) FROM dlsm_leases});

my $dump = "$PostgreSQL::Test::Utils::tmp_check/src.dump";
$node->command_ok(
	[ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('src') ],
	'pg_dump of a database using dlsm');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
$node->command_ok(
	[ 'pg_restore', '--exit-on-error', '-d', $node->connstr('dst'), $dump ],
	'pg_restore into a new database');

is( $node->safe_psql('dst',
		q{SELECT string_agg(queue::text, ',' ORDER BY queue::text) FROM dlsm_queues}),
	'adopted,jobs', 'the queues are registered');
is( $node->safe_psql('dst',
		q{SELECT status || ':' || count(*) FROM jobs GROUP BY status ORDER BY status}),
	"complete:4\nin-progress:2\nnew:5",
	'the history and in-progress rows came back');
is( $node->safe_psql('dst', q{SELECT count(*) FROM dlsm_leases WHERE name = 'kept'}),
	'1', 'the lease came back');
ok( $node->safe_psql('dst', q{SELECT dlsm_try_lock('after')}) > $fence_before,
	'fences go on rising after the restore');
is( $node->safe_psql('dst', q{SELECT dlsm_try_lock('kept') IS NULL}),
	't', 'the restored lease holds its name');

# dlsm keeps working: claims, settles, the adopted table, the capture
is( $node->safe_psql('dst', q{
SELECT count(*) FROM (SELECT dlsm_settle('jobs', process_id)
						FROM (SELECT DISTINCT process_id FROM dlsm_claim('jobs', units => 10)) c) s}),
	'5', 'the new requests are claimed and settled');
is( $node->safe_psql('dst', q{
SELECT dlsm_settle('jobs', process_id, 'complete') FROM jobs
 WHERE status = 'in-progress' GROUP BY process_id LIMIT 1}),
	'1', 'a claim in progress before the dump is settled after the restore');
is( $node->safe_psql('dst', q{
INSERT INTO adopted (ent) VALUES ('x');
SELECT count(*) FROM dlsm_claim('adopted')}),
	'1', 'the adopted table works as a queue');
is( $node->safe_psql('dst', q{
INSERT INTO src_table VALUES (2, 'b');
SELECT count(*) FROM jobs WHERE payload->>'table' = 'public.src_table'}),
	'2', 'the capture goes on into the restored queue');
is( $node->safe_psql('dst', q{SELECT dlsm_uncapture('src_table', 'jobs')}),
	'', 'and can be removed');
# the partitions' triggers are clones made again by the restore, with
# OIDs of their own: a partition restored and one created after capture
is( $node->safe_psql('dst', q{
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (10) TO (20);
INSERT INTO parted VALUES (1, 'a'), (11, 'b');
SELECT string_agg(entity, ',' ORDER BY entity) FROM jobs
 WHERE kind = 'parted' AND payload->>'table' = 'public.parted'}),
	'1,11', 'the partitioned table is captured after the restore');
$node->safe_psql('dst', q{SELECT dlsm_uncapture('parted', 'jobs')});
is( $node->safe_psql('dst', q{
SELECT count(*) FROM pg_trigger WHERE tgrelid IN (SELECT relid FROM pg_partition_tree('parted'))}),
	'0', 'and its capture is removed with every partition\'s trigger');

$node->stop;
done_testing();
