#!/usr/bin/env bash
# test/model/run.sh: the model-based test of dlsm's claim/settle contract
# (test/model/model.py) against a throwaway cluster with dlsm preloaded.
# Prints TAP ("1..N", "ok N - ..." / "not ok N - ...") and a summary line
# "model: ..."; exits non-zero on any disagreement with the model, printing
# hypothesis's shrunk counterexample and its SQL transcript as "# " lines.
#
# Run as root (the server runs as postgres) or as postgres:
#   bash test/model/run.sh
# Settings (environment): MODEL_EXAMPLES (400), MODEL_STEPS (50 per
# example), MODEL_SEED (derandomized when unset; "random" or a number),
# MODEL_SCENARIOS=0 (skip the fixed scenarios), MODEL_DIR, MODEL_PORT,
# MODEL_TIMEOUT (hard limit, s; 600).
# Needs python3-hypothesis and python3-psycopg2 (test/setup.sh installs them).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$HERE/../lib/cluster.sh"

MODEL_DIR=${MODEL_DIR:-/tmp/dlsm-model}
MODEL_PORT=${MODEL_PORT:-5491}
MODEL_TIMEOUT=${MODEL_TIMEOUT:-600}

bail() {
	echo "1..1"
	echo "not ok 1 - model run: $*"
	exit 2
}

# Debian's interpreter, whatever python3 comes first on PATH
PY=/usr/bin/python3
"$PY" -c 'import hypothesis, psycopg2' 2>/dev/null ||
	bail "python3-hypothesis and python3-psycopg2 are needed (apt-get install -y python3-hypothesis python3-psycopg2)"

trap 'cluster_stop' EXIT
# the worker's reaper stays out of the way (the test expires and reaps by
# hand); no durability needed: a throwaway cluster, many small commits
cluster_start "$MODEL_DIR" "$MODEL_PORT" "dlsm.reap_interval = '1h'" \
	"fsync = off" "synchronous_commit = off" "full_page_writes = off" ||
	bail "could not start a cluster in $MODEL_DIR"
cluster_psql -c 'CREATE EXTENSION dlsm' || bail "CREATE EXTENSION dlsm failed"

timeout --kill-after=10 "$MODEL_TIMEOUT" "$PY" "$HERE/model.py"
rc=$?
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
	echo "not ok - model run killed after ${MODEL_TIMEOUT} s"
fi
exit "$rc"
