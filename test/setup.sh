#!/usr/bin/env bash
# test/setup.sh [MAJOR]: install what dlsm needs on a fresh Debian machine
# (as root), then build it with warnings as errors and install it, and
# install the router extension dlsm_proxy (proxy/, on PL/Proxy) for the
# sharding tests: into PostgreSQL MAJOR (default 15, the system's).
# Safe to run twice.  The tree keeps its owner: the runners whose suites
# need postgres to write in it (test/run_all.sh, test/valgrind.sh,
# test/ubsan.sh) work in a copy.
set -euo pipefail
cd "$(dirname "$0")/.."

need=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap postgresql-15-plproxy
      libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libkrb5-dev make gcc
      python3-hypothesis python3-psycopg2 prometheus-postgres-exporter prometheus
      pg-bsd-indent xz-utils graphviz sqlsmith)
missing=()
for p in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# PostgreSQL 15 is the system's; another major is set up privately, once,
# by test/majors/setup.sh (cached in /var/cache/dlsm-pg)
major=${1:-15}
if [ "$major" = 15 ]; then
	pg_config=/usr/lib/postgresql/15/bin/pg_config
else
	pg_config=$(bash test/majors/setup.sh "$major" | tail -1)
fi
export PATH=$("$pg_config" --bindir):$PATH
make -s clean PG_CONFIG="$pg_config" >/dev/null 2>&1 || true
make -s PG_CONFIG="$pg_config" PG_CFLAGS=-Werror
make -s PG_CONFIG="$pg_config" install >/dev/null
# the router extension of a sharded dlsm (SQL only)
make -s -C proxy PG_CONFIG="$pg_config" install >/dev/null
echo "setup: dlsm built and installed for PostgreSQL $major, dlsm_proxy installed"
