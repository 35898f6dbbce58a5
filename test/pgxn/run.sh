#!/usr/bin/env bash
# test/pgxn/run.sh: the PGXN release, installed with the PGXN client.
#
# `make dist` builds dlsm-<version>.zip (git archive of HEAD) from the git
# tree DLSM_GIT_TREE (default: this tree); test/meta.pl validates its
# META.json against the PGXN Meta Spec; `pgxn install ./dlsm-<version>.zip`
# builds and installs it into the machine's PostgreSQL 15 (replacing the
# installed dlsm by the same code: no window without dlsm); then, in a
# throwaway cluster with dlsm preloaded, `pgxn load -d DB ./dlsm-<version>.zip`
# creates the extension and a request is enqueued, claimed and settled.
# (`pgxn load -d DB dlsm`, by name, asks the PGXN API first, which needs
# the network: it is tried, and its failure only reported.)  At the end,
# when this tree is built (test/run_all.sh's copy), `make install` puts the
# working tree's dlsm back.
#
# Prints TAP lines and "N passed, N failed".  Run as root (installs
# pgxnclient with apt-get when missing); the server runs as postgres.
# PGXN_PORT: the cluster's port (default 5493).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
GIT_TREE=${DLSM_GIT_TREE:-$TOP}
PORT=${PGXN_PORT:-5493}
# shellcheck source=../lib/cluster.sh
. "$TOP/test/lib/cluster.sh"
PG_CONFIG=$PGBIN/pg_config
LIBDIR=$($PG_CONFIG --pkglibdir)
SHAREDIR=$($PG_CONFIG --sharedir)

n=0 passed=0 failed=0
tap() { # tap ok|notok TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then passed=$((passed + 1)); echo "ok $n - $2"
	else failed=$((failed + 1)); echo "not ok $n - $2"; fi
}
check() { # check TEXT COMMAND...: ok when the command succeeds
	local text=$1; shift
	if "$@"; then tap ok "$text"; else tap notok "$text"; fi
}
say() { echo "# $*"; }

if [ "$(id -u)" != 0 ]; then
	echo "test/pgxn/run.sh: run as root (pgxn install writes PostgreSQL's directories)"
	echo "0 passed, 1 failed"
	exit 1
fi

work=$(mktemp -d /tmp/dlsm-pgxn.XXXXXX)
chmod 755 "$work"
finish() {
	cluster_stop
	if [ -f "$TOP/dlsm.so" ]; then
		make -s -C "$TOP" PG_CONFIG="$PG_CONFIG" install >/dev/null 2>&1
	fi
	if [ -f "$LIBDIR/dlsm.so" ] && [ -f "$SHAREDIR/extension/dlsm.control" ]; then
		tap ok "dlsm is installed at the end"
	else
		tap notok "dlsm is installed at the end"
	fi
	echo "1..$n"
	echo "$passed passed, $failed failed"
	rm -rf "$work"
	[ "$failed" = 0 ]
}
trap 'finish; exit $?' EXIT
trap 'exit 1' INT TERM HUP

if ! command -v pgxn >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 pgxnclient >/dev/null
fi
check "the PGXN client is installed ($(dpkg-query -W -f='pgxnclient ${Version}' pgxnclient 2>/dev/null))" \
	test -x "$(command -v pgxn)"

# --- the release: make dist ---
if ! git -c safe.directory="$GIT_TREE" -C "$GIT_TREE" rev-parse HEAD >/dev/null 2>&1; then
	tap notok "$GIT_TREE is a git tree (make dist archives HEAD)"
	exit 1
fi
version=$(perl -MJSON::PP -e 'local $/; open my $f, "<", shift or die; print decode_json(<$f>)->{version}' "$GIT_TREE/META.json")
zip=$work/dlsm-$version.zip
make -s -C "$GIT_TREE" dist DIST_DIR="$work" GIT="git -c safe.directory=$GIT_TREE" \
	PG_CONFIG="$PG_CONFIG" >"$work/dist.log" 2>&1
check "make dist builds dlsm-$version.zip from HEAD ($(git -c safe.directory="$GIT_TREE" -C "$GIT_TREE" rev-parse --short HEAD))" \
	test -s "$zip"
listing=$(unzip -Z1 "$zip")
for f in META.json dlsm.control Makefile README.md LICENSE "sql/dlsm--$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$GIT_TREE/dlsm.control").sql"; do
	check "the zip holds dlsm-$version/$f" grep -qx "dlsm-$version/$f" <<<"$listing"
done
check "every file of the zip is under dlsm-$version/" \
	bash -c "! grep -qv '^dlsm-$version/' <<<'$listing'"
mkdir "$work/unzipped"
unzip -q "$zip" -d "$work/unzipped"
if perl "$TOP/test/meta.pl" "$work/unzipped/dlsm-$version/META.json" >"$work/meta.log" 2>&1; then
	tap ok "the zip's META.json validates against the PGXN Meta Spec ($(grep -c '^ok' "$work/meta.log") checks)"
else
	tap notok "the zip's META.json validates against the PGXN Meta Spec"
	grep '^not ok' "$work/meta.log"
fi

# --- pgxn install ---
before=$(stat -c '%i %Y' "$LIBDIR/dlsm.so" 2>/dev/null)
start=$SECONDS
(cd "$work" && pgxn install --pg_config "$PG_CONFIG" "./dlsm-$version.zip") >"$work/install.log" 2>&1
rc=$?
check "pgxn install ./dlsm-$version.zip ($((SECONDS - start)) s)" test "$rc" = 0
[ "$rc" = 0 ] || tail -20 "$work/install.log"
after=$(stat -c '%i %Y' "$LIBDIR/dlsm.so" 2>/dev/null)
check "it installed $LIBDIR/dlsm.so anew" test -n "$after" -a "$after" != "$before"
same=1
for f in "$work/unzipped/dlsm-$version"/sql/dlsm--*.sql "$work/unzipped/dlsm-$version/dlsm.control"; do
	cmp -s "$f" "$SHAREDIR/extension/$(basename "$f")" || same=
done
check "the installed scripts and control file are the zip's" test -n "$same"

# --- pgxn load, then a claim ---
if ! cluster_start "$work/pg" "$PORT" >"$work/cluster.log" 2>&1; then
	tap notok "a cluster with dlsm preloaded starts"; cat "$work/cluster.log"; exit 1
fi
as_postgres "$PGBIN/createdb" -h "$CLUSTER_DIR" -p "$PORT" pgxntest
load() { (cd "$work" && pgxn load -d pgxntest -h "$CLUSTER_DIR" -p "$PORT" -U postgres \
	--pg_config "$PG_CONFIG" "$@") >>"$work/load.log" 2>&1; }
if load dlsm; then
	say "pgxn load -d pgxntest dlsm (by name) worked"
else
	say "pgxn load -d pgxntest dlsm (by name) needs the PGXN API: $(tail -1 "$work/load.log")"
fi
check "pgxn load -d pgxntest ./dlsm-$version.zip" load "./dlsm-$version.zip"
got=$(cluster_psql -d pgxntest -Atc "SELECT extversion FROM pg_extension WHERE extname = 'dlsm'")
check "CREATE EXTENSION dlsm happened (extversion $got)" test -n "$got"

q() { cluster_psql -d pgxntest -Atc "$1" 2>&1; }
q "SELECT dlsm_create_queue('jobs')" >/dev/null
id=$(q "SELECT dlsm_enqueue('jobs', 'sheet-1', 'create', '{\"n\": 1}')")
check "dlsm_enqueue returns an id ($id)" grep -qE '^[0-9]+$' <<<"$id"
claim=$(q "SELECT id || ' ' || entity || ' ' || process_id FROM dlsm_claim('jobs')")
check "dlsm_claim returns the row ($claim)" grep -qE "^$id sheet-1 [0-9a-f-]{36}\$" <<<"$claim"
pid=${claim##* }
settled=$(q "SELECT dlsm_settle('jobs', '$pid')")
check "dlsm_settle settles it (1 row: $settled)" test "$settled" = 1
row=$(q "SELECT status || ' ' || attempts FROM jobs WHERE id = ${id:-0}")
check "the row is complete after one attempt ($row)" test "$row" = "complete 1"
