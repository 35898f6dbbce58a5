# Copyright (c) 2026, dlsm developers
#
# A queue's first minute (issue 34): a session makes its plans while the
# queue is new and empty, never analysed; the queue then grows.  Its claim's
# look-up of a candidate by id and its settle must not go on with plans made
# for the empty table: in that state the planner picked the queue's `open`
# index (entity, id) for the look-up by id, which reads the whole index.
# plans.c makes such a plan again once the table has outgrown the size it
# was made for (it reads the size at one run in 16); auto_explain shows the
# plans the session runs.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('fresh', '');

$node->safe_psql('postgres', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('fq');
ALTER TABLE fq SET (autovacuum_enabled = off);
});

# one session: its plans made on the new queue, holding one request; then
# a backlog, settled and open, as other sessions leave it; then claims and
# settles, 20 (a plan reads the table's size at one run in 16), and one
# more, explained
my $claim = "SELECT count(dlsm_settle('fq', process_id)) FROM dlsm_claim('fq');\n";
my ($rc, $out, $err) = $node->psql('postgres', q{
SELECT dlsm_enqueue('fq', 'first', 'job');
} . $claim . q{
INSERT INTO fq (entity, kind, status, settled_at)
  SELECT 'done' || g, 'job', 'complete', now() FROM generate_series(1, 20000) g;
INSERT INTO fq (entity, kind) SELECT 'open' || g, 'job' FROM generate_series(1, 2000) g;
} . ($claim x 20) . q{
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET client_min_messages = log;
SELECT count(dlsm_settle('fq', process_id)) FROM dlsm_claim('fq');
});
is($rc, 0, 'claims and settles after the queue grew');
is($node->safe_psql('postgres', q{SELECT reltuples < 0 FROM pg_class WHERE relname = 'fq'}),
	't', 'the queue was never analysed');

# the plans of the claim's look-up of its candidate and of the settle
my @plans = split /(?=LOG:  duration)/, $err;
my ($lock) = grep { /SELECT c\.id(?: AS id)?, c\.kind(?: AS kind)?, c\.entity(?: AS entity)?, c\.payload(?: AS payload)? FROM public\.fq c/ } @plans;
my ($settle) = grep { /UPDATE public\.fq t SET status/ } @plans;
ok(defined $lock && defined $settle, 'the look-up and the settle were explained')
  or diag($err);
for ([ 'the look-up by id', $lock ], [ 'the settle', $settle ])
{
	my ($what, $plan) = @$_;
	next unless defined $plan;
	unlike($plan, qr/Index (Only )?Scan using fq_open on fq (c|t)\b/,
		"$what does not read the open index of the grown queue")
	  or diag($plan);
	like($plan, qr/Scan using fq_(pkey|ready) on fq (c|t)\b/,
		"$what looks its row up by id")
	  or diag($plan);
}

done_testing();
