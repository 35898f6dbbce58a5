# Copyright (c) 2026, dlsm developers
#
# A hostile queue owner.  mallory owns queues (her own, and ones a
# superuser made and handed to her with ALTER TABLE ... OWNER TO) and arms
# them with code of hers: row and statement triggers BEFORE and AFTER
# INSERT, UPDATE and DELETE, a deferred constraint trigger, a column
# default, a stored generated column, a CHECK constraint, an index
# expression (a function she labelled IMMUTABLE) and, on one queue,
# row-level security policies.  Each piece logs (current_user,
# session_user, what fired) into a table everyone may insert into and into
# the server log, and, whenever it runs as anyone but mallory, tries to
# escalate: ALTER ROLE mallory SUPERUSER, CREATEROLE, CREATEDB,
# REPLICATION, BYPASSRLS, and membership in powerful roles.
#
# Then every place where dlsm runs SQL on someone else's table runs:
# dlsm_enqueue and plain INSERT, dlsm_claim, dlsm_heartbeat, dlsm_settle,
# dlsm_settle_many, dlsm_group_updates, dlsm_reap by hand (all by alice;
# R3: functions a user calls run as the caller), the worker's reaping,
# retention purge and handler (R1: as the queue's current owner, never as
# the role that set the handler), capture (R2: as the queue's owner, the
# writer needing no privilege on the queue, its schema or dlsm's schema),
# dlsm_queue_stats read by a pg_monitor role (R4: as the owner), and a
# queue with row-level security (R5: refused with 0A000).  R1 to R6 are
# the rules of README's "Security model", as this file numbers them.
#
# Asserted: mallory never gains an attribute or a membership; every logged
# execution of her code ran as mallory or as the role that called the dlsm
# function / wrote the row, never as a superuser or a third role; and each
# path actually ran her code.  Also R6: mallory, who can read the name and
# fence of alice's lease lock in dlsm_locks, can neither release nor refresh it.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# The worker serves database hostile only: in nowork the calls by hand
# (dlsm_reap above all) race with nobody.
my $node = dlsm_node('hostile', qq{
dlsm.reap_interval = 200
dlsm.databases = 'hostile'
});

sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

# Run $sql as $role; returns (SQLSTATE or '00000', stdout, stderr).
sub run_as
{
	my ($db, $role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', $role ]);
	my $state =
		$ret == 0 ? '00000'
	  : $err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1
	  :                                     "failed: $err";
	return ($state, $out, $err);
}

# Run $sql as $role, which must succeed; returns its output.
sub ok_as
{
	my ($db, $role, $sql, $label) = @_;
	my ($state, $out, $err) = run_as($db, $role, $sql);
	is($state, '00000', $label) or diag $err;
	return $out;
}

my $super = sql('postgres', q{SELECT rolname FROM pg_roles WHERE oid = 10});

sql('postgres', q{
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
CREATE ROLE wally LOGIN;
CREATE ROLE mon LOGIN IN ROLE pg_monitor;
CREATE ROLE alice_deputy LOGIN IN ROLE alice;
CREATE DATABASE hostile;
CREATE DATABASE nowork;
});

# mallory gained nothing; then undo whatever she gained, so that the next
# path is judged on its own.
sub check_mallory
{
	my ($label) = @_;
	is( sql('postgres', q{
SELECT rolsuper, rolcreaterole, rolcreatedb, rolreplication, rolbypassrls
  FROM pg_roles WHERE rolname = 'mallory'}),
		'f|f|f|f|f',
		"$label: mallory gained no attribute");
	is( sql('postgres', q{
SELECT coalesce(string_agg(roleid::regrole::text, ','), '')
  FROM pg_auth_members WHERE member = 'mallory'::regrole}),
		'',
		"$label: mallory gained no membership");
	sql('postgres', q{
ALTER ROLE mallory NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS;
DO $$
DECLARE r record;
BEGIN
	FOR r IN SELECT roleid::regrole AS g FROM pg_auth_members
			  WHERE member = 'mallory'::regrole LOOP
		EXECUTE format('REVOKE %s FROM mallory', r.g);
	END LOOP;
END $$;
});
}

# ---------------------------------------------------------------------
# Each database: dlsm in its own schema that PUBLIC may not use, the log,
# mallory's schemas and her kit.
# ---------------------------------------------------------------------
my $kit = q{
GRANT USAGE ON SCHEMA mallory TO PUBLIC;
REVOKE ALL ON SCHEMA mq FROM PUBLIC;
GRANT USAGE ON SCHEMA mq TO alice;

-- log what ran and as whom; anyone but mallory: try to escalate
CREATE FUNCTION mallory.note(t text, what text) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
	got text := '';
	s text;
BEGIN
	IF current_user <> 'mallory' THEN
		FOREACH s IN ARRAY ARRAY[
			'ALTER ROLE mallory SUPERUSER',
			'ALTER ROLE mallory CREATEROLE',
			'ALTER ROLE mallory CREATEDB',
			'ALTER ROLE mallory REPLICATION',
			'ALTER ROLE mallory BYPASSRLS',
			'GRANT pg_execute_server_program TO mallory',
			'GRANT pg_write_all_data TO mallory',
			'GRANT pg_read_server_files TO mallory'] LOOP
			BEGIN
				EXECUTE s;
				got := got || s || '; ';
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END LOOP;
		IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = session_user) THEN
			BEGIN
				EXECUTE format('GRANT %I TO mallory', session_user);
				got := got || 'GRANT ' || session_user || ' TO mallory; ';
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END IF;
	END IF;
	RAISE LOG 'HOSTILE db=% cu=% su=% tbl=% what=% got=%',
		current_database(), current_user, session_user, t, what, got;
	INSERT INTO public.hlog (cu, su, tbl, what, got)
	VALUES (current_user, session_user, t, what, got);
END $f$;

CREATE FUNCTION mallory.trg() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM mallory.note(TG_TABLE_NAME, 'trigger ' || TG_NAME || ' ' ||
		lower(TG_WHEN) || ' ' || lower(TG_LEVEL) || ' ' || lower(TG_OP));
	IF TG_LEVEL = 'ROW' AND TG_WHEN = 'BEFORE' THEN
		IF TG_OP = 'DELETE' THEN
			RETURN OLD;
		END IF;
		RETURN NEW;
	END IF;
	RETURN NULL;
END $f$;

CREATE FUNCTION mallory.idx(t text, e text, s text, l timestamptz) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	PERFORM mallory.note(t, 'index expression');
	RETURN e;
END $f$;

CREATE FUNCTION mallory.gen(t text, e text, s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
	PERFORM mallory.note(t, 'generated column');
	RETURN s;
END $f$;

CREATE FUNCTION mallory.dflt(t text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM mallory.note(t, 'column default');
	RETURN 'x';
END $f$;

CREATE FUNCTION mallory.chk(t text, s text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM mallory.note(t, 'check constraint');
	RETURN true;
END $f$;

CREATE FUNCTION mallory.pol(t text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM mallory.note(t, 'policy');
	RETURN true;
END $f$;

-- arm a queue of hers with all of it (a deferred trigger too, on request:
-- PostgreSQL refuses to queue one in a security-restricted operation)
CREATE PROCEDURE mallory.arm(q regclass, deferred boolean DEFAULT false)
LANGUAGE plpgsql AS $f$
DECLARE
	t text := (SELECT relname FROM pg_catalog.pg_class WHERE oid = q);
BEGIN
	EXECUTE format('CREATE TRIGGER m_before_row BEFORE INSERT OR UPDATE OR DELETE ON %s
					FOR EACH ROW EXECUTE FUNCTION mallory.trg()', q);
	EXECUTE format('CREATE TRIGGER m_after_row AFTER INSERT OR UPDATE OR DELETE ON %s
					FOR EACH ROW EXECUTE FUNCTION mallory.trg()', q);
	EXECUTE format('CREATE TRIGGER m_before_stmt BEFORE INSERT OR UPDATE OR DELETE ON %s
					FOR EACH STATEMENT EXECUTE FUNCTION mallory.trg()', q);
	EXECUTE format('CREATE TRIGGER m_after_stmt AFTER INSERT OR UPDATE OR DELETE ON %s
					FOR EACH STATEMENT EXECUTE FUNCTION mallory.trg()', q);
	IF deferred THEN
		EXECUTE format('CREATE CONSTRAINT TRIGGER m_deferred AFTER INSERT OR UPDATE OR DELETE ON %s
						DEFERRABLE INITIALLY DEFERRED
						FOR EACH ROW EXECUTE FUNCTION mallory.trg()', q);
	END IF;
	EXECUTE format('ALTER TABLE %s ADD COLUMN m_default text DEFAULT mallory.dflt(%L)', q, t);
	EXECUTE format('ALTER TABLE %s ADD COLUMN m_generated text
					GENERATED ALWAYS AS (mallory.gen(%L, entity, status)) STORED', q, t);
	EXECUTE format('ALTER TABLE %s ADD CONSTRAINT m_check CHECK (mallory.chk(%L, status))', q, t);
	EXECUTE format('CREATE INDEX %I ON %s (mallory.idx(%L, entity, status, lease_until))',
				   t || '_m_idx', q, t);
END $f$;
};

for my $db ('hostile', 'nowork')
{
	sql($db, q{
CREATE SCHEMA dlsm;
CREATE EXTENSION dlsm WITH SCHEMA dlsm;
REVOKE ALL ON SCHEMA dlsm FROM PUBLIC;
GRANT USAGE ON SCHEMA dlsm TO mallory, alice, mon, alice_deputy;
CREATE SCHEMA mallory AUTHORIZATION mallory;
CREATE SCHEMA mq AUTHORIZATION mallory;
CREATE TABLE public.hlog (
	db text NOT NULL DEFAULT current_database(),
	cu name NOT NULL, su name NOT NULL, tbl text NOT NULL, what text NOT NULL,
	got text NOT NULL DEFAULT '',
	at timestamptz NOT NULL DEFAULT clock_timestamp());
GRANT SELECT, INSERT ON public.hlog TO PUBLIC;
});
	ok_as($db, 'mallory', $kit, "$db: mallory's kit is in place");
}
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND datname = 'hostile'}),
	'the worker serves database hostile');

# The log rows of one path: code of mallory's that ran on table $tbl in
# sessions of $su.  It fired, and it ran only as a role in @$allowed
# (for a capture, $deferred_too: deferred triggers fire at the writer's
# COMMIT, as the writer).
sub check_path
{
	my ($db, $label, $tbl, $su, $allowed, %opt) = @_;
	my $in = join(',', map { "'$_'" } @$allowed);
	my $fired = sql($db, qq{
SELECT count(*) FROM public.hlog WHERE tbl = '$tbl' AND su = '$su'
   AND what LIKE '$opt{fired}'});
	cmp_ok($fired, '>', 0,
		"$label: mallory's code fired ($opt{fired} on $tbl, session of $su)");
	note "$label: " . sql($db, qq{
SELECT string_agg(DISTINCT cu || ': ' || what, '; ') FROM public.hlog
 WHERE tbl = '$tbl' AND su = '$su'});
	my $deferred = $opt{deferred_too} ? qq{AND NOT (what LIKE '%m_deferred%' AND cu = '$su')} : '';
	is( sql($db, qq{
SELECT coalesce(string_agg(DISTINCT cu || ' (' || what || ')', '; '), '')
  FROM public.hlog
 WHERE tbl = '$tbl' AND su = '$su' AND cu NOT IN ($in) $deferred}),
		'',
		"$label: mallory's code ran only as " . join(' or ', @$allowed)
		  . ($opt{deferred_too} ? " (deferred triggers: or $su)" : ''));
	is( sql($db, qq{
SELECT coalesce(string_agg(DISTINCT cu || ': ' || got, '; '), '')
  FROM public.hlog WHERE tbl = '$tbl' AND got <> ''}),
		'',
		"$label: no escalation attempt succeeded");
}

# The executions of mallory's code the server log holds, committed or
# rolled back: a list of { db, cu, su, tbl, what, got }.
sub logged
{
	my @rows;
	for my $line (split /\n/, slurp_file($node->logfile))
	{
		next
		  unless $line =~
		  /LOG:\s+HOSTILE db=(\S+) cu=(\S+) su=(\S+) tbl=(\S+) what=(.*) got=(.*)$/;
		push @rows,
		  { db => $1, cu => $2, su => $3, tbl => $4, what => $5, got => $6 };
	}
	return @rows;
}

# Wait up to $seconds for the server log to show code of mallory's that
# ran on $tbl in a session of $su.
sub logged_within
{
	my ($tbl, $su, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		return 1 if grep { $_->{tbl} eq $tbl && $_->{su} eq $su } logged();
		sleep 1;
	}
	return 0;
}

check_mallory('after set-up');

# ---------------------------------------------------------------------
# R3: the functions a user calls run as the caller.  In nowork (no
# worker), on mallory's queues, called by alice.
# ---------------------------------------------------------------------
ok_as('nowork', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.' || q)
  FROM unnest(ARRAY['q_enqueue', 'q_claim', 'q_heartbeat', 'q_settle',
					'q_settle_many', 'q_group', 'q_reap']) q;
CALL mallory.arm('mq.q_enqueue', deferred => true);
CALL mallory.arm('mq.q_claim', deferred => true);
CALL mallory.arm('mq.q_heartbeat', deferred => true);
CALL mallory.arm('mq.q_settle', deferred => true);
CALL mallory.arm('mq.q_settle_many', deferred => true);
CALL mallory.arm('mq.q_group', deferred => true);
CALL mallory.arm('mq.q_reap', deferred => true);
GRANT SELECT, INSERT, UPDATE ON mq.q_enqueue, mq.q_claim, mq.q_heartbeat,
	mq.q_settle, mq.q_settle_many, mq.q_group, mq.q_reap TO alice;
SELECT dlsm.dlsm_enqueue('mq.q_claim', 'c1');
SELECT dlsm.dlsm_enqueue('mq.q_heartbeat', 'h1');
SELECT dlsm.dlsm_enqueue('mq.q_settle', 's1');
SELECT dlsm.dlsm_enqueue('mq.q_settle_many', 'm' || g) FROM generate_series(1, 2) g;
SELECT dlsm.dlsm_enqueue('mq.q_group', 'g1');
SELECT dlsm.dlsm_settle('mq.q_group', process_id) FROM dlsm.dlsm_claim('mq.q_group');
SELECT dlsm.dlsm_enqueue('mq.q_group', 'g1', 'update') FROM generate_series(1, 2);
SELECT dlsm.dlsm_enqueue('mq.q_reap', 'r1');
}, 'nowork: mallory makes, arms and fills her queues');
my $pid_h = ok_as('nowork', 'mallory',
	q{SELECT process_id FROM dlsm.dlsm_claim('mq.q_heartbeat', lease => '1 h')},
	'mallory claims in q_heartbeat');
my $pid_s = ok_as('nowork', 'mallory',
	q{SELECT process_id FROM dlsm.dlsm_claim('mq.q_settle', lease => '1 h')},
	'mallory claims in q_settle');
my $pids_m = ok_as('nowork', 'mallory',
	q{SELECT string_agg(DISTINCT process_id::text, ',')
	    FROM dlsm.dlsm_claim('mq.q_settle_many', lease => '1 h', units => 2)},
	'mallory claims in q_settle_many');
ok_as('nowork', 'mallory',
	q{SELECT count(*) FROM dlsm.dlsm_claim('mq.q_reap', lease => '10 ms')},
	'mallory claims in q_reap with a short lease');

is( ok_as('nowork', 'alice', q{
SELECT dlsm.dlsm_enqueue('mq.q_enqueue', 'a1') > 0;
INSERT INTO mq.q_enqueue (entity) VALUES ('a2');
SELECT count(*) FROM mq.q_enqueue;}, 'alice enqueues into mallory\'s queue'),
	"t\n2", 'alice: dlsm_enqueue and a plain INSERT made two requests');
check_mallory('enqueue');
check_path('nowork', 'enqueue', 'q_enqueue', 'alice', [ 'alice', 'mallory' ],
	fired => '%insert%');

is( ok_as('nowork', 'alice',
		q{SELECT count(*) FROM dlsm.dlsm_claim('mq.q_claim', lease => '1 h')},
		'alice claims'),
	'1', 'alice: dlsm_claim claimed one request');
check_mallory('claim');
check_path('nowork', 'claim', 'q_claim', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

is( ok_as('nowork', 'alice',
		qq{SELECT dlsm.dlsm_heartbeat('mq.q_heartbeat', '$pid_h', '2 h') > now() + '1 h'},
		'alice heartbeats'),
	't', 'alice: dlsm_heartbeat extended the lease');
check_mallory('heartbeat');
check_path('nowork', 'heartbeat', 'q_heartbeat', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

is( ok_as('nowork', 'alice',
		qq{SELECT dlsm.dlsm_settle('mq.q_settle', '$pid_s')}, 'alice settles'),
	'1', 'alice: dlsm_settle settled one request');
check_mallory('settle');
check_path('nowork', 'settle', 'q_settle', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

is( ok_as('nowork', 'alice', qq{
SELECT sum(settled) FROM dlsm.dlsm_settle_many('mq.q_settle_many',
	string_to_array('$pids_m', ',')::uuid[])}, 'alice settles many'),
	'2', 'alice: dlsm_settle_many settled two requests');
check_mallory('settle_many');
check_path('nowork', 'settle_many', 'q_settle_many', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

is( ok_as('nowork', 'alice',
		q{SELECT dlsm.dlsm_group_updates('mq.q_group', 'g1', gen_random_uuid())},
		'alice groups updates'),
	'2', 'alice: dlsm_group_updates took the two updates');
check_mallory('group_updates');
check_path('nowork', 'group_updates', 'q_group', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

ok( $node->poll_query_until('nowork',
		q{SELECT lease_until < clock_timestamp() FROM mq.q_reap}),
	'the lease in q_reap expired');
is( ok_as('nowork', 'alice', q{SELECT dlsm.dlsm_reap('mq.q_reap')}, 'alice reaps'),
	'1', 'alice: dlsm_reap by hand reaped one request');
check_mallory('reap by hand');
check_path('nowork', 'reap by hand', 'q_reap', 'alice', [ 'alice', 'mallory' ],
	fired => '%update%');

# ---------------------------------------------------------------------
# R1: the worker acts as the queue's current owner: handler (claim, call,
# settle), reaping, retention purge.  The superuser makes the queues (and
# sets the handler) and hands them to mallory.
# ---------------------------------------------------------------------
sql('hostile', q{
CREATE FUNCTION public.h_handle(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.hlog (cu, su, tbl, what)
	VALUES (current_user, session_user, 'q_handler', 'handler call ' || entity);
END $$;
SELECT dlsm.dlsm_create_queue('mq.q_handler');
SELECT dlsm.dlsm_set_handler('mq.q_handler', 'public.h_handle');
ALTER TABLE mq.q_handler OWNER TO mallory;
SELECT dlsm.dlsm_create_queue('mq.q_reap_w');
ALTER TABLE mq.q_reap_w OWNER TO mallory;
SELECT dlsm.dlsm_create_queue('mq.q_purge', retention => '1 second');
ALTER TABLE mq.q_purge OWNER TO mallory;
});

ok_as('hostile', 'mallory', q{
CALL mallory.arm('mq.q_handler');
SELECT dlsm.dlsm_enqueue('mq.q_handler', 'h' || g) FROM generate_series(1, 2) g;
}, 'mallory arms the handler queue the superuser gave her and enqueues');
ok( defined poll_within($node, 'hostile',
		q{SELECT count(*) = 2 FROM mq.q_handler WHERE status = 'complete'}, 30),
	'handler: the worker handled both requests');
is( sql('hostile', q{
SELECT coalesce(string_agg(DISTINCT cu, ','), '<none>') FROM public.hlog
 WHERE what LIKE 'handler call%'}),
	'mallory', 'handler: the handler ran as the queue\'s owner, mallory');
check_mallory('handler');
check_path('hostile', 'handler', 'q_handler', $super, ['mallory'],
	fired => '%row update%');
# the worker's passes (reaping, handler claims) touch the queue even when
# there is nothing to do: its statement triggers ran as mallory too
check_path('hostile', 'worker passes over q_handler', 'q_handler', $super,
	['mallory'], fired => '%statement update%');
ok_as('hostile', 'mallory', q{SELECT dlsm.dlsm_set_handler('mq.q_handler', NULL)},
	'mallory clears the handler of q_handler');
check_mallory('handler cleared');

ok_as('hostile', 'mallory', q{
CALL mallory.arm('mq.q_reap_w');
SELECT dlsm.dlsm_enqueue('mq.q_reap_w', 'w1');
SELECT count(*) FROM dlsm.dlsm_claim('mq.q_reap_w', lease => '1 s');
}, 'mallory arms q_reap_w and leaves a claim to expire');
ok( defined poll_within($node, 'hostile',
		q{SELECT status = 'new' FROM mq.q_reap_w}, 30),
	'worker reap: the expired claim was reaped');
check_mallory('worker reap');
check_path('hostile', 'worker reap', 'q_reap_w', $super, ['mallory'],
	fired => '%row update%');

ok_as('hostile', 'mallory', q{
CALL mallory.arm('mq.q_purge');
SELECT dlsm.dlsm_enqueue('mq.q_purge', 'p' || g) FROM generate_series(1, 2) g;
SELECT count(*) FROM dlsm.dlsm_settle_many('mq.q_purge',
	ARRAY(SELECT process_id FROM dlsm.dlsm_claim('mq.q_purge', units => 2)));
}, 'mallory arms q_purge (retention 1 s) and settles two requests');
ok( defined poll_within($node, 'hostile',
		q{SELECT count(*) = 0 FROM mq.q_purge}, 30),
	'retention: the settled rows were purged');
check_mallory('retention purge');
check_path('hostile', 'retention purge', 'q_purge', $super, ['mallory'],
	fired => '%row delete%');

# A deferred trigger on a queue the worker handles: PostgreSQL refuses to
# queue it inside a security-restricted operation, so the worker's work on
# that queue may fail; whatever runs still runs as mallory (checked in the
# server log at the end).
sql('hostile', q{
SELECT dlsm.dlsm_create_queue('mq.q_handler_d');
SELECT dlsm.dlsm_set_handler('mq.q_handler_d', 'public.h_handle');
ALTER TABLE mq.q_handler_d OWNER TO mallory;
});
ok_as('hostile', 'mallory', q{
CALL mallory.arm('mq.q_handler_d', deferred => true);
SELECT dlsm.dlsm_enqueue('mq.q_handler_d', 'd1');
}, 'mallory arms q_handler_d with a deferred trigger too, and enqueues');
ok(logged_within('q_handler_d', $super, 20),
	'deferred: the worker ran mallory\'s code on q_handler_d');
note 'deferred: q_handler_d request is '
  . sql('hostile', q{SELECT status FROM mq.q_handler_d});
ok_as('hostile', 'mallory', q{SELECT dlsm.dlsm_set_handler('mq.q_handler_d', NULL)},
	'mallory clears the handler of q_handler_d');
check_mallory('handler, deferred trigger');


# ---------------------------------------------------------------------
# R2: capture.  The superuser captures its own table into mallory's queue;
# alice writes the source; wally, who has no privilege on the queue and no
# USAGE on its schema or on dlsm's, writes it too.
# ---------------------------------------------------------------------
ok_as('hostile', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.q_capture');
CALL mallory.arm('mq.q_capture');
}, 'mallory makes and arms q_capture');
sql('hostile', q{
CREATE TABLE public.src_cap (id int PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.src_cap TO alice, wally;
SELECT dlsm.dlsm_capture('public.src_cap', 'mq.q_capture');
});
ok_as('hostile', 'alice', q{
INSERT INTO public.src_cap VALUES (1, 'a');
UPDATE public.src_cap SET v = 'b' WHERE id = 1;
DELETE FROM public.src_cap WHERE id = 1;
}, 'capture: alice writes the captured table');
ok_as('hostile', 'wally', q{INSERT INTO public.src_cap VALUES (2, 'w')},
	'capture: wally (no privilege on the queue, no USAGE on mq or dlsm) writes it');
is( sql('hostile', q{
SELECT string_agg(entity || ':' || (payload->>'op'), ',' ORDER BY id) FROM mq.q_capture}),
	'1:INSERT,1:UPDATE,1:DELETE,2:INSERT',
	'capture: every write was enqueued');
check_mallory('capture');
my $state;
check_path('hostile', 'capture (alice)', 'q_capture', 'alice', ['mallory'],
	fired => '%row insert%', deferred_too => 1);
check_path('hostile', 'capture (wally)', 'q_capture', 'wally', ['mallory'],
	fired => '%row insert%', deferred_too => 1);

# the same with a deferred trigger on the queue: the write fails or not,
# whatever of mallory's runs in the insert runs as mallory
ok_as('hostile', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.q_capture_d');
CALL mallory.arm('mq.q_capture_d', deferred => true);
}, 'mallory makes q_capture_d, with a deferred trigger too');
sql('hostile', q{
CREATE TABLE public.src_cap_d (id int PRIMARY KEY, v text);
GRANT SELECT, INSERT, UPDATE, DELETE ON public.src_cap_d TO alice;
SELECT dlsm.dlsm_capture('public.src_cap_d', 'mq.q_capture_d');
});
($state) = run_as('hostile', 'alice', q{INSERT INTO public.src_cap_d VALUES (1, 'a')});
note "capture into a queue with a deferred trigger: alice's write ended in $state";
ok(logged_within('q_capture_d', 'alice', 5),
	'capture, deferred: mallory\'s code ran in alice\'s write');
check_mallory('capture, deferred trigger');

# the source's owner must be able to insert into the queue, or the write fails
sql('hostile', q{
CREATE TABLE public.src_alice (id int PRIMARY KEY);
ALTER TABLE public.src_alice OWNER TO alice;
});
ok_as('hostile', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.q_capture2');
CALL mallory.arm('mq.q_capture2');
GRANT INSERT ON mq.q_capture2 TO alice;
}, 'mallory makes q_capture2 and lets alice insert into it');
ok_as('hostile', 'alice', q{
SELECT dlsm.dlsm_capture('public.src_alice', 'mq.q_capture2');
INSERT INTO public.src_alice VALUES (1);
}, 'alice captures her table into q_capture2 and writes it');
ok_as('hostile', 'mallory', q{REVOKE INSERT ON mq.q_capture2 FROM alice},
	'mallory revokes INSERT on q_capture2 from alice');
($state) = run_as('hostile', 'alice', q{INSERT INTO public.src_alice VALUES (2)});
is($state, '42501',
	'capture: once the source\'s owner may not insert into the queue, the write fails with 42501');
is( sql('hostile', q{SELECT string_agg(entity, ',' ORDER BY id) FROM mq.q_capture2}),
	'1', 'capture: only the first write was enqueued');
check_mallory('capture into a queue of another owner');
check_path('hostile', 'capture (source owned by alice)', 'q_capture2', 'alice',
	['mallory'], fired => '%row insert%', deferred_too => 1);

# a plain INSERT into a queue needs no USAGE on dlsm's schema
sql('hostile', q{
CREATE SCHEMA mpub AUTHORIZATION mallory;
SELECT dlsm.dlsm_create_queue('mpub.q_plain');
ALTER TABLE mpub.q_plain OWNER TO mallory;
});
ok_as('hostile', 'mallory', q{
CALL mallory.arm('mpub.q_plain');
GRANT USAGE ON SCHEMA mpub TO wally;
GRANT INSERT ON mpub.q_plain TO wally;
}, 'mallory arms q_plain and lets wally insert');
ok_as('hostile', 'wally', q{INSERT INTO mpub.q_plain (entity) VALUES ('w1')},
	'plain INSERT: wally (no USAGE on dlsm) inserts into a queue');
is(sql('hostile', q{SELECT count(*) FROM mpub.q_plain}), '1',
	'plain INSERT: the request is there');
check_mallory('plain insert');
check_path('hostile', 'plain insert', 'q_plain', 'wally', [ 'wally', 'mallory' ],
	fired => '%row insert%');

# ---------------------------------------------------------------------
# R5: a queue with row-level security is refused everywhere.
# ---------------------------------------------------------------------
ok_as('hostile', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.q_rls');
CALL mallory.arm('mq.q_rls');
GRANT SELECT, INSERT, UPDATE ON mq.q_rls TO alice;
SELECT dlsm.dlsm_enqueue('mq.q_rls', 'r' || g) FROM generate_series(1, 3) g;
SELECT dlsm.dlsm_enqueue('mq.q_rls', 'r4');
SELECT dlsm.dlsm_settle('mq.q_rls', process_id)
  FROM dlsm.dlsm_claim('mq.q_rls', after => (SELECT max(id) - 1 FROM mq.q_rls));
SELECT dlsm.dlsm_enqueue('mq.q_rls', 'r4', 'update');
GRANT USAGE ON SCHEMA mq TO mon;
GRANT SELECT ON mq.q_rls TO mon;
CREATE TABLE mq.src_rls (id int PRIMARY KEY);
SELECT dlsm.dlsm_capture('mq.src_rls', 'mq.q_rls');
CREATE TABLE mq.rls_t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
					   status text, kind text DEFAULT 'create', entity text,
					   process_id uuid);
ALTER TABLE mq.rls_t ENABLE ROW LEVEL SECURITY;
}, 'mallory makes q_rls, fills it and captures a table into it');
my $exp_at = ok_as('hostile', 'alice',
	q{SELECT lease_until FROM dlsm.dlsm_claim('mq.q_rls', lease => '4 s')},
	'alice claims r1 in q_rls with a short lease');
my $pid_keep = ok_as('hostile', 'alice',
	q{SELECT process_id FROM dlsm.dlsm_claim('mq.q_rls', lease => '1 h')},
	'alice claims in q_rls with a long lease');
ok_as('hostile', 'mallory', q{
ALTER TABLE mq.q_rls ENABLE ROW LEVEL SECURITY;
ALTER TABLE mq.q_rls FORCE ROW LEVEL SECURITY;
CREATE POLICY m_pol ON mq.q_rls USING (mallory.pol('q_rls'))
	WITH CHECK (mallory.pol('q_rls'));
}, 'mallory turns on row-level security with a policy of hers');

my %refused = (
	'dlsm_enqueue' => q{SELECT dlsm.dlsm_enqueue('mq.q_rls', 'r9')},
	'dlsm_claim' => q{SELECT * FROM dlsm.dlsm_claim('mq.q_rls')},
	'dlsm_heartbeat' => qq{SELECT dlsm.dlsm_heartbeat('mq.q_rls', '$pid_keep')},
	'dlsm_settle' => qq{SELECT dlsm.dlsm_settle('mq.q_rls', '$pid_keep')},
	'dlsm_settle_many' =>
	  qq{SELECT * FROM dlsm.dlsm_settle_many('mq.q_rls', ARRAY['$pid_keep']::uuid[])},
	'dlsm_reap' => q{SELECT dlsm.dlsm_reap('mq.q_rls')},
	'dlsm_group_updates' =>
	  q{SELECT dlsm.dlsm_group_updates('mq.q_rls', 'r4', gen_random_uuid())},
	'dlsm_requeue' => q{SELECT dlsm.dlsm_requeue('mq.q_rls', ARRAY[1, 2, 3, 4])},
	'dlsm_cancel' => q{SELECT dlsm.dlsm_cancel('mq.q_rls', ARRAY[1, 2, 3, 4])},);
# (the calls that would change something come last)
for my $f (qw(dlsm_reap dlsm_heartbeat dlsm_claim dlsm_enqueue dlsm_group_updates
	dlsm_requeue dlsm_cancel dlsm_settle_many dlsm_settle))
{
	my ($st, undef, $err) = run_as('hostile', 'alice', $refused{$f});
	is($st, '0A000', "RLS: $f on a queue with row-level security fails with 0A000")
	  or diag $err;
}
($state) = run_as('hostile', 'mallory',
	q{SELECT dlsm.dlsm_set_handler('mq.q_rls', 'public.h_handle')});
is($state, '0A000', 'RLS: dlsm_set_handler on it fails with 0A000');
($state) = run_as('hostile', 'mallory', q{SELECT dlsm.dlsm_register_queue('mq.rls_t')});
is($state, '0A000', 'RLS: registering a table with row-level security fails with 0A000');
($state) = run_as('hostile', 'mallory', q{INSERT INTO mq.src_rls VALUES (1)});
is($state, '0A000', 'RLS: a write captured into it fails with 0A000');

# the worker does not reap it either: wait for passes after the lease ran out
ok( defined poll_within($node, 'hostile', qq{
SELECT last_reap_at > '$exp_at'::timestamptz + interval '1 s'
  FROM dlsm.dlsm_worker_status WHERE database = 'hostile'}, 30),
	'RLS: the worker made passes after the short lease ran out');
is( sql('hostile', q{SELECT status FROM mq.q_rls WHERE entity = 'r1'}),
	'in-progress', 'RLS: the worker did not reap the queue');

# ---------------------------------------------------------------------
# R4: dlsm_queue_stats read by a pg_monitor role (to whom mallory granted
# USAGE on her schema and SELECT on her queues, as bait), and by alice
# ---------------------------------------------------------------------
ok_as('hostile', 'mallory', q{
SELECT dlsm.dlsm_create_queue('mq.q_stats');
CALL mallory.arm('mq.q_stats');
SELECT dlsm.dlsm_enqueue('mq.q_stats', 's' || g) FROM generate_series(1, 3) g;
SELECT dlsm.dlsm_settle('mq.q_stats', process_id) FROM dlsm.dlsm_claim('mq.q_stats');
SELECT count(*) FROM dlsm.dlsm_claim('mq.q_stats', lease => '1 h');
GRANT SELECT ON mq.q_stats TO mon, alice;
}, 'mallory makes q_stats: one request complete, one in progress, one new');
my $stats_sql = q{
SELECT string_agg(queue::text || '=' || coalesce(complete::text, 'null') || '/'
				  || coalesce(in_progress::text, 'null') || '/'
				  || coalesce(new::text, 'null'), ' ' ORDER BY queue::text)
  FROM dlsm.dlsm_queue_stats};
my $stats = ok_as('hostile', 'mon', $stats_sql, 'stats: mon reads dlsm_queue_stats');
like($stats, qr/(^| )mq\.q_stats=1\/1\/1( |$)/,
	'stats: mon sees the counts of mallory\'s queue');
like($stats, qr/(^| )mq\.q_rls=null\/null\/null( |$)/,
	'stats: the queue with row-level security shows NULL counts');
my ($st_alice, $stats_alice, $err_alice) = run_as('hostile', 'alice', $stats_sql);
if ($st_alice eq '00000')
{
	like($stats_alice, qr/(^| )mq\.q_rls=null\/null\/null( |$)/,
		'stats: alice may call it, and sees NULL counts for the queue with row-level security');
}
else
{
	is($st_alice, '42501', 'stats: alice, not in pg_monitor, may not call it')
	  or diag $err_alice;
}
check_mallory('stats');
is( sql('hostile', q{
SELECT coalesce(string_agg(DISTINCT cu || ' (' || what || ')', '; '), '')
  FROM public.hlog WHERE su = 'mon' AND cu <> 'mallory'}),
	'', 'stats: none of mallory\'s code ran as the monitoring role');
is( join(', ', map { "$_->{cu} ($_->{what})" }
		grep { $_->{su} eq 'mon' && $_->{cu} ne 'mallory' } logged()),
	'', 'stats: not even in a rolled-back transaction (server log)');
check_mallory('row-level security');
is( sql('hostile', q{
SELECT coalesce(string_agg(DISTINCT cu || '/' || su, '; '), '')
  FROM public.hlog WHERE what = 'policy' AND cu <> 'mallory'}),
	'', 'RLS: mallory\'s policy never ran as anyone but mallory');

# ---------------------------------------------------------------------
# R6: a lease lock is released or refreshed only by its holder, a member
# of the holder's role, or a superuser; the name and fence, visible to all
# in dlsm_locks, are not enough.
# ---------------------------------------------------------------------
my $fence = ok_as('nowork', 'alice',
	q{SELECT dlsm.dlsm_try_lock('alice/job', lease => '1 h')}, 'alice takes a lease');
like($fence, qr/^\d+$/, 'locks: alice holds alice/job');
is( ok_as('nowork', 'mallory',
		q{SELECT fence FROM dlsm.dlsm_locks WHERE name = 'alice/job'}, 'mallory reads dlsm_locks'),
	$fence, 'locks: mallory sees its fence in dlsm_locks');
my $until = sql('nowork', q{SELECT lease_until FROM dlsm.dlsm_leases WHERE name = 'alice/job'});
($state) = run_as('nowork', 'mallory',
	qq{SELECT dlsm.dlsm_refresh_lock('alice/job', $fence, '10 h')});
is($state, '42501', 'locks: mallory\'s dlsm_refresh_lock of alice\'s lease fails with 42501');
($state) = run_as('nowork', 'mallory', qq{SELECT dlsm.dlsm_unlock('alice/job', $fence)});
is($state, '42501', 'locks: mallory\'s dlsm_unlock of alice\'s lease fails with 42501');
is( sql('nowork', q{SELECT fence || ' ' || lease_until FROM dlsm.dlsm_leases WHERE name = 'alice/job'}),
	"$fence $until", 'locks: the lease stays, unchanged');
# (if mallory released it, alice takes it again: the checks below stand alone)
$fence = ok_as('nowork', 'alice',
	q{SELECT coalesce((SELECT fence FROM dlsm.dlsm_leases WHERE name = 'alice/job'),
					  dlsm.dlsm_try_lock('alice/job', lease => '1 h'))},
	'alice holds alice/job (again, if need be)');
is( ok_as('nowork', 'mallory',
		q{SELECT dlsm.dlsm_try_lock('alice/job') IS NULL}, 'mallory tries the lock'),
	't', 'locks: and mallory cannot take the name');
is( ok_as('nowork', 'alice_deputy',
		qq{SELECT dlsm.dlsm_refresh_lock('alice/job', $fence, '2 h') > now() + interval '90 min'},
		'alice_deputy refreshes'),
	't', 'locks: a member of alice refreshes her lease');
is( sql('nowork', qq{SELECT dlsm.dlsm_refresh_lock('alice/job', $fence, '3 h') > now() + interval '150 min'}),
	't', 'locks: a superuser refreshes it');
is( ok_as('nowork', 'alice', qq{SELECT dlsm.dlsm_unlock('alice/job', $fence)}, 'alice unlocks'),
	't', 'locks: alice releases her lease');
my $fence2 = ok_as('nowork', 'alice',
	q{SELECT dlsm.dlsm_try_lock('alice/job2', lease => '1 h')}, 'alice takes a second lease');
is( ok_as('nowork', 'alice_deputy', qq{SELECT dlsm.dlsm_unlock('alice/job2', $fence2)},
		'alice_deputy unlocks'),
	't', 'locks: a member of alice releases her lease');
my $fence3 = ok_as('nowork', 'alice',
	q{SELECT dlsm.dlsm_try_lock('alice/job3', lease => '1 h')}, 'alice takes a third lease');
is(sql('nowork', qq{SELECT dlsm.dlsm_unlock('alice/job3', $fence3)}),
	't', 'locks: a superuser releases it');

# ---------------------------------------------------------------------
# Everything mallory's code logged to the server log, committed or not:
# as mallory, or as the alice or wally who called or wrote (not for the
# insert of a capture, deferred triggers aside); never anyone else, and
# no escalation ever took.
# ---------------------------------------------------------------------
my @lines = logged();
cmp_ok(scalar(@lines), '>', 100, 'the server log holds the executions of mallory\'s code');
my (%bad, %got);
for my $l (@lines)
{
	my ($db, $cu, $su, $tbl, $what, $got) = @$l{qw(db cu su tbl what got)};
	$got{"$cu: $got"} = 1 if $got ne '';
	next if $cu eq 'mallory';
	my $capture = $tbl =~ /^q_capture/ && $what !~ /m_deferred/;
	next if ($su eq 'alice' || $su eq 'wally') && $cu eq $su && !$capture;
	$bad{"$db $tbl: cu=$cu su=$su ($what)"} = 1;
}
is(join("\n", sort keys %bad), '',
	'server log: mallory\'s code never ran as a superuser or a third role');
is(join("\n", sort keys %got), '', 'server log: no escalation attempt ever succeeded');
check_mallory('at the end');

$node->stop;
done_testing();
