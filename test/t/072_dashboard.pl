# Copyright (c) 2026, dlsm developers
#
# The Grafana dashboard (examples/monitoring/grafana-dashboard.json) against
# real data: a cluster with work in every state (new, in progress, complete,
# dead letters, a lease that expires and is reaped, a group at its
# concurrency limit, a handler the worker runs, a named lock) and pgbench
# enqueueing, claiming and settling; the exporter teams run
# (prometheus-postgres-exporter with dlsm-queries.yaml); and Debian's
# Prometheus, on a loopback port, with examples/monitoring/prometheus.yml
# (its target and intervals set for the test) and the alert rules.  After a
# few scrapes, every panel's query, with the dashboard's variables set to
# All, returns data through Prometheus's HTTP API, and the panels that
# show what the test did return a value other than 0.  The variables'
# queries return the database and the queues.  promtool accepts
# prometheus.yml and the rules; Prometheus evaluates each rule without error.
use strict;
use warnings;

use File::Path qw(make_path);
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $dir = "$ENV{TESTDIR}/examples/monitoring";
my $dashboard_file = "$dir/grafana-dashboard.json";
my $prom_example = "$dir/prometheus.yml";
my $queries = "$dir/dlsm-queries.yaml";
my $alerts = "$dir/dlsm-alerts.yml";

# test/setup.sh installs them (Debian packages prometheus and
# prometheus-postgres-exporter; pgbench comes with PostgreSQL)
for my $bin (qw(prometheus promtool prometheus-postgres-exporter pgbench))
{
	plan skip_all => "$bin is not installed"
	  unless system('sh', '-c', "command -v $bin >/dev/null") == 0;
}

sub run_out
{
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([@_], '>', \$out, '2>', \$err);
	return ($ok, "$out$err");
}

# ---------------------------------------------------------------------
# The files
# ---------------------------------------------------------------------
my $dashboard = eval {
	local $/;
	open my $f, '<', $dashboard_file or die "$dashboard_file: $!";
	decode_json(<$f>);
};
ok($dashboard, 'grafana-dashboard.json is JSON') or diag $@;
is($dashboard->{schemaVersion}, 39, 'schemaVersion 39');
my %vars = map { $_->{name} => $_ } @{ $dashboard->{templating}{list} };
is($vars{datasource}{type} . '/' . $vars{datasource}{query},
	'datasource/prometheus', 'a Prometheus data source variable');
ok($vars{queue} && $vars{queue}{type} eq 'query',
	'a queue variable from the label values');

# every panel, those inside rows too
my @panels;
for my $p (@{ $dashboard->{panels} })
{
	push @panels, $p;
	push @panels, @{ $p->{panels} // [] };
}
my @graphs = grep { $_->{type} ne 'row' } @panels;
my %ids;
$ids{ $_->{id} }++ for @panels;
ok(!grep({ $_ > 1 } values %ids), 'panel ids are unique');
ok(!grep({ !@{ $_->{targets} // [] } } @graphs), 'every panel has a query');
ok( !grep({ ($_->{datasource}{uid} // '') ne '${datasource}' }
		@graphs, map { @{ $_->{targets} } } @graphs),
	'every panel and query uses the data source variable');

my ($ok, $out) = run_out('promtool', 'check', 'config', $prom_example);
ok($ok && $out =~ /SUCCESS: 1 rule files found/,
	'promtool check config accepts prometheus.yml (and the rules it lists)')
  or diag $out;
($ok, $out) = run_out('promtool', 'check', 'rules', $alerts);
ok($ok && $out =~ /SUCCESS: (\d+) rules found/, 'promtool check rules accepts dlsm-alerts.yml')
  or diag $out;

# ---------------------------------------------------------------------
# The cluster, with work in every state
# ---------------------------------------------------------------------
my $node = dlsm_node('dashboard');
ok(install_dlsm($node), 'the worker serves postgres');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
SELECT dlsm_create_queue('jobs');
SELECT dlsm_create_queue('orders');
SELECT dlsm_create_queue('mail');
SELECT dlsm_create_queue('tenants');
CREATE FUNCTION send_mail(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.005); END $$;
SELECT dlsm_set_handler('mail', 'send_mail');
CREATE ROLE dlsm_exporter LOGIN IN ROLE pg_monitor;
GRANT SELECT ON jobs, orders, mail, tenants TO dlsm_exporter;
});

# jobs: 20 creates; 8 complete, 3 error (dead letters), 2 in progress
# with a lease of an hour, 7 new
sql(q{SELECT count(dlsm_enqueue('jobs', 'j' || g)) FROM generate_series(1, 20) g});
sql(q{SELECT count(dlsm_settle('jobs', c.process_id))
	FROM (SELECT DISTINCT process_id FROM dlsm_claim('jobs', units => 8)) c});
sql(q{SELECT count(dlsm_settle('jobs', c.process_id, 'error', 'it failed'))
	FROM (SELECT DISTINCT process_id FROM dlsm_claim('jobs', units => 3)) c});
sql(q{SELECT count(*) FROM dlsm_claim('jobs', lease => '1 hour', units => 2)});
# the error estimate follows ANALYZE's shares of the status column
sql('ANALYZE jobs');

# tenants: group acme limited to 2 units at once, 3 enqueued, 2 claimed:
# the group is at its limit, its third request waits
sql(q{SELECT count(dlsm_enqueue('tenants', 't' || g, group_key => 'acme'))
	FROM generate_series(1, 3) g});
sql(q{SELECT dlsm_set_limit('tenants', 'acme', concurrency => 2)});
is(sql(q{SELECT count(*) FROM dlsm_claim('tenants', lease => '1 hour', units => 10)}),
	'2', 'tenants: the group acme is at its limit of 2');

# a named lock held with a lease
sql(q{SELECT dlsm_try_lock('nightly-report', lease => '1 hour')});

# ---------------------------------------------------------------------
# Load: pgbench enqueues into orders and mail; claims orders and settles
# them (one in ten as error) or leaves the claim to expire (a 1-second
# lease the reaper returns)
# ---------------------------------------------------------------------
my $tmp = $PostgreSQL::Test::Utils::tmp_check;
my $load_script = "$tmp/dashboard_load.sql";
open my $lf, '>', $load_script or die "$load_script: $!";
print $lf <<'SQL';
\set r random(1, 10)
SELECT dlsm_enqueue('orders', 'o' || :client_id || '-' || random());
\if :r = 1
SELECT count(*) FROM dlsm_claim('orders', lease => '1 second');
\elif :r = 2
SELECT count(dlsm_settle('orders', c.process_id, 'error', 'load'))
  FROM (SELECT DISTINCT process_id FROM dlsm_claim('orders')) c;
\else
SELECT count(dlsm_settle('orders', c.process_id))
  FROM (SELECT DISTINCT process_id FROM dlsm_claim('orders')) c;
\endif
\if :r <= 3
SELECT dlsm_enqueue('mail', 'm' || random());
\endif
SELECT pg_sleep(0.02);
SQL
close $lf;
my ($bout, $berr) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-T', '50', '-f', $load_script,
	  $node->connstr('postgres') ],
	'>', \$bout, '2>', \$berr);
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) > 20 FROM orders WHERE status IN ('complete', 'error')}),
	'the load settles orders');
sql('ANALYZE orders');

# ---------------------------------------------------------------------
# The exporter and Prometheus, on loopback ports
# ---------------------------------------------------------------------
my $eport = PostgreSQL::Test::Cluster::get_free_port();
my ($eout, $eerr) = ('', '');
my $exporter;
{
	local $ENV{DATA_SOURCE_NAME} = sprintf(
		'host=%s port=%d user=dlsm_exporter dbname=postgres sslmode=disable',
		$node->host, $node->port);
	$exporter = IPC::Run::start(
		[ 'prometheus-postgres-exporter', "--web.listen-address=127.0.0.1:$eport",
		  "--extend.query-path=$queries", '--log.level=warn' ],
		'>', \$eout, '2>', \$eerr);
}

# prometheus.yml as the example has it, with the test's target, a scrape
# every 2 s and the rules' full path
my $pdir = "$tmp/prometheus";
make_path("$pdir/data");
my $config = slurp_file($prom_example);
my $n = 0;
$n += $config =~ s/targets: \['127\.0\.0\.1:9187'\]/targets: ['127.0.0.1:$eport']/;
$n += $config =~ s/scrape_interval: 15s/scrape_interval: 2s/;
$n += $config =~ s/evaluation_interval: 15s/evaluation_interval: 2s/;
$n += $config =~ s/scrape_timeout: 10s/scrape_timeout: 2s/;
$n += $config =~ s/- dlsm-alerts\.yml/- $alerts/;
is($n, 5, 'prometheus.yml: target, intervals and rules set for the test');
open my $cf, '>', "$pdir/prometheus.yml" or die $!;
print $cf $config;
close $cf;

my $pport = PostgreSQL::Test::Cluster::get_free_port();
my ($pout, $perr) = ('', '');
my $prometheus = IPC::Run::start(
	[ 'prometheus', "--config.file=$pdir/prometheus.yml",
	  "--storage.tsdb.path=$pdir/data", "--web.listen-address=127.0.0.1:$pport",
	  '--log.level=warn' ],
	'>', \$pout, '2>', \$perr);

my $http = HTTP::Tiny->new(timeout => 10);

# query EXPR: the result list of an instant query (undef: the query failed)
my $query_error;
sub query
{
	my ($expr) = @_;
	my $res = $http->get("http://127.0.0.1:$pport/api/v1/query?"
		  . $http->www_form_urlencode({ query => $expr }));
	$query_error = "$res->{status} $res->{content}";
	return undef unless $res->{success};
	my $body = eval { decode_json($res->{content}) } or return undef;
	return undef unless $body->{status} eq 'success';
	return $body->{data}{result};
}

# until: poll CODE every 0.5 s for up to SECONDS
sub until_true
{
	my ($seconds, $code) = @_;
	my $end = time + $seconds;
	while (time < $end)
	{
		return 1 if $code->();
		usleep(500_000);
	}
	return 0;
}

ok( until_true(30, sub {
			my $r = query('up{job="dlsm"} == 1');
			$r && @$r == 1;
		}),
	'Prometheus scrapes the exporter (up 1)')
  or diag "prometheus: $pout$perr\nexporter: $eout$eerr";
ok( until_true(30, sub {
			my $r = query('count_over_time(dlsm_worker_up[5m])');
			$r && @$r && $r->[0]{value}[1] >= 4;
		}),
	'four scrapes of the dlsm metrics');

# ---------------------------------------------------------------------
# Every panel's query returns data
# ---------------------------------------------------------------------
# The variables as Grafana substitutes them with All selected (allValue),
# and $__rate_interval as Grafana computes it for a 15 s scrape.
sub substitute
{
	my ($expr) = @_;
	$expr =~ s/\$\{?(?:datname|queue)\}?/.*/g;
	$expr =~ s/\$__rate_interval/1m/g;
	return $expr;
}

# A name that is not a metric gives no data: the checks below can fail.
my $r = query('sum by (queue) (dlsm_queue_no_such_metric{queue=~".*"})');
ok($r && !@$r, 'a metric the exporter does not emit returns no data');

# Panels that show 0 in this run: nothing waits, no error.
my %may_be_zero = map { $_ => 1 } (
	'Expired leases awaiting the reaper',
	'Waiting for a worker',
	'Worker last error');

for my $p (@graphs)
{
	my ($nonempty, $nonzero, @empty) = (1, 0);
	for my $t (@{ $p->{targets} })
	{
		my $expr = substitute($t->{expr});
		if ($expr =~ /\$/)
		{
			fail("$p->{title}: $t->{refId}: a variable the test does not know: $expr");
			next;
		}
		my $res = query($expr);
		if (!$res || !@$res)
		{
			$nonempty = 0;
			push @empty, "$t->{refId}: $expr" . ($res ? '' : " ($query_error)");
			next;
		}
		$nonzero ||= grep { $_->{value}[1] != 0 } @$res;
	}
	ok($nonempty, "panel \"$p->{title}\": every query returns data")
	  or diag join("\n", 'no data:', @empty);
	ok($nonzero, "panel \"$p->{title}\": a value other than 0")
	  unless $may_be_zero{ $p->{title} };
}

# the variables' queries: label_values(SELECTOR, LABEL)
for my $v (qw(datname queue))
{
	my ($sel, $label) =
	  $vars{$v}{definition} =~ /^label_values\((.*),\s*(\w+)\)$/;
	my $res = query(substitute("count by ($label) ($sel)"));
	my @values = sort map { $_->{metric}{$label} } @{ $res // [] };
	my $want = $v eq 'datname' ? 'postgres' : 'jobs mail orders tenants';
	is("@values", $want, "variable $v lists $want");
}

# what the test did, as the panels show it
sub one
{
	my $res = query($_[0]);
	return $res && @$res == 1 ? $res->[0]{value}[1] : undef;
}
is(one('dlsm_queue_groups_at_limit{queue="tenants"}'), '1',
	'groups at their limit: tenants 1 (acme)');
is(one('dlsm_queue_groups_at_limit{queue="jobs"}'), '0',
	'groups at their limit: jobs 0 (no limit)');
is(one('dlsm_queue_requests_by_status{queue="jobs",status="error"}'), '3',
	'dead letters: jobs 3');
ok(one('increase(dlsm_worker_handled_total[5m])') > 0, 'the worker ran the mail handler');

# Prometheus evaluates every alert rule without error
ok( until_true(20, sub {
			my $res = $http->get("http://127.0.0.1:$pport/api/v1/rules");
			return 0 unless $res->{success};
			my @rules = map { @{ $_->{rules} } }
			  @{ decode_json($res->{content})->{data}{groups} };
			@rules == 11 && !grep { $_->{health} ne 'ok' } @rules;
		}),
	'Prometheus loads the 11 alert rules and evaluates each without error');

$load->kill_kill;
$prometheus->kill_kill;
$exporter->kill_kill;
unlike($eerr, qr/level=error/, 'the exporter logs no error') or diag $eerr;
$node->stop;
done_testing();
