#!/usr/bin/env bash
# test/failover/run.sh: dlsm through a failover managed by pg_auto_failover.
#
# On this machine: a pg_auto_failover monitor and two Postgres nodes, each
# its own data directory and port, run as the postgres OS user, dlsm
# preloaded on both nodes.  The extension and a queue are created on the
# primary; producers enqueue and consumers (three leased, one
# transactional) claim and settle through a multi-host connection string
# (host=localhost,localhost port=P1,P2 target_session_attrs=read-write),
# each call a new connection, as a client that reconnects does.  In the
# middle, `pg_autoctl perform failover`; the clients keep going; then the
# producers stop, the queue drains, and test/failover/checks.sql checks the
# invariants that apply (nothing lost; every acknowledged settle kept; all
# terminal; none settled twice; no entity in two units at once; fences
# rising per entity and across the failover) from the clients' own logs
# and the consumers' audit table.
#
# Prints TAP lines, a summary and "N passed, N failed"; the last run's
# logs and summary are kept in test/failover/out/.  Run as root (installs
# pg_auto_failover with apt-get when missing; the servers run as postgres)
# or as postgres with the packages present.  dlsm must be installed.
# Everything it starts is stopped on exit, failure included.
#
# Settings (environment): FAILOVER_PORT (first of three ports, default
# 6431), FAILOVER_BEFORE / FAILOVER_AFTER (seconds of work before and after
# the failover, default 20 and 20), FAILOVER_DIR (default a new directory
# under /tmp), FAILOVER_LIMIT (hard limit in seconds, default 280).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"

START=$SECONDS
LIMIT=${FAILOVER_LIMIT:-280}
BEFORE=${FAILOVER_BEFORE:-20}
AFTER=${FAILOVER_AFTER:-20}
PORT0=${FAILOVER_PORT:-6431}
OUT=$HERE/out
N_PRODUCERS=2
N_LEASED=3
LEASE='5 s'

n=0 passed=0 failed=0
tap() { # tap OK|NOTOK TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then passed=$((passed + 1)); echo "ok $n - $2"
	else failed=$((failed + 1)); echo "not ok $n - $2"; fi
}
check() { # check TEXT COMMAND...: ok when the command succeeds
	local text=$1; shift
	if "$@"; then tap ok "$text"; else tap notok "$text"; fi
}
say() { echo "# $*"; }
left() { echo $((LIMIT - (SECONDS - START))); }

finish() {
	echo "1..$n"
	[ -n "${SUMMARY:-}" ] && printf '%s\n' "$SUMMARY"
	echo "$passed passed, $failed failed"
	[ "$failed" = 0 ]
	exit $?
}
# bail TEXT: the run cannot go on; one failing line, then the totals
bail() { tap notok "$1"; finish; }

# ---------------------------------------------------------------------
# Packages
# ---------------------------------------------------------------------
need_pkgs=
command -v pg_autoctl >/dev/null || need_pkgs="$need_pkgs pg-auto-failover-cli"
[ -f /usr/share/postgresql/15/extension/pgautofailover.control ] ||
	need_pkgs="$need_pkgs postgresql-15-auto-failover"
if [ -n "$need_pkgs" ]; then
	if [ "$(id -u)" != 0 ]; then
		bail "pg_auto_failover is missing (apt-get install$need_pkgs, as root)"
	fi
	say "installing$need_pkgs"
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_pkgs; } \
		>/tmp/dlsm-failover-apt.log 2>&1 ||
		{ tail -5 /tmp/dlsm-failover-apt.log; bail "apt-get install$need_pkgs failed"; }
fi
check "pg_auto_failover installed ($(pg_autoctl --version 2>/dev/null | head -1))" \
	test -x "$(command -v pg_autoctl)"
[ -f "$(/usr/lib/postgresql/15/bin/pg_config --pkglibdir)/dlsm.so" ] &&
	[ -f /usr/share/postgresql/15/extension/dlsm.control ] ||
	bail "dlsm is installed (see README: make && make install)"

# ---------------------------------------------------------------------
# Working directory, ports, clean-up
# ---------------------------------------------------------------------
if [ -n "${FAILOVER_DIR:-}" ]; then W=$FAILOVER_DIR; rm -rf "$W"; mkdir -p "$W"
else W=$(mktemp -d /tmp/dlsm-failover.XXXXXX); fi
chmod 755 "$W"
give_to_postgres "$W"
mkdir -p "$W/clients"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=()
p=$PORT0
while [ ${#ports[@]} -lt 3 ] && [ "$p" -lt $((PORT0 + 100)) ]; do
	port_free "$p" && ports+=("$p")
	p=$((p + 1))
done
[ ${#ports[@]} -eq 3 ] || bail "three free ports from $PORT0"
MPORT=${ports[0]} P1=${ports[1]} P2=${ports[2]}

PGAF_ENV=(env "XDG_CONFIG_HOME=$W/xdg/config" "XDG_DATA_HOME=$W/xdg/data"
	"XDG_RUNTIME_DIR=$W/xdg/run" "PATH=$PGBIN:/usr/bin:/bin" "HOME=$W")
autoctl() { as_postgres "${PGAF_ENV[@]}" pg_autoctl "$@"; }

keepers=()     # names whose pg_autoctl run was started
client_pids=()

# start_keeper NAME: pg_autoctl run for $W/NAME in a session of its own,
# its pid (= its process group) in $W/NAME.pid
start_keeper() {
	as_postgres "${PGAF_ENV[@]}" bash -c 'echo $$ > "$1"; exec setsid pg_autoctl run --pgdata "$2"' \
		_ "$W/$1.pid" "$W/$1" >"$W/$1.keeper.log" 2>&1 &
	keepers+=("$1")
}

cleanup() {
	local pid name i
	trap - EXIT INT TERM
	touch "$W/stop-producers" "$W/stop-consumers" 2>/dev/null
	for pid in "${client_pids[@]}"; do kill "$pid" 2>/dev/null; done
	for pid in "${client_pids[@]}"; do wait "$pid" 2>/dev/null; done
	for name in "${keepers[@]}"; do autoctl stop --pgdata "$W/$name" >/dev/null 2>&1; done
	for name in "${keepers[@]}"; do
		pid=$(cat "$W/$name.pid" 2>/dev/null) || continue
		for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then
			autoctl stop --immediate --pgdata "$W/$name" >/dev/null 2>&1; sleep 2
			kill -KILL -- "-$pid" 2>/dev/null
		fi
	done
	for name in monitor node1 node2; do
		[ -f "$W/$name/postmaster.pid" ] &&
			as_postgres "$PGBIN/pg_ctl" -D "$W/$name" stop -m immediate >/dev/null 2>&1
	done
	# keep the logs of this run, drop the rest
	rm -rf "$OUT"; mkdir -p "$OUT"
	cp -r "$W/clients" "$OUT/" 2>/dev/null
	cp "$W"/*.log "$OUT/" 2>/dev/null
	for name in monitor node1 node2; do
		for f in "$W/$name"/log/*.log; do [ -f "$f" ] && cp "$f" "$OUT/$name.$(basename "$f")"; done
	done
	[ -n "${SUMMARY:-}" ] && printf '%s\n' "$SUMMARY" >"$OUT/summary.txt"
	rm -rf "$W"
}
trap cleanup EXIT
trap 'tap notok "interrupted"; finish' INT TERM

# ---------------------------------------------------------------------
# The formation: monitor, node1 (primary), node2 (secondary)
# ---------------------------------------------------------------------
say "monitor on port $MPORT, nodes on $P1 and $P2, in $W"
node_conf() { # settings of ours, after pg_auto_failover's include
	as_postgres tee -a "$W/$1/postgresql.conf" >/dev/null <<EOF
# dlsm failover run
shared_preload_libraries = 'pg_stat_statements,dlsm'
shared_buffers = '128MB'
listen_addresses = 'localhost'
dlsm.reap_interval = 500
EOF
}

autoctl create monitor --pgctl "$PGBIN/pg_ctl" --pgdata "$W/monitor" --pgport "$MPORT" \
	--hostname localhost --auth trust --no-ssl >"$W/monitor.create.log" 2>&1 ||
	{ tail -5 "$W/monitor.create.log"; bail "pg_autoctl create monitor"; }
as_postgres tee -a "$W/monitor/postgresql.conf" >/dev/null <<EOF
shared_buffers = '128MB'
listen_addresses = 'localhost'
EOF
start_keeper monitor
MON=
for _ in $(seq 1 50); do
	MON=$(autoctl show uri --pgdata "$W/monitor" --formation monitor 2>/dev/null) &&
		psql -X -q -Atc 'SELECT 1' "$MON" >/dev/null 2>&1 && break
	MON=; sleep 0.2
done
[ -n "$MON" ] || bail "the monitor runs"

autoctl create postgres --pgctl "$PGBIN/pg_ctl" --pgdata "$W/node1" --pgport "$P1" \
	--hostname localhost --auth trust --no-ssl --monitor "$MON" --name node1 \
	>"$W/node1.create.log" 2>&1 ||
	{ tail -5 "$W/node1.create.log"; bail "pg_autoctl create postgres (node1)"; }
node_conf node1
start_keeper node1

# node_state NAME: the node's reported state, from the monitor
node_state() {
	psql -X -Atc "SELECT reportedstate FROM pgautofailover.node WHERE nodename = '$1'" "$MON" 2>/dev/null
}
wait_state() { # wait_state NAME STATE SECONDS
	local i
	for i in $(seq 1 $(($3 * 5))); do
		[ "$(node_state "$1")" = "$2" ] && return 0
		[ "$(left)" -gt 0 ] || return 1
		sleep 0.2
	done
	return 1
}
wait_state node1 single 60 || bail "node1 runs as a single primary"

# node2: a base backup of node1, postgresql.conf with it (dlsm preloaded)
autoctl create postgres --pgctl "$PGBIN/pg_ctl" --pgdata "$W/node2" --pgport "$P2" \
	--hostname localhost --auth trust --no-ssl --monitor "$MON" --name node2 \
	>"$W/node2.create.log" 2>&1 ||
	{ tail -5 "$W/node2.create.log"; bail "pg_autoctl create postgres (node2)"; }
grep -q "shared_preload_libraries = 'pg_stat_statements,dlsm'" "$W/node2/postgresql.conf" ||
	node_conf node2
start_keeper node2
wait_state node2 secondary 60 && wait_state node1 primary 30 ||
	bail "node1 primary and node2 secondary"

CONN="host=localhost,localhost port=$P1,$P2 dbname=postgres user=postgres target_session_attrs=read-write connect_timeout=3"
q() { # q PORT SQL: one value from the node on PORT
	psql -X -q -At -h localhost -p "$1" -U postgres -d postgres -c "$2" 2>/dev/null
}
preload=$(q "$P1" 'SHOW shared_preload_libraries'),$(q "$P2" 'SHOW shared_preload_libraries')
check "formation up: node1 primary on $P1, node2 secondary on $P2, dlsm preloaded on both ($preload)" \
	test "$(echo "$preload" | grep -o dlsm | wc -l)" = 2

psql -X -q -v ON_ERROR_STOP=1 "$CONN" >"$W/setup.log" 2>&1 <<'EOF' || bail "CREATE EXTENSION dlsm and the queue"
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('fo_q', max_attempts => 100);
CREATE TABLE fo_audit (
	unit_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	client text NOT NULL, process_id uuid NOT NULL, fence bigint NOT NULL,
	entity text NOT NULL, ids bigint[] NOT NULL, settled bigint NOT NULL,
	started_at timestamptz NOT NULL, ended_at timestamptz NOT NULL, port int NOT NULL);
EOF
for _ in $(seq 1 50); do
	[ "$(q "$P1" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'")" = 1 ] && break
	sleep 0.2
done
check "extension and queue created; a dlsm worker runs on the primary" \
	test "$(q "$P1" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'")" = 1

ssn1=$(q "$P1" 'SHOW synchronous_standby_names')
sc1=$(q "$P1" 'SHOW synchronous_commit')
rep1=$(q "$P1" "SELECT application_name || ' ' || sync_state FROM pg_stat_replication")
nss=$(psql -X -Atc "SELECT number_sync_standbys FROM pgautofailover.formation WHERE formationid = 'default'" "$MON" 2>/dev/null)
sync_before="synchronous_standby_names = '$ssn1', synchronous_commit = $sc1, standby ${rep1:-none}, number_sync_standbys ${nss:-?}"
sync_ok=no
[ -n "$ssn1" ] && [ "$sc1" = on ] && [[ "$rep1" =~ \ (quorum|sync)$ ]] && sync_ok=yes
check "synchronous replication before the failover: $sync_before" test "$sync_ok" = yes

# ---------------------------------------------------------------------
# The clients
# ---------------------------------------------------------------------
# call CLIENT OP SQL: one call on a new connection; sets OUT and OUTCOME
# (ok, down: no primary or connection lost, lost: 55000, error), and logs
# "client op t0 t1 outcome port" to the client's events file.  Every SQL
# given returns the server's port first.
call() {
	local client=$1 op=$2 sql=$3 t0 t1 err state
	t0=$EPOCHREALTIME
	OUT=$(timeout -k 2 20 psql -X -q -At -F $'\t' -v ON_ERROR_STOP=1 -v VERBOSITY=verbose \
		-c "$sql" "$CONN application_name=fo-$client" 2>"$W/clients/$client.err")
	local rc=$?
	t1=$EPOCHREALTIME
	if [ $rc = 0 ]; then OUTCOME=ok
	else
		err=$(cat "$W/clients/$client.err")
		state=$(sed -n 's/.*\(ERROR\|FATAL\): *\([0-9A-Z]\{5\}\):.*/\2/p' <<<"$err" | head -1)
		case "$state" in
		55000) OUTCOME=lost ;;
		25006 | 57P01 | 57P02 | 57P03 | 08* | '') OUTCOME=down ;;
		*) OUTCOME=error ;;
		esac
		printf '%s\t%s\t%s\t%s\n' "$t0" "$op" "$OUTCOME" "$(tr '\n' ' ' <<<"$err")" >>"$W/clients/$client.errors"
	fi
	local port=
	[ "$OUTCOME" = ok ] && port=${OUT%%$'\t'*} && port=${port%%$'\n'*}
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$client" "$op" "$t0" "$t1" "$OUTCOME" "$port" >>"$W/clients/$client.events"
}

# producer N: creates, then updates, over 30 entities of its own
producer() {
	local c=p$1 seq=0 k kind ent token
	local -a created=()
	while [ ! -e "$W/stop-producers" ]; do
		k=$((RANDOM % 30)); ent="$c-e$k"
		kind=update; [ -z "${created[$k]:-}" ] && kind=create
		seq=$((seq + 1)); token="$c-$seq"
		call "$c" enqueue "SELECT inet_server_port(), dlsm_enqueue('fo_q', '$ent', '$kind', '{\"token\": \"$token\"}')"
		if [ "$OUTCOME" = ok ]; then
			printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$token" "${OUT#*$'\t'}" "$ent" "$kind" >>"$W/clients/enq_ok"
			created[$k]=1
		else
			printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$token" "$ent" "$kind" "$OUTCOME" >>"$W/clients/enq_fail"
			# a create that failed may have committed: the next one would
			# fail on the unique index of creates
			[ "$OUTCOME" = error ] && created[$k]=1
		fi
		sleep 0.02
	done
}

# leased consumer N: claim with a lease (waiting up to 0.5 s for work) and
# commit; work; settle (with the audit row, one transaction), again after a
# lost connection until the settle answers or the claim is lost.  One claim
# in 20 is abandoned (left to the reaper); consumer 3 overruns its lease
# once in 40 claims (its late settle must get 55000).
leased() {
	local c=l$1 port pid fence ent ids at tries
	while [ ! -e "$W/stop-consumers" ]; do
		call "$c" claim "SELECT inet_server_port(), process_id, fence, entity,
			string_agg(id::text, ',' ORDER BY id), clock_timestamp()
			FROM dlsm_claim('fo_q', lease => '$LEASE', wait => '0.5 s') GROUP BY process_id, fence, entity"
		if [ "$OUTCOME" != ok ] || [ -z "$OUT" ]; then sleep 0.05; continue; fi
		IFS=$'\t' read -r port pid fence ent ids at <<<"$OUT"
		printf '%s\t%s\t%s\t%s\t%s\t{%s}\t%s\n' "$c" "$port" "$pid" "$fence" "$ent" "$ids" "$at" >>"$W/clients/claims"
		if [ $((RANDOM % 20)) = 0 ]; then
			printf '%s\t%s\tabandoned\t0\t\n' "$c" "$pid" >>"$W/clients/settles"
			continue
		fi
		if [ "$1" = 3 ] && [ $((RANDOM % 40)) = 0 ]; then sleep 6.5
		else sleep "0.0$((RANDOM % 5 + 1))"; fi
		for tries in $(seq 1 60); do
			call "$c" settle "INSERT INTO fo_audit (client, process_id, fence, entity, ids, settled, started_at, ended_at, port)
				SELECT '$c', '$pid', $fence, '$ent', '{$ids}', dlsm_settle('fo_q', '$pid'), '$at', clock_timestamp(), inet_server_port()
				RETURNING port, settled"
			case $OUTCOME in
			ok) printf '%s\t%s\tok\t%s\t%s\n' "$c" "$pid" "${OUT#*$'\t'}" "${OUT%%$'\t'*}" >>"$W/clients/settles"; break ;;
			lost) printf '%s\t%s\tlost\t0\t\n' "$c" "$pid" >>"$W/clients/settles"; break ;;
			error) printf '%s\t%s\terror\t0\t\n' "$c" "$pid" >>"$W/clients/settles"; break ;;
			esac
			sleep 0.2
		done
	done
}

# transactional consumer: claim, settle and audit in one statement
transactional() {
	local c=t1 line port pid fence ent ids settled
	while [ ! -e "$W/stop-consumers" ]; do
		call "$c" claim+settle "WITH u AS (
				SELECT process_id, fence, entity, array_agg(id ORDER BY id) AS ids, clock_timestamp() AS at
				  FROM dlsm_claim('fo_q', wait => '0.5 s') GROUP BY process_id, fence, entity)
			INSERT INTO fo_audit (client, process_id, fence, entity, ids, settled, started_at, ended_at, port)
			SELECT '$c', process_id, fence, entity, ids, dlsm_settle('fo_q', process_id), at, clock_timestamp(), inet_server_port()
			  FROM u
			RETURNING port, process_id, fence, entity, array_to_string(ids, ','), started_at, settled"
		if [ "$OUTCOME" != ok ] || [ -z "$OUT" ]; then sleep 0.05; continue; fi
		IFS=$'\t' read -r port pid fence ent ids at settled <<<"$OUT"
		printf '%s\t%s\t%s\t%s\t%s\t{%s}\t%s\n' "$c" "$port" "$pid" "$fence" "$ent" "$ids" "$at" >>"$W/clients/claims"
		printf '%s\t%s\tok\t%s\t%s\n' "$c" "$pid" "$settled" "$port" >>"$W/clients/settles"
	done
}

: >"$W/clients/enq_ok"; : >"$W/clients/enq_fail"; : >"$W/clients/claims"; : >"$W/clients/settles"
for i in $(seq 1 $N_PRODUCERS); do producer "$i" & client_pids+=($!); done
for i in $(seq 1 $N_LEASED); do leased "$i" & client_pids+=($!); done
transactional & client_pids+=($!)

say "clients running: $N_PRODUCERS producers, $N_LEASED leased consumers, 1 transactional; failover in $BEFORE s"
sleep "$BEFORE" & wait $!

# ---------------------------------------------------------------------
# The failover
# ---------------------------------------------------------------------
f0=$EPOCHREALTIME
autoctl perform failover --pgdata "$W/monitor" >"$W/failover.log" 2>&1
frc=$?
f1=$EPOCHREALTIME
fdur=$(awk -v a="$f0" -v b="$f1" 'BEGIN { printf "%.1f", b - a }')
state2=$(node_state node2)
check "pg_autoctl perform failover (${fdur} s, exit $frc): node2 took over ($state2)" \
	test "$frc" = 0 -a "$state2" != secondary -a -n "$state2"
say "failover took $fdur s; clients keep going for $AFTER s"

sleep "$AFTER" & wait $!
touch "$W/stop-producers"

# the old primary back as a secondary, synchronous again
rejoined=no
wait_state node1 secondary 60 && wait_state node2 primary 30 && rejoined=yes
# how long the new primary ran without a synchronous standby (wait_primary)
async_window=$(psql -X -Atc "SELECT round(extract(epoch FROM b.p - a.w)::numeric, 1)
	  FROM (SELECT min(eventtime) AS w FROM pgautofailover.event
			 WHERE nodename = 'node2' AND reportedstate = 'wait_primary') a,
	  LATERAL (SELECT min(eventtime) AS p FROM pgautofailover.event
				WHERE nodename = 'node2' AND reportedstate = 'primary' AND eventtime > a.w) b" "$MON" 2>&1)
sync_after="synchronous_standby_names = '$(q "$P2" 'SHOW synchronous_standby_names')', standby $(q "$P2" "SELECT application_name || ' ' || sync_state FROM pg_stat_replication")"
check "node1 rejoined as a secondary of node2 ($sync_after)" test "$rejoined" = yes
check "a dlsm worker runs on the new primary, none on the new secondary" \
	test "$(q "$P2" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'"),$(q "$P1" "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker'")" = 1,0

# the drain: consumers finish the queue (a lost lease is reaped in 5 s)
drained=no
for _ in $(seq 1 200); do
	[ "$(psql -X -Atc "SELECT count(*) FROM fo_q WHERE status IN ('new', 'in-progress')" "$CONN" 2>/dev/null)" = 0 ] &&
		{ drained=yes; break; }
	[ "$(left)" -gt 40 ] || break
	sleep 0.3
done
touch "$W/stop-consumers"
for pid in "${client_pids[@]}"; do wait "$pid" 2>/dev/null; done
client_pids=()
check "the queue drained after the producers stopped" test "$drained" = yes

# ---------------------------------------------------------------------
# The invariants
# ---------------------------------------------------------------------
cat "$W"/clients/*.events >"$W/clients/events" 2>/dev/null
results=$(psql -X -q -v ON_ERROR_STOP=1 -v first=$((n + 1)) -v old_port="$P1" -v new_port="$P2" \
	"$CONN" 2>"$W/checks.err" <<EOF
CREATE TEMP TABLE enq_ok (client text, token text, id bigint, entity text, kind text);
CREATE TEMP TABLE enq_fail (client text, token text, entity text, kind text, why text);
CREATE TEMP TABLE claims (client text, port int, process_id uuid, fence bigint, entity text, ids bigint[], at timestamptz);
CREATE TEMP TABLE settles (client text, process_id uuid, result text, settled bigint, port int);
CREATE TEMP TABLE events (client text, op text, t0 float8, t1 float8, outcome text, port int);
\copy enq_ok FROM '$W/clients/enq_ok'
\copy enq_fail FROM '$W/clients/enq_fail'
\copy claims FROM '$W/clients/claims'
\copy settles FROM '$W/clients/settles' WITH (NULL '')
\copy events FROM '$W/clients/events' WITH (NULL '')
\i $HERE/checks.sql
EOF
) || { cat "$W/checks.err"; bail "checks.sql ran"; }
while IFS= read -r line; do
	case $line in
	"ok "*) n=$((n + 1)); passed=$((passed + 1)); echo "$line" ;;
	"not ok "*) n=$((n + 1)); failed=$((failed + 1)); echo "$line" ;;
	esac
done <<<"$results"
fig() { sed -n "s/^$1 //p" <<<"$results"; }
tli() { [[ "$1" =~ ^[0-9]+$ ]] && echo "timeline bits $(($1 >> 52))" || echo "-"; }

SUMMARY=$(
	echo "failover summary:"
	echo "  requests in: $(fig acked) enqueues acknowledged ($(fig queued) rows in the queue); settled: $(fig complete) complete, $(fig errors) error"
	echo "  units settled: $(fig units); settles acknowledged: $(fig settles_acked); late settles refused with 55000: $(fig settles_lost); claims abandoned: $(fig abandoned); requests reaped after their lease and claimed again: $(fig reaped)"
	echo "  highest fence before the failover: $(fig fence_before) ($(tli "$(fig fence_before)")); lowest after: $(fig fence_after) ($(tli "$(fig fence_after)"))"
	echo "  pg_autoctl perform failover: $fdur s; as seen by the clients, from the first failed call to the first success on the new primary: $(fig outage) s (longest wait of one client: $(fig outage_client_max) s; $(fig failed_calls) failed calls)"
	echo "  replication before: $sync_before"
	echo "  replication after: $sync_after; asynchronous window after the failover (new primary in wait_primary until the old one rejoined): ${async_window:-?} s"
	echo "  run time: $((SECONDS - START)) s (limit $LIMIT s); logs in test/failover/out/"
)
finish
