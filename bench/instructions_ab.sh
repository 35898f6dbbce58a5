#!/usr/bin/env bash
# bench/instructions_ab.sh: the instructions one claim + settle costs, two
# revisions side by side (issue 41: "claim + settle is not slower").
# valgrind's callgrind counts instructions, not seconds: the same count for
# the same binary and input whatever else the machine runs, so this reads
# true on a loaded machine where bench/ab35.sh's requests/s are noise.
# Builds A and B (git revisions; B "." the working tree) into relocated
# copies of the system's PostgreSQL 15 (bench/lib.sh), makes for each one
# cluster with three queues of 20,000 rows, then per line runs a
# single-user postgres (dlsm preloaded; no worker runs there) under
# callgrind on a fresh copy of that cluster, twice: WARM statements, then
# WARM + N.  Only statements' execution and commit are counted (PortalRun,
# CommitTransactionCommand: their parse and plan are the same SQL in A and
# B); the difference of the two runs over N is one claim + settle at rest
# (plans prepared, caches warm):
#   tx       SELECT dlsm_settle(q, process_id) FROM dlsm_claim(q), one
#            transaction (bench/scripts/dlsm_tx.sql)
#   definer  the same in a SECURITY DEFINER function with a pinned
#            search_path (bench/identity_ab.sh's)
#   group    tx on a queue of 1,000 groups limited to 2 in progress each
# Prints per line the instructions of A and B and B/A.
#   bash bench/instructions_ab.sh A [B] [N] [WARM]
#   bash bench/instructions_ab.sh 8ae339e . 400 50    # about 5 minutes
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
rev_a=${1:?usage: bench/instructions_ab.sh A [B] [N] [WARM]}
rev_b=${2:-.}; n=${3:-400}; warm=${4:-50}
base=${BENCH_DIR:-/tmp/dlsm-instructions}
major=15
. test/lib/cluster.sh
. bench/lib.sh
command -v valgrind >/dev/null || apt-get install -y -qq valgrind >/dev/null
rm -rf "$base"; mkdir -p "$base"
install_copy a "$rev_a"
install_copy b "$rev_b"
chown postgres "$base"

# statements for single-user mode's -j: each ends with ";" and an empty line
setup_sql="CREATE EXTENSION dlsm;

SELECT dlsm_create_queue('bq_tx'), dlsm_create_queue('bq_definer'), dlsm_create_queue('bq_group');

$(sed 1,3d bench/sql/take_and_settle.sql)

INSERT INTO bq_tx (kind, entity) SELECT 'create', 'e' || g FROM generate_series(1, 20000) g;

INSERT INTO bq_definer (kind, entity) SELECT 'create', 'e' || g FROM generate_series(1, 20000) g;

INSERT INTO bq_group (kind, entity, group_key) SELECT 'create', 'e' || g, 'g' || (g % 1000) FROM generate_series(1, 20000) g;

SELECT dlsm_set_limit('bq_group', concurrency => 2);

VACUUM ANALYZE;

CHECKPOINT;
"
declare -A statement=(
	[tx]="SELECT dlsm_settle('bq_tx', process_id) FROM dlsm_claim('bq_tx');"
	[definer]="SELECT bench_take_and_settle();"
	[group]="SELECT dlsm_settle('bq_group', process_id) FROM dlsm_claim('bq_group');"
)

single() {	# single BUILD DATA [valgrind options]: single-user postgres, SQL on stdin
	local bin=$base/$1/lib/postgresql/$major/bin data=$2
	shift 2
	runuser -u postgres -- "$@" "$bin/postgres" --single -j -D "$data" \
		-c shared_preload_libraries=dlsm -c dlsm.reap_interval=1h -c jit=off postgres
}

# counted BUILD LINE K: the instructions of K statements of LINE
counted() {
	local b=$1 line=$2 k=$3 out=$base/cg-$1-$2-$3.out
	rm -rf "$base/run"; cp -a "$base/data-$b" "$base/run"
	for _ in $(seq 1 "$k"); do printf '%s\n\n' "${statement[$line]}"; done |
		single "$b" "$base/run" valgrind --tool=callgrind --callgrind-out-file="$out" \
			--collect-atstart=no --toggle-collect=PortalRun \
			--toggle-collect=CommitTransactionCommand >"$base/cg-$b-$line-$k.log" 2>&1
	! grep -q 'ERROR:' "$base/cg-$b-$line-$k.log" || { grep -m3 'ERROR:' "$base/cg-$b-$line-$k.log" >&2; exit 1; }
	awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

for b in a b; do
	runuser -u postgres -- "$base/$b/lib/postgresql/$major/bin/initdb" -D "$base/data-$b" -A trust >/dev/null
	printf '%s' "$setup_sql" | single "$b" "$base/data-$b" >"$base/setup-$b.log" 2>&1
	! grep -q 'ERROR:' "$base/setup-$b.log" || { grep -m3 'ERROR:' "$base/setup-$b.log" >&2; exit 1; }
done

printf '%-8s %12s %12s %7s\n' line A B B/A
for line in tx definer group; do
	declare -A per=()
	for b in a b; do
		lo=$(counted "$b" "$line" "$warm")
		hi=$(counted "$b" "$line" $((warm + n)))
		per[$b]=$(( (hi - lo) / n ))
	done
	printf '%-8s %12s %12s %7.3f\n' "$line" "${per[a]}" "${per[b]}" "$(echo "${per[b]} / ${per[a]}" | bc -l)"
done
echo "(instructions per claim + settle, callgrind, $n after $warm; A = $rev_a, B = $rev_b)"
