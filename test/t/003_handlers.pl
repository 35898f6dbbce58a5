# Copyright (c) 2026, dlsm developers
#
# Handler queues: the worker claims, calls the handler and settles in one
# transaction.  1,000 requests are each handled exactly once; a handler
# that fails has its effects rolled back, is retried, and errors once
# max_attempts is spent; a transient failure is retried to completion with
# its effects committed once; clearing the handler stops the worker.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(usleep);

my $node = dlsm_node('handlers', qq{
dlsm.reap_interval = 200
});

ok(install_dlsm($node), 'the worker runs');

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sub worker_counters
{
	return sql(
		q{SELECT handled, errors FROM dlsm_worker_status
		  WHERE database = current_database()});
}

# ---------------------------------------------------------------------
# 1,000 requests, each handled exactly once
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('hq');
CREATE SEQUENCE call_seq;
CREATE TABLE handled (
	request_id bigint PRIMARY KEY,		-- a second handling would fail here
	entity text NOT NULL,
	kind text NOT NULL,
	payload jsonb,
	call_id bigint NOT NULL,
	seen_status text,					-- the row as the handler reads it
	seen_fence bigint,
	handled_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION h_ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	call bigint := nextval('call_seq');	-- not rolled back: counts every call
BEGIN
	INSERT INTO handled (request_id, entity, kind, payload, call_id,
						 seen_status, seen_fence)
	SELECT i, h_ok.entity, h_ok.kind, p, call, q.status, q.fence
	  FROM unnest(ids, payloads) AS u(i, p) JOIN hq q ON q.id = u.i;
END $$;
SELECT dlsm_set_handler('hq', 'h_ok');
});

# 500 creates of their own entity, and 50 entities with a create and 9
# updates each, in 10 transactions
my $enqueue = '';
for my $t (0 .. 9)
{
	$enqueue .= qq{
BEGIN;
SELECT count(dlsm_enqueue('hq', 's' || g, 'create', jsonb_build_object('n', g)))
  FROM generate_series($t * 50 + 1, $t * 50 + 50) g;
SELECT count(dlsm_enqueue('hq', 'g' || e, CASE WHEN u = 0 THEN 'create' ELSE 'update' END,
						  jsonb_build_object('e', e, 'u', u)))
  FROM generate_series($t * 5 + 1, $t * 5 + 5) e, generate_series(0, 9) u;
COMMIT;};
}
sql($enqueue);
is(sql(q{SELECT count(*) FROM hq}), '1000', '1,000 requests enqueued');

ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1000 FROM hq WHERE status = 'complete'}),
	'all 1,000 requests complete');
is( sql(q{
SELECT count(*), count(DISTINCT request_id),
	   count(*) FILTER (WHERE hq.id IS NULL)
FROM handled LEFT JOIN hq ON hq.id = handled.request_id}),
	'1000|1000|0',
	'the handler inserted 1,000 distinct request ids, all of the queue');
is( sql(q{
SELECT count(*) FROM hq LEFT JOIN handled h ON h.request_id = hq.id
WHERE h.request_id IS NULL OR h.entity <> hq.entity OR h.kind <> hq.kind
   OR h.payload IS DISTINCT FROM hq.payload}),
	'0',
	'every request handled with its own entity, kind and payload');
is( sql(q{
SELECT count(*) FROM hq JOIN handled h ON h.request_id = hq.id
WHERE h.seen_status = 'in-progress' AND h.seen_fence = hq.fence}),
	'1000',
	'the handler reads its rows in progress, with the fence they keep');
is( sql(q{
SELECT count(*) FILTER (WHERE status = 'complete' AND attempts = 1
						AND settled_at IS NOT NULL)
FROM hq}),
	'1000',
	'every request complete after one attempt');

# exactly once: as many handler calls as units, none failed
my ($handled, $errors) = split /\|/, worker_counters();
my ($calls, $units) = split /\|/, sql(
	q{SELECT (SELECT last_value FROM call_seq),
			 (SELECT count(DISTINCT call_id) FROM handled)});
is($calls, $units, "every handler call ($calls) committed its unit");
is($handled, $units, "the worker counted $handled units handled");
is($errors, '0', 'no errors');

# the order of the article "Implementing a Distributed Lock State Machine":
# an entity's updates after its create, grouped
is( sql(q{
SELECT count(*) FROM (
	SELECT entity,
		   min(call_id) FILTER (WHERE kind = 'create') AS c,
		   min(call_id) FILTER (WHERE kind = 'update') AS u
	FROM handled WHERE entity LIKE 'g%' GROUP BY entity) s
WHERE c IS NULL OR u IS NULL OR u <= c}),
	'0',
	'each entity\'s updates were handled after its create');
cmp_ok($units, '<', 1000, "updates were grouped: 1,000 requests in $units units");
cmp_ok($units, '>=', 600, 'at least one unit per create and per entity\'s updates');

# ---------------------------------------------------------------------
# A failing handler: effects rolled back, retried, then error
# ---------------------------------------------------------------------
my (undef, $errors_before) = split /\|/, worker_counters();
sql(q{
SELECT dlsm_create_queue('fq', max_attempts => 3);
CREATE TABLE fail_effects (request_id bigint);
CREATE SEQUENCE fail_calls;
CREATE FUNCTION h_fail(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM nextval('fail_calls');
	INSERT INTO fail_effects SELECT unnest(ids);
	RAISE EXCEPTION 'boom on request %', ids[1];
END $$;
SELECT dlsm_set_handler('fq', 'h_fail');
SELECT dlsm_enqueue('fq', 'f' || g) FROM generate_series(1, 3) g;
});
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 3 FROM fq WHERE status = 'error'}),
	'the failing requests end in error');
is( sql(q{
SELECT count(*) FROM fq
WHERE attempts = 3 AND settled_at IS NOT NULL
  AND detail = 'retries exhausted after 3 attempts: boom on request ' || id}),
	'3',
	'each failed after max_attempts (3) attempts, the message in detail');
is(sql(q{SELECT count(*) FROM fail_effects}),
	'0', 'the failing handler\'s inserts were rolled back');
is(sql(q{SELECT last_value FROM fail_calls}),
	'9', 'the handler was called 3 times for each of 3 requests');
my ($handled_after, $errors_after) = split /\|/, worker_counters();
is($errors_after - $errors_before, 9, 'the worker counted 9 failed units');
is($handled_after, $handled, 'and no handled unit');
my $last_error = sql(
	q{SELECT coalesce(last_error, '<null>') FROM dlsm_worker_status
	  WHERE database = current_database()});
note "dlsm_worker_status.last_error after handler failures: $last_error";
like($last_error, qr/boom on request/,
	'last_error shows the handler\'s message');

# retries are spaced by the backoff (1 s, then 2 s)
my $span = sql(
	q{SELECT round(extract(epoch FROM max(settled_at - enqueued_at)))
	  FROM fq});
cmp_ok($span, '>=', 3, "the retries backed off ($span s from enqueue to error)");

# ---------------------------------------------------------------------
# A transient failure: retried, then complete; its effects once
# ---------------------------------------------------------------------
sql(q{
SELECT dlsm_create_queue('tq', max_attempts => 3);
CREATE SEQUENCE flaky_calls;
CREATE TABLE flaky_effects (request_id bigint, call bigint);
CREATE FUNCTION h_flaky(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	call bigint := nextval('flaky_calls');
BEGIN
	INSERT INTO flaky_effects SELECT unnest(ids), call;
	IF call = 1 THEN
		RAISE EXCEPTION 'transient failure';
	END IF;
END $$;
SELECT dlsm_set_handler('tq', 'h_flaky');
SELECT dlsm_enqueue('tq', 't1');
});
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'complete' FROM tq}),
	'a request whose first handling failed completes on the retry');
is(sql(q{SELECT attempts, detail IS NULL FROM tq}),
	'2|t', 'after two attempts');
is( sql(q{SELECT count(*), min(call) FROM flaky_effects}),
	'1|2', 'only the successful call\'s effects remain');

# ---------------------------------------------------------------------
# Clearing the handler stops the worker consuming; setting it resumes
# ---------------------------------------------------------------------
sql(q{SELECT dlsm_set_handler('hq', NULL);
	  SELECT dlsm_enqueue('hq', 'after-clear')});
# several reaping passes (200 ms) and wake-ups go by
usleep(1_500_000);
is(sql(q{SELECT status FROM hq WHERE entity = 'after-clear'}),
	'new', 'without a handler the request is left alone');
sql(q{SELECT dlsm_set_handler('hq', 'h_ok')});
ok( $node->poll_query_until(
		'postgres',
		q{SELECT status = 'complete' FROM hq WHERE entity = 'after-clear'}),
	'with the handler set again it is handled');

$node->stop;
done_testing();
