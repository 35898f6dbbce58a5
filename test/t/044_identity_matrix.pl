# Copyright (c) 2026, dlsm developers
#
# The identity matrix: owner-controlled code never runs under an identity
# or settings that someone else chose (issue 21).  Generated, not
# hand-listed: every path on which dlsm runs SQL touching a table another
# role owns or controls, from every caller context, on tables armed with
# every hook an owner controls.
#
# Paths (%path below): enqueue; claim settled in its transaction; claim
# with a lease and a transactional claim left unsettled (both written at
# commit, src/pending.c); settle; settle_many; heartbeat; group_updates;
# requeue; cancel;
# reap by call; capture (a write to a captured source); register; drop;
# create, alter, set_handler, capture and uncapture (they write dlsm's own
# tables as the extension's owner); the lease-scope named locks (try_lock
# with a lease, unlock, refresh: dlsm_leases); dlsm_queue_stats and the
# exporter queries of examples/monitoring/dlsm-queries.yaml (as a
# pg_monitor role); and the worker's own paths: reaping, retention, the
# purge of expired leases, and a handler (its claim, call and settle).
# The router (proxy/, dlsm_proxy on PL/Proxy) is left out: it needs
# shards on other nodes; its functions are not the extension dlsm's.
#
# Caller contexts (%ctx): plain (alice's session); setpath (alice, who
# runs SET search_path = <a schema of hers>, pg_catalog after the call and
# before COMMIT); definer (alice calls a SECURITY DEFINER function of the
# superuser with SET search_path = admin, pg_temp, the documented safe
# way); trigger (alice inserts into a table of the superuser whose AFTER
# ROW trigger, SECURITY DEFINER with the same pinned search_path, makes
# the call); itrigger (the same with an invoker's trigger function, no
# settings of its own: the call runs as alice); handler (the call made by a handler the worker runs as the
# owner of the handler's queue, alice, with SET search_path of its own);
# monitor (a pg_monitor role, for the monitoring paths); worker.
#
# Hooks, on every queue and on capture sources: row and statement
# triggers BEFORE and AFTER INSERT, UPDATE and DELETE; a column default,
# a stored generated column and a CHECK constraint calling a function; an
# index expression calling a function declared IMMUTABLE.  A status
# column whose type is mallory's domain, with a CHECK of its own and her
# "=" operator in schema public, is refused by dlsm, at registration
# (asserted here) and on a queue altered to it afterwards (regress drift,
# TAP 110), so those hooks never run.  On dlsm's own tables
# (dlsm_queues, dlsm_captures, dlsm_leases, dlsm_group_limits) the extension's owner (the
# superuser) put the same triggers.  Every hook calls idm.rec, which
# logs the table, the hook, current_user, session_user, search_path,
# whether it runs in a security-restricted operation (CREATE TEMP TABLE
# is refused there), the backend type and application_name (each cell's
# session and handler set it to the cell's name).
#
# The canary of finding 1: each hook calls now() unqualified.  alice has
# now() of her own in the schemas first in her search_paths: it marks the
# log row as shadowed and, run as a superuser, makes alice one.
#
# Assertion per cell (path, context): every hook ran as the role README's
# "Security model" names (functions a user calls: as the caller; inside a
# SECURITY DEFINER function: as its owner; the worker: as the queue's
# current owner; a capture's insert: as the queue's owner; dlsm's own
# tables: as the extension's owner; a monitoring read: never as the
# monitoring role), under a search_path chosen by that role, by the
# database default or a fixed safe one, or by a superuser, never one
# another role chose (e.g. the definer's identity with the caller's
# search_path); what the worker runs, and a capture's insert, runs in a
# security-restricted operation; no owner's operator runs at all (dlsm's
# SQL must not resolve one); alice stays no superuser; the call succeeded
# and the hooks the path must fire did fire.
#
# On d2d6a5a these cells failed (51 of 141 checks), all fixed since: the
# commit-time write of a claim
# made in a SECURITY DEFINER function or trigger (finding 1); the
# exporter's per-queue queries (finding 4); a capture's insert (as the
# queue's owner under the writer's search_path); and every path writing
# dlsm's own tables (as the extension's owner under the caller's).
#
# Completeness: every function of the extension is a path of the matrix
# or in the commented list of functions that touch no table another role
# controls; anything else fails.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use CPAN::Meta::YAML;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# Database idm has the worker (handler and worker contexts); idmnw has
# none, so that calls by hand (dlsm_reap above all) race with nobody.
# With DLSM_IDM_ROTATING set (092_identity_matrix_rotating.pl) one worker
# (dlsm.max_workers = 1) takes turns between idm and idmx, a database with
# dlsm and nothing else: every worker path is a visiting worker's.
my $rotating = $ENV{DLSM_IDM_ROTATING} // 0;
my $node = dlsm_node('idm', $rotating ? qq{
dlsm.reap_interval = 300
dlsm.databases = 'idm,idmx'
dlsm.max_workers = 1
} : qq{
dlsm.reap_interval = 300
dlsm.databases = 'idm'
});
my $super = $node->safe_psql('postgres', q{SELECT rolname FROM pg_roles WHERE oid = 10});

# ---------------------------------------------------------------------
# The paths.  Each: which queue it works on (owner 'other': mallory's, or
# the superuser's in definer and trigger contexts; 'self': the caller's
# own), how it is prepared (as the superuser, after the hooks are armed),
# the statements of the call ($_{q} the queue, $_{s} the source, $_{id}
# the cell), the functions it covers, and which hooks it must fire
# ("table:hook" regexes).
# ---------------------------------------------------------------------
my %path = (
	enqueue => {
		owner => 'other', covers => [qw(dlsm_enqueue dlsm_wake)],
		act => sub { ["SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1', 'create', '{\"a\": 1}')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW INSERT/] },
	claim => {
		owner => 'other', covers => [qw(dlsm_claim)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');" },
		act => sub { ["SELECT dlsm.dlsm_settle('$_[0]{q}', process_id) FROM dlsm.dlsm_claim('$_[0]{q}')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	claimlease => {
		owner => 'other', covers => [qw(dlsm_claim)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');" },
		act => sub { ["SELECT count(*) FROM dlsm.dlsm_claim('$_[0]{q}', lease => '5 min')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	claimcommit => {
		owner => 'other', covers => [qw(dlsm_claim)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');" },
		act => sub { ["SELECT count(*) FROM dlsm.dlsm_claim('$_[0]{q}')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	settle => {
		owner => 'other', covers => [qw(dlsm_settle)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');
INSERT INTO idm.pids (cell, pid) SELECT '$_[0]{id}', process_id FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 h');" },
		act => sub { ["SELECT dlsm.dlsm_settle('$_[0]{q}', (SELECT pid FROM idm.pids WHERE cell = '$_[0]{id}'))"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	settlemany => {
		owner => 'other', covers => [qw(dlsm_settle_many)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', e) FROM unnest(ARRAY['e1', 'e2']) e;
INSERT INTO idm.pids (cell, pid) SELECT '$_[0]{id}', process_id FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 h', units => 2);" },
		act => sub { ["SELECT count(*) FROM dlsm.dlsm_settle_many('$_[0]{q}', ARRAY(SELECT pid FROM idm.pids WHERE cell = '$_[0]{id}'))"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	heartbeat => {
		owner => 'other', covers => [qw(dlsm_heartbeat)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');
INSERT INTO idm.pids (cell, pid) SELECT '$_[0]{id}', process_id FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 h');" },
		act => sub { ["SELECT dlsm.dlsm_heartbeat('$_[0]{q}', (SELECT pid FROM idm.pids WHERE cell = '$_[0]{id}'), '2 h')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	group => {
		owner => 'other', covers => [qw(dlsm_group_updates)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'g1');
SELECT dlsm.dlsm_settle('$_[0]{q}', process_id) FROM dlsm.dlsm_claim('$_[0]{q}');
SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'g1', 'update') FROM generate_series(1, 2);" },
		act => sub { ["SELECT dlsm.dlsm_group_updates('$_[0]{q}', 'g1', pg_catalog.gen_random_uuid())"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	# (in database idm the worker may reap first: then the call updates
	# no row, and only statement triggers fire)
	reap => {
		owner => 'other', covers => [qw(dlsm_reap)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'r1');
SELECT count(*) FROM dlsm.dlsm_claim('$_[0]{q}', lease => '10 ms');" },
		act => sub { ["SELECT dlsm.dlsm_reap('$_[0]{q}')"] },
		fires => [qr/^q_\S+:trigger BEFORE STATEMENT UPDATE/] },
	# dead letters: each cell's queue is new, its first request is id 1
	requeue => {
		owner => 'other', covers => [qw(dlsm_requeue)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');
SELECT dlsm.dlsm_settle('$_[0]{q}', process_id, 'error') FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 h');" },
		act => sub { ["SELECT dlsm.dlsm_requeue('$_[0]{q}', ARRAY[1])"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	cancel => {
		owner => 'other', covers => [qw(dlsm_cancel)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1');" },
		act => sub { ["SELECT dlsm.dlsm_cancel('$_[0]{q}', ARRAY[1])"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	capture => {
		owner => 'other', covers => [qw(dlsm_capture_trigger)], source => 'admin',
		prep => sub { "SELECT dlsm.dlsm_capture('$_[0]{s}', '$_[0]{q}');" },
		act => sub { ["INSERT INTO $_[0]{s} (id, v) VALUES (1, 'a')",
					  "UPDATE $_[0]{s} SET v = 'b' WHERE id = 1"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW INSERT/, qr/^s_\S+:trigger BEFORE ROW INSERT/] },
	register => {
		owner => 'self', covers => [qw(dlsm_register_queue)], make => 'table',
		act => sub { ["SELECT dlsm.dlsm_register_queue('$_[0]{q}')"] },
		fires => [qr/^dlsm_queues:trigger BEFORE ROW INSERT/] },
	drop => {
		owner => 'self', covers => [qw(dlsm_drop_queue dlsm_forget_dropped)],
		act => sub { ["SELECT dlsm.dlsm_drop_queue('$_[0]{q}', drop_table => true)"] },
		fires => [qr/^dlsm_queues:trigger BEFORE ROW DELETE/] },
	create => {
		owner => 'self', covers => [qw(dlsm_create_queue)], make => 'none',
		act => sub { ["SELECT dlsm.dlsm_create_queue('$_[0]{q}')"] },
		fires => [qr/^dlsm_queues:trigger BEFORE ROW INSERT/] },
	alter => {
		owner => 'self', covers => [qw(dlsm_alter_queue)],
		act => sub { ["SELECT dlsm.dlsm_alter_queue('$_[0]{q}', max_attempts => 3)"] },
		fires => [qr/^dlsm_queues:trigger BEFORE ROW UPDATE/] },
	sethandler => {
		owner => 'self', covers => [qw(dlsm_set_handler)],
		act => sub { ["SELECT dlsm.dlsm_set_handler('$_[0]{q}', 'idm.noop_handler')"] },
		fires => [qr/^dlsm_queues:trigger BEFORE ROW UPDATE/] },
	capturecall => {
		owner => 'self', covers => [qw(dlsm_capture)], source => 'self',
		act => sub { ["SELECT dlsm.dlsm_capture('$_[0]{s}', '$_[0]{q}')"] },
		fires => [qr/^dlsm_captures:trigger BEFORE ROW INSERT/] },
	uncapture => {
		owner => 'self', covers => [qw(dlsm_uncapture)], source => 'self',
		prep => sub { "SELECT dlsm.dlsm_capture('$_[0]{s}', '$_[0]{q}');" },
		act => sub { ["SELECT dlsm.dlsm_uncapture('$_[0]{s}', '$_[0]{q}')"] },
		fires => [qr/^dlsm_captures:trigger BEFORE ROW DELETE/] },
	setlimit => {
		owner => 'self', covers => [qw(dlsm_set_limit)],
		act => sub { ["SELECT dlsm.dlsm_set_limit('$_[0]{q}', 'g', concurrency => 2)"] },
		fires => [qr/^dlsm_group_limits:trigger BEFORE ROW INSERT/] },
	# a claim under a group's limits reads the group's units in progress
	claimlimited => {
		owner => 'other', covers => [qw(dlsm_claim)],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1', group_key => 'g');
SELECT dlsm.dlsm_set_limit('$_[0]{q}', 'g', concurrency => 1, rate => 1000);" },
		act => sub { ["SELECT dlsm.dlsm_settle('$_[0]{q}', process_id) FROM dlsm.dlsm_claim('$_[0]{q}')"] },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	locklease => {
		owner => 'self', covers => [qw(dlsm_try_lock)], make => 'none',
		act => sub { ["SELECT dlsm.dlsm_try_lock('idm/$_[0]{id}', lease => '1 h')"] },
		fires => [qr/^dlsm_leases:trigger BEFORE ROW INSERT/] },
	unlock => {
		owner => 'self', covers => [qw(dlsm_unlock)], make => 'none', lease => 1,
		act => sub { ["SELECT dlsm.dlsm_unlock('idm/$_[0]{id}', (SELECT fence FROM idm.pids WHERE cell = '$_[0]{id}'))"] },
		fires => [qr/^dlsm_leases:trigger BEFORE ROW DELETE/] },
	refreshlock => {
		owner => 'self', covers => [qw(dlsm_refresh_lock)], make => 'none', lease => 1,
		act => sub { ["SELECT dlsm.dlsm_refresh_lock('idm/$_[0]{id}', (SELECT fence FROM idm.pids WHERE cell = '$_[0]{id}'), '2 h')"] },
		fires => [qr/^dlsm_leases:trigger BEFORE ROW UPDATE/] },

	# monitoring: reads, which must run none of the owner's code as the
	# monitoring role (the exporter queries are added below)
	stats => {
		owner => 'other', covers => [qw(dlsm_queue_stats)], contexts => ['monitor'],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', e) FROM unnest(ARRAY['e1', 'e2']) e;
SELECT count(*) FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 h');" },
		act => sub { ["SELECT count(*) FROM dlsm.dlsm_queue_stats"] },
		fires => [] },
	limits => {
		owner => 'other', covers => [qw(dlsm_group_state)], contexts => ['monitor'],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'e1', group_key => 'g');
SELECT dlsm.dlsm_set_limit('$_[0]{q}', 'g', concurrency => 1);" },
		act => sub { ["SELECT count(*) FROM dlsm.dlsm_limits"] },
		fires => [] },

	# the worker's own paths, on queues the superuser made and gave mallory
	wreap => {
		owner => 'other', contexts => ['worker'],
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', 'w1');
SELECT count(*) FROM dlsm.dlsm_claim('$_[0]{q}', lease => '1 s');" },
		done => sub { "SELECT status = 'new' FROM $_[0]{q}" },
		fires => [qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
	wretention => {
		owner => 'other', contexts => ['worker'], retention => '1 second',
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', e) FROM unnest(ARRAY['e1', 'e2']) e;
SELECT count(*) FROM dlsm.dlsm_settle_many('$_[0]{q}',
	ARRAY(SELECT process_id FROM dlsm.dlsm_claim('$_[0]{q}', units => 2)));" },
		done => sub { "SELECT count(*) = 0 FROM $_[0]{q}" },
		fires => [qr/^q_\S+:trigger BEFORE ROW DELETE/] },
	wleasepurge => {
		owner => 'other', contexts => ['worker'], make => 'none',
		prep => sub { "SELECT dlsm.dlsm_try_lock('idm/$_[0]{id}', lease => '500 ms');" },
		done => sub { "SELECT count(*) = 0 FROM dlsm.dlsm_leases WHERE name = 'idm/$_[0]{id}'" },
		fires => [qr/^dlsm_leases:trigger BEFORE ROW DELETE/] },
	whandler => {
		owner => 'other', contexts => ['worker'], handler => 'idm.h_rec',
		prep => sub { "SELECT dlsm.dlsm_enqueue('$_[0]{q}', '$_[0]{t}');" },
		done => sub { "SELECT status = 'complete' FROM $_[0]{q}" },
		fires => [qr/^q_\S+:handler call/, qr/^q_\S+:trigger BEFORE ROW UPDATE/] },
);

# The exporter's queries, read from the shipped file (CPAN::Meta::YAML is
# in Perl's core; the file is plain block scalars).
my $yaml_file = "$ENV{TESTDIR}/examples/monitoring/dlsm-queries.yaml";
my $yaml = CPAN::Meta::YAML->read($yaml_file)
  or BAIL_OUT("cannot read $yaml_file: " . CPAN::Meta::YAML->errstr);
my @exporter = sort keys %{ $yaml->[0] };
cmp_ok(scalar(@exporter), '>=', 4, 'the exporter file has its queries');
for my $k (@exporter)
{
	my $query = $yaml->[0]{$k}{query};
	$path{"exporter:$k"} = {
		owner => 'other', contexts => ['monitor'], make => 'none',
		act => sub { [$query] }, fires => [] };
}

my @user_contexts = qw(plain setpath definer trigger itrigger handler);
# whose session makes the call in each context
my %session = (plain => 'alice', setpath => 'alice', definer => 'alice',
	trigger => 'alice', itrigger => 'alice', monitor => 'mon');
# who makes the call in each context
my %caller = (plain => 'alice', setpath => 'alice', definer => $super,
	trigger => $super, itrigger => 'alice', handler => 'alice', monitor => 'mon',
	worker => undef);
# who owns the queue of a path on another role's queue
my %other = (plain => 'mallory', setpath => 'mallory', definer => $super,
	trigger => $super, itrigger => 'mallory', handler => 'mallory', monitor => 'mallory',
	worker => 'mallory');
my %schema_of = (mallory => 'mq', alice => 'alice_s', $super => 'admin');

# ---------------------------------------------------------------------
# The cells
# ---------------------------------------------------------------------
my (@cells, %cell_by_id, %cell_by_table);
for my $p (sort keys %path)
{
	my $P = $path{$p};
	for my $ctx (@{ $P->{contexts} // \@user_contexts })
	{
		(my $pn = $p) =~ s/[^a-z]//g;
		my $owner = $P->{owner} eq 'self' ? $caller{$ctx} : $other{$ctx};
		my $c = {
			path => $p, ctx => $ctx, id => "$p.$ctx", owner => $owner,
			db => ($ctx eq 'handler' || $ctx eq 'worker') ? 'idm' : 'idmnw',
			t => "q_${pn}_$ctx", st => "s_${pn}_$ctx",
			pn => $pn };
		$c->{q} = "$schema_of{$owner}.$c->{t}";
		$c->{s} = (($P->{source} // '') eq 'admin' ? 'admin' : $schema_of{$owner}) . ".$c->{st}";
		push @cells, $c;
		$cell_by_id{ $c->{id} } = $c;
		$cell_by_table{ $c->{t} } = $c;
		$cell_by_table{ $c->{st} } = $c if $P->{source};
	}
}

# ---------------------------------------------------------------------
# Set-up of both databases: roles, dlsm, the log, the hooks, the canary
# ---------------------------------------------------------------------
$node->safe_psql('postgres', qq{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE ROLE mon LOGIN IN ROLE pg_monitor;
ALTER ROLE alice SET search_path = alice_s, public, pg_catalog;
ALTER ROLE mallory SET search_path = mh, public, pg_catalog;
ALTER ROLE mon SET search_path = mon_s, public;
CREATE DATABASE idm;
CREATE DATABASE idmnw;
});
if ($rotating)
{
	$node->safe_psql('postgres', 'CREATE DATABASE idmx');
	$node->safe_psql('idmx', 'CREATE EXTENSION dlsm');
}

my $common = q{
SET application_name = 'setup';
CREATE SCHEMA dlsm;
CREATE EXTENSION dlsm WITH SCHEMA dlsm;
GRANT USAGE ON SCHEMA dlsm TO PUBLIC;
-- a database from before PostgreSQL 15: PUBLIC may create in public
-- (the setting of CVE-2018-1058); mallory's operator goes there
GRANT CREATE ON SCHEMA public TO mallory;
CREATE SCHEMA idm;
GRANT USAGE ON SCHEMA idm TO PUBLIC;
CREATE TABLE idm.log (
	id bigserial, tbl text, hook text NOT NULL, cu name NOT NULL, su name NOT NULL,
	sp text NOT NULL, sro boolean NOT NULL, btype text, pid int, app text, q text,
	shadowed boolean NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
GRANT INSERT ON idm.log TO PUBLIC;
GRANT USAGE ON SEQUENCE idm.log_id_seq TO PUBLIC;
CREATE TABLE idm.pids (cell text, pid uuid, fence bigint);
GRANT SELECT, INSERT ON idm.pids TO PUBLIC;

-- This backend's type (a monitoring role or a superuser sees it in
-- pg_stat_activity; the roles hooks run as need not).
CREATE FUNCTION idm.btype() RETURNS text LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $f$
	SELECT a.backend_type FROM pg_catalog.pg_stat_activity a
	 WHERE a.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
$f$;

-- The recorder: invoker rights (current_user is the hook's), no SET
-- clause (the search_path is the hook's), every name qualified.
CREATE FUNCTION idm.rec(tbl text, hook text, t timestamptz) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
	sp text := pg_catalog.current_setting('search_path');
	sro boolean := false;
BEGIN
	-- CREATE TEMP TABLE checks for a security-restricted operation
	-- first; in pg_global it then always fails, creating nothing
	BEGIN
		EXECUTE 'CREATE TEMP TABLE idm_sro_probe (x int) TABLESPACE pg_global';
	EXCEPTION WHEN OTHERS THEN
		sro := pg_catalog.strpos(SQLERRM, 'security-restricted') OPERATOR(pg_catalog.>) 0;
	END;
	INSERT INTO idm.log (tbl, hook, cu, su, sp, sro, btype, pid, app, q, shadowed)
	VALUES (tbl, hook, current_user, session_user, sp, sro,
			idm.btype(),
			pg_catalog.pg_backend_pid(),
			pg_catalog.current_setting('application_name'),
			pg_catalog.left(pg_catalog.current_query(), 60),
			t OPERATOR(pg_catalog.=) '1999-01-01 00:00:00+00'::pg_catalog.timestamptz);
END $f$;
GRANT EXECUTE ON FUNCTION idm.rec(text, text, timestamptz) TO PUBLIC;

-- The hooks: each resolves now() through the search_path it runs with.
CREATE SCHEMA hk;
GRANT USAGE ON SCHEMA hk TO PUBLIC;
CREATE FUNCTION hk.trg() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(TG_TABLE_NAME, 'trigger ' || TG_WHEN || ' ' || TG_LEVEL || ' ' || TG_OP, now());
	IF TG_LEVEL = 'ROW' AND TG_WHEN = 'BEFORE' THEN
		IF TG_OP = 'DELETE' THEN
			RETURN OLD;
		END IF;
		RETURN NEW;
	END IF;
	RETURN NULL;
END $f$;
CREATE FUNCTION hk.dflt(t text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(t, 'column default', now());
	RETURN 'x';
END $f$;
CREATE FUNCTION hk.chk(t text, v text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(t, 'check constraint', now());
	RETURN true;
END $f$;
CREATE FUNCTION hk.idx(t text, v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	PERFORM idm.rec(t, 'index expression', now());
	RETURN v;
END $f$;
CREATE FUNCTION hk.gen(t text, v text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	PERFORM idm.rec(t, 'generated column', now());
	RETURN v;
END $f$;
CREATE FUNCTION hk.dchk(v text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(NULL, 'domain check', now());
	RETURN true;
END $f$;
CREATE DOMAIN hk.mdom AS text CHECK (hk.dchk(VALUE));
CREATE FUNCTION hk.mdom_eq(hk.mdom, hk.mdom) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(NULL, 'operator', now());
	RETURN $1::pg_catalog.text OPERATOR(pg_catalog.=) $2::pg_catalog.text;
END $f$;

-- Arm a table with every hook (its name t for the log; dom: status
-- becomes mallory's domain, before the generated column that reads it).
CREATE PROCEDURE hk.arm(q regclass, t text, dom boolean, src boolean DEFAULT false)
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $f$
DECLARE
	col text := CASE WHEN src THEN 'v' ELSE 'status' END;
	ecol text := CASE WHEN src THEN 'v' ELSE 'entity' END;
BEGIN
	IF dom THEN
		EXECUTE format('ALTER TABLE %s ALTER COLUMN status TYPE hk.mdom', q);
	END IF;
	EXECUTE format('CREATE TRIGGER h_before_row BEFORE INSERT OR UPDATE OR DELETE ON %s
					FOR EACH ROW EXECUTE FUNCTION hk.trg()', q);
	EXECUTE format('CREATE TRIGGER h_after_row AFTER INSERT OR UPDATE OR DELETE ON %s
					FOR EACH ROW EXECUTE FUNCTION hk.trg()', q);
	EXECUTE format('CREATE TRIGGER h_before_stmt BEFORE INSERT OR UPDATE OR DELETE ON %s
					FOR EACH STATEMENT EXECUTE FUNCTION hk.trg()', q);
	EXECUTE format('CREATE TRIGGER h_after_stmt AFTER INSERT OR UPDATE OR DELETE ON %s
					FOR EACH STATEMENT EXECUTE FUNCTION hk.trg()', q);
	EXECUTE format('ALTER TABLE %s ADD COLUMN h_default text DEFAULT hk.dflt(%L)', q, t);
	EXECUTE format('ALTER TABLE %s ADD COLUMN h_generated text
					GENERATED ALWAYS AS (hk.gen(%L, %I)) STORED', q, t, col);
	EXECUTE format('ALTER TABLE %s ADD CONSTRAINT h_check CHECK (hk.chk(%L, %I))', q, t, col);
	EXECUTE format('CREATE INDEX %I ON %s (hk.idx(%L, %I))', t || '_h_idx', q, t, ecol);
END $f$;

-- dlsm's own tables: the extension's owner's triggers
CREATE TRIGGER h_before_row BEFORE INSERT OR UPDATE OR DELETE ON dlsm.dlsm_queues
	FOR EACH ROW EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_after_stmt AFTER INSERT OR UPDATE OR DELETE ON dlsm.dlsm_queues
	FOR EACH STATEMENT EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_before_row BEFORE INSERT OR UPDATE OR DELETE ON dlsm.dlsm_captures
	FOR EACH ROW EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_after_stmt AFTER INSERT OR UPDATE OR DELETE ON dlsm.dlsm_captures
	FOR EACH STATEMENT EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_before_row BEFORE INSERT OR UPDATE OR DELETE ON dlsm.dlsm_leases
	FOR EACH ROW EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_after_stmt AFTER INSERT OR UPDATE OR DELETE ON dlsm.dlsm_leases
	FOR EACH STATEMENT EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_before_row BEFORE INSERT OR UPDATE OR DELETE ON dlsm.dlsm_group_limits
	FOR EACH ROW EXECUTE FUNCTION hk.trg();
CREATE TRIGGER h_after_stmt AFTER INSERT OR UPDATE OR DELETE ON dlsm.dlsm_group_limits
	FOR EACH STATEMENT EXECUTE FUNCTION hk.trg();

-- handlers
CREATE FUNCTION idm.noop_handler(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $f$ SELECT $f$;
CREATE FUNCTION idm.h_rec(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM idm.rec(entity, 'handler call', now());
END $f$;

-- the roles' schemas; mallory's operator in public
CREATE SCHEMA mq AUTHORIZATION mallory;
GRANT USAGE ON SCHEMA mq TO alice, mon;
CREATE SCHEMA admin;
GRANT USAGE ON SCHEMA admin TO alice;
CREATE SCHEMA alice_s AUTHORIZATION alice;
CREATE SCHEMA alice_x AUTHORIZATION alice;
CREATE SCHEMA alice_h AUTHORIZATION alice;
SET ROLE mallory;
CREATE OPERATOR public.= (LEFTARG = hk.mdom, RIGHTARG = hk.mdom, FUNCTION = hk.mdom_eq);
RESET ROLE;

-- The canary: alice's now(), first in each of her search_paths.  Run as
-- a superuser, it makes her one (finding 1).
SET ROLE alice;
CREATE FUNCTION alice_s.now() RETURNS timestamptz LANGUAGE plpgsql AS $f$
BEGIN
	IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r
		 WHERE r.rolname OPERATOR(pg_catalog.=) current_user) THEN
		BEGIN
			EXECUTE 'ALTER ROLE alice SUPERUSER';
		EXCEPTION WHEN OTHERS THEN
			NULL;
		END;
	END IF;
	RETURN '1999-01-01 00:00:00+00'::pg_catalog.timestamptz;
END $f$;
CREATE FUNCTION alice_x.now() RETURNS timestamptz LANGUAGE sql
	AS $f$ SELECT alice_s.now() $f$;
CREATE FUNCTION alice_h.now() RETURNS timestamptz LANGUAGE sql
	AS $f$ SELECT alice_s.now() $f$;
GRANT USAGE ON SCHEMA alice_s TO PUBLIC;
RESET ROLE;
};

# The SQL of one cell's set-up, as the superuser: its tables, armed,
# prepared, and the function or trigger of its context.
sub cell_setup
{
	my ($c) = @_;
	my $P = $path{ $c->{path} };
	my $make = $P->{make} // 'queue';
	my $sql = '';
	my $o = $c->{owner};
	if ($make eq 'queue')
	{
		my $ret = $P->{retention} ? ", retention => '$P->{retention}'" : '';
		$sql .= "SELECT dlsm.dlsm_create_queue('$c->{q}'$ret);\n";
		$sql .= "SELECT dlsm.dlsm_set_handler('$c->{q}', '$P->{handler}');\n"
		  if $P->{handler};
	}
	elsif ($make eq 'table')
	{
		$sql .= "CREATE TABLE $c->{q} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	status text, kind text DEFAULT 'create', entity text, process_id uuid);
INSERT INTO $c->{q} (status, entity) VALUES ('new', 'r1');\n";
	}
	if ($make ne 'none')
	{
		# (the owner first: the worker's passes never see another)
		# dlsm refuses a queue whose status is of a domain (see above)
		my $dom = 'false';
		$sql .= "ALTER TABLE $c->{q} OWNER TO $o;\n" if $o ne $super;
		$sql .= "CALL hk.arm('$c->{q}', '$c->{t}', $dom);\n";
		$sql .= "GRANT SELECT, INSERT, UPDATE, DELETE ON $c->{q} TO alice;\n"
		  if $o eq 'mallory';
		$sql .= "GRANT SELECT ON $c->{q} TO mon;\n" if $c->{ctx} eq 'monitor';
	}
	if ($P->{source})
	{
		$sql .= "CREATE TABLE $c->{s} (id int PRIMARY KEY, v text);
CALL hk.arm('$c->{s}', '$c->{st}', false, src => true);\n";
		if ($P->{source} eq 'self')
		{
			$sql .= "ALTER TABLE $c->{s} OWNER TO $o;\n" if $o ne $super;
		}
		else
		{
			$sql .= "GRANT SELECT, INSERT, UPDATE, DELETE ON $c->{s} TO alice;\n";
		}
	}
	$sql .= $P->{prep}->($c) . "\n" if $P->{prep};
	if ($P->{lease})
	{
		$sql .= "SET ROLE $caller{$c->{ctx}};
INSERT INTO idm.pids (cell, fence) SELECT '$c->{id}', dlsm.dlsm_try_lock('idm/$c->{id}', lease => '1 h');
RESET ROLE;\n";
	}

	# the context's wrapper of the call
	my @acts = @{ $P->{act} ? $P->{act}->($c) : [] };
	my $plpgsql = join("\n", map { (my $s = $_) =~ s/^SELECT /PERFORM /; "\t$s;" } @acts);
	my $fn = "$c->{pn}_$c->{ctx}";
	if ($c->{ctx} eq 'definer')
	{
		my $body = join(";\n", @acts);
		$sql .= qq{CREATE FUNCTION admin.f_$fn() RETURNS void LANGUAGE sql SECURITY DEFINER
	SET search_path = admin, pg_temp AS \$f\$ $body \$f\$;
REVOKE ALL ON FUNCTION admin.f_$fn() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION admin.f_$fn() TO alice;
};
	}
	elsif ($c->{ctx} eq 'trigger')
	{
		$sql .= qq{CREATE FUNCTION admin.t_$fn() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = admin, pg_temp AS \$f\$
BEGIN
$plpgsql
	RETURN NULL;
END \$f\$;
CREATE TABLE admin.tsrc_$fn (x int);
CREATE TRIGGER call AFTER INSERT ON admin.tsrc_$fn FOR EACH ROW EXECUTE FUNCTION admin.t_$fn();
GRANT INSERT ON admin.tsrc_$fn TO alice;
};
	}
	elsif ($c->{ctx} eq 'itrigger')
	{
		$sql .= qq{CREATE FUNCTION admin.t_$fn() RETURNS trigger LANGUAGE plpgsql AS \$f\$
BEGIN
$plpgsql
	RETURN NULL;
END \$f\$;
CREATE TABLE admin.tsrc_$fn (x int);
CREATE TRIGGER call AFTER INSERT ON admin.tsrc_$fn FOR EACH ROW EXECUTE FUNCTION admin.t_$fn();
GRANT INSERT ON admin.tsrc_$fn TO alice;
};
	}
	elsif ($c->{ctx} eq 'handler')
	{
		# alice's queue whose handler makes the call; the worker runs it
		# as alice, under the handler's own settings
		$sql .= qq{CREATE FUNCTION alice_s.h_$fn(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql
	SET search_path = alice_h, public, pg_catalog SET application_name = '$c->{id}' AS \$f\$
BEGIN
$plpgsql
END \$f\$;
ALTER FUNCTION alice_s.h_$fn(text, text, bigint[], jsonb[]) OWNER TO alice;
SELECT dlsm.dlsm_create_queue('alice_s.hq_$fn', max_attempts => 1);
ALTER TABLE alice_s.hq_$fn OWNER TO alice;
-- (after the queue is alice's: a superuser's queue trusts no handler of hers)
SELECT dlsm.dlsm_set_handler('alice_s.hq_$fn', 'alice_s.h_$fn');
};
	}
	return $sql;
}

for my $db (qw(idm idmnw))
{
	my $sql = $common;
	$sql .= cell_setup($_) for grep { $_->{db} eq $db } @cells;
	my ($ret, $out, $err) = $node->psql($db, $sql);
	is($ret, 0, "$db: the matrix's queues are made, armed and prepared") or diag $err;
}
if ($rotating)
{
	$node->wait_for_log(
		qr/dlsm workers take turns\n.*DETAIL:  2 databases may have dlsm, and "dlsm.max_workers" is 1/);
	ok( $node->poll_query_until('idm', q{
SELECT count(*) = 2 FROM dlsm.dlsm_worker_status
 WHERE database IN ('idm', 'idmx') AND last_reap_at IS NOT NULL}),
		'one worker takes turns between idm and idmx');
}
else
{
	ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND datname = 'idm'}),
		'the worker serves database idm');
}

# The domain cell of register: dlsm refuses the column type outright.
{
	my ($ret, $out, $err) = $node->psql('idmnw', q{
CREATE TABLE mq.dom_t (id bigint GENERATED ALWAYS AS IDENTITY, status hk.mdom,
					   kind text, entity text, process_id uuid);
SELECT dlsm.dlsm_register_queue('mq.dom_t');}, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:\s+42804: column "status" of table "dom_t" has type hk\.mdom, which dlsm cannot use/,
		'register: a status column of a domain type is refused (42804)');
}

# ---------------------------------------------------------------------
# Run the cells
# ---------------------------------------------------------------------
my %failed_call;	# id => error
my %escalated;		# id => 1

# Is alice a superuser?  If so, she is made none again (retrying while
# some session of the worker's database makes her one concurrently).
sub alice_super
{
	my $s = $node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'alice'});
	return 0 if $s eq 'f';
	for (1 .. 20)
	{
		my ($ret) = $node->psql('postgres', q{ALTER ROLE alice NOSUPERUSER});
		last if $ret == 0;
		sleep 1;
	}
	return 1;
}

for my $c (grep { $_->{ctx} ne 'handler' && $_->{ctx} ne 'worker' } @cells)
{
	my $P = $path{ $c->{path} };
	my $fn = "$c->{pn}_$c->{ctx}";
	my @acts = @{ $P->{act}->($c) };
	my $call =
		$c->{ctx} eq 'definer' ? "SELECT admin.f_$fn();"
	  : $c->{ctx} =~ /trigger/ ? "INSERT INTO admin.tsrc_$fn VALUES (1);"
	  :                          join('', map { "$_;\n" } @acts);
	my $after = $c->{ctx} eq 'setpath' ? "SET search_path = alice_x, public, pg_catalog;\n" : '';
	my $sql =
	  $c->{ctx} eq 'monitor'
	  ? "SET application_name = '$c->{id}';\n$call"
	  : "SET application_name = '$c->{id}';\nBEGIN;\n$call\n${after}COMMIT;\n";
	my ($ret, $out, $err) = $node->psql($c->{db}, $sql,
		extra_params => [ '-U', $session{ $c->{ctx} } ]);
	$failed_call{ $c->{id} } = $err if $ret != 0;
	$escalated{ $c->{id} } = 1 if alice_super();
}

# the handler contexts: one request to each driver queue
$node->safe_psql('idm', join('', map { "SELECT dlsm.dlsm_enqueue('alice_s.hq_$_->{pn}_handler', 'go');\n" }
		grep { $_->{ctx} eq 'handler' } @cells));

# the worker's paths and the handlers: wait for each to be done
for my $c (grep { $_->{ctx} eq 'worker' } @cells)
{
	$failed_call{ $c->{id} } = 'the worker did not do it within 60 s'
	  unless defined poll_within($node, 'idm', $path{ $c->{path} }{done}->($c), 60);
}
for my $c (grep { $_->{ctx} eq 'handler' } @cells)
{
	my $dq = "alice_s.hq_$c->{pn}_handler";
	if (!defined poll_within($node, 'idm',
			"SELECT status IN ('complete', 'error') FROM $dq", 60))
	{
		$failed_call{ $c->{id} } = 'the handler did not run within 60 s';
		next;
	}
	my $st = $node->safe_psql('idm', "SELECT status || ': ' || coalesce(detail, '') FROM $dq");
	$failed_call{ $c->{id} } = "the handler failed: $st" unless $st =~ /^complete/;
}
# the commit-time writes of the handlers' claims, and a few more passes
my $since = $node->safe_psql('idm', q{SELECT clock_timestamp()});
ok( defined poll_within($node, 'idm', qq{
SELECT last_reap_at > '$since'::timestamptz + interval '1 s'
  FROM dlsm.dlsm_worker_status WHERE database = current_database()}, 30),
	'the worker made passes after the handlers');
my $esc_worker = alice_super();

# ---------------------------------------------------------------------
# Judge every log row
# ---------------------------------------------------------------------
# Who chose a search_path.
sub chooser
{
	my ($sp) = @_;
	return 'alice'   if $sp =~ /^alice_[sxh],/;
	return $super    if $sp eq 'admin, pg_temp';
	return 'mallory' if $sp =~ /^mh,/;
	return 'mon'     if $sp =~ /^mon_s,/;
	return 'default' if $sp eq '"$user", public';
	return 'safe'    if $sp =~ /^(pg_catalog(, pg_temp)?|pg_temp, pg_catalog|)$/;
	return "nobody known ($sp)";
}

my %dlsm_table = map { $_ => 1 } qw(dlsm_queues dlsm_captures dlsm_leases dlsm_group_limits);

# The probes work: the canary shadows now() for alice, and the recorder
# tells a security-restricted operation (the worker's) from a session.
is( $node->safe_psql('idm', q{
SELECT bool_or(shadowed AND cu = 'alice') AND bool_or(sro) AND bool_or(NOT sro)
  FROM idm.log}),
	't', 'the canary and the restriction probe both work');

my (%bad, %fired);
my $rows = 0;
for my $db (qw(idm idmnw))
{
	my $out = $node->safe_psql($db, q{
SELECT coalesce(tbl, ''), hook, cu, su, sp, sro,
	   CASE WHEN btype IS NULL THEN 'pid ' || pid ELSE btype END, coalesce(app, ''),
	   shadowed, count(*), translate(min(q), E'\n\r\t|', '    ')
  FROM idm.log
 GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9});
	for my $line (split /\n/, $out)
	{
		my ($tbl, $hook, $cu, $su, $sp, $sro, $btype, $app, $shadowed, $n, $q) =
		  split /\|/, $line, 11;
		$rows += $n;
		# (IDM_DUMP=regex shows the matching rows of the log)
		diag "log: $db $line" if $ENV{IDM_DUMP} && $line =~ /$ENV{IDM_DUMP}/;
		# (its reaper, beside it, reaps: the worker's contexts too)
		my $worker = $btype eq 'dlsm worker' || $btype eq 'dlsm reaper';
		# which cell: the session's (or handler's) application_name, else
		# for the worker the table's
		my ($c, $by_app);
		if ($cell_by_id{$app})
		{
			($c, $by_app) = ($cell_by_id{$app}, 1);
		}
		elsif ($worker)
		{
			$c = $cell_by_table{$tbl};
			$c = $cell_by_id{'wleasepurge.worker'} if $tbl eq 'dlsm_leases';
		}
		else
		{
			next;	# the set-up's own sessions
		}
		my $id = $c ? $c->{id} : 'worker (other tables)';
		my $what = "$tbl:$hook";
		my @why;

		# who it must run as
		my @roles;
		if ($dlsm_table{$tbl})
		{
			@roles = ($super);	# the extension's owner
		}
		elsif ($hook eq 'operator')
		{
			@roles = ();		# an owner's operator is never dlsm's to run
		}
		elsif (!$c)
		{
			@roles = ('mallory', 'alice');	# the worker: owners of queues in idm
		}
		elsif ($c->{ctx} eq 'worker' || $c->{ctx} eq 'monitor')
		{
			@roles = ($c->{owner});
		}
		else
		{
			my $src = $tbl =~ /^s_/;
			@roles = ($c->{path} eq 'capture' && !$src) ? ($c->{owner}) : ($caller{ $c->{ctx} });
			# the worker's own passes over a queue of a handler cell
			push @roles, $c->{owner} if $c->{ctx} eq 'handler' && $worker && !$by_app;
		}
		push @why, "ran as $cu, not as " . (@roles ? join(' or ', @roles) : 'anyone: dlsm must not resolve it')
		  unless grep { $_ eq $cu } @roles;

		# under whose search_path
		my $ch = chooser($sp);
		push @why, "ran as $cu under search_path '$sp' chosen by $ch"
		  unless $ch eq $cu || $ch eq 'default' || $ch eq 'safe' || $ch eq $super;
		push @why, "ran alice's now() as $cu" if $shadowed eq 't' && $cu ne 'alice';

		# dlsm acting as a queue's owner does so restricted (on dlsm's own
		# tables the event trigger dlsm_forget_dropped, a SECURITY DEFINER
		# function with a pinned search_path, writes unrestricted)
		my $acting = $worker
		  || ($c && $c->{path} eq 'capture' && $tbl =~ /^q_/ && $c->{owner} ne ($caller{ $c->{ctx} } // ''));
		push @why, "ran as $cu outside a security-restricted operation"
		  if $acting && $sro ne 't';

		$bad{$id}{"$what: " . join('; ', @why) . " [x$n, su=$su, " . ($worker ? 'worker' : 'client') . ", q=$q]"} = 1
		  if @why;
		# what fired in the cell's own context
		$fired{$id}{$what} = 1
		  if $c && ($by_app || $c->{ctx} eq 'worker' || ($c->{ctx} eq 'handler' && $cu eq 'alice'));
	}
}
note "identity matrix: $rows executions of owners' code logged";

my $checked = 0;
for my $c (@cells)
{
	my $P = $path{ $c->{path} };
	my @problems;
	push @problems, "the call failed: $failed_call{$c->{id}}" if $failed_call{ $c->{id} };
	push @problems, 'alice became a superuser' if $escalated{ $c->{id} };
	for my $re (@{ $P->{fires} })
	{
		push @problems, "no hook fired matching $re"
		  unless grep { $_ =~ $re } keys %{ $fired{ $c->{id} } // {} };
	}
	push @problems, sort keys %{ $bad{ $c->{id} } // {} };
	ok(!@problems, "identity matrix: $c->{path} from $c->{ctx}")
	  or diag join("\n", "$c->{id}:", @problems);
	$checked++;
}
ok(!$bad{'worker (other tables)'}, 'identity matrix: the worker on other tables')
  or diag join("\n", sort keys %{ $bad{'worker (other tables)'} });
ok(!$esc_worker, 'alice never became a superuser in the worker');
note "identity matrix: $checked cells checked";

# ---------------------------------------------------------------------
# Completeness: every function of the extension is a path above, or
# touches no table that another role owns or controls.
# ---------------------------------------------------------------------
my %exempt = (
	# reads the worker's shared memory
	dlsm_worker_status => 1,
	# reads the counters of dlsm's shared tables
	dlsm_shared_tables => 1,
	# reads dlsm_leases and the lock manager: a read runs no hook
	# (dlsm's tables have no row-level security), and only the
	# extension's owner could add one
	dlsm_locks => 1,
	# signals the launcher
	dlsm_launcher_wake => 1,
	# computes where the fence sequence starts
	dlsm_fence_start => 1,
	# setval on dlsm's own sequence: sequences have no hooks
	dlsm_raise_fence => 1,
	# reads a variable of the session (dlsm_enqueue's dedup look-up runs
	# in dlsm_enqueue's path, as the caller)
	dlsm_enqueue_deduplicated => 1,
);
my %covered = map { my $p = $_; map { $_ => $p } @{ $path{$p}{covers} // [] } } keys %path;
my @functions = split /\n/, $node->safe_psql('idmnw', q{
SELECT p.proname FROM pg_proc p
  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
  JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
 WHERE e.extname = 'dlsm' AND d.deptype = 'e'
 ORDER BY 1});
cmp_ok(scalar(@functions), '>', 20, 'the extension\'s functions are listed');
my @unknown = grep { !$covered{$_} && !$exempt{$_} } @functions;
is(join(', ', @unknown), '',
	'completeness: every function of dlsm is in the matrix or exempt with a reason');
my %is_fn = map { $_ => 1 } @functions;
is(join(', ', grep { !$is_fn{$_} } sort(keys %covered, keys %exempt)), '',
	'completeness: the matrix names no function dlsm does not have');

$node->stop;
done_testing();
