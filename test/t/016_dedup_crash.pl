# Copyright (c) 2026, dlsm developers
#
# Deduplication across a crash and with retention.  After an immediate
# stop, a dedup key is free when the transaction that held it had not
# committed (its producer and the producer waiting behind it died with the
# server), and taken by the row when it had committed.  A prepared
# transaction keeps its key through the crash: a producer waits for it and,
# once it is committed, gets its row's id.  With a retention, the rows the
# worker deletes free their keys, and the rows it keeps (settled within the
# window, which is no longer than the retention) still hold theirs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('dedup_crash', qq{
dlsm.reap_interval = 200
max_prepared_transactions = 2
});
ok(install_dlsm($node), 'the worker runs');
$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('dc');
CREATE TABLE got (id bigint, deduplicated boolean);
});

# committed before the crash
my $kept = $node->safe_psql('postgres',
	q{SELECT dlsm_enqueue('dc', 'e1', 'job', dedup_key => 'kept')});

# uncommitted at the crash, with a producer of the same key waiting behind
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe(q{BEGIN});
$holder->query_safe(
	q{SELECT dlsm_enqueue('dc', 'e2', 'job', dedup_key => 'lost')});
my $waiter = $node->background_psql('postgres', on_error_stop => 0);
$waiter->query_until(qr/waiting/, q{\echo waiting
SELECT dlsm_enqueue('dc', 'e3', 'job', dedup_key => 'lost');
});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_locks
		  WHERE locktype = 'advisory' AND NOT granted}),
	'a second producer of the uncommitted key waits for it');

# prepared at the crash
$node->safe_psql(
	'postgres', q{
BEGIN;
SELECT dlsm_enqueue('dc', 'e4', 'job', dedup_key => 'prepared');
PREPARE TRANSACTION 'dedup';
});

$node->stop('immediate');
$holder->{run}->kill_kill;
$waiter->{run}->kill_kill;
$node->start;

is( $node->safe_psql(
		'postgres', q{
SELECT dlsm_enqueue('dc', 'e5', 'job', dedup_key => 'lost') > 0;
SELECT dlsm_enqueue_deduplicated()}),
	"t\nf",
	'after the crash, the key of the uncommitted transaction is free: a row is added');
is( $node->safe_psql(
		'postgres', q{
SELECT dlsm_enqueue('dc', 'e6', 'job', dedup_key => 'kept');
SELECT dlsm_enqueue_deduplicated()}),
	"$kept\nt",
	'the key of the committed row is taken: its id, nothing added');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(dedup_key || ':' || entity, ',' ORDER BY dedup_key) FROM dc}),
	'kept:e1,lost:e5',
	'one row per key: the committed one, and the one added after the crash');

# the prepared transaction still holds its key
my $late = $node->background_psql('postgres');
$late->query_until(qr/waiting/, q{\echo waiting
INSERT INTO got SELECT dlsm_enqueue('dc', 'e7', 'job', dedup_key => 'prepared'),
	dlsm_enqueue_deduplicated();
});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_locks
		  WHERE locktype = 'advisory' AND NOT granted}),
	'a producer of the prepared transaction\'s key waits for it after the crash');
$node->safe_psql('postgres', q{COMMIT PREPARED 'dedup'});
ok( defined poll_within($node, 'postgres',
		q{SELECT count(*) = 1 FROM got}, 60),
	'once the prepared transaction commits, the producer returns');
$late->quit;
is( $node->safe_psql(
		'postgres', q{
SELECT g.deduplicated AND g.id = d.id FROM got g, dc d
 WHERE d.dedup_key = 'prepared'}),
	't', 'it got the prepared row\'s id, and the key has one row');

# retention: the worker deletes what the window cannot see any more
$node->safe_psql(
	'postgres', q{
SELECT dlsm_create_queue('dk', retention => '1 day');
SELECT dlsm_enqueue('dk', 'old', 'job', dedup_key => 'old');
SELECT dlsm_enqueue('dk', 'recent', 'job', dedup_key => 'recent');
SELECT count(*) FROM dlsm_settle_many('dk',
	ARRAY(SELECT process_id FROM dlsm_claim('dk', units => 2)));
UPDATE dk SET settled_at = now() - interval '2 days' WHERE entity = 'old';
UPDATE dk SET settled_at = now() - interval '1 hour' WHERE entity = 'recent';
});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM dk}),
	'the worker deleted the row settled before the retention');
is( $node->safe_psql(
		'postgres', q{
SELECT dlsm_enqueue('dk', 'x', 'job', dedup_key => 'recent', dedup_window => '1 day')
	   = (SELECT id FROM dk WHERE entity = 'recent');
SELECT dlsm_enqueue('dk', 'x', 'job', dedup_key => 'old', dedup_window => '1 day')
	   <> 0;
SELECT dlsm_enqueue_deduplicated();
SELECT count(*) FROM dk}),
	"t\nt\nf\n2",
	'a row settled within the window holds its key; a deleted row\'s key is free');

$node->stop;
done_testing();
