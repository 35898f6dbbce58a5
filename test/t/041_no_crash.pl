# Copyright (c) 2026, dlsm developers
#
# A queue unregistered (and registered again) under dlsm's feet, by code
# that dlsm itself runs: a trigger on the queue, a column default, a
# handler.  Whatever happens, no server process crashes and the cluster
# does not restart; each operation either completes correctly (no stale
# read: what it returns is what the table holds) or fails with a clean
# error.
#
#  a. a capture insert whose BEFORE INSERT trigger drops the queue, from a
#     plain role (an UPDATE that moves a row to another entity enqueues
#     twice);
#  b. handlers that drop their own queue, and then call dlsm_reap on it;
#  c. a trigger that unregisters and registers (or drops and creates) the
#     queue, firing during dlsm_claim, dlsm_settle, the worker's reap and a
#     capture insert; a column default doing the same during an enqueue.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

# restart_after_crash: a crash is reported by the assertions below, and
# the cases after it still run
my $node = dlsm_node('nocrash', qq{
dlsm.reap_interval = 200
restart_after_crash = on
});
ok(install_dlsm($node), 'the worker runs');

# The output of $sql (as $role, default the superuser), or the error.
sub sql
{
	my ($sql, $role) = @_;
	my ($ret, $out, $err) = (1, '', '');
	eval {
		($ret, $out, $err) = $node->psql('postgres', $sql,
			extra_params => [ defined $role ? ('-U', $role) : () ]);
		1;
	} or $err = "psql died: $@";
	return $out if $ret == 0;
	diag "$sql\n$err";
	return "<error: $err>";
}

# psql as carol: (exit status, stdout, stderr)
sub as_carol
{
	my ($sql) = @_;
	my @r = (1, '', '');
	eval {
		@r = $node->psql('postgres', $sql, extra_params => [ '-U', 'carol' ]);
		1;
	} or $r[2] = "psql died: $@";
	return @r;
}

# poll_within, surviving a server that is down for a while
sub poll
{
	my ($query, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		my ($out, $err) = ('', '');
		eval {
			$node->psql('postgres', $query, stdout => \$out, stderr => \$err);
			1;
		} or $err = $@;
		return 1 if $out eq 't' && $err eq '';
		select(undef, undef, undef, 0.1);
	}
	return undef;
}

sql(q{
CREATE ROLE carol LOGIN;
GRANT CREATE ON SCHEMA public TO carol;
});
my $started = sql(q{SELECT pg_postmaster_start_time()});

# Before each case: where the server log stands, and a session that a
# crash would kill.
my ($log_offset, $watch);

sub begin_case
{
	$log_offset = -s $node->logfile;
	$watch = $node->background_psql('postgres', on_error_stop => 0);
	$watch->query_safe('SELECT 1');
}

# After each case: nothing crashed.
sub end_case
{
	my ($label) = @_;
	ok(defined poll('SELECT true', 60),
		"$label: the server answers");
	is(sql(q{SELECT pg_postmaster_start_time()}), $started,
		"$label: the postmaster did not restart");
	my $log = slurp_file($node->logfile, $log_offset);
	unlike(
		$log,
		qr/terminated by signal|was terminated by exception|exited with exit code|terminating any other active server processes|all server processes terminated; reinitializing/,
		"$label: no server process crashed");
	my $alive = eval { $watch->query('SELECT 42') };
	is($alive, '42', "$label: a session opened before it is still connected");
	eval { $watch->quit };
}

# The statement either completed ($check: its result is right) or failed
# with a clean error (an ERROR, the connection alive).
sub completes_or_fails_cleanly
{
	my ($label, $ret, $err, $check, $expect) = @_;
	if ($ret == 0)
	{
		note "$label: completed";
		is($check, $expect, "$label: completed, and correctly");
	}
	else
	{
		note "$label: failed: $err";
		like($err, qr/ERROR:/, "$label: failed with an error");
		unlike($err,
			qr/server closed the connection|connection to server was lost|terminated abnormally|no connection to the server/,
			"$label: cleanly (the connection survived)");
	}
}

# ---------------------------------------------------------------------
# a. A capture insert whose trigger drops the queue
# ---------------------------------------------------------------------
begin_case();
my ($ret, $out, $err) = as_carol(q{
SELECT dlsm_create_queue('public.cq2');
CREATE TABLE s2(id int PRIMARY KEY, v text);
SELECT dlsm_capture('s2','cq2');
INSERT INTO s2 VALUES (1,'a');
CREATE FUNCTION drop_me() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF EXISTS (SELECT 1 FROM dlsm_queues WHERE queue = 'cq2'::regclass) THEN
		PERFORM dlsm_drop_queue('cq2');
	END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER drop_me BEFORE INSERT ON cq2 FOR EACH ROW EXECUTE FUNCTION drop_me();
});
is($ret, 0, 'a: carol sets up the queue, the capture and the trigger') or diag $err;
($ret, $out, $err) = as_carol(q{UPDATE s2 SET id = 2 WHERE id = 1});
note 'a: the UPDATE ' . ($ret == 0 ? 'succeeded' : "failed: $err");
ok( $ret == 0
	  || ($err =~ /ERROR:/
		&& $err !~ /server closed the connection|connection to server was lost|terminated abnormally/),
	'a: the UPDATE succeeds or fails with a clean error');
end_case('a');

# ---------------------------------------------------------------------
# c. Unregister and register again (or drop and create) under dlsm
# ---------------------------------------------------------------------
($ret, $out, $err) = as_carol(q{
-- a queue-shaped table, adopted: registering it again adds nothing but
-- the wake trigger
CREATE FUNCTION make_queue(q text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('CREATE TABLE %I (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
					status text, kind text DEFAULT ''create'', entity text NOT NULL,
					process_id uuid)', q);
	PERFORM public.dlsm_register_queue(q::regclass);
END $$;
-- once per transaction: unregister q, then register it again ('register'),
-- or drop the table and create the queue anew ('create'), or only
-- unregister it ('drop')
CREATE FUNCTION flip_queue(q regclass, how text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	name text := q::text;
BEGIN
	IF current_setting('flip.done', true) = 'y' THEN
		RETURN;
	END IF;
	PERFORM set_config('flip.done', 'y', true);
	IF how = 'create' THEN
		PERFORM public.dlsm_drop_queue(q, drop_table => true);
		PERFORM public.dlsm_create_queue(name);
	ELSIF how = 'drop' THEN
		PERFORM public.dlsm_drop_queue(q);
	ELSE
		PERFORM public.dlsm_drop_queue(q);
		PERFORM public.dlsm_register_queue(q);
	END IF;
END $$;
CREATE FUNCTION flip_trg() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP = 'INSERT' THEN
		IF TG_ARGV[1] = 'insert' THEN
			PERFORM flip_queue(TG_RELID::regclass, TG_ARGV[0]);
		END IF;
	ELSIF (TG_ARGV[1] = 'claim' AND OLD.status = 'new' AND NEW.status = 'in-progress')
	   OR (TG_ARGV[1] = 'settle' AND OLD.status = 'in-progress'
		   AND NEW.status IN ('complete', 'error'))
	   OR (TG_ARGV[1] = 'reap' AND OLD.status = 'in-progress' AND NEW.status = 'new') THEN
		PERFORM flip_queue(TG_RELID::regclass, TG_ARGV[0]);
	END IF;
	RETURN NEW;
END $$;
CREATE FUNCTION flip_default(q text, how text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM flip_queue(q::regclass, how);
	RETURN 'x';
END $$;
});
is($ret, 0, 'c: carol\'s functions are in place') or diag $err;

# during dlsm_claim: five units, the queue flipped at the first
for my $how ('register', 'create', 'drop')
{
	my $q = "qc_claim_$how";
	begin_case();
	($ret, $out, $err) = as_carol(qq{
SELECT make_queue('$q');
SELECT count(dlsm_enqueue('$q', 'e' || g)) FROM generate_series(1, 5) g;
CREATE TRIGGER flip BEFORE UPDATE ON $q FOR EACH ROW EXECUTE FUNCTION flip_trg('$how', 'claim');
});
	is($ret, 0, "c: $q is set up") or diag $err;
	($ret, $out, $err) = as_carol(qq{
CREATE TEMP TABLE got AS SELECT * FROM dlsm_claim('$q', lease => '1 h', units => 5);
SELECT (SELECT count(*) FROM got) || ':' ||
	   (SELECT count(*) FROM got g JOIN $q q ON q.id = g.id
		 WHERE q.status = 'in-progress' AND q.process_id = g.process_id);
});
	my ($n) = $out =~ /^(\d+):/m;
	completes_or_fails_cleanly("c: dlsm_claim, $how", $ret, $err, $out,
		defined $n && $n > 0 ? "$n:$n" : 'at least one claimed row, all of them in progress');
	end_case("c: dlsm_claim, $how");
}

# during dlsm_settle: a unit of three updates, the queue flipped at the first
for my $how ('register', 'drop')
{
	my $q = "qc_settle_$how";
	begin_case();
	($ret, $out, $err) = as_carol(qq{
SELECT make_queue('$q');
SELECT dlsm_enqueue('$q', 'e');
SELECT dlsm_settle('$q', process_id) FROM dlsm_claim('$q');
SELECT count(dlsm_enqueue('$q', 'e', 'update')) FROM generate_series(1, 3);
CREATE TRIGGER flip BEFORE UPDATE ON $q FOR EACH ROW
	EXECUTE FUNCTION flip_trg('$how', 'settle');
SELECT DISTINCT process_id FROM dlsm_claim('$q', lease => '1 h');
});
	is($ret, 0, "c: $q is set up, a unit of three updates claimed") or diag $err;
	my $pid = (split /\n/, $out)[-1];
	($ret, $out, $err) = as_carol(qq{
SELECT dlsm_settle('$q', '$pid') AS n \\gset
SELECT :n || ':' || count(*) FROM $q WHERE process_id = '$pid' AND status = 'complete';
});
	completes_or_fails_cleanly("c: dlsm_settle, $how", $ret, $err, $out, '3:3');
	is( sql(qq{SELECT count(*) FROM $q WHERE process_id = '$pid'
			   AND status = CASE WHEN $ret = 0 THEN 'complete' ELSE 'in-progress' END}),
		'3', "c: dlsm_settle, $how: the unit is settled whole, or not at all");
	end_case("c: dlsm_settle, $how");
}

# during the worker's reap: three expired leases, the queue flipped at
# the first; the worker goes on reaping other queues
for my $how ('register', 'drop')
{
	my $q = "qc_reap_$how";
	my $other = "qc_other_$how";
	begin_case();
	($ret, $out, $err) = as_carol(qq{
SELECT make_queue('$q');
SELECT make_queue('$other');
SELECT count(dlsm_enqueue('$q', 'e' || g)) FROM generate_series(1, 3) g;
CREATE TRIGGER flip BEFORE UPDATE ON $q FOR EACH ROW
	EXECUTE FUNCTION flip_trg('$how', 'reap');
SELECT count(*) FROM dlsm_claim('$q', lease => '500 ms', units => 3);
});
	is($ret, 0, "c: $q is set up, three leases of 500 ms") or diag $err;
	my $reap_start = sql(q{SELECT clock_timestamp()});
	ok( defined poll(qq{
SELECT last_reap_at > '$reap_start'::timestamptz + interval '2 s'
  FROM dlsm_worker_status WHERE database = current_database()}, 30),
		"c: worker reap, $how: the worker made its passes over the expired leases");
	note "c: worker reap, $how: $q is now "
	  . sql(qq{SELECT string_agg(status, ',' ORDER BY id) FROM $q})
	  . '; registered: '
	  . sql(qq{SELECT count(*) FROM dlsm_queues WHERE queue = '$q'::regclass});
	is( sql(qq{SELECT count(DISTINCT status) FROM $q}), '1',
		"c: worker reap, $how: the three units are all reaped or all left in progress");
	($ret, $out, $err) = as_carol(qq{
SELECT dlsm_enqueue('$other', 'o1');
SELECT count(*) FROM dlsm_claim('$other', lease => '500 ms');
});
	ok( defined poll(qq{SELECT status = 'new' FROM $other WHERE entity = 'o1'}, 15),
		"c: worker reap, $how: the worker goes on reaping other queues");
	end_case("c: worker reap, $how");
}

# during a capture insert: an UPDATE moving a row to another entity
# enqueues twice, the queue flipped at the first
begin_case();
($ret, $out, $err) = as_carol(q{
SELECT make_queue('qc_cap');
CREATE TABLE sc (id int PRIMARY KEY);
SELECT dlsm_capture('sc', 'qc_cap');
INSERT INTO sc VALUES (1);
CREATE TRIGGER flip BEFORE INSERT ON qc_cap FOR EACH ROW
	EXECUTE FUNCTION flip_trg('register', 'insert');
});
is($ret, 0, 'c: qc_cap is set up') or diag $err;
($ret, $out, $err) = as_carol(q{
UPDATE sc SET id = 2 WHERE id = 1;
SELECT string_agg(entity, ',' ORDER BY entity) FROM qc_cap WHERE payload->>'op' = 'UPDATE';
});
completes_or_fails_cleanly('c: capture insert, register', $ret, $err, $out, '1,2');
end_case('c: capture insert, register');

# during an enqueue: a column default of the queue flips it
for my $how ('register', 'create', 'drop')
{
	my $q = "qc_default_$how";
	begin_case();
	($ret, $out, $err) = as_carol(qq{
SELECT make_queue('$q');
ALTER TABLE $q ADD COLUMN x text DEFAULT flip_default('$q', '$how');
});
	is($ret, 0, "c: $q is set up") or diag $err;
	($ret, $out, $err) = as_carol(qq{
SELECT dlsm_enqueue('$q', 'e1') AS id \\gset
SELECT count(*) FROM $q WHERE id = :id AND entity = 'e1';
});
	completes_or_fails_cleanly("c: enqueue with a flipping default, $how",
		$ret, $err, $out, '1');
	end_case("c: enqueue with a flipping default, $how");
}

# ---------------------------------------------------------------------
# b. Handlers that drop their own queue (last: a crash here loops)
# ---------------------------------------------------------------------
($ret, $out, $err) = as_carol(q{
SELECT dlsm_create_queue('hq_drop', max_attempts => 1);
CREATE FUNCTION drop_self(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM public.dlsm_drop_queue('public.hq_drop');
END $$;
SELECT dlsm_create_queue('hq_drop_reap', max_attempts => 1);
CREATE FUNCTION drop_self_reap(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM public.dlsm_drop_queue('public.hq_drop_reap');
	PERFORM public.dlsm_reap('public.hq_drop_reap');
END $$;
});
is($ret, 0, 'b: carol makes two queues and handlers that drop them') or diag $err;

for my $q ('hq_drop', 'hq_drop_reap')
{
	my $h = $q eq 'hq_drop' ? 'drop_self' : 'drop_self_reap';
	my $errors = sql(q{SELECT errors FROM dlsm_worker_status WHERE database = current_database()});
	begin_case();
	($ret, $out, $err) = as_carol(qq{SELECT dlsm_set_handler('$q', '$h')});
	is($ret, 0, "b: $h is set on $q") or diag $err;
	# (a crash right after the commit may end this session too)
	($ret, $out, $err) = as_carol(qq{SELECT dlsm_enqueue('$q', 'b1')});
	note "b: $h: the enqueue " . ($ret == 0 ? 'succeeded' : "failed: $err");
	# the handler ran: the unit ended, the queue is gone, or the worker
	# counted an error
	ok( defined poll(qq{
SELECT (SELECT status IN ('complete', 'error') FROM $q)
	OR NOT EXISTS (SELECT 1 FROM dlsm_queues WHERE queue = '$q'::regclass)
	OR (SELECT errors > $errors FROM dlsm_worker_status WHERE database = current_database())},
			20),
		"b: $h: the worker ran the handler");
	my $after = sql(q{SELECT clock_timestamp()});
	ok( defined poll(qq{
SELECT last_reap_at > '$after'::timestamptz + interval '1 s'
  FROM dlsm_worker_status WHERE database = current_database()}, 20),
		"b: $h: the worker goes on");
	note "b: $h: $q is "
	  . sql(qq{SELECT coalesce(string_agg(status || ' ' || coalesce(detail, ''), ','), '(empty)') FROM $q})
	  . '; registered: '
	  . sql(qq{SELECT count(*) FROM dlsm_queues WHERE queue = '$q'::regclass});
	end_case("b: $h");
}

$node->stop;
done_testing();
