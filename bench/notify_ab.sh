#!/usr/bin/env bash
# bench/notify_ab.sh: 64 producers and the queue's channel (issue 34), A/B
# in one run.  Builds dlsm at REV (a git revision: the build before) and
# the working tree (after), each into a private relocated copy of
# PostgreSQL 15, then alternates rounds between the two builds:
#   enqueue, insert   64 producers: dlsm_enqueue, and a plain INSERT into a
#                     table of the same shape, with nobody listening and
#                     with one client listening on the queue's channel
#   latency           meanwhile (with the listener), one enqueue every 20 ms
#                     into a second queue from one connection, and a client
#                     listening on its channel: ms from the enqueue's
#                     return (its commit) to the notification, median
# and the wait events of the producers, sampled every 0.2 s.  Prints per
# build the median over the rounds of each line and the ratios
# enqueue / insert.  Run as root:
#   bash bench/notify_ab.sh REV [ROUNDS] [SECONDS] [BUILDS]
# BUILDS: "before after" (default), or one of them (a profile of one).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
rev=${1:?usage: bench/notify_ab.sh REV [ROUNDS] [SECONDS] [BUILDS]}
rounds=${2:-3}; seconds=${3:-10}; builds=${4:-before after}
base=${NOTIFY_AB_DIR:-/tmp/dlsm-notify-ab}
port=${NOTIFY_AB_PORT:-5491}
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
if [ -z "${NOTIFY_AB_NO_BUILD:-}" ]; then
	rm -rf "$base/src-before" "$base/src-after"; mkdir "$base/src-before"
	git archive "$rev" | tar -C "$base/src-before" -xf -
	tree_copy "$base/src-after"
	for b in $builds; do install_copy "$b" "$base/src-$b"; done
fi

scripts=$base/scripts
mkdir -p "$scripts"
cat >"$scripts/enqueue.sql" <<'SQL'
\set r random(1, 1000000000000)
SELECT dlsm_enqueue('nq', 'e' || :r, 'job');
SQL
cat >"$scripts/insert.sql" <<'SQL'
\set r random(1, 1000000000000)
INSERT INTO nq_plain (entity, kind) VALUES ('e' || :r, 'job');
SQL
cat >"$scripts/listen.py" <<'PY'
import select, sys, time, psycopg2
c = psycopg2.connect(dbname="postgres", user="postgres")
c.autocommit = True
c.cursor().execute("SET application_name = 'ab_listener'; LISTEN nq")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    if select.select([c], [], [], 0.5)[0]:
        c.poll()
        c.notifies.clear()
PY
# latency.py SECONDS: enqueue into lq every 20 ms, listen on lq elsewhere
cat >"$scripts/latency.py" <<'PY'
import select, sys, threading, time, psycopg2
end = time.time() + float(sys.argv[1])
lis = psycopg2.connect(dbname="postgres", user="postgres")
lis.autocommit = True
lis.cursor().execute("LISTEN lq")
prod = psycopg2.connect(dbname="postgres", user="postgres")
prod.autocommit = True
cur = prod.cursor()
lat = []
while time.time() < end:
    cur.execute("SELECT dlsm_enqueue('lq', 'x', 'job')")
    t0 = time.time()
    got = None
    while time.time() < t0 + 1:
        lis.poll()
        if lis.notifies:
            got = time.time()
            lis.notifies.clear()
            break
        select.select([lis], [], [], 0.05)
    if got is not None:
        lat.append(max(got - t0, 0) * 1000)
    time.sleep(0.02)
    lis.poll(); lis.notifies.clear()
lat.sort()
print("%.2f %d" % (lat[len(lat) // 2] if lat else -1, len(lat)))
PY
give_to_postgres "$base"

pgb() {	# pgb SCRIPT: transactions per second of 64 producers
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-c 64 -j 2 -T "$seconds" -f "$1" -M prepared postgres 2>/dev/null |
		awk '/^tps = / { t = $3 } END { printf "%.0f\n", t + 0 }'
}

# sample_waits SECONDS OUT: the producers' wait events, every 0.2 s
sample_waits() {
	local n=$(($1 * 5)) i
	for i in $(seq 1 "$n"); do
		cluster_psql -At -c "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity WHERE application_name = 'pgbench'" 2>/dev/null
		sleep 0.2
	done | sort | uniq -c | sort -rn | head -6 >"$2"
}

# one BUILD ROUND: every line on a fresh cluster of BUILD
one() {
	local build=$1 r=$2 s who v listener lat
	PGBIN=$base/$build/lib/postgresql/15/bin
	cluster_start "$base/cluster" "$port" "shared_buffers = '1GB'" \
		"max_wal_size = '4GB'" "checkpoint_timeout = '15min'" \
		"max_connections = 200" "log_min_messages = warning" >/dev/null
	cluster_psql -q -c "CREATE EXTENSION dlsm" -c "SELECT dlsm_create_queue('nq')" \
		-c "SELECT dlsm_create_queue('lq')" \
		-c "CREATE TABLE nq_plain (LIKE nq INCLUDING ALL)" >/dev/null
	for who in none one; do
		listener=
		if [ "$who" = one ]; then
			as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" /usr/bin/python3 "$scripts/listen.py" $((seconds * 2 + 10)) &
			listener=$!
			for _ in $(seq 1 50); do
				[ "$(cluster_psql -At -c "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ab_listener' AND query LIKE 'SET%'")" = 1 ] && break
				sleep 0.1
			done
		fi
		for s in enqueue insert; do
			cluster_psql -q -c "TRUNCATE nq, nq_plain" -c "CHECKPOINT" >/dev/null
			lat=
			if [ "$who" = one ] && [ "$s" = enqueue ]; then
				as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" /usr/bin/python3 "$scripts/latency.py" $((seconds - 2)) >"$base/lat.out" &
				lat=$!
				sample_waits $((seconds - 2)) "$base/waits-$build-$r.txt" &
			fi
			v=$(pgb "$scripts/$s.sql")
			echo "$build,$r,$s,$who,$v" >>"$base/results.csv"
			if [ -n "$lat" ]; then
				wait "$lat" || true; wait
				echo "$build,$r,latency,one,$(cut -d' ' -f1 "$base/lat.out")" >>"$base/results.csv"
				echo "round $r $build waits (64 producers, one listening):"; sed 's/^/    /' "$base/waits-$build-$r.txt"
			fi
			echo "round $r $build $s $who $v/s${lat:+, latency $(cat "$base/lat.out") (ms, samples)}"
		done
		[ -z "$listener" ] || { kill "$listener" 2>/dev/null || true; wait "$listener" 2>/dev/null || true; }
	done
	cluster_stop >/dev/null
}

: >"$base/results.csv"
for r in $(seq 1 "$rounds"); do
	order=$builds; [ $((r % 2)) = 0 ] && order=$(echo "$builds" | tr ' ' '\n' | tac | tr '\n' ' ')
	for build in $order; do one "$build" "$r"; done
done
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
m() { awk -F, -v b="$1" -v s="$2" -v w="$3" '$1 == b && $3 == s && $4 == w { print $5 }' "$base/results.csv" | median; }
spread() { awk -F, -v b="$1" -v s="$2" -v w="$3" '$1 == b && $3 == s && $4 == w { print $5 }' "$base/results.csv" | sort -n | tr '\n' ' '; }
echo
printf '%-7s %-22s %9s %9s %7s  %s\n' build line enqueue insert ratio "enqueue per round"
for b in $builds; do
	for w in none one; do
		e=$(m "$b" enqueue "$w"); i=$(m "$b" insert "$w")
		printf '%-7s %-22s %9s %9s %7.2f  %s\n' "$b" "listening: $w" "$e" "$i" \
			"$(echo "$e / $i" | bc -l)" "$(spread "$b" enqueue "$w")"
	done
	echo "$b latency median over rounds (ms): $(m "$b" latency one)  (rounds: $(spread "$b" latency one))"
done
echo "(64 producers, $rounds rounds of $seconds s, median; before = $rev)"
