# Copyright (c) 2026, dlsm developers
#
# Catalog drift: nothing dlsm read at registration is trusted.  For every
# column of a queue, a captured source's columns and the handler, one
# change of a list (a type among text, integer, bigint, uuid, jsonb, bytea
# and a domain; DROP; RENAME; SET and DROP NOT NULL; a nondeterministic
# collation; the id's identity dropped; the table rewritten, given
# row-level security, its entity made a generated column; the handler
# replaced by one of another shape) is made by the ordinary role that owns the queue, on a
# queue with rows in every state, a capture, a limit and a handler.  Then
# the capture fires, the worker makes a pass over the database (reaping,
# running the handler), and every function of the extension, read from
# its catalog, is called with good, NULL and odd arguments.  Each call
# answers or fails with an SQLSTATE other than XX000 (an internal error),
# and no server process ends by a signal in the whole run.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# restart_after_crash: a crash is reported below, and the cases after it
# still run
my $node = dlsm_node('drift', qq{
dlsm.reap_interval = 200
dlsm.handler_timeout = 2000
restart_after_crash = on
});
ok(install_dlsm($node), 'the worker runs');
install_caller($node, 'postgres');

$node->safe_psql('postgres', q{
CREATE ROLE drifter LOGIN;
CREATE SCHEMA drift AUTHORIZATION drifter;
SET ROLE drifter;
CREATE DOMAIN drift.dtext AS text;
CREATE COLLATION drift.ci (provider = icu, locale = 'und-u-ks-level2',
  deterministic = false);
CREATE FUNCTION drift.h(text, text, bigint[], jsonb[]) RETURNS void
  LANGUAGE sql AS $$SELECT$$;
});

# The worker leaves a queue that no longer fits alone, and says so
$node->safe_psql('postgres', q{
SET ROLE drifter;
SELECT dlsm_create_queue('drift.first');
SELECT dlsm_enqueue('drift.first', '1');
ALTER TABLE drift.first ALTER COLUMN entity TYPE bigint USING entity::bigint;
});
ok( poll_within(
		$node, 'postgres',
		q{SELECT last_error = 'queue "first" no longer fits dlsm since its table was altered: dlsm leaves it alone' AND skipped > 0
		    FROM dlsm_worker_status WHERE database = 'postgres'},
		60),
	'the worker names the queue that no longer fits, and skips it');
# altered back, the queue fits again and is reaped; altered once more
# (after another queue's refusal was the last error), it is named again:
# the worker forgets a refusal once the queue fits
$node->safe_psql('postgres', q{
SET ROLE drifter;
ALTER TABLE drift.first ALTER COLUMN entity TYPE text;
SELECT count(*) FROM dlsm_claim('drift.first', lease => '10 ms');
});
ok( poll_within($node, 'postgres',
		q{SELECT status = 'new' FROM drift.first}, 60),
	'the queue that fits again is reaped');
$node->safe_psql('postgres', q{
SET ROLE drifter;
SELECT dlsm_create_queue('drift.second');
ALTER TABLE drift.second ALTER COLUMN entity TYPE bigint USING entity::bigint;
});
ok( poll_within($node, 'postgres',
		q{SELECT last_error LIKE 'queue "second" %' FROM dlsm_worker_status WHERE database = 'postgres'},
		60),
	'another queue\'s refusal is the last error');
$node->safe_psql('postgres', q{SET ROLE drifter;
ALTER TABLE drift.first ALTER COLUMN entity TYPE bigint USING entity::bigint});
ok( poll_within($node, 'postgres',
		q{SELECT last_error LIKE 'queue "first" %' FROM dlsm_worker_status WHERE database = 'postgres'},
		60),
	'the queue refused again is named again');
$node->safe_psql('postgres', "SET ROLE drifter; SELECT dlsm_drop_queue('drift.first', true); SELECT dlsm_drop_queue('drift.second', true)");

# Run $sql as drifter; returns (exit code, stderr).
sub as_drifter
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres', "SET ROLE drifter; $sql",
		stdout => \$out, stderr => \$err, on_error_stop => 1);
	return ($ret, $err, $out);
}

# The changes of one queue column: [label, ALTER TABLE actions]; each type
# is tried as it is, then with the column's default and NOT NULL dropped
# first (a change PostgreSQL refuses, say on the primary key, is skipped).
my @types = ('text', 'integer', 'bigint', 'uuid', 'jsonb', 'bytea',
	'drift.dtext');
sub column_changes
{
	my ($col, $text) = @_;
	my @changes;
	for my $t (@types)
	{
		push @changes, [ "$col TYPE $t",
			"ALTER $col TYPE $t USING NULL",
			"ALTER $col DROP DEFAULT, ALTER $col DROP NOT NULL, ALTER $col TYPE $t USING NULL" ];
	}
	push @changes, [ "DROP $col", "DROP COLUMN $col CASCADE" ];
	push @changes, [ "RENAME $col", "RENAME COLUMN $col TO ${col}_renamed" ];
	push @changes, [ "$col DROP NOT NULL", "ALTER $col DROP NOT NULL" ];
	push @changes, [ "$col SET NOT NULL", "ALTER $col SET NOT NULL" ];
	push @changes, [ "$col DROP DEFAULT", "ALTER $col DROP DEFAULT" ];
	push @changes, [ "$col COLLATE", "ALTER $col TYPE text COLLATE drift.ci" ]
	  if $text;
	return @changes;
}

my @cases;
my %text = map { $_ => 1 } qw(status kind entity group_key dedup_key detail);
for my $col (qw(id status kind entity process_id group_key dedup_key payload
	fence attempts run_at enqueued_at claimed_at lease_until settled_at detail))
{
	push @cases, map { [ 'queue', @$_ ] } column_changes($col, $text{$col});
}
push @cases, [ 'queue', 'id DROP IDENTITY', 'ALTER id DROP IDENTITY' ];
push @cases, [ 'queue', 'table rewritten', 'SET UNLOGGED' ];
push @cases, [ 'queue', 'row-level security', 'ENABLE ROW LEVEL SECURITY' ];
push @cases, [ 'queue', 'entity generated',
	q{DROP COLUMN entity CASCADE, ADD COLUMN entity text GENERATED ALWAYS AS ('g') STORED} ];
push @cases, [ 'queue', 'a column added', 'ADD COLUMN extra int' ];
for my $t (@types)
{
	push @cases, [ 'source', "source id TYPE $t",
		"ALTER id TYPE $t USING NULL",
		"ALTER id DROP NOT NULL, ALTER id TYPE $t USING NULL" ];
}
push @cases, [ 'source', 'DROP source id', 'DROP COLUMN id CASCADE' ];
push @cases, [ 'source', 'RENAME source id', 'RENAME COLUMN id TO id_renamed' ];
push @cases, [ 'source', 'source id COLLATE',
	'ALTER id TYPE text COLLATE drift.ci' ];
push @cases, [ 'handler', 'handler returns a set',
	'CREATE FUNCTION drift.h(text, text, bigint[], jsonb[]) RETURNS SETOF int LANGUAGE sql AS $$SELECT 1 UNION ALL SELECT 2$$' ];
push @cases, [ 'handler', 'handler of other arguments',
	'CREATE FUNCTION drift.h(text, text, int[], jsonb[]) RETURNS void LANGUAGE sql AS $$SELECT$$' ];
push @cases, [ 'handler', 'handler as a procedure',
	'CREATE PROCEDURE drift.h(text, text, bigint[], jsonb[]) LANGUAGE sql AS $$SELECT$$' ];
push @cases, [ 'handler', 'handler dropped', 'SELECT' ];

my ($applied, $calls, $lost, $setup_failed) = (0, 0, 0, 0);
my %states;
my @internal;
my $n = 0;
for my $case (@cases)
{
	my ($what, $label, @actions) = @$case;
	$n++;
	my ($q, $s) = ("drift.q$n", "drift.s$n");

	# a queue with rows new, in progress (a lease), complete and error
	my ($ret, $err, $out) = as_drifter(qq{
SELECT dlsm_create_queue('$q');
CREATE TABLE $s (id int PRIMARY KEY, v text);
SELECT dlsm_capture('$s', '$q', 'create', entity_column => 'id');
SELECT dlsm_set_limit('$q', 'g', concurrency => 2);
SELECT dlsm_enqueue('$q', 'e' || i, group_key => 'g', dedup_key => 'k' || i)
  FROM generate_series(1, 6) i;
SELECT dlsm_settle('$q', process_id, CASE WHEN id % 2 = 0 THEN 'complete' ELSE 'error' END)
  FROM dlsm_claim('$q', units => 2, lease => '1 h');
\\pset format unaligned
\\pset tuples_only on
SELECT process_id || ' ' || id FROM dlsm_claim('$q', lease => '100 ms');
});
	if ($ret != 0)
	{
		# after a crash the server restarts: wait for it
		$setup_failed++;
		diag("case $label: setup failed: $err");
		$node->poll_query_until('postgres', 'SELECT true');
		next;
	}
	my ($pid, $id) = split / /, (split /\n/, $out)[-1];
	$pid //= '00000000-0000-0000-0000-000000000000';
	$id //= 0;
	$node->safe_psql('postgres', "SET ROLE drifter; SELECT dlsm_set_handler('$q', 'drift.h')")
	  if $what eq 'queue' || $what eq 'source';

	# the change, as the owner
	my $done = 0;
	for my $a (@actions)
	{
		my $sql =
		    $what eq 'queue' ? "ALTER TABLE $q $a"
		  : $what eq 'source' ? "ALTER TABLE $s $a"
		  : "SELECT dlsm_set_handler('$q', 'drift.h'); DROP FUNCTION drift.h(text, text, bigint[], jsonb[]); $a";
		($ret, $err) = as_drifter($sql);
		if ($ret == 0) { $done = 1; last; }
	}
	$applied += $done;
	next unless $done;

	# the capture fires; the worker makes a pass; every function is called
	my $t0 = $node->safe_psql('postgres', 'SELECT now()');
	as_drifter("INSERT INTO $s (id, v) VALUES (1000 + $n, 'x')");
	poll_within($node, 'postgres',
		"SELECT last_reap_at > '$t0' FROM dlsm_worker_status WHERE database = 'postgres'",
		60)
	  or diag("case $label: no worker pass within 60 s");
	for my $mode (qw(null odd good))
	{
		my $rows = call_every($node, 'postgres', 'drifter', $q, $s, $pid, $id,
			$mode);
		if (!defined $rows)
		{
			$lost++;
			diag("case $label ($mode): the session was lost");
			$node->poll_query_until('postgres', 'SELECT true');
			next;
		}
		for my $r (@$rows)
		{
			$calls++;
			$states{ $r->[1] }++;
			push @internal, "$label ($mode): $r->[0]: $r->[1] $r->[2]"
			  if $r->[1] eq 'XX000';
		}
	}
	# restore the handler for the next case
	if ($what eq 'handler')
	{
		as_drifter("DROP ROUTINE IF EXISTS drift.h(text, text, bigint[], jsonb[]); DROP FUNCTION IF EXISTS drift.h(text, text, int[], jsonb[]); CREATE FUNCTION drift.h(text, text, bigint[], jsonb[]) RETURNS void LANGUAGE sql AS \$\$SELECT\$\$");
	}
}

note("$applied of " . scalar(@cases) . " changes applied, $calls calls: "
	  . join(', ', map { "$_ $states{$_}" } sort keys %states));
cmp_ok($applied, '>=', 150, 'most changes were applied');
cmp_ok($calls, '>=', 150 * 3 * 25, 'every function was called in every case');
is($lost, 0, 'no session was lost');
is($setup_failed, 0, 'every case was set up');
is(scalar(@internal), 0, 'no call ended with an internal error (XX000)')
  or diag(join("\n", @internal[ 0 .. ($#internal < 20 ? $#internal : 19) ]));
ok($states{'00000'} > 0, 'some calls answered');
my $log = slurp_file($node->logfile);
unlike($log,
	qr/terminated by signal|was terminated by exception|all server processes terminated; reinitializing/,
	'no server process ended by a signal');
unlike($log, qr/PANIC/, 'no PANIC');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server answers');

$node->stop;
done_testing();
