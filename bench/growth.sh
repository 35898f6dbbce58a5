#!/usr/bin/env bash
# bench/growth.sh: dlsm as the work grows (issue 23), each line a ratio
# measured side by side in one run on one throwaway cluster.
#
#   bash bench/growth.sh [lines] [ROUNDS] [SECONDS]
#       the lines bench/run.sh prints (default 3 rounds of 10 s):
#       - claim + settle at 8, 64 and 128 clients, dlsm against its own
#         8-client rate, next to the one-row UPDATE's (goal: >= 1.0);
#       - 500 clients through PgBouncer (transaction mode, 50 server
#         connections) against 50 direct clients (goal: >= 0.9);
#       - 64 producers: dlsm_enqueue against a plain INSERT into a table
#         of the same shape, with one client listening on the queue's
#         channel (goal: >= 0.8) and with none (goal: >= 0.95).
#   bash bench/growth.sh longrun [MINUTES]
#       producers at 80% of the measured maximum rate and consumers for
#       MINUTES (30), retention => '1 minute': the rate, the table's size
#       and its dead tuples every minute; the last 5 minutes' rate against
#       the first 5 (goal: >= 0.95), the size against the size after 5
#       minutes (goal: <= 2).
#   bash bench/growth.sh heldback [MINUTES]
#       claim + settle at 8 clients for MINUTES (5) with no old snapshot,
#       then as long with a REPEATABLE READ transaction holding one all the
#       while (goal: >= 0.8), and what the claims read meanwhile.
#   BENCH_PGBIN=/path/to/bin bash bench/growth.sh ...   # a private installation
#   GROWTH_ONLY="notify" bash bench/growth.sh lines 1 5  # some of the lines
#   GROWTH_CLIENTS="8 64"   the client counts of the claim + settle line
#   GROWTH_CONF="dlsm.notify_relay = on"   postgresql.conf lines added
# The lines also go to bench/out/growth.dat, drawn in bench/out/growth.png.
#
# Run as root (or postgres) after README's set-up; the PgBouncer line
# installs Debian's pgbouncer when it is missing (as root).  Writes
# bench/out/growth-*.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
what=${1:-lines}
PGBIN=${BENCH_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
. test/lib/cluster.sh
out=$top/bench/out
mkdir -p "$out"; give_to_postgres "$out"
work=${BENCH_DIR:-/tmp/dlsm-growth}
bouncer_pid=
cleanup() {
	[ -n "$bouncer_pid" ] && kill "$bouncer_pid" 2>/dev/null
	cluster_stop
}
trap cleanup EXIT
# the tuning of bench/run.sh, with room for 128 clients and the pooler's 50
cluster_start "$work" "${BENCH_PORT:-5487}" \
	"shared_buffers = '1GB'" "max_wal_size = '4GB'" \
	"checkpoint_timeout = '15min'" "max_connections = 300" \
	"log_min_messages = warning" "log_autovacuum_min_duration = -1" \
	${GROWTH_CONF:+"$GROWTH_CONF"}
cluster_psql -c "CREATE EXTENSION dlsm" -c "CREATE EXTENSION pgstattuple" >/dev/null

scalar() { cluster_psql -At -c "$1"; }

# pgb SCRIPT CLIENTS SECONDS [pgbench options...]: transactions per second
pgb() {
	local script=$1 c=$2 secs=$3
	shift 3
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-c "$c" -j 2 -T "$secs" -f "$script" "$@" postgres 2>/dev/null |
		awk '/^tps = / { t = $3 } END { printf "%.0f\n", t + 0 }'
}

# median of the numbers on stdin
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }

# ratio A B: A / B, two decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# goal NAME VALUE OP TARGET: a line "met"/"missed" for the summary; with
# growth_dat set, the line for the chart (bench/growth.gp) too
growth_dat=
goal() {
	local ok
	ok=$(awk -v v="$2" -v t="$4" -v op="$3" 'BEGIN { print (op == ">=" ? v >= t : v <= t) ? "met" : "missed" }')
	printf '%-7s %s: %s (goal %s %s)\n' "$ok" "$1" "$2" "$3" "$4"
	[ -z "$growth_dat" ] || printf '"%s" %s %s\n' "$1" "$2" "$4" >>"$growth_dat"
}

scripts=$work/scripts
mkdir -p "$scripts"
cat >"$scripts/claim.sql" <<'SQL'
SELECT dlsm_settle('gq', process_id) FROM dlsm_claim('gq');
SQL
cat >"$scripts/update.sql" <<'SQL'
\set id random(1, 100000)
UPDATE gphys SET v = v + 1 WHERE id = :id;
SQL
cat >"$scripts/enqueue.sql" <<'SQL'
\set r random(1, 1000000000000)
SELECT dlsm_enqueue('nq', 'e' || :r, 'job');
SQL
cat >"$scripts/insert.sql" <<'SQL'
\set r random(1, 1000000000000)
INSERT INTO nq_plain (entity, kind) VALUES ('e' || :r, 'job');
SQL
give_to_postgres "$scripts"

# fill N: a fresh claim queue gq of N new rows and the one-row UPDATE's table
fill() {
	cluster_psql -c "DROP TABLE IF EXISTS gq, gphys" \
		-c "SELECT dlsm_create_queue('gq')" \
		-c "INSERT INTO gq (entity) SELECT 'e' || g FROM generate_series(1, $1) g" \
		-c "CREATE TABLE gphys (id int PRIMARY KEY, v int NOT NULL DEFAULT 0)" \
		-c "INSERT INTO gphys SELECT g FROM generate_series(1, 100000) g" \
		-c "VACUUM ANALYZE gq, gphys" -c "CHECKPOINT" >/dev/null
}

# --- the lines of bench/run.sh --------------------------------------------

concurrency() {	# concurrency ROUNDS SECONDS
	local r c s v
	: >"$work/conc.csv"
	for r in $(seq 1 "$1"); do
		fill 500000
		for c in ${GROWTH_CLIENTS:-8 64 128}; do
			for s in claim update; do
				v=$(pgb "$scripts/$s.sql" "$c" "$2" -M prepared)
				echo "$s,$c,$v" >>"$work/conc.csv"
				printf '\r  round %s, %3s clients, %-6s %7s/s   ' "$r" "$c" "$s" "$v" >&2
			done
		done
	done
	echo >&2
	echo "| clients | dlsm claim + settle | vs its 8 clients | one-row UPDATE | vs its 8 clients |"
	echo "|---|---|---|---|---|"
	local d8 u8 d u
	d8=$(awk -F, '$1 == "claim" && $2 == 8 { print $3 }' "$work/conc.csv" | median)
	u8=$(awk -F, '$1 == "update" && $2 == 8 { print $3 }' "$work/conc.csv" | median)
	for c in ${GROWTH_CLIENTS:-8 64 128}; do
		d=$(awk -F, -v c=$c '$1 == "claim" && $2 == c { print $3 }' "$work/conc.csv" | median)
		u=$(awk -F, -v c=$c '$1 == "update" && $2 == c { print $3 }' "$work/conc.csv" | median)
		echo "| $c | $d | $(ratio "$d" "$d8") | $u | $(ratio "$u" "$u8") |"
		[ "$c" = 8 ] || goals+=("$(goal "claim + settle at $c clients / at 8" "$(ratio "$d" "$d8")" ">=" 1.0)")
	done
}

bouncer() {	# bouncer ROUNDS SECONDS: 500 clients over 50 server connections
	local pgbouncer=/usr/sbin/pgbouncer r v direct=() pooled=()
	if [ ! -x "$pgbouncer" ] && [ "$(id -u)" = 0 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer >/dev/null 2>&1 || true
	fi
	if [ ! -x "$pgbouncer" ]; then echo "(pgbouncer is not installed: line left out)"; return; fi
	cat >"$work/pgbouncer.ini" <<INI
[databases]
postgres = host=$PGHOST port=$PGPORT dbname=postgres user=postgres
[pgbouncer]
listen_addr =
unix_socket_dir = $work
listen_port = $((PGPORT + 1))
auth_type = trust
auth_file = $work/users.txt
pool_mode = transaction
default_pool_size = 50
max_client_conn = 600
logfile = $work/pgbouncer.log
INI
	echo '"postgres" ""' >"$work/users.txt"
	give_to_postgres "$work/pgbouncer.ini" "$work/users.txt"
	as_postgres "$pgbouncer" "$work/pgbouncer.ini" >/dev/null 2>&1 &
	bouncer_pid=$!
	sleep 1
	for r in $(seq 1 "$1"); do
		fill 500000
		direct+=("$(pgb "$scripts/claim.sql" 50 "$2" -M extended)")
		pooled+=("$(PGPORT=$((PGPORT + 1)) pgb "$scripts/claim.sql" 500 "$2" -M extended)")
		printf '\r  round %s: 50 direct %s/s, 500 through PgBouncer %s/s   ' "$r" "${direct[-1]}" "${pooled[-1]}" >&2
	done
	echo >&2
	kill "$bouncer_pid" 2>/dev/null; bouncer_pid=
	local d p
	d=$(printf '%s\n' "${direct[@]}" | median)
	p=$(printf '%s\n' "${pooled[@]}" | median)
	echo "| claim + settle, extended protocol | per second |"
	echo "|---|---|"
	echo "| 50 clients, direct | $d |"
	echo "| 500 clients through PgBouncer (transaction mode, 50 server connections) | $p |"
	goals+=("$(goal "500 clients through PgBouncer / 50 direct" "$(ratio "$p" "$d")" ">=" 0.9)")
}

notify() {	# notify ROUNDS SECONDS: 64 producers
	local r s v listener
	cluster_psql -c "DROP TABLE IF EXISTS nq, nq_plain" -c "SELECT dlsm_create_queue('nq')" \
		-c "CREATE TABLE nq_plain (LIKE nq INCLUDING ALL)" >/dev/null
	: >"$work/notify.csv"
	for r in $(seq 1 "$1"); do
		for s in enqueue insert; do
			cluster_psql -c "TRUNCATE nq, nq_plain" -c "CHECKPOINT" >/dev/null
			v=$(pgb "$scripts/$s.sql" 64 "$2" -M prepared)
			echo "$s,none,$v" >>"$work/notify.csv"
			# a listener that reads its notifications as they come
			as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" /usr/bin/python3 - "$(($2 + 5))" <<'PY' &
import os, select, sys, time, psycopg2
c = psycopg2.connect(dbname="postgres", user="postgres")
c.autocommit = True
c.cursor().execute("SET application_name = 'growth_listener'; LISTEN nq")
end = time.time() + float(sys.argv[1])
while time.time() < end:
    if select.select([c], [], [], 0.5)[0]:
        c.poll()
        c.notifies.clear()
PY
			listener=$!
			for _ in $(seq 1 50); do
				[ "$(scalar "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'growth_listener' AND query LIKE 'SET%'")" = 1 ] && break
				sleep 0.1
			done
			cluster_psql -c "TRUNCATE nq, nq_plain" >/dev/null
			v=$(pgb "$scripts/$s.sql" 64 "$2" -M prepared)
			echo "$s,one,$v" >>"$work/notify.csv"
			kill "$listener" 2>/dev/null; wait "$listener" 2>/dev/null || true
			printf '\r  round %s: %-7s done   ' "$r" "$s" >&2
		done
	done
	echo >&2
	local e0 i0 e1 i1
	e0=$(awk -F, '$1 == "enqueue" && $2 == "none" { print $3 }' "$work/notify.csv" | median)
	i0=$(awk -F, '$1 == "insert" && $2 == "none" { print $3 }' "$work/notify.csv" | median)
	e1=$(awk -F, '$1 == "enqueue" && $2 == "one" { print $3 }' "$work/notify.csv" | median)
	i1=$(awk -F, '$1 == "insert" && $2 == "one" { print $3 }' "$work/notify.csv" | median)
	echo "| 64 producers | dlsm_enqueue | plain INSERT, same shape | ratio |"
	echo "|---|---|---|---|"
	echo "| no client listening | $e0 | $i0 | $(ratio "$e0" "$i0") |"
	echo "| one client listening on the queue's channel | $e1 | $i1 | $(ratio "$e1" "$i1") |"
	goals+=("$(goal "64 producers, one listening: dlsm_enqueue / INSERT" "$(ratio "$e1" "$i1")" ">=" 0.8)")
	goals+=("$(goal "64 producers, none listening: dlsm_enqueue / INSERT" "$(ratio "$e0" "$i0")" ">=" 0.95)")
}

lines() {	# lines ROUNDS SECONDS
	goals=()
	growth_dat=$out/growth.dat
	: >"$growth_dat"
	echo "## As the work grows ($1 rounds of $2 s, median)"
	local only=${GROWTH_ONLY:-concurrency bouncer notify}
	case " $only " in *" concurrency "*) echo; echo "### Clients"; echo; concurrency "$@" ;; esac
	case " $only " in *" bouncer "*) echo; echo "### Through PgBouncer"; echo; bouncer "$@" ;; esac
	case " $only " in *" notify "*) echo; echo "### The commit-time NOTIFY"; echo; notify "$@" ;; esac
	echo; echo "### Goals"; echo
	printf -- '- %s\n' "${goals[@]}"
	command -v gnuplot >/dev/null && gnuplot -e "dir='$out'" bench/growth.gp 2>/dev/null &&
		echo && echo "chart: bench/out/growth.png"
}

# --- the long commands ----------------------------------------------------

longrun() {	# longrun MINUTES
	local minutes=$1 max rate t0 m
	cluster_psql -c "SELECT dlsm_create_queue('lq', retention => '1 minute')" \
		-c "ALTER SYSTEM SET dlsm.reap_interval = '5s'" -c "SELECT pg_reload_conf()" >/dev/null
	cat >"$scripts/lq_consume.sql" <<'SQL'
SELECT dlsm_settle('lq', process_id) FROM dlsm_claim('lq', wait => '1 second');
SQL
	cat >"$scripts/lq_produce.sql" <<'SQL'
\set r random(1, 1000000000000)
SELECT dlsm_enqueue('lq', 'e' || :r, 'job');
SQL
	give_to_postgres "$scripts"
	# the maximum: 8 producers and 8 consumers unthrottled for 20 s, the
	# rate at which requests were settled; on a queue analysed with a
	# backlog, as a queue is after its first minutes (a queue never
	# analysed has its plans made for an empty table until autovacuum's
	# first ANALYZE of it)
	local before after
	cluster_psql -c "INSERT INTO lq (entity, kind) SELECT 'w' || g, 'job' FROM generate_series(1, 50000) g" \
		-c "ANALYZE lq" >/dev/null
	before=$(scalar "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'lq'")
	pgb "$scripts/lq_produce.sql" 8 20 -M prepared >/dev/null &
	pgb "$scripts/lq_consume.sql" 8 20 -M prepared >/dev/null
	wait
	cluster_psql -c "SELECT pg_sleep(1)" >/dev/null	# the stats arrive
	after=$(scalar "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'lq'")
	max=$(((after - before) / 20))
	# what is left of the backlog is taken as settled now (retention
	# deletes it after a minute)
	cluster_psql -c "UPDATE lq SET status = 'complete', settled_at = now() WHERE status = 'new'" >/dev/null
	rate=$((max * 8 / 10))
	echo "maximum rate, producers and consumers together: $max/s; producing at 80%: $rate/s for $minutes min"
	echo
	t0=$(date +%s)
	# producers at the fixed rate, consumers as fast as they go
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n -c 16 -j 2 \
		-R "$rate" -T $((minutes * 60)) -M prepared -f "$scripts/lq_produce.sql" postgres \
		>"$work/longrun-produce.log" 2>&1 &
	local prod=$!
	as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n -c 8 -j 2 \
		-T $((minutes * 60)) -M prepared -f "$scripts/lq_consume.sql" postgres \
		>"$work/longrun-consume.log" 2>&1 &
	local cons=$!
	echo "| minute | settled in it | per second | new | table + indexes (MB) | dead tuples | autovacuums so far |"
	echo "|---|---|---|---|---|---|---|"
	local last now done size5=0 size rates=()
	last=$(scalar "SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'lq'")
	for m in $(seq 1 "$minutes"); do
		sleep $((t0 + m * 60 - $(date +%s)))
		read -r done size dead open av < <(scalar "SELECT (SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_user_tables WHERE relname = 'lq'), round(pg_total_relation_size('lq') / 1048576.0, 1), (SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'lq'), (SELECT count(*) FROM lq WHERE status = 'new'), (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relname = 'lq')" | tr '|' ' ')
		now=$((done - last)); last=$done
		rates+=("$now")
		[ "$m" = 5 ] && size5=$size
		echo "| $m | $now | $((now / 60)) | $open | $size | $dead | $av |"
	done
	wait "$prod" "$cons" || true
	local first=0 lastfive=0 i n=${#rates[@]} k=$(( ${#rates[@]} < 5 ? ${#rates[@]} : 5 ))
	for i in $(seq 0 $((k - 1))); do
		first=$((first + ${rates[i]:-0}))
		lastfive=$((lastfive + ${rates[n - 1 - i]:-0}))
	done
	echo
	cat "$work/longrun-produce.log" | grep -E "^(tps|latency average|rate limit schedule lag)" | sed 's/^/producers: /'
	goal "the last 5 minutes' rate / the first 5" "$(ratio "$lastfive" "$first")" ">=" 0.95
	goal "table + indexes at the end / after 5 minutes" "$(ratio "$size" "$size5")" "<=" 2
}

heldback() {	# heldback MINUTES
	local secs=$(($1 * 60)) free held rr
	fill 3000000
	free=$(pgb "$scripts/claim.sql" 8 "$secs" -M prepared)
	fill 3000000
	as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" "$PGBIN/psql" -X -q -o /dev/null \
		-c "SET application_name = 'growth_rr'" \
		-c "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM gq; SELECT pg_sleep($secs + 60); COMMIT" \
		>/dev/null 2>&1 &
	rr=$!
	sleep 1
	cluster_psql -c "SELECT pg_stat_reset()" >/dev/null
	held=$(pgb "$scripts/claim.sql" 8 "$secs" -M prepared)
	echo "| $1 minutes at 8 clients | claims + settles per second |"
	echo "|---|---|"
	echo "| no old snapshot | $free |"
	echo "| a REPEATABLE READ transaction open all the while | $held |"
	echo
	echo "What the claims met meanwhile (the old snapshot keeps every settled row's old version):"
	echo
	cluster_psql -c "SELECT n_dead_tup AS dead_tuples_now, n_tup_upd AS updates, idx_scan AS index_scans, idx_tup_fetch AS rows_fetched_by_index, round(idx_tup_fetch::numeric / greatest(n_tup_upd, 1), 1) AS fetched_per_settle FROM pg_stat_user_tables WHERE relname = 'gq'"
	cluster_psql -c "SELECT indexrelname, idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes WHERE relname = 'gq' ORDER BY indexrelname"
	scalar "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'growth_rr'" >/dev/null
	wait "$rr" 2>/dev/null || true
	goal "claim + settle with a snapshot held $1 minutes / without" "$(ratio "$held" "$free")" ">=" 0.8
}

case $what in
lines) lines "${2:-3}" "${3:-10}" | tee "$out/growth-lines.txt" ;;
longrun) longrun "${2:-30}" | tee "$out/growth-longrun.txt" ;;
heldback) heldback "${2:-5}" | tee "$out/growth-heldback.txt" ;;
*) echo "usage: bash bench/growth.sh [lines [ROUNDS] [SECONDS] | longrun [MINUTES] | heldback [MINUTES]]" >&2; exit 2 ;;
esac
