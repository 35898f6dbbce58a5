#!/usr/bin/env bash
# test/pgxn/dist_build.sh: the PGXN release builds against the PostgreSQL
# of PG_CONFIG, as `pgxn install` would build it there.
#
# `make dist` makes dlsm-<version>.zip (git archive of HEAD) from the git
# tree DLSM_GIT_TREE; the zip is unpacked in a scratch directory, built with
# warnings as errors against PG_CONFIG, and installed into a DESTDIR there
# (the installation itself is not touched).  Prints TAP lines; run as root
# or as the tree's owner (git archive reads the tree).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
GIT_TREE=${DLSM_GIT_TREE:-$TOP}
PG_CONFIG=${PG_CONFIG:-pg_config}
major=$("$PG_CONFIG" --version | awk '{print $2}')

n=0
check() { # check TEXT COMMAND...: ok when the command succeeds
	local text=$1; shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $text"; else echo "not ok $n - $text"; fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
quiet() { # quiet LOG COMMAND...: the command, its output in LOG (shown on failure)
	local log=$1; shift
	"$@" >"$log" 2>&1 || { sed 's/^/# /' "$log"; return 1; }
}
check "make dist makes the release zip" \
	quiet "$work/dist.log" make -s -C "$GIT_TREE" dist DIST_DIR="$work" GIT="git -c safe.directory=*"
zip=$(ls "$work"/dlsm-*.zip 2>/dev/null | head -1)
check "the zip unpacks" quiet "$work/unzip.log" python3 -m zipfile -e "$zip" "$work"
src=$(ls -d "$work"/dlsm-*/ 2>/dev/null | head -1)
check "it builds with -Werror against PostgreSQL $major" \
	quiet "$work/build.log" make -s -C "$src" PG_CONFIG="$PG_CONFIG" PG_CFLAGS=-Werror
check "it installs dlsm.so and the scripts (into a DESTDIR)" \
	quiet "$work/install.log" make -s -C "$src" PG_CONFIG="$PG_CONFIG" DESTDIR="$work/dest" install
check "the DESTDIR holds dlsm.so and dlsm.control" \
	test -f "$work/dest$("$PG_CONFIG" --pkglibdir)/dlsm.so" -a \
	-f "$work/dest$("$PG_CONFIG" --sharedir)/extension/dlsm.control"
echo "1..$n"
