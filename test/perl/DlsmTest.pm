# Copyright (c) 2026, dlsm developers
#
# What dlsm's TAP tests share: a started cluster with dlsm preloaded, the
# wait for the launcher's first look, and polling with a deadline.
package DlsmTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(gettimeofday tv_interval usleep);

our @EXPORT = qw(dlsm_node wait_first_look install_dlsm poll_within);

# A started cluster named $name with dlsm preloaded and the extra settings
# in $conf (postgresql.conf lines).
sub dlsm_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'dlsm'\n" . ($conf // ''));
	$node->start;
	return $node;
}

# Wait for the launcher's first look at database postgres (its worker finds
# no extension and stops), so that a CREATE EXTENSION after it is the
# change the next look sees.
sub wait_first_look
{
	my ($node) = @_;
	$node->wait_for_log(
		qr/dlsm worker for database "postgres" stops: the extension is not installed there/
	);
}

# After the launcher's first look, CREATE EXTENSION dlsm in postgres and
# wait for its worker; true once exactly one worker runs there.
sub install_dlsm
{
	my ($node) = @_;
	wait_first_look($node);
	$node->safe_psql('postgres', 'CREATE EXTENSION dlsm');
	return $node->poll_query_until(
		'postgres',
		q{SELECT count(*) = 1 FROM pg_stat_activity
		  WHERE backend_type = 'dlsm worker' AND datname = 'postgres'});
}

# Run $query in $db until it returns 't' or $seconds passed; returns the
# time it took, or undef.  poll_query_until with a deadline of our own.
sub poll_within
{
	my ($node, $db, $query, $seconds) = @_;
	my $start = [gettimeofday];
	while (tv_interval($start) < $seconds)
	{
		my ($out, $err) = ('', '');
		$node->psql($db, $query, stdout => \$out, stderr => \$err);
		return tv_interval($start) if $out eq 't' && $err eq '';
		usleep(100_000);
	}
	return undef;
}

1;
