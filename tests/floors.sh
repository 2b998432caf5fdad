#!/bin/bash
# floe's floors: which module may include which header. A module is a .c
# and its .h (proxy/admin.c and proxy/admin.h are proxy/admin). A module
# may include the headers of its own floor and of the floors below it,
# never of a floor above; and no modules include each other, directly or
# around a longer loop. A lower module that must tell a higher one
# something takes a callback from it (server.h, upstream.h, worker.h,
# discover.h, stats.h own theirs).
#
#   tests/floors.sh [ROOT]   check the tree at ROOT (default: this one)
#
# `make lint` runs it. Each breach is printed as FILE:LINE: ...; the exit
# status is 0 when there is none, 1 otherwise.
set -u
set -f # the floors' patterns are matched by hand, never expanded
cd "${1:-$(dirname "$0")/..}" || exit 2

# A module may be split over several files named after it: X_PART.c and
# X_impl.h (routing/store_read.c, proxy/etcd_impl.h) belong to module X
# when X.c or X.h exists, and may include each other freely.
module_of() {
	local m=${1%.*} base
	case ${m##*/} in
	*_*)
		base=${m%%_*}
		base=${m%/*}/${base##*/}
		if [ -f "$base.c" ] || [ -f "$base.h" ]; then
			m=$base
		fi
		;;
	esac
	echo "$m"
}

# The floors, top to bottom: the only place they are declared. A name,
# then the modules on it as shell patterns over paths without .c/.h; a
# module is on the first floor with a pattern that matches it.
FLOORS=(
	"main:   proxy/main ctl/*"
	"front:  proxy/admin* proxy/request* proxy/obs*"
	"watch:  proxy/watch* proxy/discover*"
	"daemon: proxy/stats* proxy/server* proxy/upstream* proxy/fetch*
	         proxy/floe proxy/worker* proxy/conf* proxy/catalog*
	         proxy/h1* proxy/sockio* proxy/tlsctx* proxy/rest*
	         proxy/etag* proxy/listing* proxy/etcd* proxy/cluster*
	         proxy/token* proxy/cred*"
	"core:   routing/* policy/* cache/*"
	"lib:    lib/*"
)
DIRS=(lib routing policy cache proxy ctl)

bad=0
declare -A FLOOR=() # module -> floor index

# The floor of module $1 (its index in FLOORS), or nothing.
floor_of() {
	local i pat
	for i in "${!FLOORS[@]}"; do
		for pat in ${FLOORS[$i]#*:}; do
			[[ $1 == $pat ]] && { echo "$i"; return; }
		done
	done
}

# The name of floor $1.
floor_name() { echo "${FLOORS[$1]%%:*}"; }

files=$(find "${DIRS[@]}" -name '*.[ch]' 2>/dev/null | sort)
for f in $files; do
	m=$(module_of "$f")
	[ -n "${FLOOR[$m]:-}" ] && continue
	FLOOR[$m]=$(floor_of "$m")
	if [ -z "${FLOOR[$m]}" ]; then
		echo "$f: $m is on no floor: add it to FLOORS in tests/floors.sh"
		bad=1
		FLOOR[$m]=-1
	fi
done

# Every include of one of floe's headers: "FILE LINE TARGET".
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for f in $files; do
	awk -v f="$f" '/^#[ \t]*include[ \t]*"/ {
		t = $0; sub(/^[^"]*"/, "", t); sub(/".*/, "", t)
		print f, FNR, t }' "$f"
done | while read -r f line t; do
	m=$(module_of "$f")
	tm=$(module_of "$t")
	case " ${DIRS[*]} " in *" ${t%%/*} "*) ;; *) continue ;; esac
	[ "$tm" = "$m" ] && continue
	fl=${FLOOR[$m]}
	tfl=${FLOOR[$tm]:-}
	[ -z "$tfl" ] && continue # not a header of this tree
	if [ "$fl" -ge 0 ] && [ "$tfl" -ge 0 ] && [ "$tfl" -lt "$fl" ]; then
		echo "$f:$line: includes $t, a floor up:" \
			"$m is on $(floor_name "$fl"), $tm on $(floor_name "$tfl")"
		echo BAD
	fi
	echo "EDGE $m $tm $f:$line"
done >"$edges"
grep -v '^EDGE \|^BAD$' "$edges"
grep -q '^BAD$' "$edges" && bad=1

# Loops: a depth-first walk; a module met again on the path closes one.
grep '^EDGE ' "$edges" | awk '
	{
		if (!(($2, $3) in at)) {
			adj[$2] = adj[$2] " " $3
			at[$2, $3] = $4
		}
		if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
	}
	function visit(u,   vs, i, k, v, nv, loop) {
		color[u] = 1
		path[++depth] = u
		nv = split(adj[u], vs, " ")
		for (i = 1; i <= nv; i++) {
			v = vs[i]
			if (color[v] == 1) {
				for (k = depth; path[k] != v; k--)
					;
				loop = ""
				for (; k <= depth; k++)
					loop = loop path[k] " -> "
				print "loop: " loop v
				for (k = depth; path[k] != v; k--)
					;
				for (; k < depth; k++)
					print "  " at[path[k], path[k + 1]] \
					    ": " path[k] " includes " path[k + 1]
				print "  " at[u, v] ": " u " includes " v
				found = 1
			} else if (color[v] == 0)
				visit(v)
		}
		depth--
		color[u] = 2
	}
	END {
		for (i = 1; i <= n; i++)
			if (color[order[i]] == 0)
				visit(order[i])
		exit found
	}' || bad=1

if [ "$bad" = 0 ]; then
	echo "floors ok: ${#FLOOR[@]} modules on ${#FLOORS[@]} floors," \
		"no include goes up, no loop"
fi
exit $bad
