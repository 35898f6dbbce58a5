#!/usr/bin/env bash
# test/run_all.sh: build dlsm and run every test suite; README's test command
# and what .ci/run calls.  Run as root on a fresh Debian bookworm machine: it
# installs what it needs, then runs the suites as the postgres OS user, each
# against a throwaway cluster with shared_preload_libraries = 'dlsm':
#   regress     pg_regress, test/regress/sql/ and test/regress/expected/
#   proxy-regress  pg_regress of the router dlsm_proxy, proxy/test/: its
#               functions' shapes and the errors it raises itself (a cluster
#               without dlsm, with PL/Proxy and dblink; no shard)
#   isolation   pg_isolation_regress, test/isolation/
#   pgtap       pg_prove, test/pgtap/
#   tap         prove, test/t/: the background worker, crashes, restarts
#   stress      test/stress/stress.sh: many clients, kills and a crash
#   fuzz        test/fuzz/sqlsmith.sh: sqlsmith's random SQL as an ordinary
#               role against dlsm's queues for 3 minutes; no server crash
#   model       test/model/run.sh: random interleavings against a model
#   failover    test/failover/run.sh: pg_auto_failover, a failover under load
#   meta        test/meta.pl: META.json against the PGXN Meta Spec and the repo
#   arch        test/arch.pl: the layers of src/ and the rules its code keeps
#   signals     after the others: no server log of theirs (TAP, stress,
#               model, failover, fuzz) has a process ended by a signal other
#               than a test's SIGKILL
#   package     test/package/run.sh: the Debian package built (debian/build.sh),
#               lintian, installed in place of the source install, regress and
#               isolation against it; dlsm installed from source again after
#   pgxn        test/pgxn/run.sh: make dist, pgxn install, pgxn load, a claim
#   metrics     bench/metrics_cost.sh: the exporter's queries on a queue of
#               1,000,000 settled rows: timed, and no sequential scan of it
#               (the exporter itself is scraped by test/t/070_metrics.pl, tap)
#   dist        test/pgxn/dist_build.sh: the PGXN zip builds against a newer
#               major (in that major's run)
#   upgrade     test/upgrade/: pg_upgrade from 15 to a newer major of a
#               cluster holding every kind of dlsm state (in the newer
#               major's run)
# `bash test/run_all.sh SUITE...` runs only the suites named.
#
# The version matrix: after its suites on PostgreSQL 15 (the system's),
# it runs itself again for each newer major, with DLSM_PG_MAJOR set, on a
# private installation of that major (test/majors/setup.sh, cached in
# /var/cache/dlsm-pg), and counts those suites as SUITE@MAJOR: on 18
# every suite that can run there, on 16 and 17 the build, regress,
# isolation, pgTAP, the worker's TAP files and the trust classes' (catalog
# drift, version skew, the relay's bounds).  failover, fuzz, package, pgxn,
# metrics, meta and arch stay on 15 (see MATRIX below).  DLSM_MATRIX=no
# runs 15 only; `SUITE@MAJOR` arguments pick suites of the matrix.
#
# Where it runs: as root, never in the tree it was called from.  The suites
# run as postgres, who must read the tree and write in it (results/,
# tmp_check/), and may not even be able to enter it: a clone in /root (mode
# 700) or any private directory.  Changing the owner of the user's clone
# would be hostile (git then calls it "dubious ownership").  So it copies the
# tree, without .git and build products, to /tmp/dlsm-test-<hash of the
# tree's path>, builds and installs dlsm from the copy (test/setup.sh), gives
# the copy to postgres and runs every suite there.  The logs are copied back
# to test/log; the copy is removed after a clean run and kept after a
# failure (its tmp_check/ and results/ hold the details).  Run as postgres,
# it runs in place.
#
# Each suite is one block below: it writes $log, then calls record (counts),
# prove_counts (prove's output) or not_run (could not start: 1 failed and a
# one-line reason).  It ends with one line "N passed, N failed" over all
# suites.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
major=${DLSM_PG_MAJOR:-15}
suites=("$@")
# MATRIX: the suites each newer major runs
declare -A MATRIX=(
	[18]="dist regress proxy-regress isolation pgtap tap stress model upgrade"
	[17]="dist regress isolation pgtap tap upgrade"
	[16]="dist regress isolation pgtap tap"
)
# the worker's TAP files, for the majors that run only those
WORKER_TAP="test/t/001_worker_lifecycle.pl test/t/002_reaper.pl test/t/003_handlers.pl test/t/004_databases.pl test/t/056_transaction_timeout.pl"
# and the trust classes, which every major must pass: catalog drift,
# version skew, the relay's bounds, temporary names in captures, update
# scripts against a role with CREATE on dlsm's schema, reaping beside a
# handler, what an ordinary role can make dlsm start or hold, the dedup
# look-up's two ways (an index access method of each major), a cancel
# served (the interrupt handling of each major)
WORKER_TAP="$WORKER_TAP test/t/073_capture_temp_names.pl test/t/099_relay_bounds.pl test/t/110_catalog_drift.pl test/t/111_version_skew.pl test/t/112_role_bounds.pl test/t/113_script_hijack.pl test/t/114_reaping_beside_handler.pl test/t/115_dedup_agreement.pl test/t/116_cancel_served.pl test/t/118_commit_effects.pl"
if [ "$major" != 15 ]; then
	[ "$major" = 18 ] || DLSM_TAP_TESTS=${DLSM_TAP_TESTS:-$WORKER_TAP}
fi

copy=
if [ "$(id -u)" = 0 ]; then
	copy=/tmp/dlsm-test-$(printf '%s' "$top" | md5sum | cut -c1-12)
	[ "$major" = 15 ] || copy=$copy-$major
	rm -rf "$copy"
	. test/lib/cluster.sh
	tree_copy "$copy" || { echo "cannot copy the tree to $copy"; echo "0 passed, 1 failed"; exit 1; }
	cd "$copy" || exit 1
	bash test/setup.sh "$major" || { echo "setup failed"; echo "0 passed, 1 failed"; exit 1; }
	give_to_postgres "$copy"
	echo "running in $copy, a copy of $top owned by postgres"
	run_pg() { runuser -u postgres -- "$@"; }
else
	run_pg() { "$@"; }
fi
# the major's programs first in PATH, its pg_config for every make
if [ "$major" = 15 ]; then
	export PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
else
	PG_CONFIG=$(bash test/majors/setup.sh "$major" | tail -1) || { echo "0 passed, 1 failed"; exit 1; }
	export PG_CONFIG
fi
PGBIN=$("$PG_CONFIG" --bindir)
export PGBIN PATH=$PGBIN:$PATH
. test/lib/cluster.sh
logdir=$(pwd)/test/log
rm -rf "$logdir"; mkdir -p "$logdir"; give_to_postgres "$logdir"

total_pass=0
total_fail=0
summary=()
ran=()
failures=()	# what failed, repeated after the summary's counts

# listed WORD WORDS...: is WORD one of WORDS?  In bash itself: a printf
# piped to grep -q fails now and then under pipefail, when grep exits at
# its match before printf wrote everything (SIGPIPE)
listed() {
	local w=$1
	shift
	for x in "$@"; do [ "$x" = "$w" ] && return 0; done
	return 1
}

want() {	# want SUITE: run it? (all when none named); starts its log
	if [ ${#suites[@]} -gt 0 ] && ! listed "$1" "${suites[@]}"; then
		return 1
	fi
	echo "== $1"
	log=$logdir/$1.log
	: >"$log"; give_to_postgres "$log"
}

record() {	# record SUITE PASSED FAILED [NOTE]
	summary+=("$(printf '%-10s %4d passed, %d failed%s' "$1" "$2" "$3" "${4:+ ($4)}")")
	ran+=("$1")
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
}

why() {	# why LOG: one line on why a run failed, from its log
	local line
	line=$(grep -m1 -iE "error|fatal|cannot|can't|could not|permission denied|no such file|not found|bail out" "$1")
	[ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$1" | tail -1)
	line=${line:-no output}; line=${line#"${line%%[![:space:]]*}"}
	echo "${line:0:200}"
}

not_run() {	# not_run SUITE LOG: the suite could not start: 1 failed
	local reason
	reason=$(why "$2")
	echo "$1: did not run: $reason (log: test/log/$(basename "$2"))"
	record "$1" 0 1 "did not run: $reason"
}

# prove_counts SUITE LOG: count prove's (or pg_prove's) results.  Passed:
# tests run minus tests failed; failed: tests failed, or 1 for a test file
# that failed without a failing test (died, bad plan, no plan).
prove_counts() {
	local tests sub failed
	tests=$(sed -n 's/^Files=[0-9]*, Tests=\([0-9]*\).*/\1/p' "$2" | tail -1)
	if [ "${tests:-0}" = 0 ]; then not_run "$1" "$2"; return; fi
	read -r sub failed < <(sed -n 's/^[^ ]* (Wstat: .* Tests: [0-9]* Failed: \([0-9]*\))$/\1/p' "$2" |
		awk '{ s += $1; f += ($1 > 0 ? $1 : 1) } END { print s + 0, f + 0 }')
	if ! grep -q '^Result: PASS' "$2" && [ "$failed" = 0 ]; then failed=1; fi
	record "$1" "$((tests - sub))" "$failed"
}

# pgr_counts SUITE LOG NAMES: count pg_regress's results for the tests NAMES
# (a test without a result line failed)
pgr_counts() {
	local p=0 f=0 n line
	if ! grep -qE '^(test|not ok|ok) ' "$2"; then not_run "$1" "$2"; return; fi
	for n in $3; do
		line=$(grep -E "^(test|not ok|ok) +[0-9]* *-? *$n +" "$2" | head -1)
		if echo "$line" | grep -qE '\.\.\. ok|^ok '; then p=$((p + 1)); else f=$((f + 1)); failures+=("$1: $n"); fi
	done
	grep -E '^(test|not ok|ok) |tests (passed|failed)' "$2"
	record "$1" "$p" "$f"
}

show_diffs() {	# show_diffs FILE: print pg_regress's diffs, if any
	if [ -s "$1" ]; then echo "---- $1"; cat "$1"; fi
}

virtualenv() {	# run a command in a throwaway preloaded cluster
	# (the worker's reaper stays out of the way of tests that reap by hand)
	if [ "$major" = 15 ]; then
		run_pg pg_virtualenv -v 15 -o shared_preload_libraries=dlsm \
			-o max_connections=100 -o max_prepared_transactions=10 \
			-o dlsm.reap_interval=1h "$@"
	else
		throwaway "shared_preload_libraries = 'dlsm'" "$@"
	fi
}

# throwaway PRELOAD COMMAND...: COMMAND, as postgres, against a new cluster
# of $major (not 15: pg_virtualenv knows only the system's majors);
# PRELOAD is its shared_preload_libraries line
throwaway() {
	local preload=$1 rc dir=$(pwd)/tmp_cluster
	shift
	( cluster_start "$dir" $((5400 + ${major%%[!0-9]*})) "$preload" "max_prepared_transactions = 10" \
		"dlsm.reap_interval = '1h'" "jit = off" >/dev/null || exit 1
	run_pg env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres "$@"
	rc=$?
	cluster_stop
	exit $rc )
}

# pg_regress, through PGXS installcheck
if want regress; then
	virtualenv make -s installcheck TAP_TESTS= ISOLATION= >"$log" 2>&1
	pgr_counts regress "$log" "$(sed -n 's/^REGRESS = //p' Makefile)"
	show_diffs regression.diffs
fi

# pg_regress of the router, through proxy/'s PGXS installcheck: a cluster
# of its own, dlsm not preloaded (the router has no dlsm)
if want proxy-regress; then
	if [ "$major" = 15 ]; then
		run_pg pg_virtualenv -v 15 make -s -C proxy installcheck >"$log" 2>&1
	else
		throwaway "shared_preload_libraries = ''" make -s -C proxy installcheck >"$log" 2>&1
	fi
	pgr_counts proxy-regress "$log" "$(sed -n 's/^REGRESS = //p' proxy/Makefile)"
	show_diffs proxy/regression.diffs
fi

# pg_isolation_regress, through PGXS installcheck
if want isolation; then
	virtualenv make -s installcheck TAP_TESTS= REGRESS= >"$log" 2>&1
	pgr_counts isolation "$log" "$(sed -n 's/^ISOLATION = //p' Makefile)"
	show_diffs output_iso/regression.diffs
fi

# pgTAP: the shape of the API
if want pgtap; then
	virtualenv pg_prove --ext .sql -r test/pgtap >"$log" 2>&1
	prove_counts pgtap "$log"
	grep -E '^(Files=|Result)' "$log"
	grep -E '^not ok|# +(Failed|got|expected|have|want)' "$log" | head -40
fi

# TAP: the background worker, crashes and restarts, own clusters
if want tap; then
	run_pg make -s installcheck REGRESS= ISOLATION= ${DLSM_TAP_TESTS:+PROVE_TESTS="$DLSM_TAP_TESTS"} >"$log" 2>&1
	prove_counts tap "$log"
	grep -E '^t/|^test/t/|^Files=|^Result' "$log"
	if ! grep -q '^Result: PASS' "$log"; then
		grep -E '^not ok|^#' "$log" | head -60
		# the log of each failed file only, and its failures after the summary
		# (prove names a file t/NAME.pl, or test/t/NAME.pl when given PROVE_TESTS)
		for t in $(sed -n 's|^\(\(test/\)\{0,1\}t/[0-9A-Za-z_]*\)\.pl .*(Wstat.*|\1|p' "$log"); do
			f=tmp_check/log/regress_log_${t##*/}
			failures+=("tap: $t.pl")
			while IFS= read -r l; do failures+=("  $l"); done \
				< <(grep -E '(^|\) )not ok|#   (Failed test|at |  got|expected)' "$f" 2>/dev/null | head -12)
			[ -f "$f" ] && { echo "---- $f"; tail -60 "$f"; }
		done
	fi
fi

# tap_script SUITE LOG COMMAND...: run a script that prints TAP lines
# (ok / not ok) and count them; a script that printed none did not run
tap_script() {
	local suite=$1 out=$2 rc p f
	shift 2
	"$@" >"$out" 2>&1
	rc=$?
	grep -E '^(ok|not ok|[a-z]+:) ' "$out" | grep -vE '^ok ' | head -40
	while IFS= read -r l; do failures+=("$suite: $l"); done < <(grep -E '^not ok ' "$out" | head -10)
	p=$(grep -cE '^ok ' "$out")
	f=$(grep -cE '^not ok ' "$out")
	if [ "$p" = 0 ] && [ "$f" = 0 ]; then not_run "$suite" "$out"; tail -20 "$out"; return; fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi
	record "$suite" "$p" "$f"
}

# stress: many clients, consumers killed, the server crashed
if want stress; then
	# on a newer major half as long (the matrix's time), the same checks
	[ "$major" = 15 ] || export STRESS_SECONDS=${STRESS_SECONDS:-30}
	tap_script stress "$log" bash test/stress/stress.sh
fi

# fuzz: sqlsmith's random queries as an ordinary role, no server crash
# (on 15 only, not in the MATRIX; 3 minutes: FUZZ_SECONDS)
if [ "$major" = 15 ] && want fuzz; then
	start=$SECONDS
	tap_script fuzz "$log" bash test/fuzz/sqlsmith.sh
	echo "fuzz: $((SECONDS - start)) s"
fi

# model: random interleavings of sessions against a model of the contract
if want model; then
	tap_script model "$log" bash test/model/run.sh
fi

# failover: pg_auto_failover, a forced failover under load, the invariants
if want failover; then
	tap_script failover "$log" bash test/failover/run.sh
fi

# META.json: the PGXN Meta Spec, and versions agreeing with dlsm.control
if want meta; then
	tap_script meta "$log" perl test/meta.pl
fi

# arch: the layers of src/ and the rules the code keeps
if want arch; then
	tap_script arch "$log" perl test/arch.pl
fi

# package: the Debian package, built, linted and installed; the suites
# against it (as root: it swaps the machine's dlsm for the package and back)
if want package; then
	start=$SECONDS
	tap_script package "$log" bash test/package/run.sh
	echo "package: $((SECONDS - start)) s"
fi

# pgxn: the PGXN release (make dist of the git tree) through the PGXN client
if want pgxn; then
	start=$SECONDS
	tap_script pgxn "$log" env DLSM_GIT_TREE="$top" bash test/pgxn/run.sh
	echo "pgxn: $((SECONDS - start)) s"
fi

# dist: the PGXN release (make dist) builds against this major (the pgxn
# suite installs it through the PGXN client on 15)
if [ "$major" != 15 ] && want dist; then
	tap_script dist "$log" env DLSM_GIT_TREE="$top" bash test/pgxn/dist_build.sh
fi

# metrics: the cost of the exporter's queries on 1,000,000 settled rows
if want metrics; then
	start=$SECONDS
	tap_script metrics "$log" bash bench/metrics_cost.sh
	grep -E '^\|' "$log"
	echo "metrics: $((SECONDS - start)) s"
fi

# upgrade: pg_upgrade from 15 to this major (test/upgrade/).  From the
# system's 15 where both are of one security release (17.12 and 15.20);
# to 18 from the 15 of bookworm's own suite (15.18 today, test/majors/
# setup.sh 15-bookworm): 15.20 marks every column with an option,
# pg_attver, that 18.6 (the newest 18 Debian has) rejects, so pg_upgrade
# from 15.20 to 18.6 fails for every cluster with a table, with or without
# dlsm (dlsm is built and installed into that 15 for it).
if [ "$major" != 15 ] && want upgrade; then
	old=/usr/lib/postgresql/15
	if [ ! -f "$old/lib/dlsm.so" ]; then
		echo "dlsm is not installed into PostgreSQL 15: bash test/run_all.sh installs it" >"$log"
		not_run upgrade "$log"
	else
	if [ "$major" = 18 ]; then
		old=$(dirname "$(dirname "$(bash test/majors/setup.sh 15-bookworm | tail -1)")")
		oldtree=$(mktemp -d)/dlsm
		tree_copy "$oldtree" && (cd "$oldtree" && bash test/setup.sh 15-bookworm) >"$log" 2>&1 ||
			echo "could not install dlsm into bookworm's own PostgreSQL 15" >>"$log"
		rm -rf "$(dirname "$oldtree")"
	fi
	run_pg env DLSM_OLD_INSTALL="$old" make -s installcheck REGRESS= ISOLATION= \
		PROVE_TESTS="test/upgrade/*.pl" >"$log" 2>&1
	prove_counts upgrade "$log"
	grep -E '^test/|^Files=|^Result' "$log"
	grep -q '^Result: PASS' "$log" || tail -40 tmp_check/log/regress_log_* 2>/dev/null
	fi
fi

# signals: no server process of any suite above ended by a signal other
# than the SIGKILLs tests send on purpose (a crash: SIGSEGV, SIGABRT, ...;
# a crash restarts the server, and a suite whose assertions came after the
# restart could pass): every server log the suites left in the tree, TAP
# clusters, stress, model, failover and fuzz runs alike (the regress,
# isolation and pgTAP servers are pg_virtualenv's, whose tests fail on a
# crash).  Run when any suite ran.
if [ ${#ran[@]} -gt 0 ] && { [ ${#suites[@]} = 0 ] || listed signals "${suites[@]}"; }; then
	crashes=$(find . -path ./test/log -prune -o -type f -name '*.log' -print0 2>/dev/null |
		xargs -0 -r grep -HE 'terminated by signal ([0-8]|1[0-9]|[2-9][0-9])\b|terminated by exception' 2>/dev/null | head -20)
	if [ -n "$crashes" ]; then
		echo "$crashes"
		while IFS= read -r l; do failures+=("signals: ${l:0:240}"); done <<<"$crashes"
		record signals 0 1 "a server process ended by a signal"
	else
		record signals 1 0
	fi
fi

# the matrix: this script again for each newer major, its suites counted
# here as SUITE@MAJOR
if [ "$major" = 15 ] && [ "${DLSM_MATRIX:-yes}" != no ]; then
	for m in 18 17 16; do
		picked=()
		for s in ${MATRIX[$m]}; do
			if [ ${#suites[@]} = 0 ] || listed "$s@$m" "${suites[@]}"; then
				picked+=("$s")
			fi
		done
		[ ${#picked[@]} -gt 0 ] || continue
		echo "== PostgreSQL $m: ${picked[*]}"
		start=$SECONDS
		DLSM_PG_MAJOR=$m DLSM_LOG_TO=$logdir/$m bash "$top/test/run_all.sh" "${picked[@]}" >"$logdir/major-$m.log" 2>&1
		sed -n '/^== summary/,$p' "$logdir/major-$m.log" | grep -v '^== summary'
		while read -r name p f; do
			record "$name@$m" "$p" "$f"
		done < <(sed -n '/^== summary/,/^[0-9]* passed, [0-9]* failed$/p' "$logdir/major-$m.log" |
			sed -n 's/^\([a-z][a-z-]*\) *\([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2 \3/p')
		grep -q '^== summary' "$logdir/major-$m.log" ||
			{ echo "PostgreSQL $m: no summary"; tail -20 "$logdir/major-$m.log"; record "major@$m" 0 1 "did not finish"; }
		while IFS= read -r l; do failures+=("$m: $l"); done \
			< <(sed -n '/^== what failed/,/passed, [0-9]* failed$/p' "$logdir/major-$m.log" | sed '1d;$d')
		echo "PostgreSQL $m: $((SECONDS - start)) s"
	done
fi

for s in "${suites[@]}"; do
	case $s in *@*) continue ;; esac
	listed "$s" "${ran[@]}" || record "$s" 0 1 "no such suite"
done

echo "== summary"
if [ -n "$copy" ]; then
	logto=${DLSM_LOG_TO:-$top/test/log}
	rm -rf "$logto"; cp -r "$logdir" "$logto"
	if [ "$total_fail" = 0 ]; then
		cd / && rm -rf "$copy"
	else
		echo "logs in $logto; the tree the suites ran in is kept: $copy"
	fi
fi
printf '%s\n' "${summary[@]}"
if [ ${#failures[@]} -gt 0 ]; then echo "== what failed"; printf '%s\n' "${failures[@]}"; fi
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
