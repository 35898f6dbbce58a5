# test/lib/cluster.sh: a throwaway PostgreSQL 15 cluster with dlsm preloaded.
# Source it, then: cluster_start DIR PORT [conf lines...]; cluster_psql ...;
# cluster_stop.  Works as root (runs the server as postgres) or as postgres.

PGBIN=/usr/lib/postgresql/15/bin

as_postgres() {
	if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

# cluster_start DIR PORT [extra postgresql.conf lines...]
cluster_start() {
	CLUSTER_DIR=$1; CLUSTER_PORT=$2; shift 2
	rm -rf "$CLUSTER_DIR"
	mkdir -p "$CLUSTER_DIR"
	chown postgres: "$CLUSTER_DIR" 2>/dev/null || true
	as_postgres "$PGBIN/initdb" -D "$CLUSTER_DIR/data" -A trust -E UTF8 \
		--locale=C.UTF-8 >"$CLUSTER_DIR/initdb.log" 2>&1
	{
		echo "shared_preload_libraries = 'dlsm'"
		echo "port = $CLUSTER_PORT"
		echo "listen_addresses = ''"
		echo "unix_socket_directories = '$CLUSTER_DIR'"
		echo "max_connections = 100"
		echo "fsync = on"
		for line in "$@"; do echo "$line"; done
	} | as_postgres tee -a "$CLUSTER_DIR/data/postgresql.conf" >/dev/null
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

cluster_stop() {
	[ -n "${CLUSTER_DIR:-}" ] || return 0
	as_postgres "$PGBIN/pg_ctl" -D "$CLUSTER_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
}

# cluster_psql ARGS...: psql against the cluster, quiet, stop on error
cluster_psql() {
	as_postgres env PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres \
		"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"
}
