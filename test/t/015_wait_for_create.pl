# Copyright (c) 2026, dlsm developers
#
# A handler queue whose updates wait for their create
# (updates_wait_for_create): the worker does not hand the updates of an
# entity without a create to the handler while it handles 200 other
# requests after them (the queue's floor passes over them); once the late
# create is enqueued, the handler gets the create, then the updates in one
# call.  Turned off, an update without a create is handled at once.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('wait_for_create', qq{
dlsm.reap_interval = 200
});

ok(install_dlsm($node), 'the worker runs');

sub sql
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', $sql);
}

sql(q{
SELECT dlsm_create_queue('wq', updates_wait_for_create => true);
CREATE SEQUENCE call_seq;
CREATE TABLE handled (
	request_id bigint PRIMARY KEY,
	entity text NOT NULL,
	kind text NOT NULL,
	call_id bigint NOT NULL);
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	call bigint := nextval('call_seq');
BEGIN
	INSERT INTO handled SELECT i, h.entity, h.kind, call FROM unnest(ids) i;
END $$;
SELECT dlsm_set_handler('wq', 'h');
SELECT count(dlsm_enqueue('wq', 'late', 'update')) FROM generate_series(1, 3);
SELECT count(dlsm_enqueue('wq', 'o' || g, 'create')) FROM generate_series(1, 200) g;
});

ok(defined poll_within($node, 'postgres',
		q{SELECT count(*) = 200 FROM wq WHERE entity <> 'late' AND status = 'complete'}, 60),
	'the 200 creates enqueued after the waiting updates are handled');
# one more pass of the worker after those: a marker enqueued and handled
sql(q{SELECT dlsm_enqueue('wq', 'marker', 'create')});
ok(defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM wq WHERE entity = 'marker'}, 60),
	'a later request is handled too');
is(sql(q{SELECT string_agg(status, ',' ORDER BY id) FROM wq WHERE entity = 'late'}),
	'new,new,new', 'the updates without a create were not handed to the handler');
is(sql(q{SELECT count(*) FROM handled WHERE entity = 'late'}), '0',
	'the handler never saw them');
is(sql(q{SELECT waiting_for_create_to_arrive FROM dlsm_queue_stats
		 WHERE queue = 'wq'::regclass}), '3', 'dlsm_queue_stats counts them');

# the create arrives: the create first, then the three updates in one call
sql(q{SELECT dlsm_enqueue('wq', 'late', 'create')});
ok(defined poll_within($node, 'postgres',
		q{SELECT bool_and(status = 'complete') FROM wq WHERE entity = 'late'}, 60),
	'once the create arrived, the entity is handled');
is(sql(q{SELECT string_agg(kind || ':' || n, ',' ORDER BY first_call)
		   FROM (SELECT kind, count(*) AS n, min(call_id) AS first_call,
						count(DISTINCT call_id) AS calls
				   FROM handled WHERE entity = 'late' GROUP BY kind) k
		  WHERE calls = 1}),
	'create:1,update:3', 'the create was handled first, then the updates in one call');

# turned off: an update without a create is handled at once
sql(q{SELECT dlsm_alter_queue('wq', updates_wait_for_create => false);
	  SELECT dlsm_enqueue('wq', 'orphan', 'update')});
ok(defined poll_within($node, 'postgres',
		q{SELECT status = 'complete' FROM wq WHERE entity = 'orphan'}, 60),
	'turned off, an update without a create is handled');
is(sql(q{SELECT count(*) FROM wq WHERE status <> 'complete'}), '0',
	'every request of wq is complete');

$node->stop;
done_testing();
