# Copyright (c) 2026, dlsm developers
#
# A listener with many producers (issue 34): with dlsm.notify_relay off
# (the default), a producer's commit notifies the listener itself and
# holds PostgreSQL's notify lock across its WAL flush, so that producers
# take turns.  dlsm counts those commits in dlsm_worker_status
# (producer_notifies, and crowded_notifies: those that found 3 more in
# flight) and says so once, in a WARNING suggesting dlsm.notify_relay:
#   - 8 producers enqueueing for 3 s with a client listening, relay off:
#     both columns count, and the WARNING is in the log once;
#   - the same with dlsm.notify_relay on: the relay notifies, the columns
#     stay as they were, and nothing more is said;
#   - without a listener nothing is counted.
# fsync is on, as on a server: the WAL flush is what the lock is held
# across.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('crowd', qq{
fsync = on
max_connections = 40
});
ok(install_dlsm($node), 'the worker runs');

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{SELECT dlsm_create_queue('cq')});

my $script = $node->basedir . '/enqueue.sql';
open my $fh, '>', $script or die;
print $fh q{SELECT dlsm_enqueue('cq', 'e' || random());
};
close $fh;

# 8 producers for $seconds; returns pgbench's stderr
sub produce
{
	my ($seconds) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			'pgbench', '-n', '-c', '8', '-j', '2', '-T', $seconds,
			'-f', $script, '-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return $err;
}

my $counts = q{SELECT producer_notifies || ' ' || crowded_notifies
	FROM dlsm_worker_status WHERE database = 'postgres'};
my $warning = qr/WARNING:  producers of database "postgres" take turns to notify listeners as they commit/;

# no listener: nothing is counted
produce(1);
is(sql($counts), '0 0', 'without a listener no producer notifies');

# a listener, the relay off
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN cq');
my $offset = -s $node->logfile;
# a crowd needs 4 commits in flight at once: on a loaded machine or a fast
# disk it may take more than one round of producers
my ($total, $crowded) = (0, 0);
for my $round (1 .. 5)
{
	produce(3);
	($total, $crowded) = split / /, sql($counts);
	last if $crowded > 0;
}
ok($total > 100, "producers notified the listener themselves ($total commits)");
ok($crowded > 0, "some of them in a crowd ($crowded commits)");
my $log = slurp_file($node->logfile, $offset);
my @said = ($log =~ /$warning/g);
is(scalar @said, 1, 'the WARNING is in the log once');
like($log,
	qr/HINT:  Set "dlsm.notify_relay" to on: the database's relay then notifies for the producers\./,
	'with its hint');

# again: not said twice
$offset = -s $node->logfile;
produce(1);
unlike(slurp_file($node->logfile, $offset), $warning, 'and not again');

# the relay on: it notifies, the producers do not
$node->append_conf('postgresql.conf', "dlsm.notify_relay = on\n");
$node->reload;
$listener->query_safe('UNLISTEN *');
$listener->query_safe('LISTEN cq');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm relay' AND datname = 'postgres'}),
	'with dlsm.notify_relay on a LISTEN starts the relay');
my $before = sql($counts);
$offset = -s $node->logfile;
produce(2);
is(sql($counts), $before, 'with the relay the counts stay as they were');
unlike(slurp_file($node->logfile, $offset), $warning, 'and nothing is said');

$listener->quit;
$node->stop;
done_testing();
