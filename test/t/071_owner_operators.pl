# Copyright (c) 2026, dlsm developers
#
# A queue owner's own operators never run as anyone else (the pattern of
# CVE-2018-1058).  mallory, in a database whose public schema lets her
# create objects (as PostgreSQL 14 and older left it), changes her queue's
# status and kind columns to a domain over text and defines = for that
# domain in public, which is on everyone's search_path: her operator
# records current_user into a table she reads.
#
# Then the queries of examples/monitoring/dlsm-queries.yaml, extracted from
# the file, run as a pg_monitor role that may read mallory's queue, and
# dlsm_queue_stats too: none runs mallory's operator or policy, and the
# exporter's queries leave out a queue whose columns lost dlsm's types while they
# still count the others, and a queue with row-level security (whose
# policies would run as the reader), and a queue in a schema the role may
# not use (SELECT granted on the table, no USAGE on its schema: issue 24),
# while they keep the queue in public.  carol, whom mallory granted her queue, enqueues,
# claims (a create behind an older update of its entity, which makes dlsm
# look at the kind of the entity's first open request), groups updates,
# heartbeats, settles and reaps there: dlsm refuses the queue before it
# runs a statement (a status of another type than text: regress drift),
# and runs mallory's operator in none of its own statements.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $queries = "$ENV{TESTDIR}/examples/monitoring/dlsm-queries.yaml";

my $node = dlsm_node('owner_ops', "dlsm.reap_interval = '1h'\n");
ok(install_dlsm($node), 'the worker serves postgres');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# Run $sql as $role: (exit code, stdout, stderr)
sub run_as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-U', $role ], on_error_stop => 1);
	return ($ret, $out, $err);
}

# Who ran mallory's operator since the last look, other than mallory herself
sub foreign_runs
{
	return sql(q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM public.seen
				 WHERE who <> 'mallory';
				 TRUNCATE public.seen});
}

sql(q{
CREATE ROLE dlsm_exporter LOGIN IN ROLE pg_monitor;
CREATE ROLE mallory LOGIN;
CREATE ROLE carol LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
SELECT dlsm_create_queue('jobs');
INSERT INTO jobs (entity) VALUES ('j1'), ('j2');
GRANT SELECT ON jobs TO dlsm_exporter;
-- SELECT on a queue whose schema the exporter may not use
CREATE SCHEMA sheets;
SELECT dlsm_create_queue('sheets.hq');
INSERT INTO sheets.hq (entity) VALUES ('h1');
GRANT SELECT ON sheets.hq TO dlsm_exporter;
});

my ($ret, $out, $err) = run_as('mallory', q{
SELECT dlsm_create_queue('mq');
-- an update enqueued before its entity's create; a leased claim to reap
INSERT INTO mq (entity, kind) VALUES ('x', 'update');
INSERT INTO mq (entity) VALUES ('x'), ('y'), ('z');
-- g: a complete create and two updates, for dlsm_group_updates
INSERT INTO mq (entity, status) VALUES ('g', 'complete');
INSERT INTO mq (entity, kind) VALUES ('g', 'update'), ('g', 'update');
CREATE TABLE public.seen (who text, what text);
GRANT INSERT ON public.seen TO PUBLIC;
CREATE DOMAIN public.mtext AS text;
CREATE FUNCTION public.mtext_eq(a public.mtext, b public.mtext) RETURNS bool
	LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.seen VALUES (current_user, 'eq');
	RETURN a::text OPERATOR(pg_catalog.=) b::text;
END $$;
CREATE OPERATOR public.= (LEFTARG = public.mtext, RIGHTARG = public.mtext,
	FUNCTION = public.mtext_eq);
ALTER TABLE mq ALTER COLUMN status TYPE public.mtext,
			   ALTER COLUMN kind TYPE public.mtext;
GRANT SELECT ON mq TO dlsm_exporter;
GRANT SELECT, INSERT, UPDATE ON mq TO carol;
-- a second queue, with row-level security enabled later: dlsm refuses it,
-- a plain SELECT evaluates her policy as the reader
SELECT dlsm_create_queue('mq2');
INSERT INTO mq2 (entity) VALUES ('r1');
CREATE FUNCTION public.spy() RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.seen VALUES (current_user, 'policy');
	RETURN true;
END $$;
CREATE POLICY everyone ON mq2 USING (public.spy());
ALTER TABLE mq2 ENABLE ROW LEVEL SECURITY;
GRANT SELECT ON mq2 TO dlsm_exporter;
});
is($ret, 0, 'mallory made status and kind of her queue a domain with her own =')
  or diag $err;

# the trap works: an unqualified = on her column runs her operator
run_as('dlsm_exporter', q{SELECT count(*) FROM mq WHERE status = 'new'});
is(foreign_runs(), 'dlsm_exporter', 'an unqualified = on her column runs her code as the caller');

# ---------------------------------------------------------------------
# The exporter's queries
# ---------------------------------------------------------------------
my $yaml = slurp_file($queries);
my %query;
while ($yaml =~ /^(\w+):\n  query: \|\n((?:(?:    .*)?\n)+)/mg)
{
	my ($name, $body) = ($1, $2);
	$body =~ s/^    //mg;
	$query{$name} = $body;
}
is(join(' ', sort keys %query),
	'dlsm_locks dlsm_queue dlsm_queue_groups dlsm_queue_requests dlsm_shared_table dlsm_worker',
	'six queries in dlsm-queries.yaml');
for my $name (sort keys %query)
{
	($ret, $out, $err) = run_as('dlsm_exporter', $query{$name});
	is($ret, 0, "$name runs as the pg_monitor role") or diag $err;
	is(foreign_runs(), '', "$name runs no operator of mallory's");
	if ($name =~ /^dlsm_queue/)
	{
		unlike($out, qr/\|mq\|/, "$name leaves out mq, whose columns lost dlsm's types");
		unlike($out, qr/\|mq2\|/, "$name leaves out mq2, which has row-level security");
		unlike($out, qr/\|sheets\.hq\|/, "$name leaves out sheets.hq, whose schema it may not use");
		like($out, qr/\|jobs\|/, "$name reports jobs");
	}
	like($out, qr/^postgres\|jobs\|new\|2$/m, 'dlsm_queue_requests counts the 2 new requests of jobs')
	  if $name eq 'dlsm_queue_requests';
}

($ret, $out, $err) = run_as('dlsm_exporter',
	q{SELECT queue, new FROM dlsm_queue_stats ORDER BY 1});
is($ret, 0, 'dlsm_queue_stats runs as the pg_monitor role') or diag $err;
is(foreign_runs(), '', 'dlsm_queue_stats runs no operator of mallory\'s');

# ---------------------------------------------------------------------
# dlsm's own statements, called by carol
# ---------------------------------------------------------------------
my @calls = (
	[ 'dlsm_enqueue', q{SELECT dlsm_enqueue('mq', 'w')} ],
	[ 'dlsm_group_updates', q{BEGIN; SELECT dlsm_group_updates('mq', 'g', gen_random_uuid()); ROLLBACK} ],
	[ 'dlsm_claim', q{SELECT count(*) FROM dlsm_claim('mq', units => 10)} ],
	[ 'a leased claim', q{SELECT count(*) FROM dlsm_claim('mq', lease => '1 hour', units => 10)} ],
	[ 'dlsm_heartbeat', q{SELECT dlsm_heartbeat('mq', process_id) FROM mq WHERE status::text = 'in-progress' LIMIT 1} ],
	[ 'dlsm_settle', q{SELECT dlsm_settle('mq', process_id, 'retry', retry_after => '0') FROM (SELECT DISTINCT process_id FROM mq WHERE status::text = 'in-progress') p} ],
	[ 'dlsm_reap', q{SELECT dlsm_reap('mq')} ],
	[ 'dlsm_claim, again', q{SELECT count(*) FROM dlsm_claim('mq', units => 10)} ],
);
for my $c (@calls)
{
	my ($name, $call) = @$c;
	($ret, $out, $err) = run_as('carol', $call);
	# dlsm refuses a queue whose status is of a domain, before any
	# statement (regress drift): refused or answered, none runs her operator
	ok($ret == 0 || $err =~ /ERROR:  column "status" of table "mq" has type mtext, which dlsm cannot use/,
		"carol: $name answers, or is refused for the domain") or diag $err;
	is(foreign_runs(), '', "carol: $name runs no operator of mallory's");
}

done_testing();
