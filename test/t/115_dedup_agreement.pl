# Copyright (c) 2026, dlsm developers
#
# The dedup look-up's two ways agree (issue 41, blocker 5): src/dedup.c
# scans the key's index itself where the queue's table and the caller fit
# it, and the statement DEDUP_LOOKUP runs everywhere else; both must find
# the same request.  One random history of enqueues with dedup keys
# (keys that differ only in case, in trailing blanks, in the composition
# of an accent, in their length), windows, claims settled complete or
# error, leases left in progress and settled rows aged past the window is
# played on queues of each pair: one the probe serves, one the statement
# serves (a hash index for the key, the key's index in another collation
# than the column's, a partitioned table), in the default, "C" and (where
# the server has ICU) an ICU collation.  Every call's answer
# and the queues' rows at the end are the same, and auto_explain shows
# DEDUP_LOOKUP run on every statement side and on no probe side.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('dedup_agree', "dlsm.reap_interval = '1h'\n");
$node->safe_psql('postgres', q{
CREATE EXTENSION dlsm;
CREATE FUNCTION step_claim(q regclass, outcome text, lease interval)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE r record; ids text := ''; pid uuid;
BEGIN
	FOR r IN SELECT * FROM dlsm_claim(q, lease => lease) ORDER BY id LOOP
		ids := ids || r.id || ','; pid := r.process_id;
	END LOOP;
	IF pid IS NOT NULL AND outcome IS NOT NULL THEN
		PERFORM dlsm_settle(q, pid, outcome, 'failed');
	END IF;
	RETURN ids;
END $$;
});
my $icu = $node->safe_psql('postgres',
	q{SELECT count(*) > 0 FROM pg_collation WHERE collname = 'und-x-icu'}) eq 't';

# queue NAME whose dedup key column has COLLATION ('' the default)
sub created
{
	my ($name, $collation) = @_;
	$node->safe_psql('postgres', "SELECT dlsm_create_queue('$name')");
	$node->safe_psql('postgres',
		"ALTER TABLE $name ALTER COLUMN dedup_key TYPE text COLLATE \"$collation\"")
	  if $collation;
}

# [probe's queue, statement's queue, how the statement's queue is made]
my @pairs = (
	[ 'p_plain', 's_hash', sub {
		created('s_hash');
		# a hash index in place of the btree
		$node->safe_psql('postgres', q{
DROP INDEX s_hash_dedup;
CREATE INDEX s_hash_dedup ON s_hash USING hash (dedup_key)});
	} ],
	[ 'p_c', 's_c_index', sub {
		created('s_c_index', 'C');
		# the dedup index in another collation than the column's
		$node->safe_psql('postgres', q{
DROP INDEX s_c_index_dedup;
CREATE INDEX s_c_index_dedup ON s_c_index (dedup_key COLLATE "POSIX", id)
 WHERE dedup_key IS NOT NULL});
	} ],
	[ 'p_part', 's_part', sub {
		$node->safe_psql('postgres', q{
CREATE TABLE s_part (id bigserial, status text NOT NULL DEFAULT 'new',
	kind text NOT NULL DEFAULT 'create', entity text NOT NULL, payload jsonb,
	process_id uuid, fence int8, attempts int4 NOT NULL DEFAULT 0,
	run_at timestamptz NOT NULL DEFAULT now(),
	enqueued_at timestamptz NOT NULL DEFAULT now(), claimed_at timestamptz,
	lease_until timestamptz, settled_at timestamptz, detail text,
	group_key text, dedup_key text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
CREATE TABLE s_part_1 PARTITION OF s_part FOR VALUES FROM (MINVALUE) TO (60);
CREATE TABLE s_part_2 PARTITION OF s_part FOR VALUES FROM (60) TO (MAXVALUE);
SELECT dlsm_register_queue('s_part', dedup_key => 'dedup_key', max_attempts => 5);
});
	} ],);
push @pairs, [ 'p_icu', 's_icu', sub {
	created('s_icu', 'und-x-icu');
	$node->safe_psql('postgres', q{
DROP INDEX s_icu_dedup;
CREATE INDEX s_icu_dedup ON s_icu (dedup_key COLLATE "C", id)});
} ] if $icu;
created('p_plain');
created('p_c', 'C');
created('p_part');
created('p_icu', 'und-x-icu') if $icu;
$_->[2]->() for @pairs;

# one random history, as statements on queue X
my $seed = $ENV{DLSM_SEED} // time;
note "seed $seed (DLSM_SEED=$seed repeats this history)";
srand($seed);
my @keys = ('k1', 'K1', 'k1 ', 'k2', "\x{e9}", "e\x{301}", "\x{df}", 'ss',
	'x' x 300, 'x' x 301);
my @windows = ('NULL', q{'0'}, q{'1 hour'});
my @script;
for my $step (1 .. 160)
{
	my $r = rand;
	my $key = $keys[ int(rand(@keys)) ];
	if ($r < 0.55)
	{
		push @script, sprintf(
			q{SELECT dlsm_enqueue('X', 'e%d', 'job', '{"step": %d}', dedup_key => '%s', dedup_window => %s), dlsm_enqueue_deduplicated();},
			int(rand(4)), $step, $key, $windows[ int(rand(@windows)) ]);
	}
	elsif ($r < 0.8)
	{
		push @script, sprintf(q{SELECT step_claim('X', '%s', NULL);},
			rand() < 0.7 ? 'complete' : 'error');
	}
	elsif ($r < 0.9)
	{
		push @script, q{SELECT step_claim('X', NULL, '1 hour');};
	}
	else
	{
		push @script,
		  "UPDATE X SET settled_at = settled_at - interval '2 hours' WHERE dedup_key = '$key';";
	}
}
push @script,
  q{SELECT id, entity, status, dedup_key, payload, attempts FROM X ORDER BY id;};
my $script = join("\n", @script);
utf8::encode($script);

# play the history on queue q; its output, X for the queue's name
sub play
{
	my ($q) = @_;
	(my $sql = $script) =~ s/\bX\b/$q/g;
	my ($ret, $out, $err) = $node->psql('postgres',
		"LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
		  . " SET auto_explain.log_nested_statements = on;\n$sql",
		on_error_stop => 0);
	$out =~ s/\b$q\b/X/g;
	$err =~ s/\b$q\b/X/g;
	$err =~ s/^psql:<stdin>:\d+: //mg;
	return "$out\n$err";
}

my $log_offset = -s $node->logfile;
for my $pair (@pairs)
{
	my ($probe, $statement) = @$pair;
	my $by_probe = play($probe);
	my $by_statement = play($statement);
	is($by_probe, $by_statement,
		"$probe (the probe) and $statement (the statement) answer alike");
	like($by_probe, qr/\|t\n/, "$probe found a key held (seed $seed)");
	like($by_probe, qr/\|f\n/, "$probe added a row for a free key");
}

# which queues DEDUP_LOOKUP ran on
my $log = slurp_file($node->logfile, $log_offset);
my %looked_up;
$looked_up{$1}++
  while $log =~ /Query Text: SELECT \S+(?: AS \w+)? FROM (?:public\.)?"?(\w+)"? WHERE [^\n]* DESC LIMIT 1/g;
for my $pair (@pairs)
{
	my ($probe, $statement) = @$pair;
	ok(!$looked_up{$probe}, "DEDUP_LOOKUP never ran on $probe");
	ok($looked_up{$statement}, "DEDUP_LOOKUP ran on $statement ("
		  . ($looked_up{$statement} // 0) . ' times)');
}

done_testing();
