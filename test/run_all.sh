#!/usr/bin/env bash
# test/run_all.sh: build dlsm and run every test suite; README's test command
# and what .ci/run calls.  Run as root on a fresh Debian bookworm machine: it
# installs what it needs, then runs the suites as the postgres OS user, each
# against a throwaway cluster with shared_preload_libraries = 'dlsm':
#   regress     pg_regress, sql/ and expected/
#   isolation   pg_isolation_regress, test/isolation/
#   pgtap       pg_prove, test/pgtap/
#   tap         prove, test/t/: the background worker, crashes, restarts
#   stress      test/stress/stress.sh: many clients, kills and a crash
#   meta        test/meta.pl: META.json against the PGXN Meta Spec and the repo
# It ends with one line "N passed, N failed" over all suites.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" = 0 ]; then
	bash test/setup.sh || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
	run_pg() { runuser -u postgres -- "$@"; }
else
	run_pg() { "$@"; }
fi
export PATH=/usr/lib/postgresql/15/bin:$PATH
logdir=$top/test/log
rm -rf "$logdir"; mkdir -p "$logdir"
if [ "$(id -u)" = 0 ]; then chown postgres: "$logdir"; fi

total_pass=0
total_fail=0
summary=()

record() {	# record SUITE PASSED FAILED
	summary+=("$(printf '%-10s %4d passed, %d failed' "$1" "$2" "$3")")
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
}

virtualenv() {	# run a command in a throwaway preloaded cluster
	# (the worker's reaper stays out of the way of tests that reap by hand)
	run_pg pg_virtualenv -v 15 -o shared_preload_libraries=dlsm \
		-o max_connections=100 -o dlsm.reap_interval=1h "$@"
}

# pg_regress and pg_isolation_regress, through PGXS installcheck
echo "== regress and isolation"
virtualenv make -s installcheck TAP_TESTS= >"$logdir/installcheck.log" 2>&1
regress_names=$(sed -n 's/^REGRESS = //p' Makefile)
iso_names=$(sed -n 's/^ISOLATION = //p' Makefile)
count_pgr() {	# count_pgr NAMES: passed and failed among pg_regress lines
	local p=0 f=0 n line
	for n in $1; do
		line=$(grep -E "^(test|not ok|ok) +[0-9]* *-? *$n +" "$logdir/installcheck.log" | head -1)
		if echo "$line" | grep -qE '\.\.\. ok|^ok '; then p=$((p + 1)); else f=$((f + 1)); fi
	done
	echo "$p $f"
}
read -r p f < <(count_pgr "$regress_names"); record regress "$p" "$f"
read -r p f < <(count_pgr "$iso_names"); record isolation "$p" "$f"
grep -E '^test |tests (passed|failed)' "$logdir/installcheck.log"
for d in regression.diffs output_iso/regression.diffs; do
	if [ -s "$d" ]; then echo "---- $d"; cat "$d"; fi
done

# pgTAP: the shape of the API
echo "== pgtap"
virtualenv pg_prove --ext .sql -r test/pgtap >"$logdir/pgtap.log" 2>&1
tests=$(sed -n 's/.*Tests=\([0-9]*\).*/\1/p' "$logdir/pgtap.log" | tail -1)
failed=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$logdir/pgtap.log" | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
if ! grep -q '^Result: PASS' "$logdir/pgtap.log" && [ "$failed" = 0 ]; then failed=1; fi
record pgtap "$(( ${tests:-0} - failed ))" "$failed"
tail -n 4 "$logdir/pgtap.log"
grep -E '^not ok|# +(Failed|got|expected|have|want)' "$logdir/pgtap.log" | head -40

# TAP: the background worker, crashes and restarts, own clusters
echo "== tap"
run_pg make -s installcheck REGRESS= ISOLATION= >"$logdir/tap.log" 2>&1
grep -E '^t/|^test/t/|^Files=|^Result' "$logdir/tap.log"
tests=$(sed -n 's/.*Tests=\([0-9]*\).*/\1/p' "$logdir/tap.log" | tail -1)
failed=$(grep -oE 'Failed [0-9]+/[0-9]+ subtests' "$logdir/tap.log" | awk '{split($2,a,"/"); s+=a[1]} END {print s+0}')
if ! grep -q '^Result: PASS' "$logdir/tap.log" && [ "$failed" = 0 ]; then failed=1; fi
record tap "$(( ${tests:-0} - failed ))" "$failed"
if [ "$failed" != 0 ]; then
	grep -E '^not ok|^#' "$logdir/tap.log" | head -60
	for f in tmp_check/log/*; do [ -f "$f" ] && { echo "---- $f"; tail -40 "$f"; }; done
fi

# stress: many clients, consumers killed, the server crashed
echo "== stress"
bash test/stress/stress.sh >"$logdir/stress.log" 2>&1
grep -E '^(ok|not ok|stress:)' "$logdir/stress.log"
p=$(grep -cE '^ok ' "$logdir/stress.log")
f=$(grep -cE '^not ok ' "$logdir/stress.log")
if [ "$p" = 0 ] && [ "$f" = 0 ]; then f=1; tail -20 "$logdir/stress.log"; fi
record stress "$p" "$f"

# META.json: the PGXN Meta Spec, and versions agreeing with dlsm.control
echo "== meta"
perl test/meta.pl >"$logdir/meta.log" 2>&1
rc=$?
p=$(grep -cE '^ok ' "$logdir/meta.log")
f=$(grep -cE '^not ok ' "$logdir/meta.log")
if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
record meta "$p" "$f"
echo "meta: $p of $((p + f)) checks of META.json passed"
grep -E '^not ok|^# ' "$logdir/meta.log" | head -40

echo "== summary"
printf '%s\n' "${summary[@]}"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
