#!/usr/bin/env bash
# bench/run.sh: dlsm against the physical limit and the article's SQL, side
# by side on one throwaway cluster, as ratios.  A first part of the project's
# benchmark: the Node.js peers (pg-boss, graphile-worker), the scale, latency
# and coalescing cases and the chart are not here yet.
#
#   bash bench/run.sh            # 1, 4, 8, 16 clients, 3 rounds, 10 s each
#   bash bench/run.sh --quick    # 8 clients, 1 round, 5 s
#
# Run as root after `bash test/setup.sh` (or as postgres).  Prints a table of
# medians (min-max) with the ratio to the one-row UPDATE at the same client
# count, and writes bench/out/results.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
. test/lib/cluster.sh

clients="1 4 8 16"; rounds=3; seconds=10
if [ "${1:-}" = "--quick" ]; then clients="8"; rounds=1; seconds=5; fi

out=$top/bench/out
mkdir -p "$out"; chown postgres: "$out" 2>/dev/null || true
work=${BENCH_DIR:-/tmp/dlsm-bench}
trap cluster_stop EXIT
cluster_start "$work" "${BENCH_PORT:-5479}" \
	"shared_buffers = '512MB'" "max_wal_size = '4GB'" \
	"checkpoint_timeout = '15min'" "max_connections = 100"

scripts=$work/scripts
mkdir -p "$scripts"
cat >"$scripts/physical.sql" <<'SQL'
\set id random(1, 100000)
UPDATE phys SET v = v + 1 WHERE id = :id;
SQL
cat >"$scripts/handwritten.sql" <<'SQL'
BEGIN;
UPDATE hq SET status = 'in-progress', process_id = gen_random_uuid() WHERE id = (SELECT id FROM hq WHERE status = 'new' ORDER BY id FETCH FIRST ROW ONLY FOR UPDATE SKIP LOCKED) RETURNING process_id \gset
UPDATE hq SET status = 'complete' WHERE process_id = :process_id::uuid;
COMMIT;
SQL
cat >"$scripts/dlsm_tx.sql" <<'SQL'
SELECT dlsm_settle('bq', process_id) FROM dlsm_claim('bq');
SQL
cat >"$scripts/dlsm_leased.sql" <<'SQL'
SELECT process_id FROM dlsm_claim('bq', lease => '5 minutes') \gset
SELECT dlsm_settle('bq', :process_id);
SQL
cat >"$scripts/dlsm_batch.sql" <<'SQL'
SELECT count(*) FROM dlsm_settle_many('bq', ARRAY(SELECT process_id FROM dlsm_claim('bq', units => 100)));
SQL
chown -R postgres: "$work"

prepare() {	# rebuild every system's state, then vacuum and checkpoint
	cluster_psql -q <<'SQL'
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dlsm;
DROP TABLE IF EXISTS phys, hq, bq;
CREATE TABLE phys (id int PRIMARY KEY, v int NOT NULL DEFAULT 0);
INSERT INTO phys SELECT g FROM generate_series(1, 100000) g;
CREATE TABLE hq (id bigserial PRIMARY KEY, status text NOT NULL DEFAULT 'new',
				 kind text NOT NULL DEFAULT 'create', entity text NOT NULL, process_id uuid);
CREATE INDEX ON hq (process_id);
CREATE INDEX ON hq (id) WHERE status = 'new';
INSERT INTO hq (entity) SELECT 'e' || g FROM generate_series(1, 400000) g;
SELECT dlsm_create_queue('bq') \g /dev/null
INSERT INTO bq (entity) SELECT 'e' || g FROM generate_series(1, 400000) g;
VACUUM ANALYZE;
CHECKPOINT;
SQL
}

run() {	# run SYSTEM CLIENTS: prints transactions (or requests) per second
	local system=$1 c=$2 tps
	tps=$(as_postgres "$PGBIN/pgbench" -h "$PGHOST" -p "$PGPORT" -U postgres -n \
		-M prepared -c "$c" -j $(( c < 2 ? 1 : 2 )) -T "$seconds" \
		-f "$scripts/$system.sql" postgres 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	# a batched transaction settles 100 requests
	awk -v t="${tps:-0}" -v k=$([ "$system" = dlsm_batch ] && echo 100 || echo 1) \
		'BEGIN { printf "%.0f\n", t * k }' 
}

systems="physical handwritten dlsm_tx dlsm_leased dlsm_batch"
echo "system,clients,round,per_second" >"$out/results.csv"
for round in $(seq 1 "$rounds"); do
	for c in $clients; do
		prepare
		for s in $systems; do	# alternating the systems within each round
			v=$(run "$s" "$c")
			echo "$s,$c,$round,$v" >>"$out/results.csv"
			printf '\rround %d/%d, %2d clients: %-12s %8s/s   ' "$round" "$rounds" "$c" "$s" "$v" >&2
		done
	done
done
echo >&2

python3 - "$out/results.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
clients = sorted({int(r['clients']) for r in rows})
systems = []
for r in rows:
    if r['system'] not in systems:
        systems.append(r['system'])
def cell(s, c):
    v = [float(r['per_second']) for r in rows if r['system'] == s and int(r['clients']) == c]
    return statistics.median(v), min(v), max(v)
print('per second, median (min-max); ratio to the one-row UPDATE at the same clients')
print('| system | ' + ' | '.join('%d clients' % c for c in clients) + ' |')
print('|---|' + '---|' * len(clients))
for s in systems:
    cells = []
    for c in clients:
        m, lo, hi = cell(s, c)
        ref = cell('physical', c)[0]
        cells.append('%s (%s-%s) %.0f%%' % (format(int(m), ','), format(int(lo), ','), format(int(hi), ','), 100 * m / ref if ref else 0))
    print('| %s | %s |' % (s, ' | '.join(cells)))
PY
