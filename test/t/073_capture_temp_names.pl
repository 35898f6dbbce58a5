# Copyright (c) 2026, dlsm developers
#
# A capture's insert runs as the queue's owner inside the writer's session
# (issue 40, finding 9): may the writer's temporary tables take the names
# the owner's code on the queue resolves?  PostgreSQL's rule (search_path):
# the session's temporary schema is searched for relations (and types,
# never functions or operators) first when search_path does not list
# pg_temp, and where it lists it otherwise; the capture pins search_path
# to pg_catalog, pg_temp.  Alice owns queue aq and source table src, which
# bob may write; her trigger on aq records each request in table audit by
# an unqualified name, with search_path pinned by the capture (note) or
# set by the function itself (note_set: alice; note_safe: alice, pg_temp).
# Bob makes a temporary table audit, with a trigger of his own that grants
# him alice's table secret, and writes src.  In 1.6 alice's trigger wrote
# bob's audit (note, note_set) and bob's trigger ran as alice, who granted
# him her secret.  Now the capture refuses (42501) a write from a session
# holding temporary relations or types unless its current and session
# user have the privileges of the queue's owner: bob's write fails, after
# DISCARD TEMP it passes, alice's own write with a temporary table passes.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('tempnames');
ok(install_dlsm($node), 'dlsm is installed');
$node->safe_psql('postgres', q{
CREATE ROLE alice LOGIN;
CREATE ROLE bob LOGIN;
CREATE SCHEMA alice AUTHORIZATION alice;
GRANT USAGE ON SCHEMA alice TO bob;
SET ROLE alice;
CREATE TABLE alice.audit (id text, who text, fn text);
CREATE TABLE alice.secret (s text);
INSERT INTO alice.secret VALUES ('alice-only');
-- an unqualified name, resolved with the capture's search_path
CREATE FUNCTION alice.note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO audit VALUES (NEW.entity, current_user, 'note');
	RETURN NULL;
END $$;
-- the same, the function setting a search_path without pg_temp: the
-- temporary schema comes first
CREATE FUNCTION alice.note_set() RETURNS trigger LANGUAGE plpgsql
SET search_path = alice AS $$
BEGIN
	INSERT INTO audit VALUES (NEW.entity, current_user, 'note_set');
	RETURN NULL;
END $$;
-- pg_temp listed last, as PostgreSQL says for SECURITY DEFINER functions
CREATE FUNCTION alice.note_safe() RETURNS trigger LANGUAGE plpgsql
SET search_path = alice, pg_temp AS $$
BEGIN
	INSERT INTO audit VALUES (NEW.entity, current_user, 'note_safe');
	RETURN NULL;
END $$;
});
for my $fn (qw(note note_set note_safe))
{
	$node->safe_psql('postgres', qq{
SET ROLE alice;
SELECT dlsm_create_queue('alice.q_$fn');
CREATE TRIGGER audit AFTER INSERT ON alice.q_$fn
	FOR EACH ROW EXECUTE FUNCTION alice.$fn();
CREATE TABLE alice.src_$fn (id int PRIMARY KEY, v text);
GRANT INSERT ON alice.src_$fn TO bob;
SELECT dlsm_capture('alice.src_$fn', 'alice.q_$fn');
});
}

# bob's session: a temporary audit that every role may write, whose
# trigger, run as whoever inserts, grants bob alice's secret and says who
# ran it
my $bob = q{
SET ROLE bob;
CREATE TEMP TABLE audit (id text, who text, fn text);
CREATE TEMP TABLE ran (who text);
CREATE FUNCTION pg_temp.steal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO pg_temp.ran VALUES (current_user);
	BEGIN
		GRANT SELECT ON alice.secret TO bob;
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO pg_temp.ran VALUES ('grant failed: ' || SQLERRM);
	END;
	RETURN NULL;
END $$;
CREATE TRIGGER steal AFTER INSERT ON pg_temp.audit
	FOR EACH ROW EXECUTE FUNCTION pg_temp.steal();
GRANT ALL ON pg_temp.audit, pg_temp.ran TO PUBLIC;
};

for my $fn (qw(note note_set note_safe))
{
	my ($ret, $out, $err) = $node->psql('postgres', $bob . qq{
INSERT INTO alice.src_$fn VALUES (1, 'x');
SELECT 'temp audit: ' || count(*) FROM pg_temp.audit;
SELECT 'ran as: ' || coalesce(string_agg(who, ', '), 'nobody') FROM pg_temp.ran;
}, on_error_stop => 0);
	my $owner_audit = $node->safe_psql('postgres',
		qq{SELECT count(*) FROM alice.audit WHERE fn = '$fn'});
	my $granted = $node->safe_psql('postgres',
		q{SELECT has_table_privilege('bob', 'alice.secret', 'SELECT')});
	note "$fn: exit $ret; owner's audit rows $owner_audit; bob holds secret: $granted;\n"
	  . "stdout: $out\nstderr: $err";
	unlike($out, qr/temp audit: [1-9]/,
		"$fn: alice's trigger never writes bob's temporary table");
	unlike($out, qr/ran as: alice/, "$fn: bob's code never runs as alice");
	is($granted, 'f', "$fn: bob never gets alice's secret");
	like($err,
		qr/ERROR:  cannot capture a change of table "src_$fn" into queue "q_$fn" in a session holding temporary tables\nDETAIL:  The capture runs as role "alice", the queue's owner, whose code on the queue could find this session's temporary tables or types by the names it leaves unqualified\.\nHINT:  Drop them \(DISCARD TEMP\) before writing table "src_$fn", or write it as a role with the privileges of role "alice"\./,
		"$fn: the capture refuses bob's write, saying why");
	$node->safe_psql('postgres', 'REVOKE SELECT ON alice.secret FROM bob')
	  if $granted eq 't';
}

# and what the rule means without bob: the pinned path finds no audit
# (alice's own table is not on it), the function's own path finds hers
for my $fn (qw(note note_set note_safe))
{
	my ($ret, $out, $err) = $node->psql('postgres', qq{
SET ROLE bob;
INSERT INTO alice.src_$fn VALUES (2, 'y');
});
	note "$fn without bob's temporary table: exit $ret, $err";
}
is( $node->safe_psql('postgres',
		q{SELECT string_agg(fn || ':' || id, ',' ORDER BY fn, id) FROM alice.audit}),
	'note_safe:2,note_set:2',
	'alice\'s audit: note_safe and note_set when bob has no temporary table; note never');

# after DISCARD TEMP the session may write; the owner may with temporary
# tables (her own code, her own session)
my ($ret, $out, $err) = $node->psql('postgres', $bob . q{
DISCARD TEMP;
INSERT INTO alice.src_note_safe VALUES (3, 'z');
}, on_error_stop => 1);
is($ret, 0, "bob writes src_note_safe after DISCARD TEMP ($err)");
($ret, $out, $err) = $node->psql('postgres', q{
SET ROLE alice;
CREATE TEMP TABLE scratch (i int);
INSERT INTO alice.src_note_safe VALUES (4, 'w');
}, on_error_stop => 1);
is($ret, 0, "alice writes src_note_safe with a temporary table ($err)");
is( $node->safe_psql('postgres',
		q{SELECT string_agg(entity, ',' ORDER BY id) FROM alice.q_note_safe}),
	'2,3,4', 'the queue holds the writes that passed');

done_testing();
