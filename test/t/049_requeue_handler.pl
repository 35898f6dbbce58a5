# Copyright (c) 2026, dlsm developers
#
# Dead letters of a handler queue: a request the handler failed is
# requeued once its cause is fixed, and the worker runs it again (woken by
# the requeue's commit, as by an enqueue's; the reaping pass is an hour
# apart here, but other wake-ups of the worker come within seconds, so
# this does not tell the requeue's wake-up from those).  The request is
# handled once more, exactly once, with its attempts counted afresh.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('requeue_handler', qq{
dlsm.reap_interval = '1h'
});

ok(install_dlsm($node), 'the worker runs');

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sql(q{
SELECT dlsm_create_queue('hq', max_attempts => 1);
CREATE TABLE broken (entity text PRIMARY KEY);
CREATE TABLE handled (request_id bigint, entity text NOT NULL);
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM broken b WHERE b.entity = h.entity) THEN
		RAISE EXCEPTION 'sheet % is broken', h.entity;
	END IF;
	INSERT INTO handled SELECT unnest(ids), h.entity;
END $$;
SELECT dlsm_set_handler('hq', 'h');
INSERT INTO broken VALUES ('x');
});
my $x = sql(q{SELECT dlsm_enqueue('hq', 'x')});
my $y = sql(q{SELECT dlsm_enqueue('hq', 'y')});

ok( defined poll_within($node, 'postgres', qq{
SELECT count(*) FILTER (WHERE id = $x AND status = 'error') = 1
   AND count(*) FILTER (WHERE id = $y AND status = 'complete') = 1 FROM hq}, 60),
	'the worker handled y and failed x (max_attempts 1)');
is(sql(qq{SELECT attempts || ' ' || (detail LIKE '%sheet x is broken%') FROM hq WHERE id = $x}),
	'1 true', 'x failed once, its detail says why');

# the cause fixed, x requeued: the worker handles it again
sql(q{DELETE FROM broken});
is(sql(qq{SELECT dlsm_requeue('hq', ARRAY[$x, $y])}), '1',
	'dlsm_requeue moves x, not the complete y');
ok( defined poll_within($node, 'postgres',
		qq{SELECT status = 'complete' FROM hq WHERE id = $x}, 30),
	'the worker handled x again');
is(sql(qq{SELECT attempts || ' ' || coalesce(detail, 'none') FROM hq WHERE id = $x}),
	'1 none', 'x took one attempt of its fresh count');
is(sql(q{SELECT string_agg(entity, ',' ORDER BY entity) FROM handled}),
	'x,y', 'each request handled exactly once');

$node->stop;
done_testing();
