# Copyright (c) 2026, dlsm developers
#
# What dlsm's TAP tests share: a started cluster with dlsm preloaded, the
# wait for the launcher's first look, polling with a deadline, and a call
# of every function of the installed extension, read from its catalog.
package DlsmTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(gettimeofday tv_interval usleep);

our @EXPORT = qw(dlsm_node wait_first_look install_dlsm poll_within
  install_caller call_every);

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
		qr/dlsm worker for database "postgres" stops\n.*DETAIL:  The extension dlsm is not installed in that database/
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

# dlsm_call_every(queue, source, process_id, id, mode): call every
# function of the installed extension dlsm, read from its pg_depend rows
# (so that a new function is called without editing a test), each in a
# subtransaction of its own, and return one row per call: the function,
# the SQLSTATE it ended with ('00000' when it answered) and its message.
# The arguments are made from their types and names: in mode 'good'
# values a caller would pass (the queue, the source table, the process id
# and row id given), in mode 'null' NULL everywhere, in mode 'odd' values
# out of range (negative numbers and durations, empty strings and arrays,
# another table).  dlsm_drop_queue comes last.
my $caller_sql = <<'SQL';
CREATE FUNCTION public.dlsm_call_every(q regclass, src regclass, pid uuid,
  rid bigint, mode text)
RETURNS TABLE (fn text, state text, message text)
LANGUAGE plpgsql AS $fn$
DECLARE
  p record;
  args text[];
  t regtype;
  n text;
  v text;
BEGIN
  SET LOCAL statement_timeout = '10s';
  SET LOCAL lock_timeout = '2s';
  FOR p IN
    SELECT pr.oid, pr.proname, pr.proargtypes, pr.proargnames, pr.pronargs
      FROM pg_proc pr
      JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = pr.oid
       AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
      JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlsm'
     WHERE pr.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
       AND pr.prokind = 'f'
     ORDER BY pr.proname = 'dlsm_drop_queue', pr.proname, pr.pronargs
  LOOP
    args := '{}';
    FOR i IN 0 .. p.pronargs - 1 LOOP
      t := p.proargtypes[i];
      n := coalesce(p.proargnames[i + 1], '');
      v := CASE
        WHEN mode = 'null' THEN NULL
        WHEN t = 'regclass'::regtype THEN quote_literal(CASE
          WHEN mode = 'odd' THEN 'pg_class'::regclass
          WHEN n = 'source' THEN src ELSE q END::text)
        WHEN t IN ('text'::regtype, 'name'::regtype) AND mode = 'odd' THEN ''''''
        WHEN t IN ('text'::regtype, 'name'::regtype) THEN quote_literal(CASE n
          WHEN 'entity' THEN 'e1' WHEN 'kind' THEN 'create'
          WHEN 'outcome' THEN 'complete' WHEN 'group_key' THEN 'g'
          WHEN 'name' THEN 'lock1' WHEN 'dedup_key' THEN 'k1'
          WHEN 'channel' THEN 'drift_channel' WHEN 'queue' THEN q::text
          WHEN 'entity_column' THEN 'id' WHEN 'topic' THEN 'drift_topic'
          ELSE 'x' END)
        WHEN t = 'jsonb'::regtype THEN
          CASE WHEN mode = 'odd' THEN '''null''' ELSE '''{"a": 1}''' END
        WHEN t = 'uuid'::regtype THEN quote_literal(CASE WHEN mode = 'odd'
          THEN '00000000-0000-0000-0000-000000000000'::uuid ELSE pid END)
        WHEN t = 'uuid[]'::regtype THEN CASE WHEN mode = 'odd' THEN '''{}'''
          ELSE quote_literal(ARRAY[pid]::text) END
        WHEN t = 'interval'::regtype THEN CASE
          WHEN mode = 'odd' THEN '''-1 s''' WHEN n = 'wait' THEN '''10 ms'''
          ELSE '''1 s''' END
        WHEN t IN ('integer'::regtype, 'smallint'::regtype) THEN
          CASE WHEN mode = 'odd' THEN '-1' WHEN n = 'rate' THEN '10' ELSE '1' END
        WHEN t = 'bigint'::regtype THEN
          CASE WHEN mode = 'odd' THEN '-1' ELSE rid::text END
        WHEN t = 'bigint[]'::regtype THEN CASE WHEN mode = 'odd'
          THEN '''{{1},{2}}''' ELSE quote_literal(ARRAY[rid]::text) END
        WHEN t = 'boolean'::regtype THEN
          CASE WHEN mode = 'odd' THEN 'true' ELSE 'false' END
        WHEN t = 'timestamp with time zone'::regtype THEN
          CASE WHEN mode = 'odd' THEN '''infinity''' ELSE 'now()' END
        WHEN t IN ('regproc'::regtype, 'regprocedure'::regtype) THEN
          CASE WHEN mode = 'odd' THEN '''pg_catalog.now''' ELSE NULL END
        ELSE NULL END;
      args := args || (coalesce(v, 'NULL') || '::' || t::text);
    END LOOP;
    fn := p.oid::regprocedure::text;
    BEGIN
      EXECUTE format('SELECT count(*) FROM (SELECT %s(%s)) s',
                     p.oid::regproc, array_to_string(args, ', '));
      state := '00000';
      message := '';
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    END;
    RETURN NEXT;
  END LOOP;
END
$fn$;
GRANT EXECUTE ON FUNCTION
  public.dlsm_call_every(regclass, regclass, uuid, bigint, text) TO PUBLIC;
SQL

# Create dlsm_call_every (above) in database $db of $node.
sub install_caller
{
	my ($node, $db) = @_;
	$node->safe_psql($db, $caller_sql);
}

# Call every function of dlsm in $db as $role (the session user when
# undef) with dlsm_call_every's arguments; a list of [function, SQLSTATE,
# message], or undef when the session was lost (a crash).
sub call_every
{
	my ($node, $db, $role, $queue, $source, $pid, $id, $mode) = @_;
	my ($out, $err) = ('', '');
	my $set = defined $role ? "SET ROLE $role;" : '';
	my $sql =
	  "$set SELECT fn, state, regexp_replace(message, '\\s+', ' ', 'g')"
	  . " FROM public.dlsm_call_every('$queue', '$source', '$pid', $id, '$mode')";
	my $ret = $node->psql(
		$db, $sql,
		stdout => \$out,
		stderr => \$err,
		extra_params => [ '-F', "\t", '-A', '-t' ]);
	return undef
	  if $ret != 0
	  && $err =~ /server closed the connection|connection to server was lost/;
	die "dlsm_call_every failed: $err" if $ret != 0;
	return [ map { [ split /\t/, $_, 3 ] }
		  grep { $_ ne '' && $_ ne 'SET' } split /\n/, $out ];
}

1;
