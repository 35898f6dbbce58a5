#!/usr/bin/env bash
# test/stress/stress.sh: a bounded stress run of dlsm against a throwaway
# cluster, then its invariants as TAP lines on stdout.
#
# For STRESS_SECONDS (default 60): a producer inserting creates then updates
# at random over STRESS_ENTITIES entities; STRESS_CONSUMERS consumers (at
# least 8), transactional and leased, that claim single units and batches,
# complete, fail, retry, roll back, overrun or abandon their leases; a
# janitor calling dlsm_reap; a killer terminating consumer backends every
# 0.3-1 s; and one immediate server restart (a crash) in the middle.  Every
# actor is a procedure looping with COMMIT inside, restarted by a shell loop
# when its backend dies.  Then everything stops, the leases run out, the
# reaper and a clean consumer drain the queue, and test/stress/checks.sql
# checks the invariants from the producer log and the audit table the
# consumers wrote inside their units.
#
# Checks (checks.sql has the details): nothing lost; every request terminal
# after the drain; none settled twice; no entity in two units at once; no
# update before its create completed; grouped updates share one process id
# and fence; fences increase within an entity; an entity's requests are
# handled in id order; nothing claimed before its run_at; the run stressed
# (counts); never more units of a group in progress than its concurrency
# limit, nor more claims of a group than its rate in any window; no two
# live requests with one dedup key (a dedup producer; the clerk's requeues
# included); every request requeued (a dead-letter clerk, which also
# cancels) settled again exactly once; no unexpected SQL error or server
# fault.
#
# Run as root (the server runs as postgres) or as postgres:
#   bash test/stress/stress.sh
# Settings (environment): STRESS_SECONDS, STRESS_CONSUMERS, STRESS_ENTITIES,
# STRESS_PAUSE (producer pause, s), STRESS_MAX_REQUESTS, STRESS_MIN_REQUESTS,
# STRESS_MIN_KILLS, STRESS_DIR, STRESS_PORT, STRESS_TIMEOUT (hard limit, s),
# STRESS_KEEP=1 to leave the cluster running afterwards.
# Exit status: 0 when every check passed.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"
# The postgres user runs every program below and may not be able to enter
# the current directory (a clone in /root): work from /.  (Paths are
# absolute from here on.)
cd / || exit 2

STRESS_DIR=${STRESS_DIR:-/tmp/dlsm-stress}
STRESS_PORT=${STRESS_PORT:-5477}
STRESS_SECONDS=${STRESS_SECONDS:-60}
STRESS_CONSUMERS=${STRESS_CONSUMERS:-10}
STRESS_ENTITIES=${STRESS_ENTITIES:-300}
STRESS_PAUSE=${STRESS_PAUSE:-0.01}
STRESS_MAX_REQUESTS=${STRESS_MAX_REQUESTS:-100000}
# 2000 requests at least; fewer for a run shorter than 50 s
min_default=$((STRESS_SECONDS * 40)); [ "$min_default" -gt 2000 ] && min_default=2000
STRESS_MIN_REQUESTS=${STRESS_MIN_REQUESTS:-$min_default}
STRESS_MIN_KILLS=${STRESS_MIN_KILLS:-6}
STRESS_TIMEOUT=${STRESS_TIMEOUT:-$((STRESS_SECONDS + 120))}
STRESS_KEEP=${STRESS_KEEP:-0}

say() { echo "# $*" >&2; }

# bail REASON: the run could not be made; one failing TAP line, exit 2
bail() {
	echo "stress: $*" >&2
	echo "1..1"
	echo "not ok 1 - stress run: $*"
	exit 2
}

[ "$STRESS_CONSUMERS" -ge 8 ] || bail "STRESS_CONSUMERS must be at least 8"

# One run at a time per directory: a second run would wipe the first's
# cluster.  The lock (fd 9) is held by this shell and its actors, not by
# the server nor by short sleeps that could outlive the run.
lock=$STRESS_DIR.lock
touch "$lock" 2>/dev/null && chmod 666 "$lock" 2>/dev/null
exec 9<"$lock" || bail "cannot open $lock"
flock -w 10 9 || bail "another stress run is using $STRESS_DIR (lock $lock)"

# spsql SECONDS APPNAME ARGS...: psql as postgres, bounded by a timeout
spsql() {
	local t=$1 app=$2
	shift 2
	[ "$t" -ge 5 ] || t=5
	as_postgres timeout -k 3 "$t" env PGHOST="$PGHOST" PGPORT="$PGPORT" \
		PGUSER=postgres PGDATABASE=postgres PGAPPNAME="$app" \
		"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"
}

# nap SECONDS: a sleep that a signal trap interrupts at once
nap() {
	sleep "$1" 9<&- &
	wait $!
}

actors=()
watchdog=

stop_actors() {
	touch "$STOP_FILE" 2>/dev/null || true
	local deadline=$((SECONDS + ${1:-0}))
	for pid in "${actors[@]}"; do
		while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
			nap 0.2
		done
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${actors[@]}"; do wait "$pid" 2>/dev/null; done
	actors=()
}

cleanup() {
	local rc=$?
	trap - EXIT TERM INT
	[ -n "${STOP_FILE:-}" ] && stop_actors 0
	if [ "$STRESS_KEEP" = 1 ]; then
		say "cluster left running: PGHOST=$STRESS_DIR PGPORT=$STRESS_PORT"
	else
		cluster_stop
	fi
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 3' TERM INT

# The hard limit: whatever hangs, the run ends.
(
	end=$((SECONDS + STRESS_TIMEOUT))
	while [ "$SECONDS" -lt "$end" ]; do
		sleep 1
		kill -0 $$ 2>/dev/null || exit 0
	done
	echo "stress: hard timeout of ${STRESS_TIMEOUT}s reached" >&2
	kill -TERM $$
) 9<&- &
watchdog=$!

# A server left behind by an earlier run that was killed: stop it first.
if [ -f "$STRESS_DIR/data/postmaster.pid" ]; then
	say "stopping a server left in $STRESS_DIR by an earlier run"
	as_postgres "$PGBIN/pg_ctl" -D "$STRESS_DIR/data" -m immediate -w stop >/dev/null 2>&1 9<&-
fi

say "starting a cluster in $STRESS_DIR on port $STRESS_PORT"
cluster_start "$STRESS_DIR" "$STRESS_PORT" \
	"max_connections = 60" \
	"log_min_messages = warning" \
	"log_line_prefix = '%m [%p] %a '" 9<&- \
	|| bail "cluster_start failed, see $STRESS_DIR"
LOGS=$STRESS_DIR/logs
STOP_FILE=$STRESS_DIR/stop
mkdir -p "$LOGS"
give_to_postgres "$LOGS"

spsql 60 stress-setup -f - <"$HERE/stress.sql" >"$LOGS/setup.log" 2>&1 \
	|| { cat "$LOGS/setup.log" >&2; bail "setup failed"; }

RUN_START=$(date +%s)
RUN_END=$((RUN_START + STRESS_SECONDS))
spsql 30 stress-setup -c "INSERT INTO stress_control (run_end) VALUES (to_timestamp($RUN_END))" \
	|| bail "setup failed"

# actor APPNAME SQL: run SQL again and again until the end of the run
actor() {
	local app=$1 sql=$2
	while [ ! -e "$STOP_FILE" ] && [ "$(date +%s)" -lt "$RUN_END" ]; do
		spsql $((RUN_END - $(date +%s) + 15)) "$app" -c "$sql" >>"$LOGS/$app.log" 2>&1
		sleep 0.1
	done
}

say "running for ${STRESS_SECONDS}s: producer, $STRESS_CONSUMERS consumers, janitor, killer"
actor stress-producer \
	"CALL stress_produce($STRESS_MAX_REQUESTS, $STRESS_ENTITIES, $STRESS_PAUSE)" &
actors+=($!)
for i in $(seq 1 "$STRESS_CONSUMERS"); do
	# about 60% transactional, 40% leased
	if [ $((i % 5)) -lt 3 ]; then mode=tx; else mode=leased; fi
	actor "stress-consumer-$i" "CALL stress_consume('stress-consumer-$i', '$mode')" &
	actors+=($!)
done
actor stress-janitor "CALL stress_janitor()" &
actors+=($!)
actor stress-killer "CALL stress_killer()" &
actors+=($!)
actor stress-dedup "CALL stress_dedup_produce()" &
actors+=($!)
actor stress-clerk "CALL stress_dead_letters()" &
actors+=($!)

# One crash in the middle of the run.
nap $((STRESS_SECONDS * 45 / 100))
say "crashing the server (immediate stop) and restarting it"
if cluster_restart immediate 9<&-; then
	for _ in 1 2 3 4 5; do
		spsql 10 stress-main -c "INSERT INTO stress_stats (what, n, who) VALUES ('crash', 1, 'main')" \
			2>/dev/null && break
		nap 0.5
	done
else
	bail "the server did not come back after the crash"
fi

left=$((RUN_END - $(date +%s)))
[ "$left" -gt 0 ] && nap "$left"

say "stopping the actors"
spsql 10 stress-main -c "UPDATE stress_control SET stop = true" || true
stop_actors 15

# Leases still running: wait until they have expired, then reap.
wait_s=$(spsql 10 stress-main -At -c "SELECT coalesce(ceil(extract(epoch FROM max(lease_until) - clock_timestamp())), 0)::int FROM stress_q WHERE status = 'in-progress'")
wait_s=${wait_s:-0}
if [ "$wait_s" -gt 0 ] 2>/dev/null; then
	[ "$wait_s" -gt 10 ] && wait_s=10
	say "waiting ${wait_s}s for the remaining leases to expire"
	nap "$wait_s"
fi
spsql 10 stress-main -c "INSERT INTO stress_stats (what, n, who) SELECT 'reaped', dlsm_reap('stress_q'), 'main'" \
	|| echo "stress: reap failed" >&2

say "draining the queue with a clean consumer"
spsql 90 stress-drain -c "CALL stress_consume('stress-drain', 'drain')" >"$LOGS/stress-drain.log" 2>&1 \
	|| { cat "$LOGS/stress-drain.log" >&2; echo "stress: the drain failed" >&2; }

say "checking"
out=$(spsql 120 stress-check -v min_requests="$STRESS_MIN_REQUESTS" \
	-v min_kills="$STRESS_MIN_KILLS" -f - <"$HERE/checks.sql" 2>"$LOGS/checks.err")
if [ "$(echo "$out" | grep -cE '^(ok|not ok) ')" -ne 14 ]; then
	echo "$out" | sed 's/^/# /' >&2
	cat "$LOGS/checks.err" >&2
	bail "checks.sql did not run to the end"
fi

# 15: nothing failed that should not have: consumers see only connection
# loss (kills, the crash), never an SQL error; the server never crashed
# by itself
client_errors=$(cat "$LOGS"/stress-*.log 2>/dev/null | grep -c 'ERROR:')
server_faults=$(grep -cE 'PANIC|TRAP:|terminated by signal|was terminated by exception' \
	"$STRESS_DIR/server.log")
if [ "$client_errors" -eq 0 ] && [ "$server_faults" -eq 0 ]; then ok=ok; else ok="not ok"; fi
line11="$ok 15 - no unexpected errors: $client_errors SQL errors in the actors' logs, $server_faults server faults in server.log"
if [ "$ok" != ok ]; then
	cat "$LOGS"/stress-*.log | grep -A3 'ERROR:' | head -40 | sed 's/^/# /' >&2
	grep -E 'PANIC|TRAP:|terminated by signal|was terminated by exception' \
		"$STRESS_DIR/server.log" | head -10 | sed 's/^/# /' >&2
fi

echo "1..15"
echo "$out" | grep -v '^stress:'
echo "$line11"
echo "$out" | grep '^stress:'

if echo "$out" | grep -q '^not ok' || [ "$ok" != ok ]; then
	exit 1
fi
exit 0
