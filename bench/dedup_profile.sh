#!/usr/bin/env bash
# bench/dedup_profile.sh: where a dedup key's cost goes (issue 34), by perf
# on one backend: dlsm_enqueue 100 a transaction without a key and with a
# new key each (bench/dedup_ab.sh's batch scripts), one client each on a
# fresh pair of queues, the backend sampled for SECONDS.  Prints, per
# enqueue, the backend's CPU time and that of the functions the time goes
# to (inclusive), for both, side by side: the difference is what a key
# costs.  CPU time per row, not rows per second: it moves less with what
# else runs on the machine.
#   bash bench/dedup_profile.sh [SECONDS]
#   BENCH_PGBIN=/path/to/bin bash bench/dedup_profile.sh   # a private installation
# Run as root, with perf installed (Debian: linux-perf) and dlsm installed
# in that PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
seconds=${1:-5}
PGBIN=${BENCH_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
. test/lib/cluster.sh
work=${BENCH_DIR:-/tmp/dlsm-dedup-profile}
freq=2999
trap cluster_stop EXIT
cluster_start "$work" "${BENCH_PORT:-5484}" "shared_buffers = '256MB'" \
	"max_wal_size = '2GB'" "checkpoint_timeout = '15min'" \
	"log_min_messages = warning"
cluster_psql -q -c "CREATE EXTENSION dlsm" >/dev/null

# the functions shown, inclusive of what they call
shown='dlsm_enqueue|dlsm_plan_run|dlsm_plan_run_latest|dlsm_lock_dedup_key'
shown+='|SPI_execute_plan|SPI_execute_snapshot|GetCachedPlan'
shown+='|standard_ExecutorStart|ExecInitModifyTable|ExecInitIndexOnlyScan'
shown+='|ExecConstraints|ExecOpenIndices|ExecInsertIndexTuples|btinsert'
shown+='|_bt_first|heap_insert|standard_ExecutorEnd|LockAcquireExtended'
shown+='|set_config_option|AtEOXact_GUC|CommitTransactionCommand'
shown+='|dlsm_dedup_probe|index_getnext_slot|index_beginscan|GetLatestSnapshot'

for side in plain dedup; do
	script=dlsm_enqueue_batch; queue=bq_plain
	[ "$side" = dedup ] && { script=dlsm_enqueue_dedup_batch; queue=bq_dedup; }
	cluster_psql -q -c "SET client_min_messages = warning" \
		-c "DROP TABLE IF EXISTS bq_plain, bq_dedup" \
		-c "SELECT dlsm_create_queue('bq_plain'), dlsm_create_queue('bq_dedup')" \
		-c "CHECKPOINT" >/dev/null
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-M prepared -c 1 -T $((seconds + 4)) -f "$top/bench/scripts/$script.sql" \
		postgres >/dev/null 2>&1 &
	sleep 2
	pid=$(cluster_psql -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench'")
	before=$(cluster_psql -At -c "SELECT coalesce(max(id), 0) FROM $queue")
	perf record -F "$freq" -g -o "$work/$side.perf" -p "$pid" -- sleep "$seconds" >/dev/null 2>&1
	after=$(cluster_psql -At -c "SELECT coalesce(max(id), 0) FROM $queue")
	wait
	rows=$((after - before))
	samples=$(perf report -i "$work/$side.perf" --no-children -n --sort symbol \
		--stdio -g none 2>/dev/null | awk '!/^#/ && NF > 3 { s += $2 } END { print s }')
	{
		echo "total $(awk -v s="$samples" -v r="$rows" -v f="$freq" 'BEGIN { printf "%.0f", s * 1e9 / f / r }')"
		perf report -i "$work/$side.perf" --children --sort symbol --stdio -g none 2>/dev/null |
			awk -v s="$samples" -v r="$rows" -v f="$freq" -v re="^($shown)\$" '
				$3 == "[.]" && $4 ~ re { p = $1; sub("%", "", p); printf "%s %.0f\n", $4, p / 100 * s * 1e9 / f / r }'
	} >"$work/$side.ns"
	echo "$side: $rows enqueues in $seconds s, $samples samples"
done
echo
printf '%-24s %9s %9s %9s\n' 'ns of CPU per enqueue' 'no key' 'key' 'key - no'
join -a 1 -a 2 -e 0 -o 0,1.2,2.2 <(sort "$work/dedup.ns") <(sort "$work/plain.ns") |
	awk '{ printf "%-24s %9d %9d %9d\n", $1, $3, $2, $2 - $3 }' | sort -k3 -n -r
p=$(awk '$1 == "total" { print $2 }' "$work/plain.ns")
d=$(awk '$1 == "total" { print $2 }' "$work/dedup.ns")
echo "(inclusive CPU time of each function per enqueue, 1 client, $seconds s each;"
echo " CPU per enqueue without a key / with one: $(awk -v p="$p" -v d="$d" 'BEGIN { printf "%.3f", p / d }'))"
