#!/usr/bin/env bash
# bench/ab35.sh: two revisions of dlsm side by side in one run (issue 35),
# on the lines a change to the claim, the limits or the enqueue path moves:
#   claim + settle at 8 and at 64 clients   bench/growth.sh's clients line
#                                           (its one-row UPDATE alongside,
#                                           a control: the same for A and B)
#   10,000 groups of at most 2, half at     bench/limits_ab.sh groups (limits
#   their limit                             and no limits, and their ratio)
#   64 producers: dlsm_enqueue, nobody      bench/growth.sh's NOTIFY line
#   listening and one client listening      (a plain INSERT alongside: the
#                                           control, and the ratio per build)
# Builds A and B (git revisions; B "." is the working tree) each into a
# private relocated copy of the system's PostgreSQL 15 (as
# bench/notify_ab.sh does), then runs ROUNDS rounds, each build on fresh
# throwaway clusters, the builds' order alternating from round to round;
# the bench scripts are the working tree's for both.  Prints per line the
# median of A, of B, B/A, and paired: the median of each round's own B/A.
# The controls (the one-row UPDATE, the plain INSERT, the queue without
# limits) run the same code in A and B: their B/A shows the run's noise.
#   bash bench/ab35.sh A [B] [ROUNDS] [SECONDS]
#   bash bench/ab35.sh 41783a5 main 1 5     # a smoke test: about 4 minutes
#   bash bench/ab35.sh 41783a5 main 5 10    # 5 rounds of 10 s: about 25 minutes
#   AB35_CONF="dlsm.notify_relay = on" bash bench/ab35.sh ...   # server settings
# Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
rev_a=${1:?usage: bench/ab35.sh A [B] [ROUNDS] [SECONDS]}
rev_b=${2:-.}; rounds=${3:-3}; seconds=${4:-10}
base=${BENCH_DIR:-/tmp/dlsm-ab35}
major=15
. test/lib/cluster.sh
began=$(date +%s)

. bench/lib.sh
mkdir -p "$base"
install_copy a "$rev_a"
install_copy b "$rev_b"
echo "built A = $rev_a ($(git rev-parse --short "$rev_a")), B = $rev_b ($([ "$rev_b" = . ] && echo 'the working tree' || git rev-parse --short "$rev_b")) in $(( $(date +%s) - began )) s" >&2

# one BUILD ROUND: every line of BUILD, as "BUILD,ROUND,LINE,VALUE" lines
one() {
	local b=$1 r=$2 bin=$base/$1/lib/postgresql/$major/bin g l
	g=$(BENCH_PGBIN=$bin BENCH_DIR=$base/growth GROWTH_ONLY="concurrency notify" \
		GROWTH_CLIENTS="8 64" GROWTH_CONF="${AB35_CONF:-}" \
		bash bench/growth.sh lines 1 "$seconds" 2>/dev/null)
	echo "$g" >"$base/growth-$b-$r.txt"
	echo "$g" | awk -F'|' -v p="$b,$r" '
		$2 ~ /^ *8 *$/ && NF > 5 { print p ",claim 8," $3 + 0; print p ",update 8," $5 + 0 }
		$2 ~ /^ *64 *$/ && NF > 5 { print p ",claim 64," $3 + 0; print p ",update 64," $5 + 0 }
		/^\| no client listening/ { print p ",enqueue none," $3 + 0; print p ",insert none," $4 + 0 }
		/^\| one client listening/ { print p ",enqueue one," $3 + 0; print p ",insert one," $4 + 0 }'
	l=$(BENCH_PGBIN=$bin BENCH_DIR=$base/limits VARIANTS=groups \
		bash bench/limits_ab.sh 8 1 "$seconds" 2>/dev/null)
	echo "$l" >"$base/limits-$b-$r.txt"
	echo "$l" | awk -v p="$b,$r" '$1 == "groups" {
		print p ",groups limits," $6; print p ",groups no limits," $4 }'
}

: >"$base/results.csv"
for r in $(seq 1 "$rounds"); do
	order="a b"; [ $((r % 2)) = 0 ] && order="b a"
	for b in $order; do
		printf '[%4ds] round %s, %s\n' $(( $(date +%s) - began )) "$r" "$([ "$b" = a ] && echo "A ($rev_a)" || echo "B ($rev_b)")" >&2
		one "$b" "$r" | tee -a "$base/results.csv" >&2
	done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
m() { awk -F, -v b="$1" -v l="$2" '$1 == b && $3 == l { print $4 }' "$base/results.csv" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
# paired LINE: the median of the rounds' own B/A (the load drifts less
# within a round than across rounds), and their range
paired() {
	awk -F, -v l="$1" '$3 == l { v[$2 "," $1] = $4; rs[$2] = 1 }
		END { for (r in rs) if (v[r ",a"] > 0) printf "%.3f\n", v[r ",b"] / v[r ",a"] }' \
		"$base/results.csv" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.2f (%.2f-%.2f)", v[int((NR + 1) / 2)], v[1], v[NR]; else print "-" }'
}
label() {
	case $1 in
	"claim 8") echo "claim + settle, 8 clients" ;;
	"claim 64") echo "claim + settle, 64 clients" ;;
	"update 8") echo "(control) one-row UPDATE, 8 clients" ;;
	"update 64") echo "(control) one-row UPDATE, 64 clients" ;;
	"groups limits") echo "10,000 groups of at most 2, half at their limit" ;;
	"groups no limits") echo "(control) the same queue without limits" ;;
	"enqueue none") echo "64 producers: dlsm_enqueue, nobody listening" ;;
	"insert none") echo "(control) 64 producers: plain INSERT" ;;
	"enqueue one") echo "64 producers: dlsm_enqueue, one client listening" ;;
	"insert one") echo "(control) plain INSERT, one client listening" ;;
	esac
}
echo
echo "A = $rev_a ($(git rev-parse --short "$rev_a")), B = $rev_b ($([ "$rev_b" = . ] && echo 'the working tree' || git rev-parse --short "$rev_b")); $rounds rounds of $seconds s, median; $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "load: $(uptime | sed 's/.*load average/load average/'); $(nproc) cores"
echo
echo "| line | A per s | B per s | B/A | paired B/A (range) |"
echo "|---|---|---|---|---|"
for l in "claim 8" "claim 64" "update 8" "update 64" "groups limits" "groups no limits" \
	"enqueue none" "insert none" "enqueue one" "insert one"; do
	a=$(m a "$l"); b=$(m b "$l")
	echo "| $(label "$l") | $a | $b | $(ratio "$b" "$a") | $(paired "$l") |"
done
echo
echo "| ratio within a build | A | B |"
echo "|---|---|---|"
for pair in "claim 64/claim 8" "groups limits/groups no limits" "enqueue none/insert none" "enqueue one/insert one"; do
	x=${pair%/*}; y=${pair#*/}
	echo "| $x / $y | $(ratio "$(m a "$x")" "$(m a "$y")") | $(ratio "$(m b "$x")" "$(m b "$y")") |"
done
echo
echo "(took $(( $(date +%s) - began )) s; the rounds' figures: $base/results.csv)"
