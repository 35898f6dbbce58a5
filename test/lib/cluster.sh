# test/lib/cluster.sh: a throwaway PostgreSQL 15 cluster with dlsm preloaded.
# Source it, then: cluster_start DIR PORT [conf lines...]; cluster_psql ...;
# cluster_stop.  Works as root (runs the server as postgres) or as postgres.

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

as_postgres() {
	if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

# give_to_postgres PATH...: let the postgres OS user write PATH (as root;
# running as postgres, it is postgres's already)
give_to_postgres() {
	if [ "$(id -u)" = 0 ]; then chown -R postgres: "$@"; fi
}

# tree_copy DEST: copy the source tree (the current directory) to DEST, a
# new directory, without .git and what builds and test runs leave there.
# For runs that need the tree where the postgres OS user can read and write
# it: a clone under /root (mode 700) is out of its reach, and a user's clone
# should not change owner.  Follow with give_to_postgres DEST.
tree_copy() {
	mkdir "$1" || return 1
	tar -cf - --exclude=.git --exclude=./bench/peers/node_modules \
		--exclude=./bench/out --exclude=./test/stress/out --exclude=log \
		--exclude=tmp_check --exclude=tmp_check_iso --exclude=results \
		--exclude=output_iso --exclude=regression.diffs \
		--exclude=regression.out --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' . | tar -C "$1" -xf -
}

# cluster_init DIR PORT [extra postgresql.conf lines...]: a new cluster in
# DIR/data with dlsm preloaded, listening on a socket in DIR only, not
# started.  Sets CLUSTER_DIR and CLUSTER_PORT.  Other files in DIR stay.
cluster_init() {
	CLUSTER_DIR=$1; CLUSTER_PORT=$2; shift 2
	mkdir -p "$CLUSTER_DIR"
	rm -rf "$CLUSTER_DIR/data"
	give_to_postgres "$CLUSTER_DIR"
	if ! as_postgres "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -A trust -E UTF8 \
		--locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log" 2>&1; then
		cat "$CLUSTER_DIR/initdb.log"
		return 1
	fi
	{
		echo "shared_preload_libraries = 'dlsm'"
		echo "port = $CLUSTER_PORT"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$CLUSTER_DIR'"
		echo "max_connections = 100"
		echo "fsync = on"
		for line in "$@"; do echo "$line"; done
	} | as_postgres tee -a "$CLUSTER_DIR/data/postgresql.conf" >/dev/null
}

# cluster_start DIR PORT [extra postgresql.conf lines...]: cluster_init in
# an emptied DIR, then start it and point PG* at it
cluster_start() {
	rm -rf "$1"
	cluster_init "$@" || return 1
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
		-w -t 60 start >/dev/null
	export PGHOST=$CLUSTER_DIR PGPORT=$CLUSTER_PORT PGUSER=postgres PGDATABASE=postgres
}

# cluster_restart [mode]: stop (default: immediate, a crash) and start again
cluster_restart() {
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m "${1:-immediate}" -w stop >/dev/null
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -l "$CLUSTER_DIR/server.log" \
		-w -t 60 start >/dev/null
}

# cluster_stop [seconds]: a fast stop of the cluster, if it runs; waits up
# to seconds (60) for it
cluster_stop() {
	[ -n "${CLUSTER_DIR:-}" ] || return 0
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" status >/dev/null 2>&1 || return 0
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w -t "${1:-60}" stop >/dev/null
}

# cluster_psql ARGS...: psql against the cluster, quiet, stop on error
cluster_psql() {
	as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"
}
