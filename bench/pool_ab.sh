#!/usr/bin/env bash
# bench/pool_ab.sh: the worker pool (issue 25), side by side in one run on
# one throwaway cluster: 30 databases, each with a handler queue, served
# by one worker per database (dlsm.max_workers = 40) and by three workers
# that take turns (dlsm.max_workers = 3).  Each side: 1,000 requests
# enqueued at once in every database (30,000 in all); prints the time
# until all are handled and the handler throughput, and the longest time
# any database waited for a pass (dlsm_worker_status.last_pass_age,
# polled every 0.2 s while the side ran).  Rounds alternate the order.
#   bash bench/pool_ab.sh [ROUNDS] [DATABASES] [REQUESTS]
#   BENCH_PGBIN=/path/to/bin bash bench/pool_ab.sh   # a private installation
# Run as root (or postgres) with dlsm installed in that PostgreSQL.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}; ndb=${2:-30}; nreq=${3:-1000}
PGBIN=${BENCH_PGBIN:-${PGBIN:-/usr/lib/postgresql/15/bin}}
. test/lib/cluster.sh
work=${BENCH_DIR:-/tmp/dlsm-pool-bench}
trap cluster_stop EXIT
cluster_start "$work" "${BENCH_PORT:-5486}" "max_worker_processes = 48" \
	"max_connections = 100" "dlsm.reap_interval = 1" "dlsm.max_workers = 40" \
	"log_min_messages = warning"
cluster_psql -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION dblink" -c "CREATE EXTENSION dlsm" \
	-c "CREATE DATABASE pooltpl" >/dev/null
as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" "$PGBIN/psql" -X -q \
	-v ON_ERROR_STOP=1 -d pooltpl -c "CREATE EXTENSION dlsm" \
	-c "SET client_min_messages = warning" -c "SELECT dlsm_create_queue('hq')" \
	-c "CREATE FUNCTION h(entity text, kind text, ids bigint[], payloads jsonb[])
		RETURNS void LANGUAGE sql AS 'SELECT'" \
	-c "SELECT dlsm_set_handler('hq', 'h')" >/dev/null
for i in $(seq 1 "$ndb"); do
	cluster_psql -q -c "CREATE DATABASE pool$i TEMPLATE pooltpl" >/dev/null
done
cluster_psql -q -c "SELECT pg_sleep(3)" >/dev/null	# the workers find them

# side WORKERS: seconds until every request of every database is handled,
# and the longest last_pass_age seen meanwhile (ms)
side() {
	cluster_psql -q -c "ALTER SYSTEM SET dlsm.max_workers = $1" \
		-c "SELECT pg_reload_conf()" -c "SELECT pg_sleep(3)" >/dev/null
	cluster_psql -At -v ON_ERROR_STOP=1 <<SQL
DO \$\$
DECLARE
	t0 timestamptz;
	done_n bigint;
	wait_max interval := '0';
	w interval;
BEGIN
	PERFORM dblink_exec(format('dbname=pool%s host=$PGHOST port=$PGPORT', i),
		format('TRUNCATE hq; INSERT INTO hq (entity, kind) SELECT ''e'' || g, ''job'' FROM generate_series(1, %s) g', $nreq))
	  FROM generate_series(1, $ndb) i;
	t0 := clock_timestamp();
	LOOP
		SELECT sum(n) INTO done_n FROM generate_series(1, $ndb) i,
			LATERAL dblink(format('dbname=pool%s host=$PGHOST port=$PGPORT', i),
				'SELECT count(*) FROM hq WHERE status = ''complete''') AS t(n bigint);
		SELECT max(last_pass_age) INTO w FROM dlsm_worker_status WHERE database LIKE 'pool%';
		wait_max := greatest(wait_max, coalesce(w, '0'));
		EXIT WHEN done_n >= $ndb * $nreq OR clock_timestamp() - t0 > interval '10 minutes';
		PERFORM pg_sleep(0.2);
	END LOOP;
	RAISE NOTICE 'result % %', extract(epoch FROM clock_timestamp() - t0),
		extract(epoch FROM wait_max) * 1000;
END \$\$;
SQL
}

declare -A secs waits
for r in $(seq 1 "$rounds"); do
	order="40 3"; [ $((r % 2)) = 0 ] && order="3 40"
	for w in $order; do
		out=$(side "$w" 2>&1 | sed -n "s/.*NOTICE:  result //p")
		secs[$w]+="${out%% *} "; waits[$w]+="${out##* } "
		echo "round $r: $w workers: ${out%% *} s, longest wait for a pass ${out##* } ms"
	done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo
printf '%-24s %10s %12s %16s\n' workers seconds 'units/s' 'longest wait ms'
for w in 40 3; do
	s=$(echo "${secs[$w]}" | median); m=$(echo "${waits[$w]}" | tr ' ' '\n' | grep . | sort -n | tail -1)
	printf '%-24s %10.2f %12.0f %16.0f\n' "$([ "$w" = 40 ] && echo 'one per database' || echo '3, taking turns')" \
		"$s" "$(awk -v s="$s" -v n=$((ndb * nreq)) 'BEGIN { print (s > 0 ? n / s : 0) }')" "$m"
done
echo "($ndb databases, $nreq requests each, a handler that does nothing; median of $rounds rounds; wait: the most seen)"
