# shellcheck shell=bash
# test/lib/suites.sh: the regress and isolation suites against a running
# server, for the test/*.sh runners that start a server of their own
# (test/valgrind.sh, test/ubsan.sh).  Source it after test/lib/cluster.sh,
# from the top of the tree, with PGHOST and PGPORT set for the server.
#   suites_parse ARGS...   REGRESS= / ISOLATION= arguments replace the
#                          Makefile's lists (sets $regress and $isolation)
#   suites_run DIR         runs both through `make installcheck TAP_TESTS=`,
#                          output under DIR/regress and DIR/isolation
#   suites_report DIR      prints the results and any diffs; sets $pass and
#                          $fail (tests that did not pass, or 1 when the run
#                          failed without naming a test)

suites_parse() {
	regress=$(sed -n 's/^REGRESS = //p' Makefile)
	isolation=$(sed -n 's/^ISOLATION = //p' Makefile)
	local arg
	for arg in "$@"; do
		case $arg in
		REGRESS=*) regress=${arg#REGRESS=} ;;
		ISOLATION=*) isolation=${arg#ISOLATION=} ;;
		*) echo "unrecognized argument \"$arg\""; return 2 ;;
		esac
	done
}

# suites_one DIR NAME REGRESS ISOLATION: one installcheck, own output dir
suites_one() {
	: >"$1/$2.log"
	[ -n "$3$4" ] || return 0
	as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		PGISOLATIONTIMEOUT="${PGISOLATIONTIMEOUT:-300}" \
		make -C "$(pwd)" --no-print-directory installcheck TAP_TESTS= \
		REGRESS="$3" ISOLATION="$4" EXTRA_REGRESS_OPTS="--outputdir=$1/$2" \
		>"$1/$2.log" 2>&1
}

suites_run() {
	suites_rc=0
	suites_one "$1" regress "$regress" "" || suites_rc=1
	suites_one "$1" isolation "" "$isolation" || suites_rc=1
}

suites_report() {
	local logs=("$1/regress.log" "$1/isolation.log") d
	grep -hE '^(test|not ok|ok) ' "${logs[@]}"
	pass=$(grep -hE '^(test|ok|not ok) ' "${logs[@]}" | grep -cE '\.\.\. ok|^ok ')
	fail=$(grep -hE '^(test|ok|not ok) ' "${logs[@]}" | grep -vcE '\.\.\. ok|^ok ')
	for d in "$1/regress/regression.diffs" "$1/isolation/regression.diffs"; do
		if [ -s "$d" ]; then echo "---- $d"; head -200 "$d"; fi
	done
	if [ "$pass" = 0 ] && [ "$fail" = 0 ]; then
		fail=1; tail -20 "${logs[@]}"
	fi
	if [ "${suites_rc:-0}" != 0 ] && [ "$fail" = 0 ]; then fail=1; fi
}
