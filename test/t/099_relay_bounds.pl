# Copyright (c) 2026, dlsm developers
#
# The relay's bounds (issue 40, finding 3): a relay is a server process,
# so what any role does may not start one that outlives its reason, holds
# a template database or takes a background worker process the launcher
# needs.  With dlsm.notify_relay on in postgresql.conf (as issue 43 would
# have it by default) and alice, a role without attributes:
#   - alice may not SET dlsm.notify_relay (42501): it is a superuser's
#     setting;
#   - alice LISTENs and NOTIFYs in template1, and in a database that no
#     longer allows connections: no relay starts there, and once she left,
#     bob (CREATEDB, not the owner of template1) makes a database from it;
#   - a relay terminated (pg_terminate_backend) does not come back by
#     itself; the next enqueue is notified by its producer and starts a
#     relay again, which notifies the one after;
#   - a relay with work stays; one without work for dlsm.relay_idle_timeout
#     exits, and is not restarted;
#   - with max_worker_processes = 8 and alice listening in 6 databases,
#     relays run in at most dlsm.max_relays of them (the log says once per
#     database that the others have none), dlsm's worker for another
#     database starts and reaps an expired lease there within 30 s, and a
#     producer there notifies its listener itself; dlsm.max_relays
#     lowered by a reload, the relays past it leave.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('relay_bounds', qq{
dlsm.notify_relay = on
dlsm.relay_idle_timeout = '3s'
max_worker_processes = 8
dlsm.reap_interval = '500ms'
});
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql($_[1] // 'postgres', $_[0]); }

my $relays_in = q{SELECT count(*) FROM pg_stat_activity
	WHERE backend_type = 'dlsm relay' AND datname = '%s'};

# Wait up to $seconds for $n relays in $db.
sub relays_become
{
	my ($db, $n, $seconds) = @_;
	return defined poll_within($node, 'postgres',
		'SELECT (' . sprintf($relays_in, $db) . ") = $n", $seconds);
}

# Does query (a count) stay 0 for $seconds?  Polls; false at the first
# count that is not.
sub stays_zero
{
	my ($db, $query, $seconds) = @_;
	my $start = [gettimeofday];
	while (tv_interval($start) < $seconds)
	{
		return 0 if sql($query, $db) ne '0';
		usleep(100_000);
	}
	return 1;
}

# The notifications of $channel the session got, with the pids that sent them.
sub notified
{
	my ($bg, $channel) = @_;
	my $out = $bg->query('SELECT 1');
	return ($out =~ /Asynchronous notification "$channel" received from server process with PID (\d+)/g);
}

# Wait up to $seconds for a notification; returns the sender pids.
sub wait_notified
{
	my ($bg, $channel, $seconds) = @_;
	my $start = [gettimeofday];
	while (tv_interval($start) < $seconds)
	{
		my @pids = notified($bg, $channel);
		return @pids if @pids;
		usleep(10_000);
	}
	return ();
}

sql(q{CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN CREATEDB});

# ---------------------------------------------------------------------
# A superuser's setting.
# ---------------------------------------------------------------------
my ($ret, $out, $err) = $node->psql('template1',
	'SET dlsm.notify_relay = on', extra_params => [ '-U', 'alice' ]);
like($err, qr/permission denied to set parameter "dlsm.notify_relay"/,
	'alice may not set dlsm.notify_relay');

# ---------------------------------------------------------------------
# template1, and a database that no longer allows connections.
# ---------------------------------------------------------------------
my $t1 = $node->background_psql('template1', extra_params => [ '-U', 'alice' ]);
$t1->query_safe('LISTEN x');
$t1->query_safe('NOTIFY x');
is(sql('SHOW dlsm.notify_relay', 'template1'), 'on', 'the relay is on in template1');
ok(stays_zero('postgres', sprintf($relays_in, 'template1'), 3),
	'a LISTEN and a NOTIFY in template1 start no relay there');
$t1->quit;

sql(q{CREATE DATABASE closed TEMPLATE template0});
my $closed = $node->background_psql('closed', extra_params => [ '-U', 'alice' ]);
sql(q{ALTER DATABASE closed WITH ALLOW_CONNECTIONS false});
$closed->query_safe('LISTEN x');
$closed->query_safe('NOTIFY x');
ok(stays_zero('postgres', sprintf($relays_in, 'closed'), 3),
	'nor in a database that does not allow connections');
$closed->quit;

($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE copy1 TEMPLATE template1',
	extra_params => [ '-U', 'bob' ]);
is($ret, 0, 'bob (CREATEDB) makes a database from template1 once alice left') or diag $err;
is(sql(q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm relay'
	AND datname IN ('template1', 'template0', 'closed')}), '0',
	'no relay holds a template or a closed database');

# ---------------------------------------------------------------------
# A relay terminated stays away until a producer needs one.
# ---------------------------------------------------------------------
sql(q{CREATE DATABASE app TEMPLATE template0});
sql(q{CREATE EXTENSION dlsm; SELECT dlsm_create_queue('rq');
	GRANT USAGE ON SCHEMA public TO alice;
	GRANT SELECT ON rq TO alice}, 'app');
my $listener = $node->background_psql('app', extra_params => [ '-U', 'alice' ]);
$listener->query_safe('LISTEN rq');
ok(relays_become('app', 1, 30),
	'a LISTEN in app starts its relay');
my $producer = $node->background_psql('app');
my $producer_pid = $producer->query_safe('SELECT pg_backend_pid()');
my $relay_pid = sql(sprintf($relays_in, 'app') =~ s/count\(\*\)/pid/r);
$producer->query_safe(q{SELECT dlsm_enqueue('rq', 'one')});
is_deeply([ wait_notified($listener, 'rq', 10) ], [$relay_pid],
	'the relay notifies an enqueue');

sql(qq{SELECT pg_terminate_backend($relay_pid)});
ok(relays_become('app', 0, 30),
	'the relay terminated is gone');
ok(stays_zero('postgres', sprintf($relays_in, 'app'), 4),
	'... and does not come back by itself (4 s)');
ok(slurp_file($node->logfile) !~
	  qr/background worker "dlsm relay[^"]*" \(PID $relay_pid\) exited with exit code 1/,
	'its exit was a normal one');

$producer->query_safe(q{SELECT dlsm_enqueue('rq', 'two')});
is_deeply([ wait_notified($listener, 'rq', 10) ], [$producer_pid],
	'the next enqueue is notified by its producer');
ok(relays_become('app', 1, 30),
	'... and starts a relay again');
$relay_pid = sql(sprintf($relays_in, 'app') =~ s/count\(\*\)/pid/r);
$producer->query_safe(q{SELECT dlsm_enqueue('rq', 'three')});
is_deeply([ wait_notified($listener, 'rq', 10) ], [$relay_pid],
	'which notifies the enqueue after');

# ---------------------------------------------------------------------
# Idle: a relay with work stays, one without exits (3 s here).
# ---------------------------------------------------------------------
my $start = [gettimeofday];
my ($busy, @senders) = (0);
while (tv_interval($start) < 6)
{
	$busy++;
	$producer->query_safe(qq{SELECT dlsm_enqueue('rq', 'busy$busy')});
	push @senders, wait_notified($listener, 'rq', 10);
	usleep(300_000);
}
is(scalar(@senders), $busy, "each of $busy enqueues every 0.3 s is notified");
is_deeply([ grep { $_ ne $relay_pid } @senders ], [],
	'by the same relay: one with work stays over 6 s (idle timeout 3 s)');
ok(relays_become('app', 0, 60),
	'once without work it exits');
ok(stays_zero('postgres', sprintf($relays_in, 'app'), 4),
	'... and is not restarted (4 s)');
$producer->query_safe(q{SELECT dlsm_enqueue('rq', 'four')});
is_deeply([ wait_notified($listener, 'rq', 10) ], [$producer_pid],
	'the next enqueue is notified by its producer');
$listener->quit;
$producer->quit;

# ---------------------------------------------------------------------
# Many databases with listeners, max_worker_processes = 8.
# ---------------------------------------------------------------------
$node->psql('postgres', q{ALTER SYSTEM SET dlsm.relay_idle_timeout = '10min'});
$node->reload;
my $offset = -s $node->logfile;
my @listeners;
for my $i (1 .. 6)
{
	sql(qq{CREATE DATABASE r$i TEMPLATE template0});
	my $bg = $node->background_psql("r$i", extra_params => [ '-U', 'alice' ]);
	$bg->query_safe('LISTEN x');
	push @listeners, $bg;
}
sql(q{CREATE DATABASE lease TEMPLATE template0});
sql(q{CREATE EXTENSION dlsm; SELECT dlsm_create_queue('lq');
	GRANT USAGE ON SCHEMA public TO alice;
	GRANT SELECT ON lq TO alice}, 'lease');
my $relays = q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm relay'};
my (undef, $max_relays) = $node->psql('postgres', 'SHOW dlsm.max_relays');
$max_relays ||= 2;
note "relays running: " . sql($relays) . ", dlsm.max_relays $max_relays";
cmp_ok(sql($relays), '<=', $max_relays, "at most dlsm.max_relays ($max_relays) relays run");

ok(defined poll_within($node, 'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE backend_type = 'dlsm worker' AND datname = 'lease'}, 60),
	'dlsm\'s worker for another database starts');
my $claimed = sql(q{
SELECT dlsm_enqueue('lq', 'e1') AS id \gset
SELECT entity FROM dlsm_claim('lq', lease => '1 s', after => :id - 1);
}, 'lease');
is($claimed, 'e1', 'a claim there with a lease of 1 s');
my $took = poll_within($node, 'lease', q{SELECT status = 'new' FROM lq WHERE entity = 'e1'}, 30);
ok(defined $took, 'its expired lease is reaped within 30 s');
note 'reaped after ' . ($took // 'more than 30') . ' s (lease 1 s)';

my $lease_listener = $node->background_psql('lease', extra_params => [ '-U', 'alice' ]);
$lease_listener->query_safe('LISTEN lq');
my $lease_producer = $node->background_psql('lease');
my $lease_pid = $lease_producer->query_safe('SELECT pg_backend_pid()');
$lease_producer->query_safe(q{SELECT dlsm_enqueue('lq', 'e2')});
is_deeply([ wait_notified($lease_listener, 'lq', 10) ], [$lease_pid],
	'a producer there without a relay notifies its listener itself');
cmp_ok(sql($relays), '<=', $max_relays, 'still at most dlsm.max_relays relays');

my $log = slurp_file($node->logfile, $offset);
my @said = ($log =~ /LOG:  could not start the dlsm relay for database "(r\d|lease)"/g);
my %times;
$times{$_}++ for @said;
ok(@said >= 6 - $max_relays, 'the log says which databases got no relay: ' . join(' ', sort @said));
is(scalar(grep { $_ > 1 } values %times), 0, '... once each');
ok($log =~ /DETAIL:  $max_relays relays run or start, and "dlsm.max_relays" and the background worker processes left to dlsm's workers allow $max_relays\. Producers send the notifications of queue channels in their own transactions\./,
	'with the bound as detail');

# dlsm.max_relays lowered: the relays past it leave (they have no work)
$node->psql('postgres', q{ALTER SYSTEM SET dlsm.max_relays = 1});
$node->reload;
ok(defined poll_within($node, 'postgres', "SELECT ($relays) = 1", 30),
	'dlsm.max_relays lowered to 1 by a reload: one relay is left');

$_->quit for @listeners, $lease_listener, $lease_producer;
$node->stop;
done_testing();
