# Copyright (c) 2026, dlsm developers
#
# No code of a user runs while a transaction commits (issue 41, blocker
# 1).  A claim its transaction does not settle is written at the commit
# only when an UPDATE of its table runs nothing but PostgreSQL's own
# code; a claim of a queue with a trigger is written inside the claim,
# where the trigger fires as any statement's do.  Before, the commit-time
# write fired the queue's triggers from a pre-commit callback, after
# postgres_fdw had committed its remote transactions in its own: a trigger
# writing a foreign table then made the COMMIT fail after the commit
# record, and the server PANICked ("cannot abort transaction ..., it was
# already committed").  Here: a queue whose trigger writes a postgres_fdw
# foreign table (a loopback server), one with a deferred constraint
# trigger, and one with neither claimed in a transaction that writes the
# foreign table itself; claims settled in the claiming transaction and in
# a later one, and rolled back.  Every effect is committed exactly when
# the claim commits, and the server never restarts.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('commit_effects');
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql('postgres', $_[0]); }

my $started = sql('SELECT pg_postmaster_start_time()');
my $host = $node->host;
my $port = $node->port;

sql(qq{
CREATE EXTENSION postgres_fdw;
CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host '$host', port '$port', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER loop;
CREATE TABLE remote_log (id bigint, status text);
CREATE FOREIGN TABLE flog (id bigint, status text)
	SERVER loop OPTIONS (table_name 'remote_log');
CREATE TABLE local_log (id bigint, status text);

SELECT dlsm_create_queue('fq');
CREATE FUNCTION to_flog() RETURNS trigger LANGUAGE plpgsql AS
\$\$ BEGIN INSERT INTO flog VALUES (NEW.id, NEW.status); RETURN NEW; END \$\$;
CREATE TRIGGER to_flog AFTER UPDATE ON fq FOR EACH ROW EXECUTE FUNCTION to_flog();

SELECT dlsm_create_queue('dq');
CREATE FUNCTION to_local() RETURNS trigger LANGUAGE plpgsql AS
\$\$ BEGIN INSERT INTO local_log VALUES (NEW.id, NEW.status); RETURN NEW; END \$\$;
CREATE CONSTRAINT TRIGGER to_local AFTER UPDATE ON dq
	DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION to_local();

SELECT dlsm_create_queue('pq');
});

# the remote log's and the local log's rows, as another session sees them
sub remote { return sql('SELECT string_agg(id || status, \',\' ORDER BY id, status) FROM remote_log'); }
sub local_rows { return sql('SELECT string_agg(id || status, \',\' ORDER BY id, status) FROM local_log'); }

my $s = $node->background_psql('postgres', on_error_stop => 0);
# postgres_fdw's connection first: its transaction callback then comes
# before dlsm's, and commits the remote side first
$s->query_safe('SELECT count(*) FROM flog');

# 1: a claim of fq committed, settled later
my $id1 = sql(q{SELECT dlsm_enqueue('fq', 'e1')});
$s->query_safe('BEGIN');
my $pid1 = $s->query_safe(q{SELECT process_id FROM dlsm_claim('fq')});
is(remote(), '', 'the trigger\'s foreign write is not seen before the commit');
is($s->query_safe(qq{SELECT status FROM fq WHERE id = $id1}), 'in-progress',
	'a claim of a queue with a trigger is written inside the claim');
$s->query_safe('COMMIT');
is(remote(), "${id1}in-progress", 'committed with the claim: the foreign write, once');
is(sql(qq{SELECT status FROM fq WHERE id = $id1}), 'in-progress', 'the claim committed');
$s->query_safe(qq{SELECT dlsm_settle('fq', '$pid1')});
is(remote(), "${id1}complete,${id1}in-progress", 'the later settle: its foreign write');

# 2: claimed and settled in one transaction
my $id2 = sql(q{SELECT dlsm_enqueue('fq', 'e2')});
$s->query_safe('BEGIN');
$s->query_safe(q{SELECT dlsm_settle('fq', process_id) FROM dlsm_claim('fq')});
is(remote(), "${id1}complete,${id1}in-progress", 'nothing of e2 before the commit');
$s->query_safe('COMMIT');
is( remote(),
	"${id1}complete,${id1}in-progress,${id2}complete,${id2}in-progress",
	'claim and settle committed together');

# 3: a claim rolled back leaves no foreign write
my $id3 = sql(q{SELECT dlsm_enqueue('fq', 'e3')});
$s->query_safe('BEGIN');
$s->query_safe(q{SELECT process_id FROM dlsm_claim('fq')});
$s->query_safe('ROLLBACK');
is(sql(qq{SELECT count(*) FROM remote_log WHERE id = $id3}), 0,
	'a claim rolled back: no foreign write');
is(sql(qq{SELECT status FROM fq WHERE id = $id3}), 'new', 'and the request is new');

# 4: a deferred constraint trigger fires when PostgreSQL fires it: at the
# commit, of the claim's write made inside the claim
my $id4 = sql(q{SELECT dlsm_enqueue('dq', 'e4')});
$s->query_safe('BEGIN');
my $pid4 = $s->query_safe(q{SELECT process_id FROM dlsm_claim('dq')});
is($s->query_safe('SELECT count(*) FROM local_log'), 0,
	'the deferred trigger has not fired inside the transaction');
$s->query_safe('COMMIT');
is(local_rows(), "${id4}in-progress", 'it fired at the commit, once');
$s->query_safe(qq{SELECT dlsm_settle('dq', '$pid4')});
is(local_rows(), "${id4}complete,${id4}in-progress", 'and for the later settle');
my $id5 = sql(q{SELECT dlsm_enqueue('dq', 'e5')});
$s->query_safe('BEGIN');
$s->query_safe(q{SELECT dlsm_settle('dq', process_id) FROM dlsm_claim('dq')});
$s->query_safe('COMMIT');
is( local_rows(),
	"${id4}complete,${id4}in-progress,${id5}complete,${id5}in-progress",
	'claimed and settled in one transaction: both writes, at the commit');

# 5: a queue without triggers, claimed in a transaction that writes the
# foreign table itself: the claim is written at the commit, and the
# foreign write commits with it
my $id6 = sql(q{SELECT dlsm_enqueue('pq', 'e6')});
$s->query_safe('BEGIN');
$s->query_safe(q{INSERT INTO flog VALUES (600, 'mine')});
$s->query_safe(q{SELECT process_id FROM dlsm_claim('pq')});
is($s->query_safe(qq{SELECT status FROM pq WHERE id = $id6}), 'new',
	'a claim of a queue without triggers waits for the commit');
$s->query_safe('COMMIT');
is(sql(qq{SELECT status FROM pq WHERE id = $id6}), 'in-progress', 'written at the commit');
is(sql(q{SELECT count(*) FROM remote_log WHERE id = 600}), 1, 'the foreign write committed');

# 6: a trigger added by the claiming transaction after its claim fails
# the commit, and nothing is written
my $id7 = sql(q{SELECT dlsm_enqueue('pq', 'e7')});
$s->query_safe('BEGIN');
$s->query_safe(q{SELECT process_id FROM dlsm_claim('pq')});
$s->query_safe(q{CREATE TRIGGER to_flog AFTER UPDATE ON pq FOR EACH ROW EXECUTE FUNCTION to_flog()});
my $out = $s->query('COMMIT');
like($s->{stderr}, qr/cannot commit unsettled claims of dlsm queue "pq"/,
	'the commit fails: the table runs a user\'s code now');
$s->{stderr} = '';
is(sql(qq{SELECT status FROM pq WHERE id = $id7}), 'new', 'the request is new');
is(sql(q{SELECT count(*) FROM pg_trigger WHERE tgname = 'to_flog' AND tgrelid = 'pq'::regclass}),
	0, 'and the trigger is gone with the transaction');
$s->quit;

is(sql('SELECT pg_postmaster_start_time()'), $started, 'the server never restarted');
ok(!(slurp_file($node->logfile) =~ /PANIC|was terminated by signal/),
	'no PANIC, no process ended by a signal');

$node->stop;
done_testing();
