# bench/lib.sh: what the A/B scripts of bench/ share.  Source it after
# test/lib/cluster.sh, with $base (the scripts' work directory) and $major
# set.
#
# install_copy NAME REV: a relocated copy of the system's PostgreSQL $major
# in $base/NAME with dlsm built from the git revision REV ("." the working
# tree, without .git and build products), readable by the postgres user
install_copy() {
	local d=$base/$1 src=$base/src-$1
	rm -rf "$src"
	if [ "$2" = . ]; then tree_copy "$src"; else mkdir "$src"; git archive "$2" | tar -C "$src" -xf -; fi
	rm -rf "$d"; mkdir -p "$d/lib/postgresql" "$d/share/postgresql" "$d/include"
	cp -a "/usr/lib/postgresql/$major" "$d/lib/postgresql/"
	cp -a "/usr/share/postgresql/$major" "$d/share/postgresql/"
	cp -a /usr/include/postgresql "$d/include/"
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/$major/bin/pg_config" >/dev/null
	make -s -C "$src" PG_CONFIG="$d/lib/postgresql/$major/bin/pg_config" install >/dev/null
	chmod -R a+rX "$d"
}
