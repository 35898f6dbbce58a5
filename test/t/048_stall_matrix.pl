# Copyright (c) 2026, dlsm developers
#
# The stall matrix: no queue owner can stall the worker of a database.
#
# For every step the worker takes on an owner's behalf (the activity
# strings worker.c passes to run_transaction, and the parts of the handler
# path handler.c names with dlsm_bound_enter), mallory (CREATE on a schema
# only) arms a queue of hers with a hook on that step:
#
#   sleep  her code on the step sleeps (almost) forever;
#   gate   her code on the step waits for a table that another session of
#          hers holds in ACCESS EXCLUSIVE mode;
#   queue  another session of hers holds her queue itself in ACCESS
#          EXCLUSIVE mode (met where the worker opens the queue);
#   stubborn  her code sleeps, catches the cancel, and sleeps again: the
#          worker (or its reaper, for a reaping step) ends itself one bound
#          after the cancel, and the next one
#          leaves the queue alone for a while (checked on a trigger's step
#          and on the handler's call: the mechanism is the same for all).
#
# In every cell: the worker still runs dave's handler, and it or its
# reaper (dave's handler queue gives the database one, unless the workers
# take turns) reaps dave's expired lease within 2 x dlsm.reap_interval + the bound (plus a margin
# for a loaded machine, noted); dlsm_worker_status names mallory's queue,
# the step and the reason, and counts the pass as skipped (a handler's own
# failure as an error); the server log carries the error with the step and
# the queue as its CONTEXT; once the hook is gone, mallory's work is done,
# exactly once.  Steps no owner's code can reach are listed with the reason,
# and checked where a check is possible.  A step name in src/ that the
# table below does not list fails the test.
#
# 091_stall_matrix_rotating.pl runs the same cells with DLSM_STALL_ROTATING
# set: one worker (dlsm.max_workers = 1) takes turns between postgres and a
# second database with dlsm, so that every cell meets a visiting worker.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $reap_ms = 300;
my $bound_ms = 1000;	# dlsm.step_timeout, dlsm.lock_timeout, dlsm.handler_timeout
my $lease_s = 1;
my $margin_s = 3;		# for a loaded machine: noted with every measure
my $limit_s = $lease_s + (2 * $reap_ms + $bound_ms) / 1000;

my $rotating = $ENV{DLSM_STALL_ROTATING} // 0;

my $node = dlsm_node('stall', qq{
dlsm.reap_interval = $reap_ms
dlsm.step_timeout = $bound_ms
dlsm.lock_timeout = $bound_ms
dlsm.handler_timeout = $bound_ms
log_error_verbosity = verbose
} . ($rotating ? "dlsm.max_workers = 1\n" : ''));
ok(install_dlsm($node), 'the worker runs');
if ($rotating)
{
	$node->safe_psql('postgres', 'CREATE DATABASE other');
	$node->safe_psql('other', 'CREATE EXTENSION dlsm');
	$node->wait_for_log(
		qr/dlsm workers take turns\n.*DETAIL:  2 databases may have dlsm, and "dlsm.max_workers" is 1/);
	pass('one worker takes turns between postgres and another database');
}

# Run $sql (as $role); returns (SQLSTATE or '00000', stdout).  Every
# statement is bounded, so that a stuck worker fails cells, not the run.
sub run_as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSET statement_timeout = '30s';\n$sql",
		extra_params => [ defined $role ? ('-U', $role) : () ]);
	return ('00000', $out) if $ret == 0;
	diag "$sql\n$err";
	return ($err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : 'XXXXX', $out);
}

# The SQLSTATE of $sql run as $role.
sub state_of
{
	my ($role, $sql) = @_;
	return (run_as($role, $sql))[0];
}

sub sql
{
	my ($sql, $role) = @_;
	my ($state, $out) = run_as($role, $sql);
	return $state eq '00000' ? $out : "<error $state>";
}

sub status
{
	return sql(q{SELECT coalesce(last_error, '') || ' | skipped ' || skipped
					 || ' errors ' || errors
				   FROM dlsm_worker_status WHERE database = current_database()});
}

# ---------------------------------------------------------------------
# The roles
# ---------------------------------------------------------------------
sql(q{
CREATE ROLE mallory LOGIN;
CREATE ROLE dave LOGIN;
CREATE SCHEMA mal;
GRANT USAGE, CREATE ON SCHEMA mal TO mallory;
CREATE SCHEMA dave AUTHORIZATION dave;
});
is( state_of('mallory', q{
CREATE TABLE mal.gate ();
CREATE TABLE mal.done (queue text, entity text);
CREATE FUNCTION mal.stall() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_catalog.pg_sleep(100000); RETURN coalesce(NEW, OLD); END $$;
CREATE FUNCTION mal.stubborn() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN
			PERFORM pg_catalog.pg_sleep(100000);
		EXCEPTION WHEN query_canceled THEN
			RAISE LOG 'mallory caught a cancel';
		END;
	END LOOP;
END $$;
CREATE FUNCTION mal.wait_gate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM 1 FROM mal.gate; RETURN coalesce(NEW, OLD); END $$;
CREATE FUNCTION mal.h_ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$
INSERT INTO mal.done SELECT p->>'queue', entity FROM unnest(payloads) p $$;
CREATE FUNCTION mal.h_sleep(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_catalog.pg_sleep(100000); END $$;
CREATE FUNCTION mal.h_stubborn(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN
			PERFORM pg_catalog.pg_sleep(100000);
		EXCEPTION WHEN query_canceled THEN
			RAISE LOG 'mallory caught a cancel';
		END;
	END LOOP;
END $$;
CREATE FUNCTION mal.h_gate(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN PERFORM 1 FROM mal.gate; PERFORM mal.h_ok(entity, kind, ids, payloads); END $$;
}), '00000', 'mallory (CREATE on schema mal only) writes her hooks');
is( state_of('dave', q{
SELECT dlsm_create_queue('dave.leased');
SELECT dlsm_create_queue('dave.handled');
CREATE TABLE dave.done (entity text);
CREATE FUNCTION dave.ok(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO dave.done VALUES (entity) $$;
SELECT dlsm_set_handler('dave.handled', 'dave.ok');
}), '00000', 'dave makes a queue he consumes and one the worker handles');

# ---------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------
# Each step: how mallory's queue is made and given work (setup, as
# mallory, :'q' its name), how a hook of each kind is put on the step
# (hook: sleep or gate; undo takes it away), how to see the work done
# (done), and the reason dlsm_worker_status gives; or why no owner's code
# can reach the step (none), with the check of that when there is one.
# (the step's bound is a statement timeout: core's cancel, the bound in the
# error's CONTEXT)
my $sleep_reason = 'canceling statement due to statement timeout';
# (a lock wait in a step: dlsm.lock_timeout or the step's bound, whichever
# comes first; both are 1 s)
my $lock_reason = 'canceling statement due to (lock|statement) timeout';
my $call_reason = 'canceling statement due to statement timeout';
my $stubborn_reason = 'a step on it went on after its cancel';
# how the DETAIL of a shun's log line says each step, up to its queue
my %shun_words = (
	'reap a queue' => 'Reaping queue',
	'delete settled rows' => 'Deleting the settled rows of queue',
	"run a queue's handler" => 'Running the handler of queue',
	"claim a handler's unit" => 'Claiming a unit of queue',
	'call a handler' => 'Calling the handler of queue',
	"settle a handler's unit" => "Settling a handler's unit of queue");
my %hook_function = (sleep => 'stall', gate => 'wait_gate', stubborn => 'stubborn');
my $reap_setup = q{
SELECT dlsm_create_queue(:'q', max_attempts => 1000);
SELECT dlsm_enqueue(:'q', 'e1');
SELECT count(*) FROM dlsm_claim(:'q', lease => '1 s');
};
my $handler_setup = q{
SELECT dlsm_create_queue(:'q', max_attempts => 1000);
SELECT dlsm_set_handler(:'q', 'mal.h_ok');
SELECT dlsm_enqueue(:'q', 'e1', payload => jsonb_build_object('queue', :'q'));
};
my %trigger_on = (
	'reap a queue' => q{BEFORE UPDATE ON %s FOR EACH ROW WHEN (NEW.status = 'new')},
	'delete settled rows' => q{BEFORE DELETE ON %s FOR EACH ROW},
	"claim a handler's unit" =>
	  q{BEFORE UPDATE ON %s FOR EACH ROW WHEN (NEW.status = 'in-progress')},
	"settle a handler's unit" =>
	  q{BEFORE UPDATE ON %s FOR EACH ROW
		WHEN (OLD.status = 'in-progress' AND NEW.status <> 'in-progress')});
my $handled_once = q{
SELECT status = 'complete'
	   AND (SELECT count(*) = 1 FROM mal.done d WHERE d.queue = :'q')
  FROM %s};

my @steps = (
	{
		step => 'read the dlsm registry',
		none => 'it reads dlsm_queues (dlsm\'s own table) and the catalogs, and opens no queue table: '
		  . 'no owner hook runs there, and a locked queue does not stop it (every cell below)',
		check => [ 'CREATE TRIGGER stall BEFORE UPDATE ON dlsm_queues FOR EACH ROW EXECUTE FUNCTION mal.stall()',
			'LOCK TABLE dlsm_queues IN ACCESS EXCLUSIVE MODE' ],
	},
	{
		step => 'reap a queue',
		setup => $reap_setup,
		trigger => $trigger_on{'reap a queue'},
		done => q{SELECT status = 'new' FROM %s},
		hooks => [qw(sleep gate queue stubborn)],
	},
	{
		step => 'delete settled rows',
		setup => q{
SELECT dlsm_create_queue(:'q', retention => '10 ms');
SELECT dlsm_enqueue(:'q', 'e1');
SELECT process_id AS pid FROM dlsm_claim(:'q') \\gset
SELECT dlsm_settle(:'q', :'pid');
},
		trigger => $trigger_on{'delete settled rows'},
		done => q{SELECT count(*) = 0 FROM %s},
		hooks => [qw(sleep gate)],
	},
	{
		step => 'delete expired leases',
		none => 'it deletes from dlsm_leases, dlsm\'s own table: no owner can hook or lock it '
		  . '(its row locks are dlsm.lock_timeout\'s, and the step is under dlsm.step_timeout)',
		check => [ 'CREATE TRIGGER stall BEFORE DELETE ON dlsm_leases FOR EACH ROW EXECUTE FUNCTION mal.stall()',
			'LOCK TABLE dlsm_leases IN ACCESS EXCLUSIVE MODE' ],
	},
	{
		step => "run a queue's handler",
		setup => $handler_setup,
		done => $handled_once,
		hooks => [qw(queue)],
	},
	{
		step => "claim a handler's unit",
		setup => $handler_setup,
		trigger => $trigger_on{"claim a handler's unit"},
		done => $handled_once,
		hooks => [qw(sleep gate)],
	},
	{
		step => 'call a handler',
		setup => $handler_setup,
		handler => { sleep => 'mal.h_sleep', gate => 'mal.h_gate',
			stubborn => 'mal.h_stubborn' },
		reason => $call_reason,
		counted => 'errors',
		done => $handled_once,
		hooks => [qw(sleep gate stubborn)],
	},
	{
		step => "settle a handler's unit",
		setup => $handler_setup,
		trigger => $trigger_on{"settle a handler's unit"},
		done => $handled_once,
		hooks => [qw(sleep gate)],
	});
my %listed = map { $_->{step} => 1 } @steps;

# Every step name in src/: bound.c's names of the steps of bound.h (worker.c's
# transactions and the parts handler.c names), but for DLSM_STEP_NONE.
my @in_src;
for my $file (glob("$ENV{TESTDIR}/src/*.c"))
{
	my $text = slurp_file($file);
	push @in_src, $1
	  while $text =~ /\[DLSM_STEP_(?!NONE\])\w+\]\s*=\s*"([^"]+)"/g;
}
ok(scalar(grep { $_ eq 'reap a queue' } @in_src),
	'the step names are read from src/ (' . scalar(@in_src) . ' found)');
is(join(', ', grep { !$listed{$_} } @in_src), '',
	'every step the worker names in src/ is in the matrix');
my %in_src = map { $_ => 1 } @in_src;
is(join(', ', grep { !$in_src{$_} } sort keys %listed), '',
	'every step of the matrix is named in src/');

# The steps no owner's code reaches: say why, and check it.
for my $s (grep { $_->{none} } @steps)
{
	note "not a cell: \"$s->{step}\": $s->{none}";
	for my $try (@{ $s->{check} })
	{
		my ($state) = run_as('mallory', "BEGIN; $try; ROLLBACK;");
		is($state, '42501', "\"$s->{step}\": mallory cannot $try");
	}
}

# How long until dave's expired lease is reaped, and his handled queue
# served; each returns the seconds, or undef.
my $dave_n = 0;
sub dave_reaped
{
	my $e = 'r' . ++$dave_n;
	my $start = [gettimeofday];
	return undef
	  unless sql(qq{SELECT dlsm_enqueue('dave.leased', '$e') AS id \\gset
SELECT entity FROM dlsm_claim('dave.leased', lease => '$lease_s s', after => :id - 1)},
		'dave') eq $e;
	my $took = poll_within($node, 'postgres',
		qq{SELECT status = 'new' FROM dave.leased WHERE entity = '$e'}, 20);
	return defined $took ? tv_interval($start) : undef;
}

sub dave_handled
{
	my $e = 'h' . ++$dave_n;
	my $start = [gettimeofday];
	sql(qq{SELECT dlsm_enqueue('dave.handled', '$e')}, 'dave');
	my $took = poll_within($node, 'postgres',
		qq{SELECT status = 'complete' FROM dave.handled WHERE entity = '$e'}, 20);
	return defined $took ? tv_interval($start) : undef;
}

# The pid of the reaper of database postgres, or 0.
sub reaper_pid
{
	return sql(q{SELECT coalesce(max(pid), 0) FROM pg_stat_activity
		WHERE backend_type = 'dlsm reaper' AND datname = 'postgres'});
}

sub counter
{
	my ($name) = @_;
	return sql(qq{SELECT $name FROM dlsm_worker_status WHERE database = current_database()});
}

# A worker stuck in mallory's code for good (before the fix): cancel it,
# so that the cells after this one are measured on their own.
sub unstick
{
	sql(q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		   WHERE backend_type IN ('dlsm worker', 'dlsm reaper') AND datname = 'postgres'
			 AND wait_event IN ('PgSleep', 'relation')});
}

my $cells = 0;
my $n = 0;
for my $s (grep { !$_->{none} } @steps)
{
	for my $hook (@{ $s->{hooks} })
	{
		$n++;
		my $q = "m$n";
		my $label = "\"$s->{step}\" x $hook ($q)";
		my $reason =
			$hook eq 'stubborn' ? $stubborn_reason
		  : $s->{reason} // ($hook eq 'sleep' ? $sleep_reason : $lock_reason);
		my $counted = $hook eq 'stubborn' ? 'skipped' : $s->{counted} // 'skipped';
		my $before = counter($counted);
		my $pid = counter('pid');
		# (with a worker of its own, its reaper runs the reaping steps)
		my $by_reaper = !$rotating
		  && ($s->{step} eq 'reap a queue' || $s->{step} eq 'delete settled rows');
		my $reaper_pid = reaper_pid();
		# the stubborn hook costs a second bound and the worker's restart
		my $cell_limit_s = $limit_s + ($hook eq 'stubborn' ? 2 : 0);
		my $log_offset = -s $node->logfile;
		my $holder;
		my $table = "mal.$q";

		# the hook first, then the work that meets it
		if ($hook eq 'gate' || $hook eq 'queue')
		{
			$holder = $node->background_psql('postgres',
				extra_params => [ '-U', 'mallory' ]);
			$holder->query_safe('BEGIN; LOCK TABLE mal.gate IN ACCESS EXCLUSIVE MODE')
			  if $hook eq 'gate';
		}
		my $setup = $s->{setup};
		$setup =~ s/dlsm_set_handler\(:'q', 'mal\.h_ok'\)/dlsm_set_handler(:'q', '$s->{handler}{$hook}')/
		  if $s->{handler};
		my $trigger = '';
		if ($s->{trigger} && $hook ne 'queue')
		{
			$trigger = 'CREATE TRIGGER stall '
			  . sprintf($s->{trigger}, $table)
			  . " EXECUTE FUNCTION mal.$hook_function{$hook}()";
			# the queue first, its hook, then its work
			$setup =~ s/(SELECT dlsm_create_queue[^\n]*\n)/$1$trigger;\n/;
		}
		if ($hook eq 'queue')
		{
			# the work is due once the queue is locked
			$setup =~ s/'e1'/'e1', run_at => now() + interval '2 s'/;
			$setup =~ s/lease => '1 s'/lease => '3 s'/;
		}
		is(state_of('mallory', "\\set q $table\n$setup"), '00000',
			"$label: mallory's queue, its hook and its work");
		$holder->query_safe("BEGIN; LOCK TABLE $table IN ACCESS EXCLUSIVE MODE")
		  if $hook eq 'queue';

		# the others are served all the same, from the moment mallory's
		# work is there
		my $reaped = dave_reaped();
		ok(defined $reaped && $reaped <= $cell_limit_s + $margin_s,
			"$label: dave's expired lease is reaped within its lease + 2 x dlsm.reap_interval + the bound")
		  or diag 'took ' . ($reaped // 'more than 20') . ' s; ' . status();
		my $handled = dave_handled();
		ok(defined $handled && $handled <= $cell_limit_s + $margin_s,
			"$label: dave's handler runs")
		  or diag 'took ' . ($handled // 'more than 20') . ' s; ' . status();
		note sprintf('%s: dave reaped in %s s, handled in %s s (lease %d s, limit %.1f s + margin %d s)',
			$label, $reaped // '-', $handled // '-', $lease_s, $cell_limit_s, $margin_s);

		# the worker meets the hook, and says so
		my $q_re = quotemeta(qq{queue "$q": $s->{step}: }) =~ s/'/''/gr;
		my $shown = poll_within($node, 'postgres', qq{
SELECT last_error ~ '$q_re.*$reason'
       OR ('$hook' IN ('queue', 'stubborn') AND last_error ~ 'queue "$q".*$reason')
  FROM dlsm_worker_status WHERE database = current_database()}, 20);
		ok(defined $shown, "$label: dlsm_worker_status names the queue, the step and the reason")
		  or diag status();
		if ($hook eq 'stubborn' && $rotating)
		{
			# (every visit is a new worker; the counts go on)
			is(sql('SELECT count(*) FROM pg_stat_activity WHERE pid = ' . ($pid || 0)),
				'0', "$label: the worker that met the hook is gone");
			cmp_ok(counter($counted), '>', $before, "$label: counted in $counted");
		}
		elsif ($hook eq 'stubborn' && $by_reaper)
		{
			# (the reaper ended itself, and another runs beside the worker)
			ok( defined poll_within($node, 'postgres', qq{
SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'dlsm reaper'
   AND datname = 'postgres' AND pid <> $reaper_pid}, 20),
				"$label: the reaper ended itself, and another runs");
			is(counter('pid'), $pid, "$label: the worker goes on");
			cmp_ok(counter($counted), '>', $before, "$label: counted in $counted");
		}
		elsif ($hook eq 'stubborn')
		{
			# (a new worker, with counts of its own)
			isnt(counter('pid'), $pid, "$label: the worker ended itself, and another runs");
			cmp_ok(counter($counted), '>', 0, "$label: the new worker counts its skips");
		}
		else
		{
			cmp_ok(counter($counted), '>', $before, "$label: counted in $counted");
		}

		# the server log: the error, with the step and the queue as CONTEXT
		# (a handler's failure is its unit's: in the unit's detail)
		if ($s->{step} eq 'call a handler' && $hook ne 'stubborn')
		{
			is(sql("SELECT attempts >= 1 AND detail ~ '$reason' FROM $table"), 't',
				"$label: the unit was retried, the reason in its detail");
		}
		else
		{
			# (a line of the CONTEXT, under the owner's code)
			my $step = $hook eq 'queue' ? '[^\n]*' : quotemeta($s->{step});
			my $context = $hook eq 'stubborn'
			  ? qr/dlsm worker leaves [^\n]* alone until [^\n]*\n[^\n]*DETAIL:  $shun_words{$s->{step}} "$q"[^\n]* went on after its cancel/
			  : qr/(?:CONTEXT:\s+|\n\t)dlsm worker: $step, queue "$q"\n/;
			my $log = slurp_file($node->logfile, $log_offset);
			like($log, $context,
				"$label: the server log names the step and the queue");
			# (core's cancel; the step, its queue and its bound the last
			# lines of its CONTEXT)
			like($log, qr/ERROR:  57014: canceling statement due to statement timeout\n[^\n]*CONTEXT:  (?:[^\n]*\n\t)*dlsm worker: $step, queue "$q"\n\tdlsm worker: the step ran for longer than "dlsm\.step_timeout" \(1000 ms\)\n/,
				"$label: the server log has the cancel, its SQLSTATE, and its bound in its context")
			  if $hook eq 'sleep';
		}

		unstick() unless defined $shown && defined $reaped;

		# the hook goes: mallory's work is done, once
		if ($s->{handler})
		{
			is(state_of('mallory', "SELECT dlsm_set_handler('$table', 'mal.h_ok')"),
				'00000', "$label: mallory sets a quick handler");
		}
		elsif ($trigger)
		{
			is(state_of('mallory', "DROP TRIGGER stall ON $table"), '00000',
				"$label: mallory drops her trigger");
		}
		if ($holder)
		{
			$holder->query_safe('COMMIT');
			$holder->quit;
		}
		my $done = sprintf($s->{done}, $table);
		ok( defined poll_within($node, 'postgres', "\\set q $table\n$done", 40),
			"$label: once the hook is gone, the work is done, once")
		  or diag sql("SELECT status, attempts, detail FROM $table") . ' ' . status();
		$cells++;
	}
}
note "stall matrix: $cells cells";
diag "stall matrix: $cells cells";
is($cells, 14, 'stall matrix: every cell was checked');

$node->stop;
done_testing();
