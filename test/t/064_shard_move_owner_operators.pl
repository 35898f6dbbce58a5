# Copyright (c) 2026, dlsm developers
#
# dlsm_proxy_move runs its statements on the shards' queue tables through
# dblink, as the administrator who calls it (often a superuser).  mallory
# owns the queue on both shards, may create in their public schema (as
# PostgreSQL 14 and older left it) and makes the queue's status and kind a
# domain over text with her own = in public, which records current_user.
# A move of partitions from node 1 to node 2 (drain, copy of the terminal
# creates) must copy the creates and run her operator as nobody but her.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use lib "$ENV{TESTDIR}/test/perl";
use DlsmTest;
use DlsmShard;

my @shards = map { shard_node("mvop$_", $_) } 1 .. 2;
my $router = router_node('mvop_router');
configure_router($router, 4, @shards);
is($router->safe_psql('postgres', q{SELECT count(*) FROM dlsm_create_queue('mq')}), '2',
	'the queue on both shards');

for my $s (@shards)
{
	$s->safe_psql('postgres', q{
CREATE ROLE mallory LOGIN;
GRANT CREATE ON SCHEMA public TO mallory;
ALTER TABLE mq OWNER TO mallory;
});
	my ($ret, $out, $err) = $s->psql('postgres', q{
CREATE TABLE public.seen (who text);
GRANT INSERT ON public.seen TO PUBLIC;
CREATE DOMAIN public.mtext AS text;
CREATE FUNCTION public.mtext_eq(a public.mtext, b public.mtext) RETURNS bool
	LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.seen VALUES (current_user);
	RETURN a::text OPERATOR(pg_catalog.=) b::text;
END $$;
CREATE OPERATOR public.= (LEFTARG = public.mtext, RIGHTARG = public.mtext,
	FUNCTION = public.mtext_eq);
ALTER TABLE mq ALTER COLUMN status TYPE public.mtext,
			   ALTER COLUMN kind TYPE public.mtext;
-- her trigger, calling now() unqualified: it runs as whoever inserts
CREATE TABLE public.inserted (who text, path text);
GRANT INSERT ON public.inserted TO PUBLIC;
CREATE FUNCTION public.note_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.inserted VALUES (current_user, current_setting('search_path'));
	PERFORM now();
	RETURN NEW;
END $$;
CREATE TRIGGER note_insert BEFORE INSERT ON mq
	FOR EACH ROW EXECUTE FUNCTION public.note_insert();
}, extra_params => [ '-U', 'mallory' ], on_error_stop => 1);
	is($ret, 0, 'mallory armed her queue on ' . $s->name) or diag $err;
}

# settled creates of 40 entities on node 1
$shards[0]->safe_psql('postgres', q{
INSERT INTO mq (entity, status) SELECT 'e' || g, 'complete' FROM generate_series(1, 40) g;
TRUNCATE public.inserted});

my $parts = $router->safe_psql('postgres',
	q{SELECT array_agg(partition ORDER BY partition) FROM dlsm_proxy_partitions WHERE node_id = 1});
my ($ret, $out, $err) = $router->psql('postgres', qq{CALL dlsm_proxy_move('$parts', 2, '30 s')},
	on_error_stop => 1);
is($ret, 0, 'the move ran') or diag $err;
like($err, qr/moved \d+ partitions to node 2: fences there above \d+, (\d+) creates copied/,
	'the move reports the creates it copied');
my ($copied) = $err =~ /(\d+) creates copied/;
ok(($copied // 0) > 0, 'some creates were copied (' . ($copied // 0) . ')');
is($shards[1]->safe_psql('postgres', q{SELECT count(*) FROM mq}), $copied // -1,
	'node 2 holds the copied creates');

for my $s (@shards)
{
	is( $s->safe_psql('postgres',
			q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM public.seen WHERE who <> 'mallory'}),
		'', 'the move ran no operator of mallory\'s on ' . $s->name);
}

# the copy into node 2's queue ran mallory's trigger as mallory, never as
# the administrator (a superuser here)
is( $shards[1]->safe_psql('postgres',
		q{SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM public.inserted}),
	'mallory', "the copy runs the owner's trigger as the owner");

done_testing();
