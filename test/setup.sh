#!/usr/bin/env bash
# test/setup.sh: install what dlsm needs on a fresh Debian machine (as root),
# then build it with warnings as errors and install it.  Safe to run twice.
# The tree keeps its owner: the runners whose suites need postgres to write
# in it (test/run_all.sh, test/valgrind.sh, test/ubsan.sh) work in a copy.
set -euo pipefail
cd "$(dirname "$0")/.."

need=(postgresql-15 postgresql-server-dev-15 postgresql-15-pgtap
      libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libkrb5-dev make gcc
      prometheus-postgres-exporter prometheus)
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

export PATH=/usr/lib/postgresql/15/bin:$PATH
make -s clean >/dev/null 2>&1 || true
make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config PG_CFLAGS=-Werror
make -s PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config install >/dev/null
echo "setup: dlsm built and installed"
