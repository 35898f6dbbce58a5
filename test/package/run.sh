#!/usr/bin/env bash
# test/package/run.sh: the Debian package, built and used as a user would.
#
# Builds postgresql-15-dlsm_<version>-1_amd64.deb and the router's
# postgresql-15-dlsm-proxy_<version>-1_all.deb with debian/build.sh
# (apt-get update, the build dependencies, dpkg-buildpackage, whose own
# check runs the regression and isolation suites against the built files),
# checks their contents and dependencies and runs lintian on them (no
# error allowed; no warning about the router's package; dlsm's warnings
# are printed).  Then it swaps the machine's dlsm and dlsm_proxy for the
# packages: `make uninstall` (no dlsm or dlsm_proxy file left in
# PostgreSQL's directories), `dpkg -i`, and runs the regression and
# isolation suites against the installed files (debian/tests/installcheck:
# pg_buildext installcheck in a throwaway cluster with dlsm preloaded, as
# postgres), checking with dpkg --verify that the files under test were the
# package's from before to after; then CREATE EXTENSION plproxy, dblink and
# dlsm_proxy in a throwaway cluster without dlsm (a router), and `dpkg -r`
# of the router's package (its files gone, dlsm's left).  On exit, failure
# included, the packages are removed and dlsm (and dlsm_proxy, if it was
# there) installed again from source (`make install` of a tree built
# beforehand): the machine is left as it was found, and the window without
# dlsm lasts only the two swaps.
#
# Prints TAP lines and "N passed, N failed".  Run as root on Debian.
# PACKAGE_OUT: where the .debs are left (default: a temporary directory).
# PACKAGE_PORT: the router cluster's port (default 5494).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib/cluster.sh
. "$TOP/test/lib/cluster.sh"

PKG=postgresql-15-dlsm
PROXY_PKG=postgresql-15-dlsm-proxy
PORT=${PACKAGE_PORT:-5494}
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
	echo "test/package/run.sh: run as root (it builds and installs a package)"
	echo "0 passed, 1 failed"
	exit 1
fi

work=$(mktemp -d /tmp/dlsm-package.XXXXXX)
chmod 755 "$work"
out=${PACKAGE_OUT:-$work/dist}
src=$work/src		# a built copy of the tree: the suites, and the restore
swapped=

dlsm_files() {	# the dlsm files in PostgreSQL's directories, one a line
	ls -d "$LIBDIR"/dlsm.so "$LIBDIR"/bitcode/dlsm "$LIBDIR"/bitcode/dlsm.index.bc \
		"$SHAREDIR"/extension/dlsm.control "$SHAREDIR"/extension/dlsm--*.sql 2>/dev/null
}

proxy_files() {	# the dlsm_proxy files in PostgreSQL's directories, one a line
	ls -d "$SHAREDIR"/extension/dlsm_proxy.control "$SHAREDIR"/extension/dlsm_proxy--*.sql \
		2>/dev/null
}
# dlsm_proxy installed from source before the run (test/setup.sh does it):
# the restore installs it again
had_proxy=$(proxy_files)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed'; }

restore() {	# leave dlsm (and dlsm_proxy) installed from source, the packages removed
	[ -n "$swapped" ] || return 0
	swapped=
	for p in "$PROXY_PKG" "$PKG"; do
		if installed "$p"; then
			dpkg -r "$p" >>"$work/remove.log" 2>&1 || cat "$work/remove.log"
		fi
	done
	make -s -C "$src" PG_CONFIG="$PG_CONFIG" install >"$work/restore.log" 2>&1 ||
		cat "$work/restore.log"
	if [ -n "$had_proxy" ]; then
		make -s -C "$src/proxy" PG_CONFIG="$PG_CONFIG" install >>"$work/restore.log" 2>&1 ||
			cat "$work/restore.log"
	fi
}

finish() {
	cluster_stop
	restore
	if [ -f "$LIBDIR/dlsm.so" ] && [ -f "$SHAREDIR/extension/dlsm.control" ]; then
		tap ok "dlsm is installed again at the end (from source)"
	else
		tap notok "dlsm is installed again at the end (from source)"
	fi
	if [ -n "$had_proxy" ]; then
		if [ "$(proxy_files)" = "$had_proxy" ]; then
			tap ok "dlsm_proxy is installed again at the end (from source)"
		else
			tap notok "dlsm_proxy is installed again at the end (from source): $(proxy_files)"
		fi
	fi
	echo "1..$n"
	echo "$passed passed, $failed failed"
	rm -rf "$work"
	[ "$failed" = 0 ]
}
trap 'finish; exit $?' EXIT
trap 'exit 1' INT TERM HUP

control=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$TOP/dlsm.control")
changelog=$(sed -n '1s/.*(\(.*\)).*/\1/p' "$TOP/debian/changelog")
check "debian/changelog's version $changelog is dlsm.control's $control plus -1" \
	test "$changelog" = "$control-1"

# --- build: the documented command ---
start=$SECONDS
if bash "$TOP/debian/build.sh" "$out" >"$work/build.log" 2>&1; then
	tap ok "debian/build.sh builds the package ($((SECONDS - start)) s)"
else
	tap notok "debian/build.sh builds the package"
	tail -40 "$work/build.log"
	exit 1
fi
grep -E 'All [0-9]+ tests passed|tests? failed' "$work/build.log" | sed 's/^ */# build-time check: /'
deb=$out/${PKG}_$control-1_amd64.deb
check "it is named ${PKG}_$control-1_amd64.deb" test -f "$deb"

contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|')
for f in "$LIBDIR/dlsm.so" "$SHAREDIR/extension/dlsm.control" \
	"$SHAREDIR/extension/dlsm--$control.sql" \
	/usr/share/doc/$PKG/README.md.gz /usr/share/doc/$PKG/copyright \
	/usr/share/doc/$PKG/changelog.Debian.gz \
	/usr/share/doc/$PKG/examples/dlsm-queries.yaml \
	/usr/share/doc/$PKG/examples/dlsm-alerts.yml; do
	check "the package holds $f" grep -qx "$f" <<<"$contents"
done
for f in "$TOP"/sql/dlsm--*.sql; do
	check "the package holds every script: $(basename "$f")" \
		grep -qx "$SHAREDIR/extension/$(basename "$f")" <<<"$contents"
done
depends=$(dpkg-deb -f "$deb" Depends)
check "it depends on postgresql-15 ($depends)" grep -q 'postgresql-15' <<<"$depends"
check "it holds no dlsm_proxy file" bash -c "! grep -q dlsm_proxy <<<'$contents'"

# --- the router's package: dlsm_proxy, on PL/Proxy ---
proxydeb=$out/${PROXY_PKG}_$control-1_all.deb
check "debian/build.sh builds the router's package too: ${PROXY_PKG}_$control-1_all.deb" \
	test -f "$proxydeb"
pcontents=$(dpkg-deb -c "$proxydeb" 2>/dev/null | awk '{ print $6 }' | sed 's|^\./|/|')
for f in "$SHAREDIR/extension/dlsm_proxy.control" "$TOP"/proxy/dlsm_proxy--*.sql \
	/usr/share/doc/$PROXY_PKG/README.md.gz /usr/share/doc/$PROXY_PKG/copyright \
	/usr/share/doc/$PROXY_PKG/changelog.Debian.gz; do
	case $f in "$TOP"/*) f=$SHAREDIR/extension/$(basename "$f") ;; esac
	check "the router's package holds $f" grep -qx "$f" <<<"$pcontents"
done
check "the router's package holds no dlsm file (dlsm.so, dlsm.control, dlsm--*.sql)" \
	bash -c "! grep -qE '/dlsm(\.so|\.control|--)' <<<'$pcontents'"
pdepends=$(dpkg-deb -f "$proxydeb" Depends 2>/dev/null)
check "the router's package depends on postgresql-15 and postgresql-15-plproxy ($pdepends)" \
	bash -c "grep -qE '(^|, )postgresql-15( |,|\$)' <<<'$pdepends' &&
		grep -qE '(^|, )postgresql-15-plproxy( |,|\$)' <<<'$pdepends'"
check "the router's package does not depend on dlsm (a router has no dlsm)" \
	bash -c "! grep -q 'postgresql-15-dlsm' <<<'$pdepends'"

# --- lintian ---
export DEBIAN_FRONTEND=noninteractive
if ! command -v lintian >/dev/null; then
	apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 lintian >/dev/null 2>&1
fi
lintian "$out"/dlsm_"$control"-1_amd64.changes >"$work/lintian.log" 2>&1
sed 's/^/# lintian: /' "$work/lintian.log"
check "lintian reports no error ($(grep -c '^E: ' "$work/lintian.log") errors, $(grep -c '^W: ' "$work/lintian.log") warnings)" \
	bash -c "! grep -q '^E: ' '$work/lintian.log'"
check "lintian checked both packages (the .changes lists $PROXY_PKG)" \
	grep -q " ${PROXY_PKG}_$control-1_all.deb\$" \
	"$out"/dlsm_"$control"-1_amd64.changes
check "lintian reports no error and no warning about $PROXY_PKG" \
	bash -c "! grep -qE '^[EW]: ${PROXY_PKG}[: ]' '$work/lintian.log'"

# --- a built source tree for the restore (and the suites) ---
(cd "$TOP" && tree_copy "$src")
if ! make -s -C "$src" PG_CONFIG="$PG_CONFIG" >"$work/make.log" 2>&1; then
	tap notok "dlsm builds from source (for the restore)"; tail -20 "$work/make.log"; exit 1
fi
give_to_postgres "$src"

# --- the swap: source install out, package in ---
swapped=1
start=$SECONDS
make -s -C "$src" PG_CONFIG="$PG_CONFIG" uninstall >"$work/uninstall.log" 2>&1
left=$(dlsm_files)
check "make uninstall leaves no dlsm file in PostgreSQL's directories${left:+: $left}" test -z "$left"
make -s -C "$src/proxy" PG_CONFIG="$PG_CONFIG" uninstall >>"$work/uninstall.log" 2>&1
left=$(proxy_files)
check "make -C proxy uninstall leaves no dlsm_proxy file${left:+: $left}" test -z "$left"
if dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
	tap ok "dpkg -i $(basename "$deb") ($((SECONDS - start)) s without dlsm before it)"
else
	tap notok "dpkg -i $(basename "$deb")"; cat "$work/dpkg.log"; exit 1
fi
check "dpkg -S: $LIBDIR/dlsm.so is the package's" \
	bash -c "dpkg -S '$LIBDIR/dlsm.so' | grep -q '^$PKG:'"
verify=$(dpkg --verify "$PKG" 2>&1)
check "dpkg --verify: the installed files are the package's${verify:+: $verify}" test -z "$verify"

# --- the regression suites against the installed package ---
start=$SECONDS
(cd "$src" && runuser -u postgres -- env NONROOT=1 PATH="$PATH" sh debian/tests/installcheck) \
	>"$work/installcheck.log" 2>&1
rc=$?
say "debian/tests/installcheck: exit $rc, $((SECONDS - start)) s"
tests=$(grep -E '^(test +|     |ok +[0-9]+ +[-+] +)?[a-z_]+ +\.\.\. +(ok|FAILED|failed)' "$work/installcheck.log")
while read -r line; do
	[ -n "$line" ] || continue
	name=$(sed -E 's/^(test +)?([a-z_]+) +\.\.\..*/\2/' <<<"$line")
	if grep -qE '\.\.\. +ok' <<<"$line"; then tap ok "installed package: $name"
	else tap notok "installed package: $name"; fi
done <<<"$tests"
suites=$(grep -cE 'All [0-9]+ tests passed' "$work/installcheck.log")
check "installcheck passed both suites against the package (regress, isolation)" \
	test "$rc" = 0 -a "$suites" = 2
if [ "$rc" != 0 ]; then
	grep -A40 -E 'regression.diffs|FAILED|failed' "$work/installcheck.log" | head -80
fi
verify=$(dpkg --verify "$PKG" 2>&1)
check "dpkg --verify after the suites: still the package's files${verify:+: $verify}" test -z "$verify"

# --- the router's package: installed, a router made with it, removed ---
if dpkg -i "$proxydeb" >"$work/dpkg-proxy.log" 2>&1; then
	tap ok "dpkg -i $(basename "$proxydeb")"
else
	tap notok "dpkg -i $(basename "$proxydeb")"; cat "$work/dpkg-proxy.log"
fi
check "dpkg -S: $SHAREDIR/extension/dlsm_proxy.control is the router package's" \
	bash -c "dpkg -S '$SHAREDIR/extension/dlsm_proxy.control' | grep -q '^$PROXY_PKG:'"
verify=$(dpkg --verify "$PROXY_PKG" 2>&1)
check "dpkg --verify: the installed dlsm_proxy files are the package's${verify:+: $verify}" \
	test -z "$verify"

# a router: no dlsm preloaded nor created, only PL/Proxy, dblink and dlsm_proxy
if ! cluster_start "$work/router" "$PORT" "shared_preload_libraries = ''" \
	>"$work/cluster.log" 2>&1; then
	tap notok "a cluster without dlsm (a router) starts"; cat "$work/cluster.log"; exit 1
fi
router=$(cluster_psql -Atc "CREATE EXTENSION plproxy" -c "CREATE EXTENSION dblink" \
	-c "CREATE EXTENSION dlsm_proxy" \
	-c "SELECT string_agg(extname || ' ' || extversion, ', ' ORDER BY extname) FROM pg_extension" \
	2>&1)
check "CREATE EXTENSION plproxy, dblink, dlsm_proxy in a router ($router)" \
	test "$router" = "dblink 1.2, dlsm_proxy 1.2, plpgsql 1.0, plproxy 2.10.0"
fn=$(cluster_psql -Atc "SELECT e.extname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
	WHERE d.classid = 'pg_proc'::regclass AND d.objid = 'dlsm_proxy_node_of(text)'::regprocedure
	AND d.deptype = 'e'" 2>&1)
check "dlsm_proxy_node_of(text) exists and is dlsm_proxy's ($fn)" test "$fn" = dlsm_proxy
fn=$(cluster_psql -Atc "SELECT e.extname FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
	WHERE d.classid = 'pg_proc'::regclass
	AND d.objid = 'dlsm_enqueue(text,text,text,jsonb,timestamptz,text,text,interval)'::regprocedure
	AND d.deptype = 'e'" 2>&1)
check "the router's dlsm_enqueue(text, text, text, jsonb, timestamptz, text, text, interval) is dlsm_proxy's ($fn)" \
	test "$fn" = dlsm_proxy
cluster_stop

before=$(proxy_files)
was=$(installed "$PROXY_PKG" && echo installed)
dpkg -r "$PROXY_PKG" >"$work/remove-proxy.log" 2>&1
rc=$?
is=$(installed "$PROXY_PKG" && echo installed)
check "dpkg -r $PROXY_PKG: exit $rc, it was ${was:-not installed} before, ${is:-not installed} after" \
	test "$rc" = 0 -a "$was" = installed -a -z "$is"
[ "$rc" = 0 ] || cat "$work/remove-proxy.log"
left=$(proxy_files)
check "removing $PROXY_PKG removes its files ($(wc -w <<<"$before") before, $(wc -w <<<"$left") after${left:+: $left})" \
	test -n "$before" -a -z "$left"
check "removing $PROXY_PKG leaves dlsm's package and files" \
	bash -c "dpkg-query -W -f='\${Status}' '$PKG' | grep -q 'ok installed' && dpkg --verify '$PKG' &&
		test -f '$LIBDIR/dlsm.so'"
