#!/usr/bin/env bash
# bench/metrics_cost.sh: the cost of each query of
# examples/monitoring/dlsm-queries.yaml on a queue with 1,000,000 settled
# rows (2% of them error), 1,000 new and 100 in progress, vacuumed and
# analyzed, in a throwaway cluster.  For each query: the median of 5
# EXPLAIN ANALYZE times, and the plans of the statements it runs
# inside (query_to_xml), from auto_explain, with a check that none reads
# the queue table by a sequential scan.  (Times are EXPLAIN ANALYZE's
# planning plus execution time; the statements inside are planned during
# execution.)  dlsm_queue_stats, which counts
# the whole table, is timed alongside for comparison.
#
# Prints TAP lines, a table, and "N passed, N failed".  Run as root (the
# server runs as postgres) or as postgres, with dlsm installed.
# METRICS_ROWS (default 1000000), METRICS_PORT (default 5497).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=../test/lib/cluster.sh
. "$TOP/test/lib/cluster.sh"
ROWS=${METRICS_ROWS:-1000000}
PORT=${METRICS_PORT:-5497}
YAML=$TOP/examples/monitoring/dlsm-queries.yaml
DIR=$(mktemp -d /tmp/dlsm-metrics-cost.XXXXXX)
chmod 755 "$DIR"
n=0 passed=0 failed=0
tap() { n=$((n + 1)); if [ "$1" = ok ]; then passed=$((passed + 1)); echo "ok $n - $2"; else failed=$((failed + 1)); echo "not ok $n - $2"; fi; }
finish() { cluster_stop; rm -rf "$DIR"; echo "1..$n"; echo "$passed passed, $failed failed"; }
trap finish EXIT
cd /

cluster_start "$DIR/pg" "$PORT" "dlsm.reap_interval = '1h'" >/dev/null || { tap notok "cluster starts"; exit 1; }
start=$SECONDS
cluster_psql <<SQL >/dev/null
CREATE EXTENSION dlsm;
SELECT dlsm_create_queue('big');
INSERT INTO big (status, entity, kind, process_id, fence, attempts, enqueued_at, run_at,
                 claimed_at, settled_at, detail)
SELECT CASE WHEN g % 50 = 0 THEN 'error' ELSE 'complete' END, 'e' || g, 'create',
       gen_random_uuid(), g, 1 + (g % 97 = 0)::int,
       now() - interval '1 day', now() - interval '1 day',
       now() - interval '1 day', now() - interval '1 day', NULL
  FROM generate_series(1, $ROWS) g;
INSERT INTO big (entity) SELECT 'n' || g FROM generate_series(1, 1100) g;
SELECT count(*) FROM dlsm_claim('big', lease => '1 hour', units => 100);
VACUUM ANALYZE big;
SQL
tap ok "a queue with $ROWS settled rows, 1,000 new and 100 in progress ($((SECONDS - start)) s to fill)"
cluster_psql -Atc "SELECT status, count(*) FROM big GROUP BY 1 ORDER BY 1" | sed 's/^/# big: /'

queries=$(perl -MCPAN::Meta::YAML -e 'local $/; open my $f, "<", shift or die;
	my $y = CPAN::Meta::YAML->read_string(<$f>)->[0]; print join(" ", sort keys %$y)' "$YAML")
table="| query | planning + execution, median of 5 (ms) | statements inside on the queue: scans |"$'\n'"|---|---|---|"
for q in $queries; do
	sql=$(perl -MCPAN::Meta::YAML -e 'local $/; open my $f, "<", shift or die;
		print CPAN::Meta::YAML->read_string(<$f>)->[0]{shift()}{query}' "$YAML" "$q")
	times=()
	for i in 1 2 3 4 5; do
		t=$(printf 'EXPLAIN (ANALYZE, TIMING ON) %s' "$sql" | cluster_psql -At |
			sed -n 's/^\(Planning\|Execution\) Time: \([0-9.]*\) ms/\2/p' |
			awk '{ s += $1 } END { printf "%.2f", s }')
		times+=("$t")
	done
	median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 3p)
	plans=$( { echo "LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0;"
		echo "SET auto_explain.log_analyze = on; SET auto_explain.log_nested_statements = on;"
		echo "SET auto_explain.log_level = notice; SET client_min_messages = notice;"
		printf '%s;\n' "$sql"; } | cluster_psql 2>&1 >/dev/null)
	scans=$(grep -oE '(Seq Scan|Index Only Scan using [a-z_]+|Index Scan using [a-z_]+|Bitmap Index Scan on [a-z_]+) on big|Seq Scan on big|Bitmap Index Scan on big_[a-z]+' <<<"$plans" |
		sed 's/ on big$//' | sort | uniq -c | awk '{ c=$1; $1=""; printf "%s%s x%d", (n++ ? ", " : ""), substr($0, 2), c }')
	echo "# $q: ${times[*]} ms; on big: ${scans:-no scan}"
	table+=$'\n'"| $q | $median | ${scans:-none} |"
	if grep -q 'Seq Scan on big' <<<"$plans"; then
		tap notok "$q reads big with no sequential scan"
		grep -B2 -A6 'Seq Scan on big' <<<"$plans" | sed 's/^/#   /'
	else
		tap ok "$q reads big with no sequential scan (median $median ms)"
	fi
done
times=()
for i in 1 2 3; do
	times+=("$(cluster_psql -At -c 'EXPLAIN (ANALYZE) SELECT * FROM dlsm_queue_stats' |
		sed -n 's/^Execution Time: \([0-9.]*\) ms/\1/p')")
done
median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 2p)
table+=$'\n'"| (for comparison) SELECT * FROM dlsm_queue_stats | $median | a sequential scan of the whole table |"
echo "# dlsm_queue_stats: ${times[*]} ms"
echo "$table"
