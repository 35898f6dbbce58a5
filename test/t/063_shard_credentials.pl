# Copyright (c) 2026, dlsm developers
#
# Where the router's credentials for the shards go.  Connection strings
# become options of the SQL/MED server dlsm_shards, which every role on the
# router reads in pg_foreign_server: dlsm_proxy_configure, dlsm_proxy_add_node
# and dlsm_proxy_set_node refuse one that holds a password (22023), in
# keyword = value form or as a URI, and change nothing.  Passwords go in
# user mappings: with the shards asking role app for a password
# (scram-sha-256), a user mapping for app carrying it lets app reach them
# through the router, as app (the holder_role of its lease lock on the
# shard); a role without a mapping of its own goes through the PUBLIC one
# and reaches the shards as itself; the dblink connections of the
# administration (dlsm_proxy_remote, which dlsm_proxy_move uses) take the
# same mapping.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my $shard_pw = 'app-on-the-shards';

# psql's error for $sql on $node as $role: (SQLSTATE, stderr)
sub run_error
{
	my ($node, $sql, $role) = @_;
	my ($out, $err) = ('', '');
	$sql = "SET ROLE $role;\n$sql" if $role;
	$node->psql(
		'postgres', "\\set VERBOSITY verbose\n$sql",
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 1);
	my ($state) = $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ($state // 'none', $err);
}

my @shards = map { shard_node("cred$_", $_) } 1 .. 2;
for my $s (@shards)
{
	# role app logs in with a password only; everyone else is trusted
	my $hba = $s->data_dir . '/pg_hba.conf';
	my $rules = slurp_file($hba);
	open(my $fh, '>', $hba) or die "cannot write $hba: $!";
	print $fh "local all app scram-sha-256\n$rules";
	close($fh);
	$s->safe_psql('postgres', qq{
SET password_encryption = 'scram-sha-256';
CREATE ROLE app LOGIN PASSWORD '$shard_pw';
CREATE ROLE other LOGIN;
});
	$s->reload;
}
my $router = router_node('cred_router');
$router->safe_psql('postgres', 'CREATE ROLE app LOGIN; CREATE ROLE other LOGIN');

# ---------------------------------------------------------------------
# Connection strings with a password are refused
# ---------------------------------------------------------------------
my @plain = map { shard_connstr($_) } @shards;
my ($state, $err);
my %refused = (
	'keyword password' => "$plain[1] password=router-secret-1",
	'quoted password' => "$plain[1] password = 'router secret 2'",
	'sslpassword' => "$plain[1] sslpassword=router-secret-3",
	'URI user:password@' => 'postgresql://app:router-secret-4@localhost:5432/postgres',
	'URI ?password=' => 'postgresql://localhost/postgres?user=app&password=router-secret-5',
	'URI %-encoded keyword' => 'postgresql://localhost/postgres?pass%77ord=router-secret-6',
	# libpq's user part runs to the first @: # and ? are part of it
	'URI password holding # and ?' => 'postgresql://app:router#secret?9@localhost:5432/postgres',
);
for my $case (sort keys %refused)
{
	my ($state, $err) = run_error($router,
		"SELECT * FROM dlsm_proxy_configure(ARRAY['$plain[0]', \$c\$$refused{$case}\$c\$], 2)");
	is($state, '22023', "dlsm_proxy_configure refuses a connection string with a $case");
	like($err, qr/connection string of node 2 holds a password/,
		"the error names the node ($case)");
}
is( $router->safe_psql('postgres', q{SELECT count(*) FROM dlsm_proxy_nodes}),
	'0', 'the refused configurations left no node');
is( $router->safe_psql('postgres',
		q{SELECT count(*) FROM pg_foreign_server WHERE srvname = 'dlsm_shards'}),
	'0', 'nor a server');

# the parser: keywords only, values never read as keywords
is( $router->safe_psql('postgres', q{
SELECT dlsm_proxy_conninfo_keys($c$host=/tmp port = 5432 application_name='password=x y' options=-c\ a=b dbname=''$c$)}),
	'{host,port,application_name,options,dbname}',
	'a value that reads "password=" inside quotes or escapes is no keyword');
($state, $err) = run_error($router, q{SELECT dlsm_proxy_conninfo_keys('host=a port')});
is($state, '22023', 'a connection string libpq cannot read is 22023');
like($err, qr/invalid connection string\nDETAIL:  The word at byte 8 is followed by no =\./,
	'and says where, not showing the string (it may hold a password)');

my $status = configure_router($router, 4, @shards);
like($status, qr/^1\|t\|.*\n2\|t\|/, 'connection strings without a password are taken');
($state, $err) = run_error($router,
	"SELECT dlsm_proxy_add_node('$plain[1] password=router-secret-7')");
is($state, '22023', 'dlsm_proxy_add_node refuses a password');
($state, $err) = run_error($router,
	"SELECT dlsm_proxy_set_node(2, '$plain[1] password=router-secret-8')");
is($state, '22023', 'dlsm_proxy_set_node refuses a password');
is( $router->safe_psql('postgres',
		q{SELECT string_agg(node_id || ' ' || connstr, ', ' ORDER BY node_id) FROM dlsm_proxy_nodes}),
	"1 $plain[0], 2 $plain[1]", 'the nodes are as configured');
is( $router->safe_psql('postgres', q{
SELECT count(*) FROM pg_foreign_server s, unnest(s.srvoptions) o
 WHERE s.srvname = 'dlsm_shards' AND o ~* 'password'}),
	'0', 'no option of server dlsm_shards mentions a password');

# ---------------------------------------------------------------------
# Credentials in user mappings
# ---------------------------------------------------------------------
$router->safe_psql('postgres', q{
GRANT USAGE ON FOREIGN SERVER dlsm_shards TO app, other;
-- app administers too: dlsm_proxy_remote reads the connection strings
GRANT EXECUTE ON FUNCTION dlsm_proxy_remote(int4, text) TO app;
GRANT SELECT ON dlsm_proxy_nodes TO app;
});

# the lease lock a role took through the router, as the shard saw it
sub holder_on_shard
{
	my ($name) = @_;
	my $node = $router->safe_psql('postgres', "SELECT dlsm_proxy_node_of('$name')");
	return $shards[ $node - 1 ]->safe_psql('postgres',
		"SELECT holder_role FROM dlsm_leases WHERE name = '$name'");
}

($state, $err) = run_error($router,
	q{SELECT dlsm_try_lock('lock-of-app-0', lease => '1 min')}, 'app');
isnt($state, 'none', 'without a password app does not reach the shards');
like($err, qr/password/, 'the shard asked for a password') or diag $err;

$router->safe_psql('postgres', qq{
CREATE USER MAPPING FOR app SERVER dlsm_shards OPTIONS (user 'app', password '$shard_pw')});
($state, $err) = run_error($router,
	q{SELECT dlsm_try_lock('lock-of-app', lease => '1 min')}, 'app');
is($state, 'none', 'with a user mapping for app, app reaches the shards') or diag $err;
is(holder_on_shard('lock-of-app'), 'app', 'the shard sees role app');

($state, $err) = run_error($router,
	q{SELECT dlsm_try_lock('lock-of-other', lease => '1 min')}, 'other');
is($state, 'none', 'a role without a mapping of its own goes through the PUBLIC one')
  or diag $err;
is(holder_on_shard('lock-of-other'), 'other', 'and the shard sees that role itself');

($state, $err) = run_error($router,
	q{SELECT dlsm_proxy_remote(1, 'SELECT current_user::text')}, 'app');
is($state, 'none', 'dlsm_proxy_remote (dblink) connects with the mapping\'s password')
  or diag $err;
is( $router->safe_psql('postgres',
		q{SET ROLE app; SELECT dlsm_proxy_remote(2, 'SELECT current_user::text')}),
	'app', 'as the mapping\'s user');

my @faults = map { server_faults($_) } ($router, @shards);
is(scalar @faults, 0, 'no server fault') or diag join("\n", @faults);

done_testing();
