#!/usr/bin/env bash
# examples/demo.sh: dlsm at work on the article's spreadsheet requests.
#
#   sudo bash examples/demo.sh        (about a minute)
#
# A throwaway PostgreSQL 15 cluster with dlsm (in /tmp/dlsm-demo, port 5478,
# stopped at exit).  A front end enqueues "create" and repeated "update"
# requests for a few hundred spreadsheets; four back ends claim, work, settle
# and COMMIT through dlsm; one back end is killed halfway with a unit in hand.
# At the end it checks that no request was lost and prints PASS or FAIL
# (exit status 1 on FAIL).  The SQL side is in examples/demo.sql.
#
# As root it first runs test/setup.sh (installs PostgreSQL 15 and the build
# tools with apt, builds and installs dlsm; quick when already done).  As the
# postgres user it skips that and needs dlsm already installed.  Other users
# cannot run it: the cluster runs as postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=$(pwd -P)

DEMO_DIR=${DLSM_DEMO_DIR:-/tmp/dlsm-demo}
DEMO_PORT=${DLSM_DEMO_PORT:-5478}
SECONDS_RUN=24          # how long the front end produces
SHEETS=300              # spreadsheets created
RATE=1000               # requests a second from the front end
BACKENDS=4
VICTIM=back-end-2       # killed halfway
ERROR_RATE=0.01         # share of units whose (simulated) work fails

case "$(id -un)" in
root)
	bash test/setup.sh ;;
postgres)
	if [ ! -f /usr/share/postgresql/15/extension/dlsm.control ]; then
		echo "dlsm is not installed: run 'bash examples/demo.sh' as root once" >&2
		exit 1
	fi ;;
*)
	echo "run this as root (or as postgres once dlsm is installed)" >&2
	exit 1 ;;
esac

. "$TREE/test/lib/cluster.sh"
# PostgreSQL's programs run as postgres and complain when they cannot enter
# the current directory (a tree under /root): work from / from here on.
cd /

pids=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "${LIVE:-}" ] && [ -t 1 ]; then printf '\n'; fi
	cluster_stop               # ends the sessions of the psql clients below
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- formatting --------------------------------------------------------------
commas() {  # 1234567 -> 1,234,567
	local s=$1 r=
	while [ ${#s} -gt 3 ]; do r=",${s: -3}$r"; s=${s:0:${#s}-3}; done
	printf '%s%s' "$s" "$r"
}
plural() { if [ "$1" = 1 ]; then printf '%s %s' "$1" "$2"; else printf '%s %ss' "$1" "$2"; fi; }
now_ms() { date +%s%3N; }
q() { cluster_psql -At -F ' ' -c "$1"; }    # one query, fields space separated

if [ -t 1 ]; then TTY=1; else TTY=0; fi
COLS=$( { [ "$TTY" = 1 ] && tput cols 2>/dev/null; } || echo 100)
say() {  # a line of its own, above the progress line
	if [ "$TTY" = 1 ]; then printf '\r\033[K%s\n' "$*"; else printf '%s\n' "$*"; fi
}

# --- the cluster -------------------------------------------------------------
echo "dlsm demo: the article's spreadsheet service on a throwaway cluster"
cluster_start "$DEMO_DIR" "$DEMO_PORT"
cluster_psql <"$TREE/examples/demo.sql" >"$DEMO_DIR/schema.log"  # stdin: postgres may not read the tree
echo "  cluster in $DEMO_DIR (port $DEMO_PORT); queue spreadsheets.request_queue"

for i in $(seq 1 "$BACKENDS"); do
	name=back-end-$i
	cluster_psql -d "application_name=$name" \
		-c "CALL spreadsheets.back_end('$name', $ERROR_RATE)" \
		>"$DEMO_DIR/$name.log" 2>&1 &
	pids+=($!)
	eval "pid_$i=\$!"
done
# wait until every back end is connected and waiting for work
for _ in $(seq 100); do
	n=$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'back-end-%'")
	[ "$n" = "$BACKENDS" ] && break
	sleep 0.1
done
echo "  $BACKENDS back ends waiting in dlsm_claim(wait => '1 second')"

cluster_psql -d "application_name=front-end" \
	-c "CALL spreadsheets.front_end($SECONDS_RUN, $SHEETS, $RATE)" \
	>"$DEMO_DIR/front-end.log" 2>&1 &
producer=$!
pids+=("$producer")
echo "  front end: creates $SHEETS spreadsheets, users click update, ~$RATE req/s for ${SECONDS_RUN} s"
echo

# --- live progress -----------------------------------------------------------
# "in-progress" rows of a back end exist only inside its open transaction:
# others still read them as 'new'.  So the line counts what the back ends hold
# right now (their application_name says it) and takes it off 'new'.
progress_sql="
SELECT count(*) FILTER (WHERE status = 'new'),
       count(*) FILTER (WHERE status = 'in-progress'),
       count(*) FILTER (WHERE status = 'complete'),
       count(*) FILTER (WHERE status = 'error'),
       (SELECT count(*) FROM spreadsheets.work_log),
       (SELECT coalesce(sum(split_part(split_part(application_name, '+', 2), ' ', 1)::int), 0)
          FROM pg_stat_activity WHERE application_name LIKE 'back-end-% #%')
  FROM spreadsheets.request_queue"

start=$(now_ms)
hist_t=(); hist_s=()      # recent (time, settled) samples for the rate
tick=0
producing=1
killed=""
drain_deadline=""
result=""
LIVE=1                    # a progress line is on screen (for cleanup)
while :; do
	read -r n_new n_prog n_done n_err n_units n_held <<<"$(q "$progress_sql")"
	t=$(now_ms)
	settled=$((n_done + n_err))
	hist_t+=("$t"); hist_s+=("$settled")
	if [ ${#hist_t[@]} -gt 5 ]; then hist_t=("${hist_t[@]:1}"); hist_s=("${hist_s[@]:1}"); fi
	dt=$((t - hist_t[0]))
	rps=0; [ "$dt" -gt 0 ] && rps=$(( (settled - hist_s[0]) * 1000 / dt ))
	held=$((n_prog + n_held)); new=$((n_new - n_held)); [ "$new" -lt 0 ] && new=0

	# halfway: kill a back end that holds a unit
	if [ -z "$killed" ] && [ $((t - start)) -ge $((SECONDS_RUN * 500)) ]; then
		killed=$(q "SELECT spreadsheets.kill_mid_unit('$VICTIM')")
		if [ -n "$killed" ]; then
			# "pid|back-end-2 #4711+3 update sheet-0042"
			k_pid=${killed%%|*}; k_app=${killed#*|}
			read -r _ k_unit k_kind k_sheet <<<"$k_app"
			k_first=${k_unit#\#}; k_first=${k_first%%+*}; k_n=${k_unit#*+}
			say "  >> killed $VICTIM (pid $k_pid) mid-unit, holding $(plural "$k_n" "$k_kind") of $k_sheet"
		else
			killed=none
			say "  >> could not catch $VICTIM with a unit in hand"
		fi
	fi
	if [ -n "$producing" ] && ! kill -0 "$producer" 2>/dev/null; then
		producing=""
		drain_deadline=$((t + 60000))
		rc=0; wait "$producer" || rc=$?
		if [ "$rc" != 0 ]; then say "  front end failed:"; cat "$DEMO_DIR/front-end.log"; result=FAIL; break; fi
		say "  >> front end stopped; the back ends drain the queue"
	fi
	drained=""
	[ -z "$producing" ] && [ $((n_new + n_prog + n_held)) = 0 ] && drained=1

	# the line: 79 columns at most, so no thousands separators here
	line=$(printf '%3ss  new %s  in-progress %s  complete %s  error %s  %s req/s  %s' \
		"$(( (t - start) / 1000 ))" "$new" "$held" "$n_done" "$n_err" "$rps" "$(plural "$n_units" unit)")
	if [ "$TTY" = 1 ]; then
		printf '\r\033[K%s' "${line:0:$((COLS - 1))}"
	elif [ $((tick % 4)) = 0 ] || [ -n "$drained" ]; then
		printf '%s\n' "$line"
	fi
	tick=$((tick + 1))

	[ -n "$drained" ] && break
	if [ -z "$producing" ] && [ "$t" -gt "$drain_deadline" ]; then
		say "  queue did not drain within 60 s"; result=FAIL; break
	fi
	sleep 0.5
done
end=$(now_ms)
[ "$TTY" = 1 ] && printf '\n'
LIVE=""

# let the back ends finish their loop (or end them, when something failed)
q "UPDATE spreadsheets.stop SET stop = true" >/dev/null
if [ "$result" = FAIL ]; then
	q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'back-end-%'" >/dev/null
fi
for i in $(seq 1 "$BACKENDS"); do
	eval "p=\$pid_$i"
	rc=0; wait "$p" || rc=$?
	eval "rc_$i=$rc"
done

# --- summary -----------------------------------------------------------------
echo
echo "Summary"
ok() { printf '  ok    %s\n' "$*"; }
bad() { printf '  FAIL  %s\n' "$*"; result=FAIL; }

read -r p_creates p_updates <<<"$(q "SELECT creates, updates FROM spreadsheets.produced")" || true
read -r rows r_new r_prog r_done r_err <<<"$(q "
SELECT count(*), count(*) FILTER (WHERE status = 'new'),
       count(*) FILTER (WHERE status = 'in-progress'),
       count(*) FILTER (WHERE status = 'complete'),
       count(*) FILTER (WHERE status = 'error')
  FROM spreadsheets.request_queue")"
if [ -z "${p_creates:-}" ]; then
	bad "the front end did not report what it produced"; p_creates=0; p_updates=0
fi
produced=$((p_creates + p_updates))
secs=$(( (end - start) / 1000 )); [ "$secs" -gt 0 ] || secs=1

echo "  produced   $(commas "$produced") requests ($(commas "$p_creates") creates, $(commas "$p_updates") updates) in ${secs} s"
echo "  in queue   $(commas "$rows") rows: $(commas "$r_done") complete, $(commas "$r_err") error, $r_new new, $r_prog in-progress"
if [ "$produced" = "$rows" ]; then ok "every request produced is in the queue"; else bad "produced $produced, queue holds $rows"; fi
if [ $((r_new + r_prog)) = 0 ]; then ok "every request settled (none new or in-progress)"; else bad "$r_new new and $r_prog in-progress left"; fi

# Each unit in work_log settled exactly its rows, with its outcome; no row was
# settled by two units; rows settled without a unit are updates that dlsm
# failed because their spreadsheet's create had failed.
read -r mism dup cascaded stray <<<"$(q "
WITH q AS (SELECT process_id, status, count(*) AS n FROM spreadsheets.request_queue
            WHERE process_id IS NOT NULL GROUP BY 1, 2)
SELECT (SELECT count(*) FROM spreadsheets.work_log w FULL JOIN q USING (process_id)
         WHERE w.requests IS DISTINCT FROM q.n OR w.outcome IS DISTINCT FROM q.status),
       (SELECT count(*) - count(DISTINCT process_id) FROM spreadsheets.work_log),
       (SELECT count(*) FROM spreadsheets.request_queue WHERE process_id IS NULL
           AND status = 'error' AND detail LIKE 'create request % ended in error'),
       (SELECT count(*) FROM spreadsheets.request_queue WHERE process_id IS NULL
           AND NOT (status = 'error' AND detail LIKE 'create request % ended in error'))")"
if [ $((mism + dup + stray)) = 0 ]; then
	ok "each request settled exactly once, by the unit that claimed it"
else
	bad "$mism units disagree with the queue, $dup units logged twice, $stray rows settled by no unit"
fi

read -r u_updates u_units u_max c_units c_reqs e_units e_reqs <<<"$(q "
SELECT coalesce(sum(requests) FILTER (WHERE kind = 'update'), 0),
       count(*) FILTER (WHERE kind = 'update'),
       coalesce(max(requests) FILTER (WHERE kind = 'update'), 0),
       count(*) FILTER (WHERE kind = 'create'),
       coalesce(sum(requests) FILTER (WHERE kind = 'create'), 0),
       count(*) FILTER (WHERE outcome = 'error'),
       coalesce(sum(requests) FILTER (WHERE outcome = 'error'), 0)
  FROM spreadsheets.work_log")"
per=$(( u_units > 0 ? u_updates * 10 / u_units : 0 ))
echo
echo "  coalesced  $(commas "$u_updates") updates handled in $(commas "$u_units") units ($((per / 10)).$((per % 10)) per unit, up to $u_max)"
echo "  creates    $(commas "$c_reqs") in $(commas "$c_units") units"
echo "  errors     $(plural "$e_units" unit) ($(plural "$e_reqs" request)) failed by the simulated work;"
echo "             $(plural "$cascaded" update) failed by dlsm: their spreadsheet's create had failed"
echo "  rate       $(commas $(( (r_done + r_err) / secs ))) requests settled per second, $(commas $(( (c_units + u_units) / secs ))) units per second"
echo
echo "  back end     units  requests"
while read -r b units reqs; do
	printf '  %-10s %7s %9s\n' "$b" "$(commas "$units")" "$(commas "$reqs")"
done < <(q "SELECT backend, count(*), sum(requests) FROM spreadsheets.work_log GROUP BY 1 ORDER BY 1")

echo
vi=${VICTIM#back-end-}
eval "v_rc=\$rc_$vi"
if [ -n "$killed" ] && [ "$killed" != none ]; then
	read -r f_status f_by <<<"$(q "
SELECT r.status, coalesce(w.backend, '-')
  FROM spreadsheets.request_queue r
  LEFT JOIN spreadsheets.work_log w USING (process_id)
 WHERE r.id = $k_first")"
	v_msg=$(sed -n 's/^FATAL: *//p' "$DEMO_DIR/$VICTIM.log" | head -n1)
	echo "  $VICTIM was killed holding $(plural "$k_n" "$k_kind") of $k_sheet (from #$k_first):"
	echo "  \"${v_msg:-psql exit $v_rc}\""
	echo "  its transaction rolled back, the rows were 'new' again, and #$k_first was"
	echo "  then settled by $f_by: $f_status"
	if [ "$v_rc" != 0 ] && [ "$f_by" != "$VICTIM" ] && [ "$f_by" != - ] &&
	   { [ "$f_status" = complete ] || [ "$f_status" = error ]; }; then
		ok "the killed back end's unit was redone by another back end"
	else
		bad "the killed back end's unit was not redone by another back end"
	fi
else
	bad "no back end was killed halfway"
fi
for i in $(seq 1 "$BACKENDS"); do
	[ "back-end-$i" = "$VICTIM" ] && continue
	eval "rc=\$rc_$i"
	[ "$rc" = 0 ] || bad "back-end-$i exited with status $rc (see $DEMO_DIR/back-end-$i.log)"
done

echo
if [ "$result" = FAIL ]; then
	echo "FAIL"
	exit 1
fi
echo "PASS: $(commas "$produced") requests in, $(commas "$produced") settled, none lost"
