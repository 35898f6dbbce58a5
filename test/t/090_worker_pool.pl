# Copyright (c) 2026, dlsm developers
#
# A pool of workers for many databases (dlsm.max_workers), as autovacuum's:
# 30 databases with dlsm, max_worker_processes = 8, dlsm.max_workers = 3,
# dlsm.reap_interval = 1 s.  Each database has a leased claim that expires
# and a handler request: every lease is reaped and every request handled
# within the bound dlsm states (dlsm.reap_interval times the databases over
# the workers, rounded up), no database shows "waiting for a worker", and
# never more than 3 workers run.  Databases dropped and created while the
# pool runs: DROP DATABASE does not hang, nothing is lost, no worker stays
# attached to a dropped database.  With one worker, every database is still
# served in turn.  A visit longer than the bound makes the others late:
# said once in the log, shown in dlsm_worker_status.  With no background
# worker process free, every database reports "waiting for a worker", and
# the log says it once per database; a waiting claim is still woken by the
# commit of an enqueue.  29 databases with continuous handler work do not
# starve a 30th.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use Time::HiRes qw(gettimeofday tv_interval);

my $node = dlsm_node('pool', qq{
max_worker_processes = 8
dlsm.max_workers = 3
dlsm.reap_interval = 1000
dlsm.databases = 'postgres'
});

sub sql
{
	my ($db, $sql) = @_;
	return $node->safe_psql($db, $sql);
}

# The template: two queues, a handler that notes what it handled, and a
# trigger that notes when the reaper returned a lease (its row back to new).
wait_first_look($node);
sql('postgres', 'CREATE DATABASE tmpl');
sql('tmpl', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('lq');
SELECT dlsm_create_queue('hq');
CREATE TABLE handled (entity text PRIMARY KEY,
	handled_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO handled (entity) VALUES (h.entity);
END $$;
SELECT dlsm_set_handler('hq', 'h');
CREATE TABLE reaps (entity text NOT NULL, lease_until timestamptz NOT NULL,
	reaped_at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE FUNCTION note_reap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO reaps (entity, lease_until) VALUES (OLD.entity, OLD.lease_until);
	RETURN NULL;
END $$;
-- continuous handler work: 20 ms a unit
SELECT dlsm_create_queue('bq');
CREATE FUNCTION busy(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(0.02) $$;
SELECT dlsm_set_handler('bq', 'busy');
CREATE TRIGGER note_reap AFTER UPDATE ON lq FOR EACH ROW
	WHEN (OLD.status <> NEW.status AND NEW.status = 'new')
	EXECUTE FUNCTION note_reap();
-- over a window: the longest any database waited for a pass, how often one
-- was waiting for a worker, the most workers seen at once
CREATE FUNCTION sample_pool(seconds float8, OUT longest interval,
	OUT waiting bigint, OUT most_workers bigint)
LANGUAGE plpgsql AS $$
DECLARE
	stop timestamptz := clock_timestamp() + seconds * interval '1 s';
	l interval; w bigint; c bigint;
BEGIN
	longest := '0'; waiting := 0; most_workers := 0;
	WHILE clock_timestamp() < stop LOOP
		PERFORM pg_stat_clear_snapshot();
		SELECT max(last_pass_age),
			   count(*) FILTER (WHERE state = 'waiting for a worker')
		  INTO l, w
		  FROM dlsm_worker_status WHERE database ~ '^d[0-9]+$';
		SELECT count(*) INTO c FROM pg_stat_activity
		 WHERE backend_type = 'dlsm worker';
		longest := greatest(longest, l);
		waiting := waiting + w;
		most_workers := greatest(most_workers, c);
		PERFORM pg_sleep(0.1);
	END LOOP;
END $$;
});

sql('postgres', 'ALTER DATABASE tmpl IS_TEMPLATE true');

my @dbs = map { "d$_" } 1 .. 30;
my $start = [gettimeofday];
sql('postgres', "CREATE DATABASE $_ TEMPLATE tmpl") for @dbs;
note sprintf('30 databases created in %.1f s', tv_interval($start));

# A lease of 2 s and a handler request in database $db, with tag $tag.
sub give_work
{
	my ($db, $tag) = @_;
	sql($db, qq{
SELECT dlsm_enqueue('lq', 'l$tag') AS id \\gset
SELECT count(*) FROM dlsm_claim('lq', lease => '2 s', after => :id - 1);
SELECT dlsm_enqueue('hq', 'h$tag');
});
}

# Within $seconds, are the lease and the request tagged $tag done in every
# database of @$list?  Returns the longest wait of any: from a lease's end
# to its reaping, from a request's enqueue to its handling; undef if not.
sub all_served_within
{
	my ($list, $tag, $seconds) = @_;
	my $longest = 0;
	for my $db (@$list)
	{
		my $t = poll_within($node, $db, qq{
SELECT (SELECT count(*) FROM reaps WHERE entity = 'l$tag') = 1
   AND (SELECT count(*) FROM handled WHERE entity = 'h$tag') = 1}, $seconds);
		if (!defined $t)
		{
			diag "$db: tag $tag not served: "
			  . sql($db, q{SELECT string_agg(database || ' ' || state || ' ' || coalesce(last_pass_age::text, '-'), ', ') FROM dlsm_worker_status});
			return undef;
		}
		my $wait = sql($db, qq{
SELECT greatest(
	(SELECT extract(epoch FROM reaped_at - lease_until) FROM reaps WHERE entity = 'l$tag'),
	(SELECT extract(epoch FROM h.handled_at - q.enqueued_at)
	   FROM handled h JOIN hq q ON q.entity = h.entity WHERE h.entity = 'h$tag'))});
		$longest = $wait if $wait > $longest;
	}
	return $longest;
}

# ---------------------------------------------------------------------
# 30 databases, 3 workers
# ---------------------------------------------------------------------
my $offset = -s $node->logfile;
sql('postgres', q{ALTER SYSTEM SET dlsm.databases = ''; SELECT pg_reload_conf()});
$node->wait_for_log(
	qr/dlsm workers take turns\n.*DETAIL:  3[01] databases may have dlsm, and "dlsm.max_workers" is 3/,
	$offset);
pass('the launcher says the workers take turns');

my $bound = 1 * 10;    # dlsm.reap_interval 1 s x ceil(30 / 3)
give_work($_, 'a') for @dbs;
my ($longest, $waiting, $most) =
  split /\|/, sql('d1', q{SELECT extract(epoch FROM longest), waiting, most_workers FROM sample_pool(15)});
my $served = all_served_within(\@dbs, 'a', 60);
ok(defined $served, 'every lease is reaped and every request handled in 30 databases');
cmp_ok($served // 999, '<=', $bound,
	"each within the bound of $bound s (longest wait: " . ($served // '-') . ' s)');
cmp_ok($longest, '<=', $bound,
	"no database went longer than the bound without a pass (longest: $longest s, sampled every 0.1 s over 15 s)");
is($waiting, '0', 'no database was seen waiting for a worker');
cmp_ok($most, '<=', 3, "never more than dlsm.max_workers workers at once ($most)");
cmp_ok($most, '>=', 1, 'and the workers ran');
is( sql('d1', q{SELECT count(DISTINCT database) FROM dlsm_worker_status
				 WHERE database ~ '^d[0-9]+$' AND last_reap_at IS NOT NULL}),
	'30', 'dlsm_worker_status shows a pass in each of the 30 databases');
is( sql('d1', q{SELECT count(*) FROM dlsm_worker_status
				 WHERE database ~ '^d[0-9]+$'
				   AND state NOT IN ('serving', 'between visits')}),
	'0', 'each is serving or between visits');

# ---------------------------------------------------------------------
# 29 databases with continuous handler work do not starve the 30th
# ---------------------------------------------------------------------
# 150 units of 20 ms each in d1 .. d29: 3 s of handling each, 29 s for the
# pool, each visit a full dlsm.reap_interval; d30 has only a lease.
sql($_, q{SELECT count(dlsm_enqueue('bq', 'b' || g)) FROM generate_series(1, 150) g})
  for @dbs[0 .. 28];
sql('d30', q{
SELECT dlsm_enqueue('lq', 'lstarve') AS id \gset
SELECT count(*) FROM dlsm_claim('lq', lease => '1 s', after => :id - 1);
});
my $starved = poll_within($node, 'd30',
	q{SELECT count(*) = 1 FROM reaps WHERE entity = 'lstarve'}, 60);
ok(defined $starved, 'with 29 busy databases, the lease of the 30th is reaped');
my $starve_wait = sql('d30',
	q{SELECT extract(epoch FROM reaped_at - lease_until) FROM reaps WHERE entity = 'lstarve'});
cmp_ok($starve_wait, '<=', $bound,
	"within the bound of $bound s ($starve_wait s after the lease ended)");
cmp_ok(sql('d1', q{SELECT count(*) FROM bq WHERE status = 'new'}), '>', 0,
	'while the busy databases still had work');
sql($_, q{SELECT dlsm_set_handler('bq', NULL)}) for @dbs[0 .. 28];

# ---------------------------------------------------------------------
# Databases dropped and created while the pool runs
# ---------------------------------------------------------------------
my @dropped = qw(d28 d29 d30);
my @created = qw(d31 d32 d33);
give_work($_, 'b') for @dbs[0 .. 26];
# a worker is in d28, in a handler that sleeps: DROP DATABASE sends it away
sql('d28', q{
SELECT dlsm_create_queue('slowq');
CREATE FUNCTION sleepy(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(60) $$;
SELECT dlsm_set_handler('slowq', 'sleepy');
SELECT dlsm_enqueue('slowq', 's');
});
ok( defined poll_within($node, 'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker' AND datname = 'd28' AND wait_event = 'PgSleep'}, 30),
	'a worker is in d28, in a handler that sleeps');
for my $db (@dropped)
{
	my $t0 = [gettimeofday];
	my ($ret, $out, $err) = $node->psql('postgres', "DROP DATABASE $db");
	is($ret, 0, "DROP DATABASE $db while the pool runs") or diag $err;
	cmp_ok(tv_interval($t0), '<', 10,
		sprintf('and it does not hang (%.2f s)', tv_interval($t0)));
}
sql('postgres', "CREATE DATABASE $_ TEMPLATE tmpl") for @created;
give_work($_, 'b') for @created;
@dbs = (@dbs[0 .. 26], @created);
$served = all_served_within(\@dbs, 'b', 60);
ok(defined $served, 'after the drops and creates, every database is served');
cmp_ok($served // 999, '<=', $bound, "within the bound (longest wait: " . ($served // '-') . ' s)');
is( sql('d1', q{
SELECT count(*) FROM dlsm_worker_status WHERE database IN ('d28', 'd29', 'd30')}),
	'0', 'dlsm_worker_status forgets the dropped databases');
is( sql('d1', q{
SELECT count(*) FROM pg_stat_activity
 WHERE backend_type = 'dlsm worker'
   AND datid NOT IN (SELECT oid FROM pg_database)}),
	'0', 'no worker is attached to a dropped database');

# ---------------------------------------------------------------------
# One worker: every database is still served in turn
# ---------------------------------------------------------------------
sql('postgres', q{ALTER SYSTEM SET dlsm.max_workers = 1; SELECT pg_reload_conf()});
$node->wait_for_log(
	qr/dlsm workers take turns\n.*DETAIL:  3[01] databases may have dlsm, and "dlsm.max_workers" is 1/,
	$offset);
pass('the launcher says one worker takes turns');
give_work($_, 'c') for @dbs;
($longest, $waiting, $most) =
  split /\|/, sql('d1', q{SELECT extract(epoch FROM longest), waiting, most_workers FROM sample_pool(10)});
$served = all_served_within(\@dbs, 'c', 90);
ok(defined $served, 'one worker: every database is served');
cmp_ok($served // 999, '<=', 30,
	'within the bound of 30 s (longest wait: ' . ($served // '-') . ' s)');
cmp_ok($most, '<=', 1, "never more than one worker at once ($most)");

# ---------------------------------------------------------------------
# A visit longer than the bound: the others are late, said once
# ---------------------------------------------------------------------
sql('d1', q{
SELECT dlsm_create_queue('sq');
CREATE FUNCTION slow(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(4) $$;
SELECT dlsm_set_handler('sq', 'slow');
});
$offset = -s $node->logfile;
sql('postgres',
	q{ALTER SYSTEM SET dlsm.databases = 'd1,d2,d3'; SELECT pg_reload_conf()});
ok( defined poll_within($node, 'd1', q{
SELECT count(*) = 3 FROM dlsm_worker_status WHERE database ~ '^d[0-9]+$'}, 30),
	'dlsm.databases = d1,d2,d3: the pool serves those three');
sql('d1', q{SELECT dlsm_enqueue('sq', 's1')});
ok( defined poll_within($node, 'd2', q{
SELECT count(*) = 2 FROM dlsm_worker_status
 WHERE database IN ('d2', 'd3') AND state = 'waiting for a worker'
   AND last_pass_age > interval '3 s'}, 30),
	'while d1\'s visit lasts 4 s, d2 and d3 wait longer than their bound of 3 s');
$node->wait_for_log(
	qr/database "d3" waited \d+ ms for a dlsm worker, longer than its bound\n.*DETAIL:  Each database should be visited at least every 3000 ms, with "dlsm.max_workers" at 1\./,
	$offset);
pass('the log says so');
ok( defined poll_within($node, 'd2', q{
SELECT count(*) = 0 FROM dlsm_worker_status
 WHERE database IN ('d1', 'd2', 'd3') AND state = 'waiting for a worker'}, 30),
	'then they are served again');
sql('d1', q{SELECT dlsm_set_handler('sq', NULL)});
sleep 3;
my $log = slurp_file($node->logfile, $offset);
my @late = $log =~ /(database "d2" waited \d+ ms for a dlsm worker)/g;
is(scalar @late, 1, 'said once for d2, not at every pass');

# three workers for three databases: one each again
sql('postgres', q{ALTER SYSTEM SET dlsm.max_workers = 3; SELECT pg_reload_conf()});
$node->wait_for_log(
	qr/each database with dlsm has a dlsm worker of its own again/, $offset);
pass('with as many workers as databases, each has its own again');
ok( defined poll_within($node, 'd1', q{
SELECT count(*) = 3 FROM dlsm_worker_status
 WHERE database IN ('d1', 'd2', 'd3') AND state = 'serving'}, 30),
	'and the three are served at once');
my $pids = sql('d1', q{SELECT string_agg(pid::text, ',' ORDER BY database)
	FROM dlsm_worker_status WHERE database IN ('d1', 'd2', 'd3')});
sleep 3;
is( sql('d1', q{SELECT string_agg(pid::text, ',' ORDER BY database)
	FROM dlsm_worker_status WHERE database IN ('d1', 'd2', 'd3')}),
	$pids, 'by long-lived workers (the same ones 3 s later)');

# ---------------------------------------------------------------------
# No background worker process free: every database waits, said once
# ---------------------------------------------------------------------
# the launcher and the logical replication launcher take both processes
sql('postgres', q{ALTER SYSTEM SET dlsm.databases = ''});
$node->append_conf('postgresql.conf', 'max_worker_processes = 2');
$offset = -s $node->logfile;
$node->restart;
ok( defined poll_within($node, 'd1', q{
SELECT count(*) = 30 FROM dlsm_worker_status
 WHERE database ~ '^d[0-9]+$' AND state = 'waiting for a worker'}, 60),
	'no process free: every one of the 30 databases reports waiting for a worker');
is( sql('d1', q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'}),
	'0', 'and no worker runs');
$node->wait_for_log(
	qr/could not start dlsm worker for database "d33"/, $offset);
sleep 6;    # the launcher tries again meanwhile

# waiting claims need no worker: the enqueue's commit wakes them
my $waiter = $node->background_psql('d1');
$waiter->query_safe(q{SELECT dlsm_create_queue('wq')});
$waiter->query_until(qr/waiting/, q{
\echo waiting
SELECT entity FROM dlsm_claim('wq', wait => '60 s');
\echo claimed
});
my $t0 = [gettimeofday];
sql('d1', q{SELECT dlsm_enqueue('wq', 'w1')});
my $claimed = $waiter->query_until(qr/claimed/, '');
my $woken_s = tv_interval($t0);
like($claimed, qr/^w1$/m, 'without any worker, a waiting claim gets the request enqueued');
cmp_ok($woken_s, '<', 10, sprintf('woken by the commit, not by its wait running out (%.2f s)', $woken_s));
$waiter->quit;

$log = slurp_file($node->logfile, $offset);
my @said = $log =~ /(could not start dlsm worker for database "d5")/g;
is(scalar @said, 1, 'the log says it once per database, not at every pass');
like($log,
	qr/could not start dlsm worker for database "d5"\n.*DETAIL:  The database waits for a worker/,
	'with a detail saying the database waits');

$node->stop;
done_testing();
