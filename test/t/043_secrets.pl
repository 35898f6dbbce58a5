# Copyright (c) 2026, dlsm developers
#
# Secrets: a role with no grants (nobody) reads no connection string
# password, user mapping option or primary address that it could not read
# before dlsm or dlsm_proxy was installed.
#
# What nobody can read is gathered the same way before and after the
# install: pg_foreign_server, pg_user_mappings, pg_settings,
# pg_stat_wal_receiver, pg_stat_activity and SHOW primary_conninfo; after
# the install also every object the extension owns, enumerated from
# pg_depend (so that a new one joins by itself): every column of its
# tables, views and sequences that nobody may select, and every function
# and procedure nobody may execute, called twice (all arguments NULL, then
# a plausible value of each argument's type), its output, errors, details,
# hints and contexts kept.  No secret may appear after that did not before.
#
# dlsm: a hot standby whose primary_conninfo holds the primary's host,
# port and a password; the primary's port and the password are the
# secrets.  dlsm_proxy: a router whose administrator first gives
# connection strings with a password (refused, finding 3 of issue 21),
# then puts passwords in a user mapping for a role and in the PUBLIC one.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

# A plausible value of each argument type (NULL for the others).
my %sample = (
	'text' => q{'jobs'::text},
	'name' => q{'jobs'::name},
	'regclass' => q{'jobs'::regclass},
	'regproc' => q{'pg_catalog.now'::regproc},
	'integer' => '1',
	'bigint' => '1::bigint',
	'smallint' => '1::smallint',
	'interval' => q{'0'::interval},
	'uuid' => 'gen_random_uuid()',
	'boolean' => 'false',
	'jsonb' => q{'{}'::jsonb},
	'timestamp with time zone' => 'now()',
	'text[]' => q{'{}'::text[]},
	'name[]' => q{'{}'::name[]},
	'uuid[]' => q{'{}'::uuid[]},
	'integer[]' => q{'{0}'::integer[]},
);

# What nobody reads in the catalogs, as one text.
my $catalog_reads = q{
SELECT * FROM pg_foreign_server;
SELECT * FROM pg_user_mappings;
SELECT name, setting FROM pg_settings;
SELECT * FROM pg_stat_wal_receiver;
SELECT * FROM pg_stat_activity;
SHOW primary_conninfo;
};

# The statements that read every object of extension $ext nobody may
# read or run; (statements, objects read, objects refused).
sub extension_reads
{
	my ($node, $ext) = @_;
	my @sql;
	my ($read, $refused) = (0, 0);
	my $rels = $node->safe_psql('postgres', qq{
SELECT c.oid::regclass,
	   (SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
		  FROM pg_attribute a
		 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		   AND has_column_privilege('nobody', c.oid, a.attnum, 'SELECT'))
  FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
 WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = '$ext')
   AND d.deptype = 'e' AND c.relkind IN ('r', 'v', 'm', 'S', 'p')
 ORDER BY 1});
	for my $line (split /\n/, $rels)
	{
		my ($rel, $cols) = split /\|/, $line, 2;
		if ($cols)
		{
			push @sql, "SELECT $cols FROM $rel;";
			$read++;
		}
		else
		{
			$refused++;
		}
	}
	my $procs = $node->safe_psql('postgres', qq{
SELECT p.prokind, quote_ident(n.nspname) || '.' || quote_ident(p.proname),
	   has_function_privilege('nobody', p.oid, 'EXECUTE'),
	   (SELECT string_agg(format_type(t, NULL), ',' ORDER BY o)
		  FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, o))
  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = '$ext')
   AND d.deptype = 'e'
 ORDER BY 2, 4});
	for my $line (split /\n/, $procs)
	{
		my ($kind, $name, $may, $types) = split /\|/, $line, 4;
		if ($may ne 't')
		{
			$refused++;
			next;
		}
		$read++;
		my @types = split /,/, ($types // '');
		my $verb = $kind eq 'p' ? 'CALL' : 'SELECT';
		my $nulls = join(', ', map { "NULL::$_" } @types);
		my $values = join(', ', map { $sample{$_} // "NULL::$_" } @types);
		push @sql, "$verb $name($nulls);", "$verb $name($values);";
	}
	return (\@sql, $read, $refused);
}

# Everything nobody sees running @sql on $node: stdout and stderr.
sub seen_by_nobody
{
	my ($node, @sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres',
		join("\n", '\set VERBOSITY verbose', "SET statement_timeout = '10s';", @sql),
		stdout => \$out,
		stderr => \$err,
		on_error_stop => 0,
		extra_params => [ '-U', 'nobody' ]);
	return "$out\n$err";
}

# For each secret (name => regexp): seen before? seen after?
sub compare_secrets
{
	my ($what, $before, $after, %secret) = @_;
	for my $name (sort keys %secret)
	{
		my $re = $secret{$name};
		my $was = $before =~ $re ? 1 : 0;
		my $is = $after =~ $re ? 1 : 0;
		ok(!$is || $was, "$what: nobody reads no $name it could not read before")
		  or diag join("\n", grep { $_ =~ $re } split /\n/, $after);
	}
}

# ---------------------------------------------------------------------
# dlsm on a hot standby
# ---------------------------------------------------------------------
my $primary = PostgreSQL::Test::Cluster->new('sec_primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'dlsm'\n");
$primary->start;
$primary->safe_psql('postgres', 'CREATE ROLE nobody LOGIN');
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('sec_standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
my $p_port = $primary->port;
my $standby_pw = 'standby-secret-9b1e';
$standby->append_conf('postgresql.conf', sprintf(
	"primary_conninfo = 'host=%s port=%d application_name=sec_standby password=%s'\n",
	$primary->host, $p_port, $standby_pw));
$standby->start;
$primary->wait_for_catchup($standby);
like($standby->safe_psql('postgres', 'SHOW primary_conninfo'), qr/port=$p_port .*password=$standby_pw/,
	'a superuser on the standby reads the primary\'s address and the password');

my %standby_secrets = (
	# as libpq and messages write it (port=N, port N): not any number, as
	# pg_stat_activity shows process ids
	'primary port' => qr/port\W{0,3}$p_port(?![0-9])/i,
	'replication password' => qr/\Q$standby_pw\E/,
);
my $before = seen_by_nobody($standby, $catalog_reads);

ok(install_dlsm($primary), 'dlsm installed on the primary');
$primary->safe_psql('postgres', q{
SELECT dlsm_create_queue('jobs');
SELECT dlsm_enqueue('jobs', 'e1');
SELECT dlsm_try_lock('held', lease => '1 hour');
});
$primary->wait_for_catchup($standby);

my ($sql, $read, $refused) = extension_reads($standby, 'dlsm');
ok($read >= 20, "nobody may read or run $read objects of dlsm ($refused refused)");
my $after = seen_by_nobody($standby, $catalog_reads, @$sql);
like($after, qr/25006/, 'a writing function was refused on the standby (25006)');
compare_secrets('dlsm on a standby', $before, $after, %standby_secrets);

# ---------------------------------------------------------------------
# dlsm_proxy on a router
# ---------------------------------------------------------------------
my $shard = shard_node('sec_shard', 1);
$shard->safe_psql('postgres', q{
CREATE ROLE nobody LOGIN;
CREATE ROLE app LOGIN;
SELECT dlsm_create_queue('jobs');
});
my $router = PostgreSQL::Test::Cluster->new('sec_router');
$router->init;
$router->start;
$router->safe_psql('postgres', 'CREATE ROLE nobody LOGIN; CREATE ROLE app LOGIN');

my %router_secrets = (
	'password of a connection string' => qr/router-secret-1/,
	'password of a role\'s user mapping' => qr/app-secret-2/,
	'password of the PUBLIC user mapping' => qr/public-secret-3/,
	'user of a role\'s user mapping' => qr/shard_app_user/,
);
$before = seen_by_nobody($router, $catalog_reads);

$router->safe_psql('postgres', 'CREATE EXTENSION dlsm_proxy CASCADE');
my $connstr = shard_connstr($shard);
my ($ret, $out, $err) = $router->psql('postgres',
	"SELECT count(*) FROM dlsm_proxy_configure(ARRAY['$connstr password=router-secret-1'], 4)");
like($err, qr/holds a password/, 'the connection string with a password is refused');
$router->safe_psql('postgres', "SELECT count(*) FROM dlsm_proxy_configure(ARRAY['$connstr'], 4)")
  if $ret != 0;
$router->safe_psql('postgres', q{
CREATE USER MAPPING FOR app SERVER dlsm_shards OPTIONS (user 'shard_app_user', password 'app-secret-2');
ALTER USER MAPPING FOR PUBLIC SERVER dlsm_shards OPTIONS (ADD password 'public-secret-3');
GRANT USAGE ON FOREIGN SERVER dlsm_shards TO nobody;
});
is($router->safe_psql('postgres', 'SELECT count(*) FROM dlsm_proxy_nodes'), '1',
	'the router has its node');

($sql, $read, $refused) = extension_reads($router, 'dlsm_proxy');
ok($read >= 20, "nobody may read or run $read objects of dlsm_proxy ($refused refused)");
$after = seen_by_nobody($router, $catalog_reads, @$sql);
like($after, qr/dlsm_shards/, 'nobody sees the server dlsm_shards');
compare_secrets('dlsm_proxy', $before, $after, %router_secrets);

done_testing();
