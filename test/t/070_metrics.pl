# Copyright (c) 2026, dlsm developers
#
# Prometheus metrics: the exporter teams run (prometheus-postgres-exporter)
# with examples/monitoring/dlsm-queries.yaml, against a cluster where this
# test enqueued, claimed, settled, retried, let leases expire and took a
# named lock with a waiter in line; /metrics is scraped over HTTP and each
# metric family's values are checked against what the test did.  The alert
# rules of examples/monitoring/dlsm-alerts.yml pass promtool check rules,
# and their unit tests (dlsm-alerts.test.yml) promtool test rules.
# The exporter connects as a role with pg_monitor and SELECT on two of the
# three queues, as README's "Monitoring" sets it up; a fourth queue it may
# read lies in a schema it may not use, and is left out without an error.
use strict;
use warnings;

use HTTP::Tiny;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $exporter_bin = 'prometheus-postgres-exporter';
my $queries = "$ENV{TESTDIR}/examples/monitoring/dlsm-queries.yaml";
my $alerts = "$ENV{TESTDIR}/examples/monitoring/dlsm-alerts.yml";
my $alert_tests = "$ENV{TESTDIR}/examples/monitoring/dlsm-alerts.test.yml";

# test/setup.sh installs the exporter (and promtool)
plan skip_all => "$exporter_bin is not installed"
  unless system('sh', '-c', "command -v $exporter_bin >/dev/null") == 0;

# ---------------------------------------------------------------------
# The alert rules
# ---------------------------------------------------------------------
SKIP:
{
	skip 'promtool is not installed (Debian package prometheus)', 2
	  unless system('sh', '-c', 'command -v promtool >/dev/null') == 0;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'promtool', 'check', 'rules', $alerts ],
		'>', \$out, '2>', \$err);
	my ($rules) = $out =~ /SUCCESS: (\d+) rules found/;
	ok($ok && $rules, 'promtool check rules accepts dlsm-alerts.yml (' . ($rules // 0) . ' rules)')
	  or diag "$out$err";
	($out, $err) = ('', '');
	$ok = IPC::Run::run([ 'promtool', 'test', 'rules', $alert_tests ],
		'>', \$out, '2>', \$err);
	ok($ok && $out =~ /SUCCESS/,
		'promtool test rules: each alert fires on its case and stays silent on the others')
	  or diag "$out$err";
}

# The reaper runs only when told: expired leases stay until the test asks.
my $node = dlsm_node('metrics', "dlsm.reap_interval = '1h'\n");
ok(install_dlsm($node), 'the worker serves postgres');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# ---------------------------------------------------------------------
# What the exporter will see
# ---------------------------------------------------------------------
sql(q{
CREATE ROLE dlsm_exporter LOGIN IN ROLE pg_monitor;
SELECT dlsm_create_queue('jobs');
SELECT dlsm_create_queue('secret');
INSERT INTO secret (entity) VALUES ('hidden');
CREATE SCHEMA sheets;
CREATE TABLE sheets.request_queue (
	request_queue_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	request_status text NOT NULL DEFAULT 'new',
	request_type text NOT NULL DEFAULT 'create',
	spreadsheet_id text NOT NULL,
	process_id uuid);
SELECT dlsm_register_queue('sheets.request_queue', id => 'request_queue_id',
	status => 'request_status', kind => 'request_type', entity => 'spreadsheet_id');
GRANT USAGE ON SCHEMA sheets TO dlsm_exporter;
GRANT SELECT ON jobs, sheets.request_queue TO dlsm_exporter;
-- SELECT on a queue, but no USAGE on its schema
CREATE SCHEMA locked;
SELECT dlsm_create_queue('locked.q');
INSERT INTO locked.q (entity) VALUES ('l1');
GRANT SELECT ON locked.q TO dlsm_exporter;
-- a queue never analysed (autovacuum kept away): its plans guess
SELECT dlsm_create_queue('unanalysed');
ALTER TABLE unanalysed SET (autovacuum_enabled = off);
GRANT SELECT ON unanalysed TO dlsm_exporter;
});

# jobs: 50 creates; 30 complete, 4 error, 2 claimed with a lease of 1 s,
# 3 with a lease of an hour, one settled 'retry' and claimed again
# (attempts 2), 10 left ready, 2 more delayed by an hour: one enqueued so,
# one claimed and settled 'retry' an hour ahead (new, attempts 1).
sql(q{INSERT INTO jobs (entity) SELECT 'e' || g FROM generate_series(1, 50) g});
sql(q{SELECT count(dlsm_settle('jobs', c.process_id))
	FROM (SELECT DISTINCT process_id FROM dlsm_claim('jobs', units => 30)) c});
sql(q{SELECT count(dlsm_settle('jobs', c.process_id, 'error', 'it failed'))
	FROM (SELECT DISTINCT process_id FROM dlsm_claim('jobs', units => 4)) c});
sql(q{SELECT count(*) FROM dlsm_claim('jobs', lease => '1 second', units => 2)});
sql(q{SELECT count(*) FROM dlsm_claim('jobs', lease => '1 hour', units => 3)});
sql(q{SELECT dlsm_settle('jobs', c.process_id, 'retry', retry_after => '0')
	FROM dlsm_claim('jobs') c});
sql(q{SELECT count(*) FROM dlsm_claim('jobs', lease => '1 hour')});
is(sql(q{SELECT count(*) FROM jobs WHERE status = 'in-progress' AND attempts = 2}),
	'1', 'the retried request is claimed a second time');
sql(q{INSERT INTO jobs (entity, run_at) VALUES ('d1', now() + '1 hour')});
sql(q{INSERT INTO jobs (entity) VALUES ('d2')});
is(sql(q{SELECT dlsm_settle('jobs', c.process_id, 'retry', retry_after => '1 hour')
	FROM dlsm_claim('jobs', after => (SELECT id - 1 FROM jobs WHERE entity = 'd2')) c}),
	'1', 'd2 claimed and settled as a retry an hour ahead');

# the registered queue: 3 creates, one claimed
sql(q{INSERT INTO sheets.request_queue (spreadsheet_id) VALUES ('s1'), ('s2'), ('s3')});
sql(q{SELECT count(*) FROM dlsm_claim('sheets.request_queue', lease => '1 hour')});

# the statistics the estimates read: once every writer's counts reached
# the cumulative statistics (a backend sends them as it exits), ANALYZE
ok( $node->poll_query_until('postgres',
		q{SELECT pg_stat_get_tuples_inserted('jobs'::regclass) = 52
		     AND pg_stat_get_tuples_inserted('sheets.request_queue'::regclass) = 3}),
	'the writers\' counts reached the statistics');
sql('ANALYZE jobs; ANALYZE sheets.request_queue');
is( sql(q{SELECT string_agg(status || ' ' || n, ', ' ORDER BY status)
	FROM (SELECT status, count(*) n FROM jobs GROUP BY status) s}),
	'complete 30, error 4, in-progress 6, new 12',
	'jobs holds what the test did');
usleep(1_200_000);    # the 1-second leases expire

# a named lock held with a lease, and a session waiting in line for it
sql(q{SELECT dlsm_try_lock('report', lease => '1 hour')});
my ($wout, $werr) = ('', '');
my $waiter = IPC::Run::start(
	[ 'psql', '-XAtq', '-d', $node->connstr('postgres'),
	  '-c', q{SELECT dlsm_try_lock('report', wait => '5 min')} ],
	'>', \$wout, '2>', \$werr);
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM dlsm_locks WHERE scope = 'waiting'}),
	'a session waits in line for the named lock');

# ---------------------------------------------------------------------
# The exporter, on a loopback port
# ---------------------------------------------------------------------
my $port = PostgreSQL::Test::Cluster::get_free_port();
my ($eout, $eerr) = ('', '');
my $exporter;
{
	local $ENV{DATA_SOURCE_NAME} = sprintf(
		'host=%s port=%d user=dlsm_exporter dbname=postgres sslmode=disable',
		$node->host, $node->port);
	$exporter = IPC::Run::start(
		[ $exporter_bin, "--web.listen-address=127.0.0.1:$port",
		  "--extend.query-path=$queries", '--log.level=warn' ],
		'>', \$eout, '2>', \$eerr);
}

my $http = HTTP::Tiny->new(timeout => 30);

# scrape: /metrics as { name => [ [ {labels}, value ], ... ] }
sub scrape
{
	for (1 .. 100)
	{
		my $res = $http->get("http://127.0.0.1:$port/metrics");
		if ($res->{success} && $res->{content} =~ /^dlsm_worker_up/m)
		{
			my %m;
			for my $line (split /\n/, $res->{content})
			{
				next if $line =~ /^#/;
				my ($name, $labels, $value) =
				  $line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/
				  or next;
				my %l = ($labels // '') =~ /(\w+)="((?:[^"\\]|\\.)*)"/g;
				push @{ $m{$name} }, [ \%l, $value ];
			}
			return \%m;
		}
		usleep(200_000);
	}
	diag "exporter: $eout$eerr";
	return {};
}

# value NAME LABEL => VALUE...: the one sample of NAME with those labels
sub value
{
	my ($m, $name, %want) = @_;
	my @hits = grep {
		my $l = $_->[0];
		!grep { ($l->{$_} // '') ne $want{$_} } keys %want
	} @{ $m->{$name} // [] };
	return @hits == 1 ? $hits[0][1] : undef;
}

my $m = scrape();
ok(%$m, 'the exporter serves /metrics');
is(value($m, 'pg_up'), '1', 'the exporter reaches the cluster (pg_up 1)');
is(value($m, 'pg_exporter_user_queries_load_error', filename => $queries),
	'0', 'the exporter loads dlsm-queries.yaml without error');
unlike($eerr, qr/error/i, 'the exporter logs no error') or diag $eerr;

# per queue and status
my %q = (datname => 'postgres', queue => 'jobs');
my %want = (new => 12, in_progress => 6, complete => 30, error => 4);
for my $s (sort keys %want)
{
	is(value($m, 'dlsm_queue_requests_by_status', %q, status => $s),
		$want{$s}, "dlsm_queue_requests_by_status{queue=jobs,status=$s} is $want{$s}");
}
my %sheets = (datname => 'postgres', queue => 'sheets.request_queue');
is(value($m, 'dlsm_queue_requests_by_status', %sheets, status => 'new'),
	'2', 'a registered queue with its own column names: 2 new');
is(value($m, 'dlsm_queue_requests_by_status', %sheets, status => 'in_progress'),
	'1', 'a registered queue with its own column names: 1 in progress');
ok(!grep({ $_->[0]{queue} eq 'secret' } @{ $m->{dlsm_queue_requests_by_status} }),
	'a queue the exporter may not read is left out');
ok(!grep({ $_->[0]{queue} eq 'locked.q' } @{ $m->{dlsm_queue_requests_by_status} })
	  && !grep({ $_->[0]{queue} eq 'locked.q' } @{ $m->{dlsm_queue_ready} }),
	'a queue in a schema the exporter may not use is left out');

# per queue
is(value($m, 'dlsm_queue_ready', %q), '10', 'dlsm_queue_ready: 10 new and due');
is(value($m, 'dlsm_queue_delayed', %q), '2', 'dlsm_queue_delayed: 2 delayed');
my $age = value($m, 'dlsm_queue_oldest_ready_age_seconds', %q);
ok(defined $age && $age >= 1 && $age < 600,
	"dlsm_queue_oldest_ready_age_seconds: the ready rows' age ($age s)");
is(value($m, 'dlsm_queue_expired_leases', %q), '2',
	'dlsm_queue_expired_leases: the 2 claims past their 1-second lease');
my $claim_age = value($m, 'dlsm_queue_oldest_claim_age_seconds', %q);
ok(defined $claim_age && $claim_age >= 1 && $claim_age < 600,
	"dlsm_queue_oldest_claim_age_seconds ($claim_age s)");
is(value($m, 'dlsm_queue_retrying', %q), '2',
	'dlsm_queue_retrying: the request claimed a second time and the retry waiting');
is(value($m, 'dlsm_queue_enqueued_total', %q), '52',
	'dlsm_queue_enqueued_total: 52 enqueued');
is(value($m, 'dlsm_queue_deleted_total', %q), '0', 'dlsm_queue_deleted_total: none');
ok(defined value($m, 'dlsm_queue_dead_tuples', %q), 'dlsm_queue_dead_tuples is there');
is(value($m, 'dlsm_queue_ready', %sheets), '2', 'the registered queue: 2 ready');
is(value($m, 'dlsm_queue_without_statistics', %q), '0',
	'dlsm_queue_without_statistics: 0 for the analysed queue');
is(value($m, 'dlsm_queue_without_statistics', datname => 'postgres', queue => 'unanalysed'),
	'1', 'dlsm_queue_without_statistics: 1 for the queue never analysed');

# the worker
my %db = (datname => 'postgres');
is(value($m, 'dlsm_worker_up', %db), '1', 'dlsm_worker_up: the worker runs');
is(value($m, 'dlsm_worker_waiting', %db), '0', 'dlsm_worker_waiting: the database does not wait for a worker');
my $pass = value($m, 'dlsm_worker_last_pass_age_seconds', %db);
ok(defined $pass && $pass >= 0 && $pass < 600, "dlsm_worker_last_pass_age_seconds ($pass s)");
is(value($m, 'dlsm_worker_reaped_total', %db), '0', 'dlsm_worker_reaped_total: nothing reaped yet');
is(value($m, 'dlsm_worker_errors_total', %db), '0', 'dlsm_worker_errors_total: 0');
is(value($m, 'dlsm_worker_last_error', %db), '0', 'dlsm_worker_last_error: none');

# named locks
is(value($m, 'dlsm_locks_held', %db), '1', 'dlsm_locks_held: 1');
is(value($m, 'dlsm_locks_leases', %db), '1', 'dlsm_locks_leases: 1');
is(value($m, 'dlsm_locks_waiters', %db), '1', 'dlsm_locks_waiters: 1');
my $wait = value($m, 'dlsm_locks_longest_wait_seconds', %db);
ok(defined $wait && $wait > 0 && $wait < 600, "dlsm_locks_longest_wait_seconds ($wait s)");

# producers that notify listeners themselves (1.6): nobody listens here
is(value($m, 'dlsm_worker_producer_notifies_total', %db), '0',
	'dlsm_worker_producer_notifies_total: 0 without a listener');
is(value($m, 'dlsm_worker_crowded_notifies_total', %db), '0',
	'dlsm_worker_crowded_notifies_total: 0');

# the shared tables (dlsm_shared_tables): the server's, in each database
is(value($m, 'dlsm_shared_table_capacity', %db, table_name => 'rates'), '16384',
	'dlsm_shared_table_capacity: 16384 rates');
my $named = value($m, 'dlsm_shared_table_used', %db, table_name => 'named-lock entries');
ok(defined $named && $named >= 1, "dlsm_shared_table_used: the lock's entries ($named)");
is(value($m, 'dlsm_shared_table_full_total', %db, table_name => 'parked groups'), '0',
	'dlsm_shared_table_full_total: no parked group left out');

# ---------------------------------------------------------------------
# After a reaping pass and the lock's release: the values follow
# ---------------------------------------------------------------------
my $before = $pass;
sql(q{NOTIFY dlsm, 'reap'});
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM jobs WHERE status = 'in-progress' AND lease_until < now()}),
	'the reaper returned the expired claims');
sql(q{SELECT dlsm_unlock(name, fence) FROM dlsm_leases WHERE name = 'report'});
$waiter->finish;

$m = scrape();
is(value($m, 'dlsm_worker_reaped_total', %db), '2', 'dlsm_worker_reaped_total: 2 leases expired and reaped');
is(value($m, 'dlsm_queue_expired_leases', %q), '0', 'dlsm_queue_expired_leases: 0 after the pass');
is(value($m, 'dlsm_queue_requests_by_status', %q, status => 'new'), '14',
	'dlsm_queue_requests_by_status{status=new}: 14 with the 2 reaped back');
is(value($m, 'dlsm_queue_requests_by_status', %q, status => 'in_progress'), '4',
	'dlsm_queue_requests_by_status{status=in_progress}: 4');
$pass = value($m, 'dlsm_worker_last_pass_age_seconds', %db);
ok(defined $pass && $pass < $before, "the last pass is younger ($pass s < $before s)");
is(value($m, 'dlsm_locks_waiters', %db), '0', 'dlsm_locks_waiters: 0 once the waiter got the lock');
is(value($m, 'dlsm_locks_longest_wait_seconds', %db), '0', 'dlsm_locks_longest_wait_seconds: 0');

$exporter->kill_kill;
$node->stop;
done_testing();
