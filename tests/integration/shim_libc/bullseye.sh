# bullseye.sh - the Debian bullseye (glibc 2.31) fixture of the shim_libc
# tests, sourced after tests/integration/shim/lib.sh (which sets B, WORK,
# fail). Two things, each built once and cached outside the clone:
#
#   bullseye_root   ~/.cache/gpuslice/bullseye-<key>/root: bullseye's libc6,
#                   libc6-dev, libgcc-s1 and the zstd/lz4 libraries the sim
#                   links, unpacked by mmdebstrap --variant=extract (no
#                   package scripts run, no root needed where user
#                   namespaces work). <key> hashes the suite, the package
#                   list and this file's layout version. Sets ROOT, LDSO
#                   (the root's own ld.so, run as a program) and LIBPATH.
#                   Exits 77 (skipped) with the reason when mmdebstrap is
#                   missing or the archive cannot be reached.
#   bullseye_build  the workload kit's gs-alloc and the sim's libcuda.so.1
#                   compiled against that root's headers and linked against
#                   its glibc (this machine's gcc, the root as sysroot),
#                   from the source lists CMake wrote
#                   (build/tests/shim_libc/*.units); cached beside the root
#                   under build-<hash of those sources and headers>, the
#                   older builds removed. Sets BBIN.
#
# GS_DEBIAN_MIRROR overrides the archive (default: deb.debian.org, then
# archive.debian.org, where bullseye goes once its LTS ends).

BULLSEYE_PKGS=libc6,libc6-dev,libgcc-s1,libzstd1,libzstd-dev,liblz4-1,liblz4-dev
BULLSEYE_LAYOUT=1

bullseye_root() {
	local key cache tmp m ok=false
	key=$(printf '%s\n' bullseye "$BULLSEYE_PKGS" "$BULLSEYE_LAYOUT" |
		sha256sum | cut -c1-12)
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpuslice/bullseye-$key
	ROOT=$cache/root
	if [ ! -e "$ROOT/.complete" ]; then
		command -v mmdebstrap >/dev/null ||
			{ echo "SKIP: mmdebstrap is not installed (scripts/deps.sh installs it)"; exit 77; }
		mkdir -p "$(dirname "$cache")"
		tmp=$(mktemp -d "$cache.tmp.XXXXXX")
		for m in ${GS_DEBIAN_MIRROR:-http://deb.debian.org/debian http://archive.debian.org/debian}; do
			if mmdebstrap --variant=extract --include="$BULLSEYE_PKGS" \
				bullseye "$tmp/root" "$m" >"$tmp/log" 2>&1; then
				ok=true
				break
			fi
			rm -rf "$tmp/root"
		done
		if ! $ok; then
			echo "SKIP: cannot bootstrap Debian bullseye with mmdebstrap (no network or archive?): $(tail -n 2 "$tmp/log" | tr '\n' ' ')"
			rm -rf "$tmp"
			exit 77
		fi
		# Absolute links (/lib64/ld-linux-x86-64.so.2 ->
		# /lib/x86_64-linux-gnu/ld-2.31.so) would point into this
		# machine's root: make them relative, inside the root.
		find "$tmp/root/lib" "$tmp/root/lib64" "$tmp/root/usr" -type l -lname '/*' |
			while read -r l; do
				ln -sfn "$(realpath -m --relative-to="$(dirname "$l")" \
					"$tmp/root$(readlink "$l")")" "$l"
			done
		touch "$tmp/root/.complete"
		# Another run may have finished first: keep whichever is there.
		mv -T "$tmp" "$cache" 2>/dev/null || rm -rf "$tmp"
	fi
	LDSO=$(realpath "$ROOT/lib64/ld-linux-x86-64.so.2")
	LIBPATH=$ROOT/lib/x86_64-linux-gnu:$ROOT/usr/lib/x86_64-linux-gnu
	[ -x "$LDSO" ] || fail "no loader at $LDSO in the bullseye root"
}

# The compile and link flags that make this machine's gcc build for ROOT:
# its headers only (and gcc's own), its crt files and libraries first.
bullseye_cc() {
	gcc -nostdinc -isystem "$(gcc -print-file-name=include)" \
		-isystem "$ROOT/usr/include/x86_64-linux-gnu" \
		-isystem "$ROOT/usr/include" -std=gnu11 -D_GNU_SOURCE -O1 -g0 -w "$@"
}
bullseye_ld() {
	gcc --sysroot="$ROOT" -B"$ROOT/usr/lib/x86_64-linux-gnu/" \
		-L"$ROOT/usr/lib/x86_64-linux-gnu" -L"$ROOT/lib/x86_64-linux-gnu" "$@"
}

# compile_units UNITS OUTDIR [-fPIC]: one object per line of UNITS.
compile_units() {
	local units=$1 out=$2 pic=${3:-} i=0 src flags
	mkdir -p "$out"
	while read -r src flags; do
		i=$((i + 1))
		# shellcheck disable=SC2086 # the flags are words
		bullseye_cc $pic $flags -c "$src" -o "$out/$i.o" ||
			{ echo "FAIL: cannot compile $src for bullseye" >&2; return 1; }
	done <"$units"
}

bullseye_build() {
	local lists=$B/tests/shim_libc hash dir tmp old
	[ -e "$lists/alloc.units" ] && [ -e "$lists/sim.units" ] ||
		fail "no source lists in $lists (reconfigure the build)"
	hash=$( {
		cat "$lists/alloc.units" "$lists/sim.units" "$B/sim/cuda/cuda.map"
		cut -d' ' -f1 "$lists/alloc.units" "$lists/sim.units" | xargs cat
		tr ' ' '\n' <"$lists/sim.units" | sed -n 's/^-I//p' | sort -u |
			while read -r d; do cat "$d"/*.h "$d"/*/*.h 2>/dev/null; done
		tr ' ' '\n' <"$lists/alloc.units" | sed -n 's/^-I//p' | sort -u |
			while read -r d; do cat "$d"/*.h 2>/dev/null; done
	} | sha256sum | cut -c1-16)
	dir=$(dirname "$ROOT")/build-$hash
	BBIN=$dir
	[ -e "$dir/.complete" ] && return 0
	tmp=$(mktemp -d "$dir.tmp.XXXXXX")
	compile_units "$lists/sim.units" "$tmp/sim" -fPIC || fail "sim for bullseye"
	bullseye_ld -shared -o "$tmp/libcuda.so.1" "$tmp"/sim/*.o \
		-Wl,-soname,libcuda.so.1 -Wl,--version-script="$B/sim/cuda/cuda.map" \
		-lzstd -llz4 -lm -lpthread -ldl ||
		fail "cannot link the sim's libcuda.so.1 against bullseye's glibc"
	compile_units "$lists/alloc.units" "$tmp/alloc" || fail "gs-alloc for bullseye"
	bullseye_ld -o "$tmp/gs-alloc" "$tmp"/alloc/*.o -lm -lpthread -ldl ||
		fail "cannot link gs-alloc against bullseye's glibc"
	rm -rf "$tmp/sim" "$tmp/alloc"
	touch "$tmp/.complete"
	for old in "$(dirname "$ROOT")"/build-*; do
		[ "$old" = "$tmp" ] || rm -rf "$old"
	done
	mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
}
