#!/usr/bin/env bash
# bench/cliffs.sh: issue 34's table ("Performance: no cliffs"), every line's
# A/B side by side in one run, short: each line is a ratio of two sides
# measured one after the other on the same throwaway cluster, by the
# script that owns the line, with shorter runs and one round:
#   bench/run.sh       transactional and leased claim + settle against the
#                      one-row UPDATE at 8 clients; batched against
#                      graphile-worker's batched mode at 1 and 16 clients
#   bench/growth.sh    claim + settle at 128 (and 64) clients against 8
#                      (clients); 64 producers, dlsm_enqueue against a plain INSERT,
#                      nobody listening and one client listening (twice:
#                      dlsm.notify_relay off, the default (notify), and
#                      on (relay))
#   bench/fresh_ab.sh  a queue never analysed against one analysed
#   bench/limits_ab.sh 10,000 groups of at most 2, half at their limit,
#                      against no limits
#   bench/dedup_ab.sh  100 enqueues per transaction with dedup keys
#                      against without
#   bench/pool_ab.sh   3 workers taking turns over 30 databases against a
#                      worker per database
# Meanwhile it samples the wait events of the active client backends every
# second and records a system-wide perf profile of each line (99 Hz).
# Prints the table (line, before, now, goal, met or missed, the two sides)
# and writes to bench/out/cliffs/: cliffs.txt (the table, with the machine's
# load), cliffs_profile.txt (for every line missed: its wait events and the
# top of its profile), and each script's own output.
#   bash bench/cliffs.sh          # about 10 minutes on 2 cores
#   bash bench/run.sh --cliffs    # the same
#   CLIFFS_SCALE=2 bash bench/cliffs.sh   # every run twice as long
#   CLIFFS_TABLE_ONLY=1 bash bench/cliffs.sh   # the table again, no runs
# Run as root after README's set-up: installs the working tree's dlsm into
# the system PostgreSQL 15 (test/setup.sh) and the Node peers.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
scale=${CLIFFS_SCALE:-1}
out=$top/bench/out/cliffs
tmp=/tmp/dlsm-cliffs
began=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "cliffs: run as root" >&2; exit 1; }
# CLIFFS_TABLE_ONLY=1: the table and profiles again from the last run's files
if [ -z "${CLIFFS_TABLE_ONLY:-}" ]; then
bash test/setup.sh >/dev/null
bash bench/peers/setup.sh >/dev/null
rm -rf "$tmp"; mkdir -p "$tmp"
chmod 755 "$tmp"

sampler=
cleanup() {
	[ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
	[ -z "${perf_pid:-}" ] || kill -INT "$perf_pid" 2>/dev/null || true
}
trap cleanup EXIT

# The wait events of the active client backends of whichever cluster of
# this run is up, every second, as "LINE EVENT" lines (CPU: no wait event).
echo none >"$tmp/current"
(
	set +e +o pipefail	# a cluster stopping between two samples is no error
	while :; do
		line=$(cat "$tmp/current")
		for s in "$tmp"/*/.s.PGSQL.* "$tmp"/*/cluster/.s.PGSQL.*; do
			[ -S "$s" ] || continue
			PGCONNECT_TIMEOUT=2 timeout 5 runuser -u postgres -- \
				/usr/lib/postgresql/15/bin/psql -X -At \
				-h "$(dirname "$s")" -p "${s##*.}" -U postgres -d postgres -c "
				SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU')
				  FROM pg_stat_activity
				 WHERE backend_type = 'client backend' AND state = 'active'
				   AND pid <> pg_backend_pid()" 2>/dev/null |
				sed "s/^/$line /"
		done
		sleep 1
	done >>"$tmp/waits.txt"
) &
sampler=$!

perf_pid=
# begin LINE / end: mark the line the samples and the profile belong to
begin() {
	echo "$1" >"$tmp/current"
	printf '[%4ds] %s\n' $(( $(date +%s) - began )) "$1" >&2
	perf record -a -F 99 -o "$tmp/perf-$1.data" >/dev/null 2>&1 &
	perf_pid=$!
}
end() {
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" 2>/dev/null || true
	perf_pid=
	echo none >"$tmp/current"
}

# --- the runs ---------------------------------------------------------------

begin run
BENCH_DIR=$tmp/run BENCH_SYSTEMS="physical dlsm_tx dlsm_leased dlsm_batch graphile_batch" \
	BENCH_CLIENTS="1 8 16" BENCH_ROUNDS=1 BENCH_SECONDS=$((5 * scale)) \
	bash bench/run.sh >"$tmp/run.txt" 2>/dev/null
end
rm -rf "$out"; mkdir -p "$out"	# after run.sh, which empties bench/out
cp "$tmp/run.txt" "$out/run.txt"; cp bench/out/results.csv "$out/run-results.csv"

begin clients
BENCH_DIR=$tmp/clients GROWTH_ONLY="concurrency" \
	bash bench/growth.sh lines 1 $((8 * scale)) >"$out/growth-clients.txt" 2>/dev/null
end
begin notify
BENCH_DIR=$tmp/notify GROWTH_ONLY="notify" \
	bash bench/growth.sh lines 1 $((8 * scale)) >"$out/growth-notify.txt" 2>/dev/null
end
begin relay
BENCH_DIR=$tmp/relay GROWTH_ONLY="notify" GROWTH_CONF="dlsm.notify_relay = on" \
	bash bench/growth.sh lines 1 $((8 * scale)) >"$out/growth-relay.txt" 2>/dev/null
end
begin fresh
BENCH_DIR=$tmp/fresh bash bench/fresh_ab.sh - 1 $((20 * scale)) installed \
	>"$out/fresh.txt" 2>/dev/null
end
begin limits
BENCH_DIR=$tmp/limits VARIANTS=groups bash bench/limits_ab.sh 8 1 $((5 * scale)) \
	>"$out/limits.txt" 2>/dev/null
end
begin dedup
BENCH_DIR=$tmp/dedup bash bench/dedup_ab.sh 4 1 $((5 * scale)) >"$out/dedup.txt" 2>/dev/null
end
begin pool
BENCH_DIR=$tmp/pool bash bench/pool_ab.sh 1 30 $((1000 * scale)) >"$out/pool.txt" 2>/dev/null
end
kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; sampler=
echo $(( $(date +%s) - began )) >"$tmp/took"
date -u '+%Y-%m-%d %H:%M UTC' >"$tmp/ended"
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src sql 2>/dev/null || echo ' (src or sql changed since)')" >"$tmp/rev"
uptime | sed 's/.*load average/load average/' >"$tmp/load"
fi

# --- the table --------------------------------------------------------------

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# run.sh's rate of SYSTEM at CLIENTS
rate() { awk -F, -v s="$1" -v c="$2" '$1 == s && $2 == c { print $4; exit }' "$out/run-results.csv"; }
# growth.sh's NOTIFY row (none | one) of FILE: "enqueue insert"
notify_row() {
	awk -F'|' -v w="$2" '
		w == "none" && /^\| no client listening/ { print $3 + 0, $4 + 0 }
		w == "one" && /^\| one client listening/ { print $3 + 0, $4 + 0 }' "$1"
}
conc_row() { awk -F'|' -v c="$1" '$2 ~ "^ *" c " *$" && NF > 5 { print $3 + 0 }' "$out/growth-clients.txt"; }

rows=()
# row NAME BEFORE NOW GOAL SIDES [MISSED_KEY]
row() {
	local ok
	ok=$(awk -v v="$3" -v g="$4" 'BEGIN { print (v + 0 >= g + 0) ? "met" : "missed" }')
	rows+=("$1|$2|$3|>= $4|$ok|$5")
	[ "$ok" = met ] || missed+=("$6:$1")
}
missed=()

read -r e1 i1 < <(notify_row "$out/growth-notify.txt" one) || true
read -r e0 i0 < <(notify_row "$out/growth-notify.txt" none) || true
read -r re1 ri1 < <(notify_row "$out/growth-relay.txt" one) || true
read -r re0 ri0 < <(notify_row "$out/growth-relay.txt" none) || true
row "64 producers, one client LISTENing: dlsm_enqueue / plain INSERT" \
	"0.18 (0.66 relay on)" "$(ratio "$e1" "$i1") ($(ratio "$re1" "$ri1") relay on)" 0.8 \
	"$e1 / $i1 per s; relay on: $re1 / $ri1" notify
row "64 producers, nobody listening" 0.61 "$(ratio "$e0" "$i0")" 0.95 \
	"$e0 / $i0 per s (relay on: $re0 / $ri0)" notify

read -r ff fa < <(awk '$1 == "installed" { print $2, $3 }' "$out/fresh.txt") || true
row "a queue never analysed: first $((20 * scale)) s / analysed" "0.22 -> 1.08" \
	"$(ratio "$ff" "$fa")" 0.9 "$ff / $fa settled per s" fresh

read -r lp ll < <(awk '$1 == "groups" { print $4, $6 }' "$out/limits.txt") || true
row "claim + settle, 10,000 groups of at most 2, half at their limit / no limits" 0.76 \
	"$(ratio "$ll" "$lp")" 0.9 "$ll / $lp per s, 8 clients" limits

read -r dp dd < <(awk '$1 == "batch" { print $2, $3 }' "$out/dedup.txt") || true
row "dlsm_enqueue with dedup keys, 100 per transaction / without" 0.67 \
	"$(ratio "$dd" "$dp")" 0.8 "$dd / $dp per s, 4 clients" dedup

p40=$(awk '/^one per database/ { print $5 }' "$out/pool.txt")
p3=$(awk '/^3, taking turns/ { print $5 }' "$out/pool.txt")
row "handlers: pool of 3 workers over 30 databases / a worker per database" 0.68 \
	"$(ratio "$p3" "$p40")" 0.9 "$p3 / $p40 units per s" pool

c8=$(conc_row 8); c64=$(conc_row 64); c128=$(conc_row 128)
row "claim + settle, 128 clients / 8 clients" 0.72 "$(ratio "$c128" "$c8")" 1.0 \
	"$c128 / $c8 per s (64 clients: $c64, $(ratio "$c64" "$c8"))" clients

tx=$(rate dlsm_tx 8); ph=$(rate physical 8); le=$(rate dlsm_leased 8)
row "transactional claim + settle / one-row UPDATE, 8 clients" 0.52 "$(ratio "$tx" "$ph")" 0.6 \
	"$tx / $ph per s" run
row "leased claim, then settle / one-row UPDATE, 8 clients" 0.30 "$(ratio "$le" "$ph")" 0.45 \
	"$le / $ph per s" run

b1=$(rate dlsm_batch 1); g1=$(rate graphile_batch 1)
b16=$(rate dlsm_batch 16); g16=$(rate graphile_batch 16)
r1=$(ratio "$b1" "$g1"); r16=$(ratio "$b16" "$g16")
lo=$(awk -v a="$r1" -v b="$r16" 'BEGIN { print (a < b ? a : b) }')
ok=$(awk -v v="$lo" 'BEGIN { print (v >= 1.3) ? "met" : "missed" }')
rows+=("batched / graphile-worker batched, 1 and 16 clients|1.13, 1.26|$r1, $r16|>= 1.3|$ok|$b1 / $g1 and $b16 / $g16 per s")
[ "$ok" = met ] || missed+=("run:batched / graphile-worker batched, 1 and 16 clients")

took=$(cat "$tmp/took")
{
	echo "# Issue 34, no cliffs: every line's A/B side by side in one run"
	echo
	echo "$(cat "$tmp/ended"), dlsm $(cat "$tmp/rev"), $(nproc) cores, $((took / 60)) min $((took % 60)) s."
	echo "Load (uptime) at the end: $(cat "$tmp/load")."
	echo "One round of each line, short runs (run.sh 5 s, growth.sh 8 s, fresh 20 s,"
	echo "limits and dedup 5 s, pool 30,000 requests; times CLIFFS_SCALE=$scale): a"
	echo "shared, loaded machine, so the figures are pessimistic and noisy;"
	echo "read the ratios, each measured side by side in this run."
	echo
	echo "| line | before | now | goal | met or missed | the two sides (A / B) |"
	echo "|---|---|---|---|---|---|"
	printf '| %s |\n' "${rows[@]}" | sed 's/|\([^ ]\)/| \1/g; s/\([^ ]\)|/\1 |/g'
} | tee "$out/cliffs.txt"

# --- what limits the missed lines ------------------------------------------

{
	echo "# What limits each missed line of bench/out/cliffs/cliffs.txt"
	echo
	echo "Wait events: the active client backends of the line's cluster, sampled"
	echo "every second (CPU: active, no wait event); the profile: perf record -a -F 99"
	echo "over the whole line (every process of the machine, server and clients),"
	echo "the top symbols by share of samples."
	declare -A shown
	for m in "${missed[@]}"; do
		key=${m%%:*}
		echo; echo "## ${m#*:}"; echo
		echo "Runs of this line: $key ($(case $key in run) echo bench/run.sh ;; clients|notify|relay) echo bench/growth.sh ;; *) echo "bench/${key}_ab.sh" ;; esac))."
		if [ -n "${shown[$key]:-}" ]; then echo "Same runs as \"${shown[$key]}\" above."; continue; fi
		shown[$key]=${m#*:}
		echo; echo "Wait events (samples):"; echo '```'
		awk -v k="$key" '$1 == k { $1 = ""; print substr($0, 2) }' "$tmp/waits.txt" |
			sort | uniq -c | sort -rn | head -8 || true
		echo '```'
		echo; echo "Who had the CPU (perf report --sort comm; the other helpers' builds"
		echo "and tests share the machine):"; echo '```'
		perf report -i "$tmp/perf-$key.data" --stdio --sort comm 2>/dev/null |
			grep -v '^#' | grep -v '^$' | sed 's/ *- *- *$//' | head -8 || true
		echo '```'
		echo; echo "Where the postgres processes spent it (perf report --comms postgres"
		echo "--percentage relative --sort dso,symbol: shares of the postgres samples,"
		echo "of every cluster of the machine, this line's the busiest):"; echo '```'
		perf report -i "$tmp/perf-$key.data" --stdio --comms postgres \
			--percentage relative --sort dso,symbol 2>/dev/null |
			grep -v '^#' | grep -v '^$' | sed 's/ *- *- *$//' | head -25 || true
		echo '```'
	done
} >"$out/cliffs_profile.txt"
echo
echo "wait events and profiles of the missed lines: $out/cliffs_profile.txt"
