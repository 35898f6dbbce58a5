# Copyright (c) 2026, dlsm developers
#
# Upgrading: version 1.0's SQL installed with this library keeps working,
# ALTER EXTENSION dlsm UPDATE moves it to 1.1 with queues, claims and lease
# locks intact, and the result matches a fresh install of 1.1 object by
# object: functions, views, tables, indexes, comments and privileges.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('upgrade', "dlsm.reap_interval = '1h'\n");
$node->safe_psql('postgres', 'CREATE DATABASE up');
$node->safe_psql('postgres', 'CREATE DATABASE fresh');

# 1.0, used by this library before the update
$node->safe_psql('up', q{CREATE EXTENSION dlsm VERSION '1.0'});
is($node->safe_psql('up', q{SELECT extversion FROM pg_extension WHERE extname = 'dlsm'}),
	'1.0', 'version 1.0 installs');
$node->safe_psql('up', q{
SELECT dlsm_create_queue('jobs');
INSERT INTO jobs (entity, kind)
  SELECT 'e' || n, 'create' FROM generate_series(1, 10) n;
SELECT dlsm_settle('jobs', process_id) FROM dlsm_claim('jobs', units => 3);
});
my $held = $node->safe_psql('up', q{
SELECT string_agg(process_id::text, ',' ORDER BY id)
  FROM dlsm_claim('jobs', lease => '1 hour', units => 2)});
my $fence = $node->safe_psql('up', q{SELECT dlsm_try_lock('kept', lease => '1 hour')});
ok($fence > 0, 'a lease lock is granted under 1.0');
is( $node->safe_psql('up', q{
SELECT new || '/' || in_progress || '/' || complete FROM dlsm_queue_stats}),
	'5/2/3', 'dlsm_queue_stats of 1.0 is served by the new library');
is( $node->safe_psql('up', q{
SELECT count(*) FROM pg_attribute WHERE attrelid = 'dlsm_queue_stats'::regclass
   AND attnum > 0}),
	'12', 'with its 12 columns');

# the update
$node->safe_psql('up', 'ALTER EXTENSION dlsm UPDATE');
is($node->safe_psql('up', q{SELECT extversion FROM pg_extension WHERE extname = 'dlsm'}),
	'1.1', 'ALTER EXTENSION dlsm UPDATE reaches 1.1');

# what was claimed and locked before is settled and released after
my @held = split /,/, $held;
is( $node->safe_psql('up', qq{
SELECT sum(dlsm_settle('jobs', p)) FROM unnest('{$held}'::uuid[]) p}),
	'2', 'claims made before the update are settled after it');
is( $node->safe_psql('up', q{SELECT dlsm_try_lock('kept') IS NULL}),
	't', 'the lease lock still holds its name');
is($node->safe_psql('up', qq{SELECT dlsm_unlock('kept', $fence)}),
	't', 'and is released with its fence');
is( $node->safe_psql('up', q{
SELECT count(*) FROM (SELECT dlsm_settle('jobs', process_id)
  FROM dlsm_claim('jobs', units => 10)) s}),
	'5', 'the rest is claimed and settled');
is( $node->safe_psql('up', q{
SELECT new || '/' || in_progress || '/' || complete || '/'
	|| (oldest_claim_age IS NULL) FROM dlsm_queue_stats}),
	'0/0/10/true', 'dlsm_queue_stats has the column of 1.1');
ok( $node->poll_query_until('up', q{
SELECT count(*) = 1 FROM dlsm_worker_status WHERE database = 'up'}),
	'the worker serves the updated database');

# the updated catalog equals a fresh install of 1.1
$node->safe_psql('fresh', 'CREATE EXTENSION dlsm');
my $catalog = q{
WITH member AS (
	SELECT classid, objid FROM pg_depend
	 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dlsm'))
SELECT pg_describe_object(classid, objid, 0) || ': ' || coalesce(
	CASE classid
	WHEN 'pg_proc'::regclass THEN
		(SELECT pg_get_function_identity_arguments(p.oid) || ' -> '
				|| pg_get_function_result(p.oid) || ' ' || p.provolatile::text
				|| p.proparallel::text || p.prosecdef || ' ' || p.prosrc || ' '
				|| coalesce(p.proacl::text, 'default')
		   FROM pg_proc p WHERE p.oid = objid)
	WHEN 'pg_class'::regclass THEN
		(SELECT c.relkind::text || ' ' || coalesce(c.relacl::text, 'default') || ' '
				|| coalesce(pg_get_viewdef(c.oid), '') || ' '
				|| (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
									  || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
									  ', ' ORDER BY a.attnum)
					  FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
					   AND NOT a.attisdropped) || ' '
				|| coalesce((SELECT string_agg(pg_get_indexdef(i.indexrelid), '; '
											   ORDER BY pg_get_indexdef(i.indexrelid))
							   FROM pg_index i WHERE i.indrelid = c.oid), '')
		   FROM pg_class c WHERE c.oid = objid)
	END, '') || ' / ' || coalesce(obj_description(objid, classid::regclass::name), '')
  FROM member
 ORDER BY 1};
my $updated = $node->safe_psql('up', $catalog);
my $installed = $node->safe_psql('fresh', $catalog);
ok($installed =~ /oldest_claim_age/, 'the catalog query sees the 1.1 objects');
is($updated, $installed, 'the updated catalog matches a fresh install of 1.1');
is( $node->safe_psql('up', q{SELECT extconfig::regclass[]::text FROM pg_extension
							   WHERE extname = 'dlsm'}),
	$node->safe_psql('fresh', q{SELECT extconfig::regclass[]::text FROM pg_extension
								  WHERE extname = 'dlsm'}),
	'and dumps the same configuration tables');

# no other update path exists, and downgrades are refused
my ($ret, $out, $err) = $node->psql('fresh', q{ALTER EXTENSION dlsm UPDATE TO '1.0'});
like($err, qr/no update path from version "1\.1" to version "1\.0"/,
	'there is no way back to 1.0');

$node->stop;
done_testing();
