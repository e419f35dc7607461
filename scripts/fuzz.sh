#!/usr/bin/env bash
# Builds gpuslice's libFuzzer targets with clang-14
# (-fsanitize=fuzzer,address,undefined) and runs each for a bounded time.
#
#   scripts/fuzz.sh [-t SECONDS] [-o OUTDIR] [TARGET...]
#
#   -t SECONDS  time per target (default 60; the ctest run uses 10)
#   -o OUTDIR   where binaries, the working corpus and crashes go
#               (default build/fuzz); the seed corpus in
#               tests/fuzz/corpus/<target>/ is copied there, never written
#   TARGET      run only these (default: every target in TARGETS below)
#
# Exit status: 0 all clean, 1 a target crashed or failed to build (the
# crashing input is left in OUTDIR/<target>/crashes/), 2 usage, 77 clang or
# libFuzzer is not installed (ctest counts that as skipped).
#
# To add a target: write tests/fuzz/<name>.c with LLVMFuzzerTestOneInput,
# give it seeds in tests/fuzz/corpus/<name>/, and add one line to TARGETS:
# "name|extra sources (space-separated, from the repo root)|extra libs".
# Every target links all of core/ (but its json/ and yaml/ readers, named
# per target), the generated catalog and common/.
set -euo pipefail

# region/'s files, for targets that link the region (fuzz_api, fuzz_region_*).
REGION_SRC=$(cd "$(dirname "$0")/.." && echo region/*.c)
# gpusliced's files but its main (fuzz_api), found as the build finds them.
DAEMON_SRC=$(cd "$(dirname "$0")/.." &&
	ls daemon/*.c daemon/api/*.c | grep -v '^daemon/main\.c$' | tr '\n' ' ')

TARGETS=(
	"fuzz_spec|core/json/spec_json.c|-ljansson"
	"fuzz_migparted|core/yaml/migparted.c core/yaml/yamldoc.c|-lyaml"
	"fuzz_trace_csv|bench/trace_csv.c bench/trace_cluster.c bench/trace_policy.c bench/trace_replay.c bench/trace_variant.c bench/policy_bestfit.c bench/policy_clustering.c bench/policy_dotprod.c bench/policy_fgd.c bench/policy_gpuslice.c bench/policy_packing.c bench/policy_random.c|"
	"fuzz_import_device_plugin|core/yaml/yamldoc.c|-lyaml"
	"fuzz_import_dra|core/yaml/yamldoc.c|-lyaml"
	"fuzz_api|core/json/spec_json.c core/yaml/yamldoc.c $DAEMON_SRC $REGION_SRC|-ljansson -lsqlite3 -lmicrohttpd -lyaml -ldl -lpthread"
	"fuzz_region_owner|$REGION_SRC|-ldl -lpthread"
	"fuzz_region_books|$REGION_SRC|-ldl -lpthread"
	"fuzz_region_usage|$REGION_SRC|-ldl -lpthread"
)

root=$(cd "$(dirname "$0")/.." && pwd)
secs=60
out="$root/build/fuzz"
while getopts "t:o:h" opt; do
	case $opt in
	t) secs=$OPTARG ;;
	o) out=$OPTARG ;;
	h) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
case $secs in '' | *[!0-9]*) echo "fuzz: -t needs whole seconds" >&2; exit 2 ;; esac

cc=${FUZZ_CC:-clang-14}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "fuzz: $cc not found (install clang-14 and libclang-rt-14-dev)" >&2
	exit 77
fi
if ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
	"$cc" -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
	echo "fuzz: $cc cannot link libFuzzer (install libclang-rt-14-dev)" >&2
	exit 77
fi

mkdir -p "$out/obj"
gen="$out/catalog_data.c"
python3 "$root/core/gen_catalog.py" "$root/data/mig-profiles.json" "$gen"
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
# daemon/: daemon/api/ includes the daemon's headers by name, as its CMake
# target does.
cflags=(-g -O1 -std=gnu11 -D_GNU_SOURCE "${san[@]}" -I"$root/include"
	-I"$root/core" -I"$root/daemon" -I"$out")
# common/paths.c reads where an install puts files from a header CMake
# generates; the fuzzers never look there, so the defaults do.
cat >"$out/gs_install_dirs.h" <<'EOH'
/* Written by scripts/fuzz.sh: install dirs for common/paths.c (unused by
 * the fuzz targets). */
#define GS_INSTALL_BINDIR "bin"
#define GS_INSTALL_SBINDIR "sbin"
#define GS_INSTALL_LIBDIR "lib"
#define GS_INSTALL_FULL_LIBDIR "/usr/local/lib"
#define GS_INSTALL_FULL_SYSCONFDIR "/usr/local/etc"
EOH

# The shared part (core, the generated catalog, common) is compiled once,
# instrumented for the fuzzer but without its main.
echo "fuzz: building core" >&2
objs=()
for f in "$root"/core/*.c "$root"/core/place/*.c "$root"/core/frag/*.c \
	"$root"/core/swap/*.c \
	"$gen" "$root"/common/*.c; do
	rel=${f#"$root"/}
	o="$out/obj/$(echo "${rel%.c}" | tr / _).o"
	if ! "$cc" "${cflags[@]}" -fsanitize=fuzzer-no-link -c "$f" -o "$o" \
		2>>"$out/obj/build.log"; then
		echo "fuzz: $f failed to build (see $out/obj/build.log)" >&2
		tail -n 20 "$out/obj/build.log" >&2
		exit 1
	fi
	objs+=("$o")
done

want=("$@")
selected() {
	[ ${#want[@]} -eq 0 ] && return 0
	local w
	for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}

status=0
ran=0
for t in "${TARGETS[@]}"; do
	IFS='|' read -r name extra libs <<<"$t"
	selected "$name" || continue
	ran=$((ran + 1))
	src=("$root/tests/fuzz/$name.c")
	for e in $extra; do src+=("$root/$e"); done
	dir="$out/$name"
	mkdir -p "$dir/corpus" "$dir/crashes"
	echo "fuzz: building $name" >&2
	# shellcheck disable=SC2086
	if ! "$cc" "${cflags[@]}" -fsanitize=fuzzer "${src[@]}" "${objs[@]}" \
		$libs -lm -o "$dir/$name" 2>"$dir/build.log"; then
		echo "fuzz: $name failed to build (see $dir/build.log)" >&2
		tail -n 20 "$dir/build.log" >&2
		status=1
		continue
	fi
	if [ -d "$root/tests/fuzz/corpus/$name" ]; then
		cp -n "$root/tests/fuzz/corpus/$name"/* "$dir/corpus/" 2>/dev/null || true
	fi
	echo "fuzz: running $name for ${secs}s" >&2
	if ! "$dir/$name" -max_total_time="$secs" -max_len=8192 -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$dir/crashes/" \
		-print_final_stats=1 "$dir/corpus" >"$dir/run.log" 2>&1; then
		echo "fuzz: $name FAILED (input in $dir/crashes/, log $dir/run.log)" >&2
		grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$dir/run.log" >&2 || tail -n 30 "$dir/run.log" >&2
		status=1
		continue
	fi
	runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$dir/run.log" | grep -Eo '[0-9]+$' || echo "?")
	echo "fuzz: $name clean ($runs inputs)" >&2
done
if [ "$ran" -eq 0 ]; then
	echo "fuzz: no target named ${want[*]}" >&2
	exit 2
fi
exit $status
