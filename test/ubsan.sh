#!/usr/bin/env bash
# test/ubsan.sh: the regress and isolation suites against a dlsm.so built
# with the undefined behaviour sanitizer; what `make installcheck-ubsan`
# calls.
#
# Builds dlsm from a copy of the tree with -fsanitize=undefined and installs
# it with DESTDIR into a private copy of the PostgreSQL installation under
# the work directory: the postgres binary copied (PostgreSQL finds $libdir
# and the share directory relative to its own executable), everything else
# linked to the real files.  The installed dlsm.so is never touched.  Then it
# starts a throwaway cluster from that copy (as the postgres OS user), runs
# the Makefile's REGRESS and ISOLATION lists through `make installcheck
# TAP_TESTS=`, and fails on any "runtime error" the sanitizer printed (only
# dlsm.so is instrumented, so every report is dlsm's) and on test failures.
#
# AddressSanitizer is not offered: its runtime has to be preloaded into an
# uninstrumented postgres, and Debian's postgres then hangs at start-up in
# bindtextdomain() (gcc's and clang's runtimes alike).
#
# Needs the server headers and gcc (test/setup.sh installs them) and
# libubsan (gcc's).  Takes about a minute.  REGRESS= and ISOLATION= arguments
# replace the Makefile's lists.  Environment: UB_PORT (5482), UB_DIR
# (/tmp/valgrind-ubsan).  Ends with one line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
. test/lib/cluster.sh
. test/lib/suites.sh

port=${UB_PORT:-5482}
dir=${UB_DIR:-/tmp/valgrind-ubsan}
pgconfig=$PGBIN/pg_config
bindir=$("$pgconfig" --bindir)
pkglibdir=$("$pgconfig" --pkglibdir)
sharedir=$("$pgconfig" --sharedir)

suites_parse "$@" || exit 2

# Built in a copy of the tree, from which the suites run too, as postgres
# (give_to_postgres below): the tree itself may be out of postgres's reach.
rm -rf "$dir"
mkdir -p "$dir/root"
tree_copy "$dir/build" && cd "$dir/build" || exit 2
flags="-fsanitize=undefined -fno-omit-frame-pointer"
if ! make -s PG_CONFIG="$pgconfig" PG_CFLAGS="$flags" \
	PG_LDFLAGS="-fsanitize=undefined" >"$dir/build.log" 2>&1 ||
	! make -s PG_CONFIG="$pgconfig" DESTDIR="$dir/root" \
	install >>"$dir/build.log" 2>&1; then
	echo "ubsan: build failed"; cat "$dir/build.log"; exit 2
fi

# The private installation: DESTDIR put dlsm there; link the rest, copy the
# binary (a link would lead PostgreSQL back to the real $libdir).
link_tree() {	# link_tree DIR: link DIR's files into the copy, where missing
	(cd "$1" && find . \( -type f -o -type l \) -print) | while read -r f; do
		[ -e "$dir/root$1/$f" ] || [ -L "$dir/root$1/$f" ] && continue
		mkdir -p "$(dirname "$dir/root$1/$f")"
		ln -s "$1/${f#./}" "$dir/root$1/$f"
	done
}
link_tree "$pkglibdir"
link_tree "$sharedir"
mkdir -p "$dir/root$bindir"
cp "$bindir/postgres" "$dir/root$bindir/postgres"
give_to_postgres "$dir"
cluster_init "$dir" "$port" "dlsm.reap_interval = '1h'" "jit = off" \
	"log_line_prefix = '%m [%p] %b '" || exit 2

# The sanitizer reports on the server's stderr, into server.log.
as_postgres env UBSAN_OPTIONS=print_stacktrace=1 \
	"$dir/root$bindir/postgres" -D "$dir/data" >"$dir/server.log" 2>&1 &
trap 'cluster_stop 120' EXIT

export PGHOST=$dir PGPORT=$port PGUSER=postgres
for _ in $(seq 1 60); do
	"$PGBIN/pg_isready" -q -d postgres && break
	sleep 1
done
# Make sure the server runs the sanitized library, not the installed one.
libdir=$(as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" "$PGBIN/psql" -X -Atq \
	-d postgres -c "SELECT setting FROM pg_config WHERE name = 'PKGLIBDIR'")
if [ "$libdir" != "$dir/root$pkglibdir" ]; then
	echo "ubsan: the server's \$libdir is \"$libdir\", not the private copy"
	tail -20 "$dir/server.log"; exit 2
fi

suites_run "$dir"
cluster_stop 120
trap - EXIT
suites_report "$dir"

nub=$(grep -c 'runtime error:' "$dir/server.log")
echo "ubsan: $nub runtime errors"
if [ "$nub" != 0 ]; then
	grep -A12 'runtime error:' "$dir/server.log" | head -200
fi
echo "ubsan: $pass passed, $fail failed (tests); $nub sanitizer reports"
echo "$pass passed, $((fail + nub)) failed"
[ "$fail" = 0 ] && [ "$nub" = 0 ]
