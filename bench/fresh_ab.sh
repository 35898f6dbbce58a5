#!/usr/bin/env bash
# bench/fresh_ab.sh: claim + settle in a queue's first seconds, never
# analysed, against the same queue analysed (issue 34: goal >= 0.9), for
# two builds of dlsm side by side in one run: REV (a git revision: before)
# and the working tree (after).  Each is built into its own relocated copy
# of a PostgreSQL installation (BENCH_PGROOT, the directory holding
# lib/postgresql/MAJOR; default /usr), as bench/identity_ab.sh does.
#
# Timing starts the moment the queue is created: dlsm_create_queue, then at
# once 2 producers (10 dlsm_enqueue a transaction) and 8 consumers
# (dlsm_claim with a wait, then dlsm_settle) for SECONDS; the line is the
# requests settled within SECONDS of the creation, per second.  Every
# backend makes its plans in the queue's first moments, when the table is
# empty, as a new queue's producers and consumers do.
#   fresh     the queue is never analysed (autovacuum is off in the
#             cluster: its first ANALYZE comes within about a minute)
#   analysed  the same, with ANALYZE of the queue 2 s after its creation
#             and every 4 s after (what autovacuum does to a queue later)
# Rounds alternate the builds' order and the modes' order; each build runs
# a fresh cluster per round.  Prints settled/s per build and mode, median
# of the rounds, and the ratio fresh/analysed: of the medians, and paired
# (the median of each round's own ratio), with the rounds' spread.
# BUILDS: "before after" (default), one of them, or "installed": the dlsm
# installed in BENCH_PGBIN (default /usr/lib/postgresql/15/bin), not built.
#   bash bench/fresh_ab.sh REV [ROUNDS] [SECONDS] [BUILDS]
#   bash bench/fresh_ab.sh - 1 20 installed   # the installed dlsm alone
#   BENCH_PGROOT=/var/cache/dlsm-pg/15-bookworm/usr bash bench/fresh_ab.sh main
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rev=${1:?usage: bench/fresh_ab.sh REV [ROUNDS] [SECONDS] [BUILDS]}
rounds=${2:-3}; seconds=${3:-20}; builds=${4:-before after}
root=${BENCH_PGROOT:-/usr}
major=${BENCH_MAJOR:-15}
base=${BENCH_DIR:-/tmp/dlsm-fresh-ab}
port=${BENCH_PORT:-5493}
. test/lib/cluster.sh

# install_copy NAME SRC: a relocated PostgreSQL in $base/NAME with dlsm
# built from the tree SRC
install_copy() {
	local d=$base/$1 src=$2
	rm -rf "$d"; mkdir -p "$d/lib/postgresql" "$d/share/postgresql" "$d/include"
	cp -a "$root/lib/postgresql/$major" "$d/lib/postgresql/"
	cp -a "$root/share/postgresql/$major" "$d/share/postgresql/"
	cp -a "$root/include/postgresql" "$d/include/"
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/$major/bin/pg_config" >/dev/null
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/$major/bin/pg_config" install >/dev/null
	chmod -R a+rX "$d"
}
mkdir -p "$base"
case " $builds " in *" before "*)
	rm -rf "$base/src-before"; mkdir "$base/src-before"
	git archive "$rev" | tar -C "$base/src-before" -xf -
	install_copy before "$base/src-before" ;;
esac
case " $builds " in *" after "*)
	rm -rf "$base/src-after"; tree_copy "$base/src-after"
	install_copy after "$base/src-after" ;;
esac

scripts=$base/scripts
mkdir -p "$scripts"
cat >"$scripts/produce.sql" <<'SQL'
\set r random(1, 1000000000000)
SELECT count(dlsm_enqueue('fq', 'e' || (:r::bigint + g), 'job'))
  FROM generate_series(1, 10) g;
SQL
cat >"$scripts/consume.sql" <<'SQL'
SELECT dlsm_settle('fq', process_id) FROM dlsm_claim('fq', wait => '1 second');
SQL
give_to_postgres "$base"

# one MODE: requests settled per second within $seconds of the queue's
# creation, on the running cluster
one() {
	local mode=$1 t0 pids analyser=
	cluster_psql -q -c "SET client_min_messages = warning" \
		-c "DROP TABLE IF EXISTS fq" -c "CHECKPOINT" >/dev/null
	t0=$(cluster_psql -At -c "SELECT dlsm_create_queue('fq')" \
		-c "SELECT pg_catalog.clock_timestamp()" | tail -1)
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-M prepared -c 2 -j 1 -T "$seconds" -f "$scripts/produce.sql" \
		postgres >"$base/produce.log" 2>&1 &
	pids=$!
	if [ "$mode" = analysed ]; then
		(sleep 2; while :; do cluster_psql -q -c "ANALYZE fq" >/dev/null 2>&1; sleep 4; done) &
		analyser=$!
	fi
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-c 8 -j 2 -T "$seconds" -f "$scripts/consume.sql" \
		postgres >"$base/consume.log" 2>&1
	wait "$pids"
	[ -n "$analyser" ] && { kill "$analyser"; wait "$analyser" 2>/dev/null || true; }
	cluster_psql -At -c "SELECT round(count(*) / $seconds.0) FROM fq
		WHERE settled_at < '$t0'::timestamptz + '$seconds s'::interval"
}

declare -A runs ratios
for r in $(seq 1 "$rounds"); do
	order=$builds
	[ $((r % 2)) = 0 ] && order=$(echo "$builds" | tr ' ' '\n' | tac | tr '\n' ' ')
	for build in $order; do
		PGBIN=$base/$build/lib/postgresql/$major/bin
		[ "$build" = installed ] && PGBIN=${BENCH_PGBIN:-/usr/lib/postgresql/15/bin}
		cluster_start "$base/cluster" "$port" "shared_buffers = '1GB'" \
			"max_wal_size = '4GB'" "checkpoint_timeout = '15min'" \
			"autovacuum = off" "log_min_messages = warning" >/dev/null
		cluster_psql -q -c "CREATE EXTENSION dlsm" >/dev/null
		modes="fresh analysed"; [ $((r % 2)) = 0 ] && modes="analysed fresh"
		for mode in $modes; do
			v=$(one "$mode")
			runs[$build.$mode]+="$v "
			eval "this_$mode=$v"
			echo "round $r $build $mode $v/s"
		done
		cluster_stop >/dev/null
		ratios[$build]+="$(awk -v f="$this_fresh" -v a="$this_analysed" 'BEGIN { printf "%.3f", (a > 0 ? f / a : 0) }') "
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
echo
printf '%-7s %9s %9s %7s %7s %13s\n' build fresh analysed ratio paired 'paired range'
for build in $builds; do
	f=$(echo "${runs[$build.fresh]}" | median); a=$(echo "${runs[$build.analysed]}" | median)
	printf '%-7s %9s %9s %7.3f %7s %13s\n' "$build" "$f" "$a" \
		"$(awk -v f="$f" -v a="$a" 'BEGIN { print (a > 0 ? f / a : 0) }')" \
		"$(echo "${ratios[$build]}" | median)" "$(echo "${ratios[$build]}" | spread)"
done
echo "(requests settled within $seconds s of dlsm_create_queue, per second; 2 producers"
echo " x 10 a transaction, 8 consumers; $rounds rounds, median; goal: fresh/analysed >= 0.9;"
echo " before = $rev, after = the working tree)"
