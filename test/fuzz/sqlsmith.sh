#!/usr/bin/env bash
# test/fuzz/sqlsmith.sh: sqlsmith, a random SQL generator, against a
# database with dlsm and its queues, as an ordinary role, for a bounded
# time; the server must not crash.
#
# A throwaway cluster (dlsm preloaded, its worker reaping every second);
# test/fuzz/setup.sql makes, as a superuser, the database fuzz: dlsm, the
# ordinary roles fuzzer and fuzzowner and their queues (one made by
# dlsm_create_queue with a handler that sometimes fails and a captured
# table, one adopted by dlsm_register_queue with groups, group limits, dedup
# keys and a capture, fuzzer's own with a handler and a limit), and
# fuzzcat, the catalog sqlsmith reads, in which dlsm's functions are a large
# share of what it may call.  Then, seed after seed (FUZZ_SEED, FUZZ_SEED+1,
# ...) until FUZZ_SECONDS are used: test/fuzz/refill.sql puts rows in every
# state into the queues, with named locks, and sqlsmith runs FUZZ_QUERIES
# queries as fuzzer (--exclude-catalog: its tables are the queues, their
# sources and dlsm's).  A sqlsmith that exits early (it may) is followed by
# the next seed; only the server failing fails the run.
#
# TAP lines on stdout, then "N passed, N failed":
#   1 sqlsmith ran (at least 100 queries; seeds, exits)
#   2 dlsm's functions were called: attempts in the generated queries (from
#     --dump-all-queries), calls that returned (pg_stat_user_functions,
#     track_functions = 'all'), by function
#   3 no server crash: server.log has no "terminated by signal", "was
#     terminated", "all server processes terminated; reinitializing",
#     PANIC nor TRAP
#   4 after the run the server answers and a dlsm worker runs
# After a crash the run stops at once; the diagnostics show the lines of
# server.log around it, the whole crashing query (found among sqlsmith's
# last queries by the start server.log keeps of it) and, when a core file
# was left and gdb is installed, its backtrace.
#
# Run as root (the server runs as postgres) or as postgres:
#   bash test/fuzz/sqlsmith.sh                     # 3 minutes, as in CI
#   FUZZ_SECONDS=3600 bash test/fuzz/sqlsmith.sh   # a longer run
# Settings (environment): FUZZ_SECONDS (180), FUZZ_SEED (first seed, 1),
# FUZZ_QUERIES (queries per seed, 5000), FUZZ_DIR (/tmp/dlsm-fuzz),
# FUZZ_PORT (5475), FUZZ_JIT (off, see below), FUZZ_KEEP=1 to leave the
# cluster running afterwards,
# PGBIN (the server's programs, default the system's PostgreSQL 15).
# Exit status: 0 when every check passed.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"
# postgres may not be able to enter the current directory: work from /
cd / || exit 2

FUZZ_SECONDS=${FUZZ_SECONDS:-180}
FUZZ_SEED=${FUZZ_SEED:-1}
FUZZ_QUERIES=${FUZZ_QUERIES:-5000}
FUZZ_DIR=${FUZZ_DIR:-/tmp/dlsm-fuzz}
FUZZ_PORT=${FUZZ_PORT:-5475}
FUZZ_KEEP=${FUZZ_KEEP:-0}
# JIT off: the first runs of this script crashed a backend inside LLVM 14
# (llvm::FastISel::fastEmitBranch, from llvmjit's llvm_get_function),
# compiling the expressions of a query of sqlsmith's (a join of fq.jobs,
# dlsm_leases, dlsm_queues and the view dlsm_locks), not reproduced with
# that query alone, JIT forced; LLVM's code generation, not dlsm's, and a
# suite that failed on it would fail at random.
# FUZZ_JIT=on fuzzes with it.
FUZZ_JIT=${FUZZ_JIT:-off}
FUZZ_TIMEOUT=$((FUZZ_SECONDS + 180))
LOGS=$FUZZ_DIR/logs
DB=fuzz
CRASH='terminated by signal|was terminated|all server processes terminated; reinitializing|PANIC|TRAP:'

say() { echo "# $*"; }

# bail REASON: the run could not be made; one failing TAP line, exit 2
bail() {
	echo "fuzz: $*" >&2
	echo "not ok 1 - fuzz run: $*"
	echo "0 passed, 1 failed"
	exit 2
}

command -v sqlsmith >/dev/null || bail "sqlsmith is not installed (apt-get install sqlsmith)"

# One run at a time per directory (fd 9; not inherited by the server)
lock=$FUZZ_DIR.lock
touch "$lock" 2>/dev/null && chmod 666 "$lock" 2>/dev/null
exec 9<"$lock" || bail "cannot open $lock"
flock -w 10 9 || bail "another fuzz run is using $FUZZ_DIR (lock $lock)"

spid='' apid='' watchdog=''
cleanup() {
	local rc=$?
	trap - EXIT TERM INT
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "$apid" ] && kill "$apid" 2>/dev/null && wait "$apid" 2>/dev/null
	if [ "$FUZZ_KEEP" = 1 ]; then
		say "cluster left running: PGHOST=$FUZZ_DIR PGPORT=$FUZZ_PORT dbname=$DB"
	else
		cluster_stop 9<&-
	fi
	[ -n "$watchdog" ] && kill "$watchdog" 2>/dev/null
	exit "$rc"
}
trap cleanup EXIT
trap 'echo "fuzz: interrupted" >&2; exit 3' TERM INT

# The hard limit: whatever hangs, the run ends.
(
	end=$((SECONDS + FUZZ_TIMEOUT))
	while [ "$SECONDS" -lt "$end" ]; do
		sleep 1
		kill -0 $$ 2>/dev/null || exit 0
	done
	echo "fuzz: hard timeout of ${FUZZ_TIMEOUT}s reached" >&2
	kill -TERM $$
) 9<&- &
watchdog=$!

# A server left behind by an earlier run that was killed: stop it first.
if [ -f "$FUZZ_DIR/data/postmaster.pid" ]; then
	say "stopping a server left in $FUZZ_DIR by an earlier run"
	as_postgres "$PGBIN/pg_ctl" -D "$FUZZ_DIR/data" -m immediate -w stop >/dev/null 2>&1 9<&-
fi

say "starting a cluster in $FUZZ_DIR on port $FUZZ_PORT ($PGBIN)"
rm -rf "$FUZZ_DIR"
# errors are the fuzzer's daily bread: not logged, nor their statements;
# LOG and worse are (a crash is LOG)
cluster_init "$FUZZ_DIR" "$FUZZ_PORT" \
	"dlsm.reap_interval = '1s'" \
	"jit = $FUZZ_JIT" \
	"track_functions = 'all'" \
	"log_min_messages = log" \
	"log_min_error_statement = panic" \
	"log_line_prefix = '%m [%p] %a '" 9<&- || bail "initdb failed, see $FUZZ_DIR"
# -c: a crashing backend may leave a core file in the data directory
as_postgres "$PGBIN/pg_ctl" -D "$FUZZ_DIR/data" -l "$FUZZ_DIR/server.log" -c -w -t 60 start \
	>/dev/null 9<&- || bail "the server did not start, see $FUZZ_DIR/server.log"
export PGHOST=$FUZZ_DIR PGPORT=$FUZZ_PORT PGUSER=postgres PGDATABASE=$DB
mkdir -p "$LOGS"
give_to_postgres "$LOGS"

# fpsql ARGS...: psql as the superuser in the fuzzed database, bounded
fpsql() {
	as_postgres timeout -k 3 60 env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		"$PGBIN/psql" -X -q -d "$DB" "$@" 9<&-
}

cluster_psql -d postgres -c "CREATE DATABASE $DB" 9<&- >"$LOGS/setup.log" 2>&1 ||
	{ cat "$LOGS/setup.log"; bail "CREATE DATABASE failed"; }
fpsql -v ON_ERROR_STOP=1 -f - <"$HERE/setup.sql" >>"$LOGS/setup.log" 2>&1 ||
	{ sed 's/^/# /' "$LOGS/setup.log"; bail "test/fuzz/setup.sql failed"; }
# the calls of dlsm's functions, per function, before and after each
# seed (a schema the fuzzer cannot see)
fpsql -v ON_ERROR_STOP=1 >>"$LOGS/setup.log" 2>&1 <<'EOF' || bail "setup failed"
CREATE SCHEMA fuzzadmin;
REVOKE ALL ON SCHEMA fuzzadmin FROM PUBLIC;
CREATE TABLE fuzzadmin.calls (seed int, side text, funcname name, calls int8);
EOF

# crashed: did the server log a crash?
crashed() { grep -qE "$CRASH" "$FUZZ_DIR/server.log"; }

# snapshot SEED SIDE: the calls of dlsm's functions so far
snapshot() {
	fpsql -v ON_ERROR_STOP=1 -c "INSERT INTO fuzzadmin.calls
		SELECT $1, '$2', funcname, calls FROM pg_stat_user_functions
		 WHERE schemaname = 'public' AND funcname LIKE 'dlsm\_%'" >>"$LOGS/setup.log" 2>&1
}

# the queries' counter: counts the queries and the calls of dlsm_* on
# sqlsmith's --dump-all-queries (each query ends with a line ending in
# ";") and keeps the last 300 queries in the file RING
count_awk='
{ buf = buf $0 "\n"; line = $0
  while (match(line, /public\.dlsm_[a-z_]+\(/)) {
	calls[substr(line, RSTART + 7, RLENGTH - 8)]++
	line = substr(line, RSTART + RLENGTH)
  } }
/;$/ { n++; ring[n % 300] = buf; buf = "" }
END { print "queries " n + 0
  for (f in calls) print "calls " f " " calls[f]
  for (i = n - 299; i <= n; i++) if (i > 0) printf "%s", ring[i % 300] > ring_file }'

target="host=$FUZZ_DIR port=$FUZZ_PORT dbname=$DB user=fuzzer options='-csearch_path=fuzzcat,pg_catalog,fz,public'"
start=$SECONDS
end=$((start + FUZZ_SECONDS))
seed=$FUZZ_SEED
round=0
queries=0
early=0
short_runs=0
seeds=()
fifo=$FUZZ_DIR/queries.fifo
while [ $((end - SECONDS)) -ge 5 ] && ! crashed; do
	round=$((round + 1))
	# the first refill must work; later ones may meet rows the fuzzer left
	stop=0; [ "$round" = 1 ] && stop=1
	if ! fpsql -v ON_ERROR_STOP=$stop -v round="$round" -At -f - <"$HERE/refill.sql" \
		>"$LOGS/refill-$round.log" 2>&1; then
		sed 's/^/# /' "$LOGS/refill-$round.log" | tail -20
		bail "test/fuzz/refill.sql failed"
	fi
	sleep 1	# the refill's backend has flushed its statistics
	snapshot "$seed" before
	left=$((end - SECONDS))
	rm -f "$fifo"; mkfifo "$fifo"
	awk -v ring_file="$LOGS/last-queries-$seed.sql" "$count_awk" <"$fifo" \
		>"$LOGS/counts-$seed.txt" 9<&- &
	apid=$!
	timeout -k 5 "$left" sqlsmith --target="$target" --seed="$seed" \
		--max-queries="$FUZZ_QUERIES" --exclude-catalog --dump-all-queries --verbose \
		>"$fifo" 2>"$LOGS/sqlsmith-$seed.err" 9<&- &
	spid=$!
	# stop at the first crash, the crashing query still among the last
	while kill -0 "$spid" 2>/dev/null; do
		if crashed; then kill "$spid" 2>/dev/null; break; fi
		sleep 1
	done
	wait "$spid"; rc=$?; spid=
	wait "$apid"; apid=
	rm -f "$fifo"
	sleep 1	# sqlsmith's backends have flushed their statistics
	snapshot "$seed" after
	n=$(sed -n 's/^queries //p' "$LOGS/counts-$seed.txt")
	n=${n:-0}
	queries=$((queries + n))
	seeds+=("$seed")
	case $rc in
	0) say "seed $seed: $n queries" ;;
	124 | 143) say "seed $seed: $n queries, stopped (time is up, or a crash)" ;;
	*)
		early=$((early + 1))
		say "seed $seed: sqlsmith exited with status $rc after $n queries; the next seed follows"
		grep -vE '^[.eCtS]*$' "$LOGS/sqlsmith-$seed.err" | tail -3 | sed 's/^/#   /'
		;;
	esac
	# a sqlsmith that cannot run at all: three seeds in a row without a query
	if [ "$n" -lt 10 ] && [ "$rc" != 124 ] && [ "$rc" != 143 ]; then
		short_runs=$((short_runs + 1))
		[ "$short_runs" -lt 3 ] || break
	else
		short_runs=0
	fi
	seed=$((seed + 1))
done
took=$((SECONDS - start))

passed=0 failed=0 t=0
check() {	# check DESCRIPTION COMMAND...
	t=$((t + 1))
	if "${@:2}"; then
		echo "ok $t - $1"; passed=$((passed + 1))
	else
		echo "not ok $t - $1"; failed=$((failed + 1))
	fi
}

# 1: sqlsmith ran
check "sqlsmith ran $queries queries as an ordinary role in ${took} s, seeds ${seeds[*]:-none} ($early exited early)" \
	test "$queries" -ge 100

# 2: dlsm's functions were called
attempts=$(cat "$LOGS"/counts-*.txt 2>/dev/null | awk '$1 == "calls" { s += $3 } END { print s + 0 }')
by_attempts=$(cat "$LOGS"/counts-*.txt 2>/dev/null |
	awk '$1 == "calls" { c[$2] += $3 } END { for (f in c) print c[f], f }' | sort -rn |
	awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }')
returned_by=$(fpsql -At -F ' ' -c "SELECT a.funcname, sum(a.calls - coalesce(b.calls, 0))
	  FROM fuzzadmin.calls a
	  LEFT JOIN fuzzadmin.calls b ON b.seed = a.seed AND b.side = 'before' AND b.funcname = a.funcname
	 WHERE a.side = 'after'
	 GROUP BY 1 HAVING sum(a.calls - coalesce(b.calls, 0)) > 0 ORDER BY 2 DESC, 1" 2>/dev/null)
returned=$(awk '{ s += $2 } END { print s + 0 }' <<<"$returned_by")
functions=$(grep -c . <<<"$returned_by")
check "dlsm's functions were called: $attempts calls in the generated queries, $returned returned, of $functions functions" \
	test "$returned" -gt 0 -a "$attempts" -gt 0
echo "fuzz: calls generated, by function: ${by_attempts:-none}"
echo "fuzz: calls that returned (pg_stat_user_functions), by function: $(awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' <<<"$returned_by")"

# 3: no server crash
faults=$(grep -cE "$CRASH" "$FUZZ_DIR/server.log")
check "no server crash: $faults crash lines in server.log" test "$faults" = 0
if [ "$faults" != 0 ]; then
	say "server.log around the first crash:"
	first=$(grep -nE "$CRASH" "$FUZZ_DIR/server.log" | head -1 | cut -d: -f1)
	sed -n "$((first > 10 ? first - 10 : 1)),$((first + 12))p" "$FUZZ_DIR/server.log" | cut -c1-600 | sed 's/^/#   /'
	# the whole query: server.log keeps its first 1024 bytes (its lines
	# after "Failed process was running:"); find the last query sqlsmith
	# generated that starts so, blanks aside
	sed -n '/Failed process was running: /,$p' "$FUZZ_DIR/server.log" |
		sed '1s/.*Failed process was running: //' |
		awk 'NR > 1 && /^[0-9]{4}-[0-9][0-9]-[0-9][0-9] / { exit } { print }' >"$LOGS/crash-query-start.sql"
	if [ -s "$LOGS/crash-query-start.sql" ]; then
		awk -v start="$LOGS/crash-query-start.sql" '
			function norm(x) { gsub(/[ \t\n]+/, " ", x); sub(/^ /, "", x); return x }
			BEGIN { while ((getline l < start) > 0) h = h l "\n"; h = substr(norm(h), 1, 300) }
			{ q = q $0 "\n" }
			/;$/ { if (index(norm(q), h) == 1) found = q; q = "" }
			END { printf "%s", found }' "$LOGS/last-queries-${seeds[-1]}.sql" >"$LOGS/crash-query.sql" 2>/dev/null
		if [ -s "$LOGS/crash-query.sql" ]; then
			say "the crashing query (seed ${seeds[-1]}; $LOGS/crash-query.sql):"
			sed 's/^/#   /' "$LOGS/crash-query.sql"
		else
			say "the crashing query, its start as server.log has it (sqlsmith's last queries: $LOGS/last-queries-${seeds[-1]}.sql):"
			sed 's/^/#   /' "$LOGS/crash-query-start.sql"
		fi
	fi
	for core in "$FUZZ_DIR"/data/core*; do
		[ -f "$core" ] || continue
		say "core file: $core"
		if command -v gdb >/dev/null; then
			gdb -batch -ex bt "$PGBIN/postgres" "$core" 2>/dev/null | grep -E '^#' | head -40 | sed 's/^/#   /'
		fi
	done
fi

# 4: the server answers, a dlsm worker runs
worker=0
for _ in $(seq 1 30); do
	worker=$(fpsql -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'dlsm worker' AND datname = '$DB'" 2>/dev/null)
	[ "${worker:-0}" -ge 1 ] && break
	sleep 1
done
check "after the run the server answers and the dlsm worker of $DB runs" test "${worker:-0}" -ge 1
echo "fuzz: the queues after the run: $(fpsql -At -c "SELECT string_agg(queue::text || ' ' || new || ' new, ' || in_progress || ' in progress, ' || complete || ' complete, ' || error || ' error', '; ' ORDER BY queue::text) FROM dlsm_queue_stats" 2>/dev/null)"
echo "fuzz: the worker: $(fpsql -At -c "SELECT 'reaped ' || reaped || ', handled ' || handled || ', errors ' || errors FROM dlsm_worker_status WHERE database = '$DB'" 2>/dev/null)"
echo "fuzz: logs in $LOGS"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
