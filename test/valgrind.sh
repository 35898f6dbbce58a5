#!/usr/bin/env bash
# test/valgrind.sh: the regress and isolation suites against a server run
# under valgrind memcheck; what `make installcheck-valgrind` calls.
#
# Starts a throwaway cluster (as the postgres OS user: PostgreSQL refuses
# root) whose postmaster, and so every backend and dlsm's launcher and
# workers, runs under valgrind with test/valgrind.supp; runs the Makefile's
# REGRESS and ISOLATION lists through `make installcheck TAP_TESTS=`; stops
# the server; then reads valgrind's logs, one per process.  It fails when
# any valgrind error has a frame in dlsm.so, and prints each such error in
# full; errors elsewhere are counted and shown, but only dlsm's fail the run
# (test/valgrind.supp covers the known false positives of a PostgreSQL not
# built with USE_VALGRIND).  Test failures are reported and fail it too.
#
# Needs an installed dlsm (make install) and valgrind (apt-get install
# valgrind).  Takes about 4 minutes on two cores (5 with --track-origins).  REGRESS= and ISOLATION=
# arguments replace the Makefile's lists, to run a subset:
#   bash test/valgrind.sh REGRESS=claim ISOLATION=claim_race
# Environment: VG_PORT (5482), VG_DIR (/tmp/valgrind-dlsm), VG_OPTS (extra
# valgrind options, e.g. --track-origins=yes).  Ends with one line
# "N passed, N failed" over the tests, plus one for the dlsm errors.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. test/lib/cluster.sh
. test/lib/suites.sh

port=${VG_PORT:-5482}
dir=${VG_DIR:-/tmp/valgrind-dlsm}

command -v valgrind >/dev/null || { echo "valgrind: not installed (apt-get install valgrind)"; exit 2; }
[ -f "$("$PGBIN/pg_config" --pkglibdir)/dlsm.so" ] || { echo "valgrind: dlsm is not installed (make install)"; exit 2; }

suites_parse "$@" || exit 2

# The suites run as postgres from a copy of the tree in $dir (cluster_init
# gives $dir to postgres): the tree itself may be out of postgres's reach.
rm -rf "$dir"
mkdir -p "$dir"
tree_copy "$dir/tree" && cd "$dir/tree" || exit 2
supp=$dir/tree/test/valgrind.supp
cluster_init "$dir" "$port" "dlsm.reap_interval = '1h'" "huge_pages = off" \
	"fsync = off" "log_line_prefix = '%m [%p] %b '" || exit 2
mkdir -p "$dir/vg"
give_to_postgres "$dir/vg"

# The postmaster forks every other process without exec, so each child keeps
# running under valgrind and gets its own log (%p); --trace-children follows
# anything it execs.  --error-exitcode=1: a backend exiting with 1 is not a
# crash to the postmaster, so an error does not restart the whole cluster.
start=$(date +%s)
# shellcheck disable=SC2086 # VG_OPTS: several options, split on purpose
as_postgres valgrind --tool=memcheck --trace-children=yes \
	--leak-check=no --error-exitcode=1 --num-callers=40 --show-error-list=yes \
	--suppressions="$supp" --gen-suppressions=all \
	--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \
	--fullpath-after= --log-file="$dir/vg/%p.log" ${VG_OPTS:-} \
	"$PGBIN/postgres" -D "$dir/data" >"$dir/server.log" 2>&1 &

# (the last backends' valgrind summaries take a while: wait up to 900 s)
trap 'cluster_stop 900' EXIT

export PGHOST=$dir PGPORT=$port PGUSER=postgres
ready=
for _ in $(seq 1 600); do
	if "$PGBIN/pg_isready" -q -d postgres; then ready=1; break; fi
	sleep 1
done
if [ -z "$ready" ]; then
	echo "valgrind: the server did not start"; tail -30 "$dir/server.log"; exit 2
fi
echo "valgrind: server up after $(( $(date +%s) - start )) s, logs in $dir/vg"

# Under valgrind everything runs 20-50 times slower: give isolation steps
# far longer than the default 300 s before isolationtester gives up.
export PGISOLATIONTIMEOUT=${PGISOLATIONTIMEOUT:-3000}
suites_run "$dir"
tests_done=$(date +%s)
cluster_stop 900
trap - EXIT
echo "valgrind: tests took $((tests_done - start)) s (server start included)"

# a child's valgrind may still be writing its summary after the postmaster
# has gone: give the logs a moment
for _ in $(seq 1 30); do
	[ -z "$(grep -L 'ERROR SUMMARY' "$dir"/vg/*.log 2>/dev/null)" ] && break
	sleep 1
done

suites_report "$dir"

# Valgrind's errors: a block between the markers; it is dlsm's when one of
# its frames is in dlsm.so, shown either as "(in .../dlsm.so)" or, with
# dlsm's debug information, as one of src/'s files.
srcfiles=$(cd src && ls -- *.c *.h | paste -sd'|')
awk -v src="$srcfiles" -v out="$dir/dlsm-errors.txt" -v other="$dir/other-errors.txt" '
	BEGIN { n = split(src, f, "|"); for (i = 1; i <= n; i++) mine[f[i]] = 1 }
	/VALGRINDERROR-BEGIN/ { inerr = 1; block = ""; isdlsm = 0; next }
	/VALGRINDERROR-END/ {
		inerr = 0
		if (isdlsm) { ndlsm++; print "---- " FILENAME block > out }
		else { nother++; print "---- " FILENAME block > other }
		next
	}
	inerr {
		block = block "\n" $0
		if ($0 ~ /\(in [^)]*\/dlsm\.so\)/) isdlsm = 1
		else if (match($0, /\(([^():]*\/)?[A-Za-z0-9_]+\.[ch]:[0-9]+\)$/)) {
			loc = substr($0, RSTART + 1, RLENGTH - 2)
			sub(/:[0-9]+$/, "", loc); sub(/.*\//, "", loc)
			if ((loc in mine) && $0 ~ ("/src/" loc ":|[(]" loc ":")) isdlsm = 1
		}
	}
	END { printf "%d %d\n", ndlsm + 0, nother + 0 }
' /dev/null "$dir"/vg/*.log >"$dir/counts" 2>/dev/null
read -r ndlsm nother <"$dir/counts"
nlogs=$(ls "$dir"/vg/*.log 2>/dev/null | wc -l)
echo "valgrind: $nlogs process logs; $ndlsm errors in dlsm code, $nother elsewhere"
# what test/valgrind.supp hid, by entry (-s prints the used ones at exit)
cat "$dir"/vg/*.log | awk '$2 == "used_suppression:" { n[$4] += $3; t += $3 }
	END { printf "valgrind: %d errors suppressed as known false positives", t
		for (k in n) printf "; %s %d", k, n[k]; print "" }'
unfinished=$(grep -L 'ERROR SUMMARY' "$dir"/vg/*.log 2>/dev/null | wc -l)
[ "$unfinished" = 0 ] || echo "valgrind: $unfinished processes left no summary (killed?)"
if [ "$nother" != 0 ]; then
	echo "---- errors outside dlsm ($dir/other-errors.txt), first ones:"
	head -60 "$dir/other-errors.txt"
fi
if [ "$ndlsm" != 0 ]; then
	echo "---- errors in dlsm code ($dir/dlsm-errors.txt):"
	cat "$dir/dlsm-errors.txt"
fi
crashes=$(grep -cE 'terminated by signal|was terminated by exception' "$dir/server.log")
[ "$crashes" = 0 ] || { echo "valgrind: $crashes server processes crashed:"; grep -E 'terminated by' "$dir/server.log"; }

echo "valgrind: $pass passed, $fail failed (tests); $ndlsm valgrind errors in dlsm"
echo "$pass passed, $((fail + ndlsm + crashes)) failed"
[ "$fail" = 0 ] && [ "$ndlsm" = 0 ] && [ "$crashes" = 0 ]
