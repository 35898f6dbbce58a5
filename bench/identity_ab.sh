#!/usr/bin/env bash
# bench/identity_ab.sh: the cost of writing claims at once outside the
# session's own identity (issue 21), A/B in one run.  Builds dlsm at REV
# (default: origin's main before the change, given as a git revision) and
# the working tree, each into a private relocated copy of PostgreSQL 15,
# then alternates rounds between the two builds on the same machine:
#   dlsm_tx       claim + settle in one transaction (the plain case)
#   dlsm_definer  the same inside a SECURITY DEFINER function with a pinned
#                 search_path (now written at once, then settled)
# and prints requests/s per build and the ratio after/before, median of the
# rounds.  Run as root:  bash bench/identity_ab.sh REV [CLIENTS] [ROUNDS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rev=${1:?usage: bench/identity_ab.sh REV [CLIENTS] [ROUNDS] [SECONDS]}
clients=${2:-8}; rounds=${3:-5}; seconds=${4:-10}
base=/tmp/dlsm-ab
. test/lib/cluster.sh

# install_copy NAME SRC: a relocated PostgreSQL 15 in $base/NAME with dlsm
# built from the tree SRC
install_copy() {
	local d=$base/$1 src=$2
	rm -rf "$d"; mkdir -p "$d/lib/postgresql" "$d/share/postgresql" "$d/include"
	cp -a /usr/lib/postgresql/15 "$d/lib/postgresql/"
	cp -a /usr/share/postgresql/15 "$d/share/postgresql/"
	cp -a /usr/include/postgresql "$d/include/"
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/15/bin/pg_config" >/dev/null
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/15/bin/pg_config" install >/dev/null
	chmod -R a+rX "$d"
}
mkdir -p "$base"
rm -rf "$base/src-before" "$base/src-after"; mkdir "$base/src-before" "$base/src-after"
git archive "$rev" | tar -C "$base/src-before" -xf -
tree_copy "$base/src-after.tmp" && rm -rf "$base/src-after" && mv "$base/src-after.tmp" "$base/src-after"
install_copy before "$base/src-before"
install_copy after "$base/src-after"

setup_sql="
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('bq_tx'), dlsm_create_queue('bq_definer');
$(cat bench/sql/take_and_settle.sql)
INSERT INTO bq_tx (kind, entity) SELECT 'create', 'e' || g FROM generate_series(1, 150000) g;
INSERT INTO bq_definer (kind, entity) SELECT 'create', 'e' || g FROM generate_series(1, 150000) g;"

# one BUILD SYSTEM: requests/s of a fresh cluster of BUILD running SYSTEM
one() {
	local build=$1 system=$2 tps
	PGBIN=$base/$build/lib/postgresql/15/bin
	cluster_start "$base/cluster" 5481 "shared_buffers = '1GB'" \
		"max_wal_size = '4GB'" "checkpoint_timeout = '15min'" \
		"log_min_messages = warning" >/dev/null
	cluster_psql -q -c "$setup_sql" -c 'VACUUM ANALYZE bq_tx, bq_definer' >/dev/null
	tps=$(as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres \
		-n -M prepared -c "$clients" -j 2 -T "$seconds" \
		-f "$top/bench/scripts/$system.sql" postgres 2>"$base/pgbench.err" |
		awk '/^tps = / { print int($3) }')
	cluster_stop >/dev/null
	echo "${tps:-0}"
}

declare -A runs
for r in $(seq 1 "$rounds"); do
	order="before after"; [ $((r % 2)) = 0 ] && order="after before"
	for build in $order; do
		for system in dlsm_tx dlsm_definer; do
			v=$(one "$build" "$system")
			runs[$build.$system]+="$v "
			echo "round $r $build $system $v/s"
		done
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
printf '%-14s %10s %10s %7s\n' system before after ratio
for system in dlsm_tx dlsm_definer; do
	b=$(echo "${runs[before.$system]}" | median); a=$(echo "${runs[after.$system]}" | median)
	printf '%-14s %10s %10s %7.3f\n' "$system" "$b" "$a" "$(echo "$a / $b" | bc -l)"
done
echo "($clients clients, $rounds rounds of $seconds s, median; before = $rev)"
