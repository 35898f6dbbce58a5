# Copyright (c) 2026, dlsm developers
#
# pg_upgrade from PostgreSQL 15 (the system's, or DLSM_OLD_INSTALL) to the
# major this test runs under, of a cluster holding every kind of dlsm
# state: new requests, in-progress ones under a lease (one expiring, one
# held), settled history, a dead letter's attempts, a named lock with a
# lease, a capture, group limits, a handler and the fence sequence.
# Afterwards nothing is lost, every later fence is above every fence handed
# out before, an expired lease is reaped by the new server's worker, the
# held one is settled by its claimant, and the handler runs again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $old_install = $ENV{DLSM_OLD_INSTALL} // '/usr/lib/postgresql/15';
plan skip_all => "no PostgreSQL at $old_install"
  unless -x "$old_install/bin/postgres";

my $conf = "shared_preload_libraries = 'dlsm'\ndlsm.reap_interval = '1s'\n";
my $old = PostgreSQL::Test::Cluster->new('old', install_path => $old_install);
$old->init;
$old->append_conf('postgresql.conf', $conf);
$old->start;
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init(no_data_checksums => 1);
$new->append_conf('postgresql.conf', $conf);
ok($old->pg_version < $new->pg_version,
	"upgrading from $old->{_pg_version} to $new->{_pg_version}");

$old->safe_psql('postgres', 'CREATE DATABASE app');
$old->safe_psql('app', q{
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('jobs', max_attempts => 2);
SELECT count(dlsm_enqueue('jobs', 'e' || n, group_key => 'g' || (n % 3)))
  FROM generate_series(1, 20) n;
SELECT dlsm_set_limit('jobs', NULL, concurrency => 5);
SELECT dlsm_set_limit('jobs', 'g1', concurrency => 1);
SELECT dlsm_set_limit('jobs', 'g2', rate => 100, per => '1 second');
-- settled history: 4 complete, 1 error
SELECT dlsm_settle('jobs', process_id) FROM dlsm_claim('jobs', units => 4);
SELECT dlsm_settle('jobs', process_id, 'error', 'failed before the upgrade')
  FROM dlsm_claim('jobs');
-- one lease that expires while the servers are down, one held for an hour
CREATE TABLE kept_claim AS
SELECT process_id FROM dlsm_claim('jobs', lease => '1 hour');
SELECT count(*) FROM dlsm_claim('jobs', lease => '2 seconds');
CREATE TABLE src_table (id int PRIMARY KEY, v text);
SELECT dlsm_capture('src_table', 'jobs');
INSERT INTO src_table VALUES (1, 'a');
SELECT dlsm_try_lock('kept', lease => '1 hour');
SELECT dlsm_try_lock('passing');
SELECT dlsm_create_queue('hq');
CREATE TABLE handled (id bigint PRIMARY KEY, entity text);
CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO handled SELECT i, entity FROM unnest(ids) i $$;
SELECT dlsm_set_handler('hq', 'h');
SELECT dlsm_enqueue('hq', 'before');
});
ok( $old->poll_query_until('app', q{SELECT count(*) = 1 FROM handled}),
	'the handler runs on the old server');

# new and in-progress together: the new server's worker may reap the expired
# lease before the first look (the look after tells them apart)
my $state = q{
SELECT string_agg(s || ':' || n, ' ' ORDER BY s)
  FROM (SELECT CASE WHEN status IN ('new', 'in-progress') THEN 'open' ELSE status END s,
			   count(*) n
		  FROM jobs GROUP BY 1) s};
my $before = $old->safe_psql('app', $state);
my $fence_before = $old->safe_psql('app',
	q{SELECT greatest((SELECT max(fence) FROM dlsm_leases),
					  (SELECT max(fence) FROM jobs),
					  (SELECT last_value FROM dlsm_fence_seq))});
my $limits = q{
SELECT string_agg(coalesce(group_key, '*') || '=' || coalesce(concurrency::text, '-')
				  || '/' || coalesce(rate::text, '-'), ' ' ORDER BY group_key)
  FROM dlsm_limits};
my $limits_before = $old->safe_psql('app', $limits);
is( $old->safe_psql('app',
		q{SELECT string_agg(status || ':' || n, ' ' ORDER BY status)
			FROM (SELECT status, count(*) n FROM jobs GROUP BY status) s}),
	'complete:4 error:1 in-progress:2 new:14',
	'the old cluster holds new, in-progress and settled requests');
ok($fence_before > 0, "fences handed out before: up to $fence_before");
$old->stop;

# pg_upgrade, as a user would run it, from a directory it may write in
my $dir = PostgreSQL::Test::Utils::tempdir;
chdir $dir or die "cannot enter $dir: $!";
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $old->config_data('--bindir'),
		'-B', $new->config_data('--bindir'),
		'-s', $new->host, '-p', $old->port, '-P', $new->port,
		'--copy'
	],
	'pg_upgrade of a cluster using dlsm');
$new->start;

is($new->safe_psql('app', $state), $before,
	'every request is there, in the state it had');
is($new->safe_psql('app', q{SELECT count(*) FROM dlsm_leases WHERE name = 'kept'}),
	'1', 'the named lock with a lease is held still');
is($new->safe_psql('app', q{SELECT dlsm_try_lock('kept') IS NULL}),
	't', 'and nobody else takes it');
my $fence_after = $new->safe_psql('app', q{SELECT dlsm_try_lock('after')});
ok($fence_after > $fence_before,
	"a new fence ($fence_after) is above every fence before ($fence_before)");
is($new->safe_psql('app', $limits), $limits_before,
	"the group limits are kept ($limits_before)");

# the worker reaps the lease that expired while the servers were down
ok( $new->poll_query_until('app',
		q{SELECT count(*) = 1 FROM jobs WHERE status = 'in-progress'}),
	'the expired lease is reaped by the new server');
is( $new->safe_psql('app',
		q{SELECT dlsm_settle('jobs', process_id) FROM kept_claim}),
	'1', 'the claim held across the upgrade is settled by its claimant');
is( $new->safe_psql('app', q{
INSERT INTO src_table VALUES (2, 'b');
SELECT count(*) FROM jobs WHERE payload->>'table' = 'public.src_table'}),
	'2', 'the capture goes on');
$new->safe_psql('app', q{SELECT dlsm_enqueue('hq', 'after')});
ok( $new->poll_query_until('app', q{SELECT count(*) = 2 FROM handled}),
	'the handler runs on the new server');
# the rest, claimed and settled within the limits: one unit of g1 at once
my ($settled, $rounds) = (0, 0);
while ($rounds++ < 50)
{
	my $n = $new->safe_psql('app', q{
SELECT count(*) FROM (SELECT dlsm_settle('jobs', process_id)
						FROM dlsm_claim('jobs', units => 30)) s});
	last if $n == 0 && $new->safe_psql('app',
		q{SELECT count(*) FROM jobs WHERE status = 'new'}) == 0;
	$settled += $n;
	usleep(20_000) if $n == 0;
}
is($settled, 16, 'the 16 requests left are claimed and settled');
is( $new->safe_psql('app', $state), 'complete:21 error:1',
	'every request reached one terminal state');

$new->stop;
done_testing();
