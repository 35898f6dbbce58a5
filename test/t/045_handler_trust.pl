# Copyright (c) 2026, dlsm developers
#
# A handler is kept by name and found again at every run, and the worker
# runs it as the queue's owner.  So the function found must be one the
# owner trusts: owned by the queue's owner, by a role whose privileges the
# owner has, or by a superuser, and not in a temporary schema.  Otherwise
# (issue 21, suspected and confirmed) a role with CREATE on the database
# re-creates a dropped handler's schema and function and runs its code as
# the queue's owner, or a later session's temporary schema of the same name
# does.  The same rule holds when dlsm_set_handler names the function.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;

my $node = dlsm_node('trust', "dlsm.reap_interval = 300\n");
ok(install_dlsm($node), 'the worker runs');

# [ret, stdout, stderr] of $sql as $role
sub run_as
{
	my ($role, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres', $sql,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

$node->safe_psql('postgres', q{
CREATE ROLE bob LOGIN;
CREATE ROLE mallory LOGIN;
CREATE ROLE alice LOGIN;
GRANT CREATE ON DATABASE postgres TO mallory;
CREATE SCHEMA bobs AUTHORIZATION bob;
CREATE SCHEMA hs AUTHORIZATION bob;
CREATE SCHEMA alices AUTHORIZATION alice;
});
my ($ret, $out, $err) = run_as('bob', q{
CREATE TABLE bobs.handled (entity text, who text);
SELECT dlsm_create_queue('bobs.q');
CREATE FUNCTION hs.process(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO bobs.handled VALUES (entity, current_user) $$;
SELECT dlsm_set_handler('bobs.q', 'hs.process');
SELECT dlsm_enqueue('bobs.q', 'first');
});
is($ret, 0, 'bob makes a handled queue') or diag $err;
ok(defined poll_within($node, 'postgres',
	q{SELECT count(*) = 1 FROM bobs.handled WHERE entity = 'first'}, 30),
	"bob's handler runs");

# bob redeploys: drops the handler's schema; mallory, with CREATE on the
# database, makes a schema and a function of the same names
($ret, $out, $err) = run_as('bob', q{DROP SCHEMA hs CASCADE});
is($ret, 0, "bob drops his handler's schema") or diag $err;
($ret, $out, $err) = run_as('mallory', q{
CREATE SCHEMA hs;
CREATE TABLE hs.ran (who text);
GRANT USAGE ON SCHEMA hs TO PUBLIC;
GRANT INSERT ON hs.ran TO PUBLIC;
CREATE FUNCTION hs.process(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ INSERT INTO hs.ran VALUES (current_user) $$;
});
is($ret, 0, 'mallory re-creates schema hs and hs.process') or diag $err;
($ret, $out, $err) = run_as('bob', q{SELECT dlsm_enqueue('bobs.q', 'second')});
is($ret, 0, 'bob enqueues again') or diag $err;
ok(defined poll_within($node, 'postgres', q{
SELECT last_error LIKE '%handler hs.process of queue "q" is owned by role "mallory"%'
  FROM dlsm_worker_status WHERE database = current_database()}, 30),
	"the worker refuses mallory's function and says why")
  or diag $node->safe_psql('postgres',
	q{SELECT last_error FROM dlsm_worker_status});
is($node->safe_psql('postgres', q{SELECT count(*) FROM hs.ran}),
	'0', "mallory's function never ran");
is($node->safe_psql('postgres',
	q{SELECT status FROM bobs.q WHERE entity = 'second'}),
	'new', 'the request waits, new');

# setting the handler: a function of another role, or in a temporary schema
($ret, $out, $err) = run_as('alice', q{
CREATE FUNCTION alices.h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT $$;
GRANT USAGE ON SCHEMA alices TO bob;
});
is($ret, 0, 'alice makes a function bob may execute') or diag $err;
($ret, $out, $err) = run_as('bob', q{SELECT dlsm_set_handler('bobs.q', 'alices.h')});
like($err, qr/ERROR:  42501: handler alices.h of queue "q" is owned by role "alice", which the queue's owner "bob" does not trust/,
	"dlsm_set_handler refuses alice's function for bob's queue (42501)");
($ret, $out, $err) = run_as('bob', q{
CREATE FUNCTION pg_temp.h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT dlsm_set_handler('bobs.q', 'pg_temp.h');
});
like($err, qr/ERROR:  0A000: a function in a temporary schema cannot be a dlsm handler/,
	'dlsm_set_handler refuses a function in a temporary schema (0A000)');

# bob's own function, and a superuser's, are trusted; the request is handled
$node->safe_psql('postgres', q{
CREATE FUNCTION public.su_h(entity text, kind text, ids bigint[], payloads jsonb[])
RETURNS void LANGUAGE sql AS
$$ INSERT INTO bobs.handled VALUES (entity, current_user) $$;
});
($ret, $out, $err) = run_as('bob', q{SELECT dlsm_set_handler('bobs.q', 'public.su_h')});
is($ret, 0, "a superuser's function can be bob's handler") or diag $err;
ok(defined poll_within($node, 'postgres',
	q{SELECT count(*) = 1 FROM bobs.handled WHERE entity = 'second' AND who = 'bob'}, 30),
	'the waiting request is handled, as bob');

# a superuser's queue trusts only superusers' functions: a superuser has
# every role's privileges, which is no reason to run their code as one
$node->safe_psql('postgres', q{
SELECT dlsm_create_queue('public.su_q');
GRANT USAGE ON SCHEMA alices TO postgres;
});
($ret, $out, $err) = $node->psql('postgres', q{SELECT dlsm_set_handler('public.su_q', 'alices.h')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  42501: handler alices.h of queue "su_q" is owned by role "alice", which the queue's owner "\w+" does not trust/,
	"a superuser's queue refuses alice's function (42501)");

done_testing();
