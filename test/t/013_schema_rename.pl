# Copyright (c) 2026, dlsm developers
#
# Renamed schemas: dlsm installed WITH SCHEMA d1 keeps working after
# ALTER SCHEMA d1 RENAME TO d2 (its kept statements on its own tables
# follow), and so does a queue whose schema is renamed, for clients, for
# the worker's reaper and handlers, and for a capture into it.  A handler's
# error message is kept in dlsm_worker_status cut at a character boundary.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('rename', "dlsm.reap_interval = 200\n");
wait_first_look($node);

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
CREATE SCHEMA d1;
CREATE EXTENSION dlsm WITH SCHEMA d1;
CREATE SCHEMA work;
SELECT d1.dlsm_create_queue('work.q');
CREATE TABLE src (id int PRIMARY KEY);
SELECT d1.dlsm_capture('src', 'work.q');
CREATE TABLE handled (entity text);
CREATE FUNCTION work.h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS 'INSERT INTO handled VALUES (entity)';
SELECT d1.dlsm_create_queue('work.hq');
SELECT d1.dlsm_set_handler('work.hq', 'work.h');
});
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM d1.dlsm_worker_status WHERE pid IS NOT NULL}),
	'the worker runs');

# warm every kept statement up before the renames
sql(q{SELECT d1.dlsm_enqueue('work.hq', 'h0')});
ok( $node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM handled}),
	'the handler runs before the renames');
sql(q{DELETE FROM handled});
is(sql(q{SELECT count(*) FROM (SELECT d1.dlsm_settle('work.q', process_id)
	FROM d1.dlsm_claim('work.q', units => 5) ) s}), '0', 'nothing to claim yet');
sql(q{INSERT INTO src VALUES (1)});
is(sql(q{SELECT entity FROM d1.dlsm_claim('work.q')}), '1', 'a capture is claimed');

sql(q{ALTER SCHEMA d1 RENAME TO d2});
sql(q{ALTER SCHEMA work RENAME TO work2});
sql(q{INSERT INTO src VALUES (2)});
is(sql(q{SELECT string_agg(entity, ',' ORDER BY entity) FROM work2.q WHERE status = 'new'}),
	'2', 'the capture follows the renamed schemas');
is(sql(q{SELECT entity FROM d2.dlsm_claim('work2.q', lease => '10 ms')}), '2',
	'claims work after both renames');
ok( $node->poll_query_until('postgres', q{
SELECT status = 'new' FROM work2.q WHERE entity = '2'}),
	'the worker reaps the renamed queue');
# the handler is kept by the name it was set with: renamed with its schema,
# it is not found, and the queue waits, loudly, until it is set again
sql(q{SELECT d2.dlsm_enqueue('work2.hq', 'h1')});
ok( $node->poll_query_until('postgres', q{
SELECT last_error LIKE '%handler work.h(text, text, bigint[], jsonb[]) of queue "hq" does not exist%'
  FROM d2.dlsm_worker_status}),
	'a handler renamed away is not found, and dlsm_worker_status says so');
is(sql(q{SELECT status FROM work2.hq WHERE entity = 'h1'}), 'new',
	'the request waits, untouched');
sql(q{SELECT d2.dlsm_set_handler('work2.hq', 'work2.h')});
ok( $node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM handled}),
	'after dlsm_set_handler with the new name, it runs');
is(sql(q{SELECT handler FROM d2.dlsm_queues WHERE queue = 'work2.hq'::regclass}),
	'work2.h', 'kept by its new name');

# a long multibyte error message is cut at a character boundary
sql(q{
CREATE FUNCTION work2.fail(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION '%', repeat('é', 300); END $$;
SELECT d2.dlsm_set_handler('work2.hq', 'work2.fail');
SELECT d2.dlsm_enqueue('work2.hq', 'h3');
});
ok( $node->poll_query_until('postgres', q{
SELECT last_error LIKE '%é' FROM d2.dlsm_worker_status}),
	'the handler\'s error is in dlsm_worker_status');
is(sql(q{SELECT octet_length(last_error) < 256
		  AND last_error = convert_from(convert_to(last_error, 'UTF8'), 'UTF8')
		 FROM d2.dlsm_worker_status}),
	't', 'cut to fit, at a character boundary');
like($node->safe_psql('postgres', q{SELECT last_error FROM d2.dlsm_worker_status}),
	qr/^queue "hq": call a handler: (?:é)+$/, 'naming the queue');

$node->stop;
done_testing();
