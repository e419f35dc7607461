#!/usr/bin/env bash
# `cmake --install` into a scratch DESTDIR gives the layout docs/install.md
# names (GNUInstallDirs), and the installed tools run from there with the
# build tree hidden (an empty tmpfs over it, in a private mount namespace):
# the simulator and the shim are found beside the installed binaries, a
# workload under the installed `gpuslice run` is capped, and the installed
# gpusliced starts on the simulated node and answers. No installed ELF's
# data names the build tree.
. "$(dirname "$0")/lib.sh" "$1"

ROOT=$WORK/root
DESTDIR=$ROOT cmake --install "$B" >"$WORK/install.log" 2>&1 ||
	fail "cmake --install failed: $(tail -5 "$WORK/install.log")"

U=$ROOT$PREFIX
for f in bin/gpuslice bin/gs-alloc sbin/gpusliced sbin/gpuslice-kubelet-plugin; do
	[ -x "$U/$f" ] || fail "no executable $U/$f"
done
shim=$(find "$U/lib"* -maxdepth 2 -name libgpuslice.so -type f | head -1)
[ -n "$shim" ] || fail "no libgpuslice.so in the library directory"
simlib=$(find "$U" -path '*/gpuslice/sim/libnvidia-ml.so.1' | head -1)
[ -n "$simlib" ] || fail "no simulator under <libdir>/gpuslice/sim"
conf=$(find "$ROOT" -path '*/etc/gpuslice/gpusliced.yaml' | head -1)
[ -n "$conf" ] || fail "no etc/gpuslice/gpusliced.yaml"
grep -q '^#' "$conf" || fail "$conf has no comments"
"$U/sbin/gpusliced" --config "$conf" --check-config >/dev/null ||
	fail "the installed gpusliced.yaml does not pass --check-config"
unit=$(find "$ROOT" -name gpusliced.service | head -1)
[ -n "$unit" ] || fail "no gpusliced.service"
grep -q "^ExecStart=$PREFIX/sbin/gpusliced --config $ETC/gpuslice/gpusliced.yaml\$" "$unit" ||
	fail "the unit does not start $PREFIX/sbin/gpusliced with $ETC/gpuslice/gpusliced.yaml: $(grep ExecStart= "$unit")"
if [ -f "$B/lib/spank_gpuslice.so" ]; then
	spank=$(find "$U/lib" -name spank_gpuslice.so | head -1)
	[ -n "$spank" ] || fail "no spank_gpuslice.so installed"
	[ -e "$(dirname "$spank")/libgpuslice.so" ] ||
		fail "no libgpuslice.so beside the SPANK plugin"
fi
no_build_paths "$ROOT"

# The run, as a script for the private mount namespace.
cat >"$WORK/run.sh" <<EOS
set -eu
export PATH=/usr/bin:/bin
U=$U
W=$WORK
EOS
cat >>"$WORK/run.sh" <<'EOS'
. "$W/funcs.sh"
[ -z "$(ls -A "$BUILD_HIDDEN" 2>/dev/null)" ] || fail "the build tree is still visible"
export GPUSLICE_SIM_DIR=$W/sim GPUSLICE_SOCKET=$W/d/api.sock
"$U/bin/gpuslice" sim init --gpus 1xH100-SXM5-80GB --dir "$W/sim" >/dev/null
env_out=$("$U/bin/gpuslice" sim env --dir "$W/sim")
case $env_out in *"$U/"*) ;; *) fail "sim env does not point into the installed tree: $env_out" ;; esac
eval "$env_out"
capped_alloc "$U/bin/gpuslice" "$U/bin/gs-alloc"
mkdir -p "$W/d"
"$U/sbin/gpusliced" --gpus sim --state-dir "$W/d" --socket "$W/d/api.sock" >"$W/daemon.log" 2>&1 &
pid=$!
wait_until 10 healthy "$W/d/api.sock" || fail "the installed gpusliced did not answer"
grep -q "via $U/lib.*/gpuslice/sim/libnvidia-ml.so.1" "$W/daemon.log" ||
	fail "gpusliced did not take the installed simulator: $(head -3 "$W/daemon.log")"
"$U/bin/gpuslice" list >/dev/null || fail "gpuslice list against the installed daemon failed"
kill -TERM $pid
wait $pid || fail "gpusliced exited $? on SIGTERM"
echo inner-ok
EOS
{
	declare -f fail wait_until healthy capped_alloc
} >"$WORK/funcs.sh"

if unshare -m true 2>/dev/null; then
	out=$(unshare -m bash -c "mount -t tmpfs none '$B' && BUILD_HIDDEN='$B' bash '$WORK/run.sh'" 2>&1) ||
		fail "$out"
else
	echo "note: no mount namespace here; running with the build tree visible (no_build_paths still checked)"
	out=$(BUILD_HIDDEN=$WORK/empty bash "$WORK/run.sh" 2>&1) || fail "$out"
fi
case $out in *inner-ok*) ;; *) fail "the installed run did not finish: $out" ;; esac
echo "ok"
