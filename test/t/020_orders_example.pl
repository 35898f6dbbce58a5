# Copyright (c) 2026, dlsm developers
#
# The orders example (examples/orders.sql): after a scripted burst of
# writes across five captured tables, once the worker's handlers have
# drained both queues, the search table equals a from-scratch rebuild.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('orders', qq{
dlsm.reap_interval = 500
});

my $examples = "$ENV{TESTDIR}/examples";
$node->safe_psql('postgres', 'CREATE EXTENSION dlsm');
$node->safe_psql('postgres', slurp_file("$examples/orders.sql"));
$node->safe_psql('postgres', slurp_file("$examples/orders-burst.sql"));

my $queued = $node->safe_psql('postgres',
	q{SELECT (SELECT count(*) FROM orders_demo.order_changes)
		   + (SELECT count(*) FROM orders_demo.customer_changes)});
ok($queued > 1000, "the burst was captured ($queued requests)");
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM orders_demo.order_changes
		  WHERE payload->'new'->>'status' = 'phantom'}),
	'0',
	'the rolled-back write left no request');

ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = 0 FROM (
	SELECT status FROM orders_demo.order_changes
	UNION ALL SELECT status FROM orders_demo.customer_changes) q
 WHERE status IN ('new', 'in-progress')}),
	'the worker drained both queues');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	SELECT status FROM orders_demo.order_changes
	UNION ALL SELECT status FROM orders_demo.customer_changes) q
 WHERE status <> 'complete'}),
	'0',
	'every change was handled (none in error)');

is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM (
	(SELECT order_id, customer_id, document FROM orders_demo.order_search
	 EXCEPT SELECT * FROM orders_demo.order_search_rebuilt)
	UNION ALL
	(SELECT * FROM orders_demo.order_search_rebuilt
	 EXCEPT SELECT order_id, customer_id, document FROM orders_demo.order_search)) d}),
	'0',
	'the search table equals a from-scratch rebuild');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM orders_demo.order_search WHERE order_id IN (5, 6)}),
	'0',
	'deleted orders left the search table');

my $hits = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM orders_demo.order_search
 WHERE tsv @@ to_tsquery('simple', 'shipped & warranty')});
my $expected = $node->safe_psql(
	'postgres', q{
SELECT count(*) FROM orders_demo.order_search_rebuilt
 WHERE to_tsvector('simple', document) @@ to_tsquery('simple', 'shipped & warranty')});
ok($hits > 0, "a full-text query finds orders ($hits)");
is($hits, $expected, 'and the same orders as the rebuild');

# units: many changes of an order were folded at once
my $folded = $node->safe_psql(
	'postgres', q{
SELECT max(n) FROM (SELECT count(*) AS n FROM orders_demo.order_changes
					 GROUP BY process_id) u});
ok($folded > 1, "changes of one order were handled as one unit (up to $folded)");

$node->stop;
done_testing();
