# Copyright (c) 2026, dlsm developers
#
# What the sharding TAP tests share: shard clusters (dlsm preloaded, each
# with its dlsm.node_id), a router cluster with dlsm_proxy configured for
# them, and actors: shell loops running psql against a database until a
# stop file appears.
package DlsmShard;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use IPC::Run;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

our @EXPORT = qw(shard_node router_node shard_connstr configure_router
  start_actor stop_actors actor_errors server_faults);

# A started shard cluster: dlsm preloaded and installed in postgres,
# dlsm.node_id = $id, cluster_name shard$id, a fast reaper.
sub shard_node
{
	my ($name, $id, $conf) = @_;
	my $node = dlsm_node($name, qq{
dlsm.node_id = $id
cluster_name = 'shard$id'
dlsm.reap_interval = 200
max_connections = 100
log_line_prefix = '%m [%p] %a '
} . ($conf // ''));
	install_dlsm($node) or die "the dlsm worker of $name did not start";
	return $node;
}

# The router: a cluster without dlsm, with dlsm_proxy (and PL/Proxy,
# dblink) in postgres.
sub router_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', qq{
cluster_name = 'router'
max_connections = 100
log_line_prefix = '%m [%p] %a '
} . ($conf // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION dlsm_proxy CASCADE');
	return $node;
}

# How the router reaches a shard: its socket, as the postgres user; the
# shards see the router's connections as application_name dlsm_proxy.
sub shard_connstr
{
	my ($shard) = @_;
	return sprintf('host=%s port=%d dbname=postgres application_name=dlsm_proxy',
		$shard->host, $shard->port);
}

# dlsm_proxy_configure on the router for the shards (node i = shards[i]).
sub configure_router
{
	my ($router, $partitions, @shards) = @_;
	my $list = join(', ', map { "'" . shard_connstr($_) . "'" } @shards);
	return $router->safe_psql('postgres',
		"SELECT node_id, reachable, shard, shard_node_id, tags_process_ids, partitions
		   FROM dlsm_proxy_configure(ARRAY[$list], $partitions)");
}

# An actor: psql runs $sql in $node's postgres as application $app, again
# and again (a killed backend only ends one round) until $stop exists.
# Output goes to $dir/$app.log.  Returns the IPC::Run harness.
sub start_actor
{
	my ($node, $dir, $stop, $app, $sql) = @_;
	my $conn = $node->connstr('postgres') . " application_name=$app";
	my $log = "$dir/$app.log";
	my $script = qq{
while [ ! -e '$stop' ]; do
	psql -X -q -v ON_ERROR_STOP=1 -d "\$1" -c "\$2" >>'$log' 2>&1
	sleep 0.1
done
};
	return IPC::Run::start([ 'bash', '-c', $script, 'actor', $conn, $sql ],
		'<', \undef, '>', '/dev/null', '2>', '/dev/null');
}

# Stop the actors: create the stop file, wait up to $seconds, then kill.
sub stop_actors
{
	my ($stop, $seconds, @harnesses) = @_;
	open(my $fh, '>', $stop) or die "cannot create $stop: $!";
	close($fh);
	my $deadline = time() + $seconds;
	for my $h (@harnesses)
	{
		while ($h->pumpable && time() < $deadline)
		{
			eval { $h->pump_nb };
			select(undef, undef, undef, 0.2);
		}
		eval { $h->kill_kill(grace => 2) } if $h->pumpable;
		eval { $h->finish };
	}
}

# The ERROR lines in the actors' logs (an actor catches what it expects).
sub actor_errors
{
	my ($dir) = @_;
	my @lines;
	for my $f (glob("$dir/*.log"))
	{
		open(my $fh, '<', $f) or next;
		while (my $l = <$fh>)
		{
			push @lines, "$f: $l" if $l =~ /ERROR:/;
		}
		close($fh);
	}
	return @lines;
}

# Server faults in a cluster's log: a PANIC, a failed assertion, a backend
# that died by a signal.
sub server_faults
{
	my ($node) = @_;
	my $log = slurp_file($node->logfile);
	my @faults = grep { /PANIC|TRAP:|terminated by signal|was terminated by exception/ }
	  split /\n/, $log;
	return @faults;
}

1;
