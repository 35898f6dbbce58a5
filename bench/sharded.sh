#!/usr/bin/env bash
# bench/sharded.sh: what the dlsm_proxy router costs.  Leased claim + settle
# per second directly on one shard, and the same client script through the
# router to 1, 2 and 3 shards; enqueues per second directly and through the
# router; and the CPU each cluster spent per request.  Every cluster runs on
# this machine, so the figures show the router's cost, not scaling: the
# README's sizing turns the per-request CPU into rates for separate machines.
#
#   bash bench/sharded.sh            # 1, 4, 8 clients, 3 rounds of 5 s
#   bash bench/sharded.sh --quick    # 1 and 8 clients, 1 round of 3 s
#   BENCH_SYNC=off bash bench/sharded.sh   # synchronous_commit = off:
#                                    # the router's cost without the disk's
#                                    # flushes (bench/out/sharded-sync-off/)
#
# Run as root after README's set-up (dlsm and dlsm_proxy installed: it runs
# test/setup.sh when they are not).  Three shard clusters (dlsm preloaded,
# dlsm.node_id 1, 2, 3) and a router cluster whose databases r1, r2 and r3
# route to the first 1, 2 and 3 shards, with bench/run.sh's tuning; before
# each round every shard's queue is refilled.  The order of the cases
# rotates from round to round.  Writes, in bench/out/sharded/:
#   results.csv   case, clients, round, requests per second, mean latency
#                 in ms, CPU ms of the router and of the shards per 1,000
#                 requests
#   summary.md    the tables printed at the end
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
. test/lib/cluster.sh

clients="1 4 8"; rounds=3; seconds=5
if [ "${1:-}" = "--quick" ]; then clients="1 8"; rounds=1; seconds=3; fi
began=$(date +%s)

if [ "$(id -u)" = 0 ]; then
	[ -f /usr/lib/postgresql/15/lib/dlsm.so ] && [ -x "$PGBIN/pgbench" ] &&
		[ -f /usr/share/postgresql/15/extension/dlsm_proxy.control ] &&
		[ -f /usr/lib/postgresql/15/lib/plproxy.so ] ||
		bash test/setup.sh >/dev/null
fi

out=$top/bench/out/sharded${BENCH_SYNC:+-sync-$BENCH_SYNC}
rm -rf "$out"; mkdir -p "$out"; give_to_postgres "$top/bench/out"
work=${BENCH_DIR:-/tmp/dlsm-bench-sharded}
port=${BENCH_PORT:-5480}		# router; shards on the next three ports
sync=${BENCH_SYNC:-on}
tuning=("shared_buffers = '1GB'" "max_wal_size = '4GB'" "checkpoint_timeout = '15min'"
		"max_connections = 200" "log_min_messages = warning" "synchronous_commit = $sync")

stop_all() {
	for d in "$work"/r "$work"/s1 "$work"/s2 "$work"/s3; do
		[ -f "$d/data/postmaster.pid" ] &&
			as_postgres "$PGBIN/pg_ctl" -D "$d/data" -m fast -w stop >/dev/null 2>&1
	done
	return 0
}
trap stop_all EXIT
stop_all
rm -rf "$work"; mkdir -p "$work"; give_to_postgres "$work"

start() {	# start DIR: start the cluster of DIR
	as_postgres "$PGBIN/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 start >/dev/null
}
psql_at() {	# psql_at DIR PORT DB ARGS...
	local d=$1 p=$2 db=$3; shift 3
	as_postgres env PGHOST="$d" PGPORT="$p" PGUSER=postgres \
		"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}
progress() { printf '\r[%4ds] %s%-50s' $(( $(date +%s) - began )) "$1" '' >&2; }

progress "starting three shards and a router"
for i in 1 2 3; do
	cluster_init "$work/s$i" $((port + i)) "${tuning[@]}" "dlsm.node_id = $i" "cluster_name = 'shard$i'"
	start "$work/s$i"
	psql_at "$work/s$i" $((port + i)) postgres -c "CREATE EXTENSION dlsm"
done
cluster_init "$work/r" "$port" "${tuning[@]}" "cluster_name = 'router'"
sed -i "s/^shared_preload_libraries = 'dlsm'/#&/" "$work/r/data/postgresql.conf"
start "$work/r"
conn() { echo "host=$work/s$1 port=$((port + $1)) dbname=postgres application_name=dlsm_proxy"; }
for n in 1 2 3; do
	psql_at "$work/r" "$port" postgres -c "CREATE DATABASE r$n"
	list=$(for i in $(seq 1 "$n"); do printf "'%s'," "$(conn "$i")"; done)
	psql_at "$work/r" "$port" "r$n" -o /dev/null \
		-c "CREATE EXTENSION dlsm_proxy CASCADE" \
		-c "SELECT * FROM dlsm_proxy_configure(ARRAY[${list%,}])"
done
psql_at "$work/r" "$port" r3 -o /dev/null \
	-c "SELECT dlsm_create_queue('bq')" -c "SELECT dlsm_create_queue('eq')"
tagging=$(psql_at "$work/r" "$port" r3 -At -c "SELECT bool_and(tags_process_ids) FROM dlsm_proxy_status")

# the clients' scripts: the same SQL against a shard and against the router
cat >"$work/leased.sql" <<'EOF'
SELECT process_id FROM dlsm_claim('bq', lease => '5 minutes') \gset
SELECT dlsm_settle('bq', :process_id);
EOF
cat >"$work/enqueue.sql" <<'EOF'
SELECT dlsm_enqueue('eq', 'e' || :client_id || '-' || (random() * 1000000000)::bigint, 'update');
EOF
give_to_postgres "$work"

refill() {	# a full queue bq on every shard, an empty eq
	for i in 1 2 3; do
		psql_at "$work/s$i" $((port + i)) postgres -o /dev/null \
			-c "TRUNCATE bq, eq" \
			-c "INSERT INTO bq (entity) SELECT 'e' || g FROM generate_series(1, 150000) g" \
			-c "VACUUM ANALYZE bq, eq" &
	done
	wait
}

# CPU seconds (user + system) a cluster's processes have used: the
# postmaster's waited-for children (backends that ended) and the live ones
cpu_ticks() {
	local pm children
	pm=$(head -1 "$1/data/postmaster.pid")
	children=$(pgrep -P "$pm" | tr '\n' ' ')
	# shellcheck disable=SC2086
	awk '{ t += $14 + $15 + $16 + $17 } END { print t + 0 }' "/proc/$pm/stat" \
		$(for c in $children; do echo "/proc/$c/stat"; done) 2>/dev/null
}

# run CASE CLIENTS: "per_second latency_ms router_cpu_ms shards_cpu_ms" per 1,000 requests
run() {
	local case=$1 c=$2 host p db script r0 s0 r1 s1 res tps lat n
	case $case in
	direct) host=$work/s1; p=$((port + 1)); db=postgres; script=leased ;;
	router1|router2|router3) host=$work/r; p=$port; db=r${case#router}; script=leased ;;
	enqueue_direct) host=$work/s1; p=$((port + 1)); db=postgres; script=enqueue ;;
	enqueue_router3) host=$work/r; p=$port; db=r3; script=enqueue ;;
	esac
	r0=$(cpu_ticks "$work/r"); s0=0
	for i in 1 2 3; do s0=$((s0 + $(cpu_ticks "$work/s$i"))); done
	res=$(as_postgres "$PGBIN/pgbench" -h "$host" -p "$p" -U postgres -n -M prepared \
		-c "$c" -j $(( c < 2 ? 1 : 2 )) -T "$seconds" -f "$work/$script.sql" "$db" 2>&1) || true
	sleep 0.5				# the backends end and are counted
	r1=$(cpu_ticks "$work/r"); s1=0
	for i in 1 2 3; do s1=$((s1 + $(cpu_ticks "$work/s$i"))); done
	tps=$(echo "$res" | awk '/^tps = / { print $3 + 0 }')
	lat=$(echo "$res" | awk '/^latency average = / { print $4 + 0 }')
	n=$(echo "$res" | awk -F': ' '/^number of transactions actually processed/ { print $2 + 0 }')
	if [ -z "$tps" ] || [ "${n:-0}" = 0 ]; then
		echo "$res" >>"$out/errors.log"; echo "0 0 0 0"; return
	fi
	# ticks are 1/100 s: ms per 1,000 requests = ticks * 10 * 1000 / n
	awk -v t="$tps" -v l="$lat" -v n="$n" -v r=$((r1 - r0)) -v s=$((s1 - s0)) \
		'BEGIN { printf "%.0f %.3f %.1f %.1f\n", t, l, r * 10000 / n, s * 10000 / n }'
}

cases="direct router1 router2 router3 enqueue_direct enqueue_router3"
all=($cases); ncases=${#all[@]}
echo "case,clients,round,per_second,latency_ms,router_cpu_ms_per_1000,shards_cpu_ms_per_1000" >"$out/results.csv"
progress "warm-up"
refill
for s in $cases; do run "$s" 4 2 >/dev/null; done
for round in $(seq 1 "$rounds"); do
	for c in $clients; do
		progress "round $round/$rounds, $c clients: refilling the queues"
		refill
		k=$(( (round * 3 + c) % ncases ))
		for s in "${all[@]:k}" "${all[@]:0:k}"; do
			progress "round $round/$rounds, $c clients: $s"
			read -r v l rc sc < <(run "$s" "$c")
			echo "$s,$c,$round,$v,$l,$rc,$sc" >>"$out/results.csv"
		done
	done
done
progress "done"; echo >&2

python3 - "$out" "$(( $(date +%s) - began ))" "$rounds" "$seconds" "$clients" "$tagging" "$sync" <<'EOF' | tee "$out/summary.md"
import csv, statistics, sys
out, took, rounds, seconds, clients, tagging, sync = sys.argv[1:]
clients = [int(c) for c in clients.split()]
rows = list(csv.DictReader(open(f"{out}/results.csv")))
def med(case, c, col):
    v = [float(r[col]) for r in rows if r["case"] == case and int(r["clients"]) == c]
    return statistics.median(v) if v else 0.0
def rng(case, c, col):
    v = [float(r[col]) for r in rows if r["case"] == case and int(r["clients"]) == c]
    return (min(v), max(v)) if v else (0, 0)
names = {
    "direct": "leased claim + settle, directly on one shard",
    "router1": "the same through the router, 1 shard",
    "router2": "the same through the router, 2 shards",
    "router3": "the same through the router, 3 shards",
    "enqueue_direct": "dlsm_enqueue, directly on one shard",
    "enqueue_router3": "dlsm_enqueue through the router, 3 shards",
}
print(f"Sharded benchmark: {took} s, {rounds} round(s) of {seconds} s, every cluster on this "
      f"machine (2 cores shared by 4 servers and the clients); synchronous_commit = {sync}; "
      f"shards tag process ids: {tagging}.\n")
print("Requests per second, median of the rounds (min-max), and the ratio to the direct case "
      "at the same client count:\n")
print("| case | " + " | ".join(f"{c} client{'s' if c > 1 else ''}" for c in clients) + " |")
print("|---|" + "---|" * len(clients))
for case in names:
    cells = []
    for c in clients:
        v = med(case, c, "per_second"); lo, hi = rng(case, c, "per_second")
        base = med("enqueue_direct" if case.startswith("enqueue") else "direct", c, "per_second")
        ratio = f" {100 * v / base:.0f}%" if base and case not in ("direct", "enqueue_direct") else ""
        cells.append(f"{v:,.0f} ({lo:,.0f}–{hi:,.0f}){ratio}")
    print(f"| {names[case]} | " + " | ".join(cells) + " |")
print("\nMean latency of one client (ms), and what the router adds per call "
      "(a claim + settle is two calls):\n")
print("| case | latency ms | router adds per call |")
print("|---|---|---|")
for case in names:
    l = med(case, 1, "latency_ms")
    base = med("enqueue_direct" if case.startswith("enqueue") else "direct", 1, "latency_ms")
    calls = 1 if case.startswith("enqueue") else 2
    add = "" if case in ("direct", "enqueue_direct") else f"{1000 * (l - base) / calls:.0f} µs"
    print(f"| {names[case]} | {l:.3f} | {add} |")
cmax = max(clients)
print(f"\nCPU per 1,000 requests at {cmax} clients (ms of CPU, all processes of the cluster):\n")
print("| case | router | shards |")
print("|---|---|---|")
for case in names:
    print(f"| {names[case]} | {med(case, cmax, 'router_cpu_ms_per_1000'):.0f} | "
          f"{med(case, cmax, 'shards_cpu_ms_per_1000'):.0f} |")
EOF
