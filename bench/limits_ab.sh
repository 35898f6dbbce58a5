#!/usr/bin/env bash
# bench/limits_ab.sh: the cost of limits per group (issue 22), side by side
# in one run on one throwaway cluster, transactional claim + settle
# (pgbench, one unit per transaction):
#   groups   a queue of 10,000 groups, each at most 2 units in progress
#            (dlsm_set_limit's default), half of them at their limit (2
#            units in progress each, held by leases of an hour), 20 ready
#            requests per group in id order across the groups; against the
#            same queue without limits
#   backlog  1,000,000 ready requests of one group at its limit ahead of
#            20,000 requests of other groups; against a queue holding only
#            those 20,000, with the same limits (the issue's measure: the
#            rate with the backlog against the rate without it): the
#            held-back rows must not turn into a scan (the floor parks the
#            group)
#   rates    a queue of 10,000 groups, 20 ready requests each in id order
#            across the groups, every group under a rate limit it never
#            reaches (1,000 claims a second, dlsm_set_limit's default
#            group): 10,000 entries of the shared rate table in use; against
#            the same queue without limits (issue 32: the cost of the rate
#            table's bounds)
# Each side gets a fresh queue and a warm-up claim (rolled back) before it
# is measured; rounds alternate the order of the sides.  Prints claims per
# second per side (median of the rounds) and the ratio of the second side
# to the first (goal: at least 0.9 for each).  VARIANTS="groups backlog"
# picks the variants (default: all three).
#   bash bench/limits_ab.sh [CLIENTS] [ROUNDS] [SECONDS]
#   BENCH_PGBIN=/path/to/bin bash bench/limits_ab.sh   # a private installation
# Run as root (or postgres) with dlsm installed in that PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
clients=${1:-8}; rounds=${2:-3}; seconds=${3:-5}
BACKLOG=${BACKLOG:-1000000}   # held-back rows of the backlog variant
PGBIN=${BENCH_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
. test/lib/cluster.sh
work=${BENCH_DIR:-/tmp/dlsm-limits-bench}
trap cluster_stop EXIT
cluster_start "$work" "${BENCH_PORT:-5484}" "shared_buffers = '512MB'" \
	"max_wal_size = '4GB'" "checkpoint_timeout = '15min'" \
	"log_min_messages = warning" "max_connections = 50"
cluster_psql -q -c "CREATE EXTENSION dlsm" >/dev/null

# make VARIANT SIDE: a fresh queue bq for one side of a variant
make_queue() {
	local limited=$2
	cluster_psql -q -v ON_ERROR_STOP=1 -c "SET client_min_messages = warning" \
		-c "DROP TABLE IF EXISTS bq" -c "SELECT dlsm_create_queue('bq')" >/dev/null
	case $1 in
	groups)
		# 5,000 groups at their limit: 2 units in progress each
		cluster_psql -q -v ON_ERROR_STOP=1 -c "
			INSERT INTO bq (entity, kind, group_key, status, process_id, fence,
							attempts, claimed_at, lease_until)
			SELECT 'held-' || g || '-' || k, 'job', 'g' || g, 'in-progress',
				   gen_random_uuid(), 1, 1, now(), now() + interval '1 hour'
			  FROM generate_series(0, 4999) g, generate_series(1, 2) k;
			INSERT INTO bq (entity, kind, group_key)
			SELECT 'r' || i, 'job', 'g' || (i % 10000)
			  FROM generate_series(1, 200000) i;" >/dev/null ;;
	rates)
		cluster_psql -q -v ON_ERROR_STOP=1 -c "
			INSERT INTO bq (entity, kind, group_key)
			SELECT 'r' || i, 'job', 'g' || (i % 10000)
			  FROM generate_series(1, 200000) i;" >/dev/null
		[ "$limited" = 1 ] && cluster_psql -q -c \
			"SELECT dlsm_set_limit('bq', rate => 1000, per => '1 s')" >/dev/null ;;
	backlog)
		if [ "$limited" = 1 ]; then
			cluster_psql -q -v ON_ERROR_STOP=1 -c "
				INSERT INTO bq (entity, kind, group_key, status, process_id, fence,
								attempts, claimed_at, lease_until)
				SELECT 'held-' || k, 'job', 'big', 'in-progress', gen_random_uuid(),
					   1, 1, now(), now() + interval '1 hour'
				  FROM generate_series(1, 2) k;
				INSERT INTO bq (entity, kind, group_key)
				SELECT 'b' || i, 'job', 'big' FROM generate_series(1, 1000000) i;" >/dev/null
		fi
		cluster_psql -q -v ON_ERROR_STOP=1 -c "
			INSERT INTO bq (entity, kind, group_key)
			SELECT 'o' || i, 'job', 'o' || i FROM generate_series(1, 20000) i;" >/dev/null ;;
	esac
	# the backlog variant's sides both have the limits
	{ [ "$limited" = 1 ] && [ "$1" = groups ]; } || [ "$1" = backlog ] &&
		cluster_psql -q -c "SELECT dlsm_set_limit('bq', concurrency => 2)" >/dev/null
	cluster_psql -q -c "VACUUM ANALYZE bq" -c "CHECKPOINT" >/dev/null
	# the warm-up: one walk from the floor, rolled back
	cluster_psql -q -c "BEGIN" -c "SELECT count(*) FROM dlsm_claim('bq')" -c "ROLLBACK" >/dev/null
}

# one: claims per second of a pgbench run on bq
one() {
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres \
		-n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$top/bench/scripts/limits_tx.sql" postgres 2>"$work/pgbench.err" |
		awk '/^tps = / { printf "%.0f\n", $3 }'
}

# side VARIANT LIMITED: what a side of a variant has
side() {
	case $1.$2 in
	groups.0) echo "no limits" ;; groups.1) echo "limits" ;;
	backlog.0) echo "limits, no backlog" ;; backlog.1) echo "limits, backlog" ;;
	rates.0) echo "no limits" ;; rates.1) echo "rates" ;;
	esac
}

declare -A runs
for r in $(seq 1 "$rounds"); do
	for variant in ${VARIANTS:-groups backlog rates}; do
		order="0 1"; [ $((r % 2)) = 0 ] && order="1 0"
		for limited in $order; do
			make_queue "$variant" "$limited"
			v=$(one); v=${v:-0}
			runs[$variant.$limited]+="$v "
			echo "round $r $variant $(side "$variant" "$limited") $v/s"
		done
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
printf '%-8s %20s %20s %7s %6s\n' variant first second ratio goal
for variant in ${VARIANTS:-groups backlog rates}; do
	p=$(echo "${runs[$variant.0]}" | median); l=$(echo "${runs[$variant.1]}" | median)
	printf '%-8s %20s %20s %7.3f %6s\n' "$variant" "$(side "$variant" 0) $p" "$(side "$variant" 1) $l" \
		"$(awk -v l="$l" -v p="$p" 'BEGIN { print (p > 0 ? l / p : 0) }')" 0.9
done
echo "(claim + settle per second, $clients clients, $rounds rounds of $seconds s, median)"
