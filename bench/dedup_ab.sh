#!/usr/bin/env bash
# bench/dedup_ab.sh: the cost of a dedup key (issue 22), side by side in one
# run on one throwaway cluster: dlsm_enqueue with a dedup key, a new one
# each time (so that every call takes the key's lock, looks it up and
# inserts, with the dedup index to maintain), against dlsm_enqueue without
# one, into two queues made alike by dlsm_create_queue:
#   single  one enqueue per transaction, as producers do (a commit each)
#   batch   100 enqueues per transaction: the call's own cost, no commit
# Rounds alternate the order of the two sides; both queues are made
# afresh before each run.  Prints enqueues per second per side, median of the
# rounds, and the ratio with/without (the goal: at least 0.8), of the
# medians and paired (the median of each round's ratio: the machine's
# load drifts less within a round than across rounds).
#   bash bench/dedup_ab.sh [CLIENTS] [ROUNDS] [SECONDS]
#   BENCH_PGBIN=/path/to/bin bash bench/dedup_ab.sh   # a private installation
# Run as root (or postgres) with dlsm installed in that PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
clients=${1:-4}; rounds=${2:-3}; seconds=${3:-5}
PGBIN=${BENCH_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
. test/lib/cluster.sh
work=${BENCH_DIR:-/tmp/dlsm-dedup-bench}
trap cluster_stop EXIT
cluster_start "$work" "${BENCH_PORT:-5483}" "shared_buffers = '256MB'" \
	"max_wal_size = '2GB'" "checkpoint_timeout = '15min'" \
	"log_min_messages = warning"
cluster_psql -q -c "CREATE EXTENSION dlsm" >/dev/null

# one SCRIPT ROWS: enqueues per second of a pgbench run of SCRIPT, whose
# transactions enqueue ROWS each
one() {
	local tps
	# fresh queues: never analyzed, as a new queue (an emptied queue that
	# was analyzed empty plans a sequential scan until the next analyze)
	cluster_psql -q -c "SET client_min_messages = warning" \
		-c "DROP TABLE IF EXISTS bq_plain, bq_dedup" \
		-c "SELECT dlsm_create_queue('bq_plain'), dlsm_create_queue('bq_dedup')" \
		-c "CHECKPOINT" >/dev/null
	tps=$(as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres \
		-n -M prepared -c "$clients" -j $(( clients < 2 ? 1 : 2 )) -T "$seconds" \
		-f "$top/bench/scripts/$1.sql" postgres 2>"$work/pgbench.err" |
		awk '/^tps = / { print $3 }')
	awk -v t="${tps:-0}" -v n="$2" 'BEGIN { printf "%.0f\n", t * n }'
}

declare -A runs ratios
for r in $(seq 1 "$rounds"); do
	for variant in single batch; do
		rows=1; suffix=
		[ "$variant" = batch ] && { rows=100; suffix=_batch; }
		order="plain dedup"; [ $((r % 2)) = 0 ] && order="dedup plain"
		for side in $order; do
			script=dlsm_enqueue$suffix
			[ "$side" = dedup ] && script=dlsm_enqueue_dedup$suffix
			v=$(one "$script" "$rows")
			runs[$variant.$side]+="$v "
			eval "this_$side=$v"
			echo "round $r $variant $side $v/s"
		done
		# the ratio of the round: its two sides ran one after the other
		ratios[$variant]+="$(awk -v d="$this_dedup" -v p="$this_plain" 'BEGIN { printf "%.3f", (p > 0 ? d / p : 0) }') "
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
printf '%-8s %12s %12s %7s %7s\n' variant without with ratio paired
for variant in single batch; do
	p=$(echo "${runs[$variant.plain]}" | median); d=$(echo "${runs[$variant.dedup]}" | median)
	printf '%-8s %12s %12s %7.3f %7s\n' "$variant" "$p" "$d" \
		"$(awk -v d="$d" -v p="$p" 'BEGIN { print (p > 0 ? d / p : 0) }')" \
		"$(echo "${ratios[$variant]}" | median)"
done
echo "(enqueues per second, $clients clients, $rounds rounds of $seconds s, median;"
echo " ratio: of the medians; paired: median of the rounds' own ratios)"
