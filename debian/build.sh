#!/usr/bin/env bash
# debian/build.sh [OUTDIR]: build the Debian packages of dlsm, as root on
# Debian: postgresql-<major>-dlsm_<version>-1_<arch>.deb (dlsm, for the
# shards) and postgresql-<major>-dlsm-proxy_<version>-1_all.deb (the router's
# dlsm_proxy, on PL/Proxy) for each major of debian/pgversions that the
# machine supports (on bookworm: 15).
#
# Installs the build dependencies that debian/control names (apt-get update,
# then apt-get build-dep), builds in a copy of the tree with
# dpkg-buildpackage (pg_buildext: make, make install into debian/, then the
# regression and isolation suites against those files in a throwaway
# cluster; DEB_BUILD_OPTIONS=nocheck skips them) and leaves the .debs, the
# .buildinfo and the .changes in OUTDIR (default: dist/ in the tree).
# The tree itself is not written to, but for OUTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
out=${1:-$top/dist}
mkdir -p "$out"
out=$(cd "$out" && pwd)

version=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null ||
	sed -n '1s/.*(\(.*\)).*/\1/p' debian/changelog)
upstream=${version%-*}
control=$(sed -n "s/^default_version = '\(.*\)'/\1/p" dlsm.control)
if [ "$upstream" != "$control" ]; then
	echo "debian/changelog's version $version does not match dlsm.control's $control" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 \
	dpkg-dev build-essential >/dev/null

work=$(mktemp -d /tmp/dlsm-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"		# the test cluster's server (postgres) reads debian/ there
src=$work/dlsm-$upstream
mkdir "$src"
tar -cf - --exclude=.git --exclude=./dist --exclude=./bench/peers/node_modules \
	--exclude=./bench/out --exclude=./test/stress/out --exclude=log \
	--exclude=tmp_check --exclude=tmp_check_iso --exclude=results \
	--exclude=output_iso --exclude=regression.diffs --exclude=regression.out \
	--exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude='*.zip' \
	--exclude=./debian/.debhelper --exclude='./debian/postgresql-*-dlsm' \
	--exclude='./debian/postgresql-*-dlsm-proxy' \
	--exclude=./debian/files --exclude='./debian/*.substvars' \
	--exclude='./debian/*.log' . | tar -C "$src" -xf -

cd "$src"
apt-get build-dep -y -qq -o DPkg::Lock::Timeout=600 ./ >/dev/null
dpkg-buildpackage -us -uc -b
cp "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$out"/
ls -l "$out"/*.deb
