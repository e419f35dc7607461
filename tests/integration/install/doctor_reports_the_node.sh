#!/usr/bin/env bash
# `gpuslice doctor` on the simulated node reports the sim (source "sim",
# the nvml line says SIMULATED) and prints every check with a status:
# nvml, gpus, persistence, mig, mps, shim, daemon, kubernetes, slurm; the
# daemon check turns ok once gpusliced answers. --program judges where
# the shim loads, against binutils' readelf as the reference: a glibc
# program (its newest GLIBC_x.y), a static one (fail: LD_PRELOAD cannot
# reach it), a musl one (fail unless a musl shim is installed), an image
# root whose glibc is older than the shim needs (fail) or new enough (ok).
. "$(dirname "$0")/lib.sh" "$1"

[ -e "$B/sim/libnvidia-ml.so.1" ] || skip "this build has no simulator"
G=$B/bin/gpuslice
export GPUSLICE_SIM_DIR=$WORK/sim GPUSLICE_SOCKET=$WORK/run/api.sock
"$G" sim init --gpus 2xA100-SXM4-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"

newest() { # FILE: the newest GLIBC_x.y it names in its version sections
	readelf -V --wide "$1" | grep -o 'GLIBC_[0-9]*\.[0-9]*' | sort -uV | tail -1
}
status_of() { # JSON NAME
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print([c for c in d["checks"] if c["name"] == sys.argv[2]][0]["status"])' "$1" "$2"
}

js=$("$G" doctor --json) || true
python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["source"] == "sim", d["source"]
names = [c["name"] for c in d["checks"]]
for want in ["nvml", "gpus", "persistence", "mig", "mps", "shim", "daemon", "kubernetes", "slurm"]:
    assert want in names, (want, names)
for c in d["checks"]:
    assert c["status"] in ("ok", "warn", "fail", "skip", "info"), c
    assert c["detail"], c
nv = [c for c in d["checks"] if c["name"] == "nvml"][0]
assert "SIMULATED" in nv["detail"], nv
g = [c for c in d["checks"] if c["name"] == "gpus"][0]
assert g["detail"].count("A100") == 2, g
' "$js" || fail "doctor --json on the sim: $js"
[ "$(status_of "$js" daemon)" = warn ] || fail "daemon is not 'warn' with no gpusliced"
text=$("$G" doctor) || true
echo "$text" | grep -q '^gpuslice doctor: SIMULATED node' || fail "text report: $text"
for n in nvml gpus persistence mig mps shim daemon kubernetes slurm; do
	echo "$text" | grep -Eq "^  (ok|warn|fail|skip|info) +$n " || fail "no '$n' line: $text"
done

mkdir -p "$WORK/run"
"$B/bin/gpusliced" --gpus sim --state-dir "$WORK/state" --socket "$GPUSLICE_SOCKET" >"$WORK/daemon.log" 2>&1 &
PIDS+=($!)
wait_until 10 healthy "$GPUSLICE_SOCKET" || fail "gpusliced did not start"
js=$("$G" doctor --json) || true
[ "$(status_of "$js" daemon)" = ok ] || fail "daemon is not 'ok' with gpusliced answering: $js"

shim=$(python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print([c for c in d["checks"] if c["name"] == "shim"][0]["detail"].split()[0])' "$js")
shim_need=$(newest "$shim")
[ -n "$shim_need" ] || fail "readelf finds no GLIBC version in $shim"
echo "$js" | grep -q "needs $shim_need" || fail "doctor's shim need differs from readelf's $shim_need: $js"

# A glibc program: doctor's figure is readelf's.
ls_need=$(newest /bin/ls)
out=$("$G" doctor --program /bin/ls) || true
echo "$out" | grep -q "/bin/ls needs $ls_need" || fail "--program /bin/ls: want $ls_need: $out"

# A static program.
printf 'int main(void){return 0;}\n' >"$WORK/s.c"
if cc -static -o "$WORK/static" "$WORK/s.c" 2>/dev/null; then
	rc=0
	out=$("$G" doctor --program "$WORK/static") || rc=$?
	[ "$rc" = 1 ] || fail "--program static: exit $rc, want 1"
	echo "$out" | grep -Eq '^  fail  program .*statically linked' || fail "--program static: $out"
else
	echo "note: no static libc here; the static case is not checked"
fi

# A musl program: /bin/true with musl's loader as its interpreter.
python3 - /bin/true "$WORK/musl-true" <<'EOP'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
old = b"/lib64/ld-linux-x86-64.so.2\0"
i = b.find(old)
assert i >= 0, "no glibc interpreter string"
new = b"/lib/ld-musl-x86_64.so.1\0"
b[i:i + len(old)] = new + b"\0" * (len(old) - len(new))
open(sys.argv[2], "wb").write(b)
EOP
out=$("$G" doctor --program "$WORK/musl-true") || true
echo "$out" | grep -Eq '^  (fail|ok) +program .*musl' || fail "--program musl: $out"
if ! ls "$(dirname "$shim")"/*musl* >/dev/null 2>&1; then
	echo "$out" | grep -Eq '^  fail  program .*would not load' || fail "--program musl without a musl shim is not a failure: $out"
fi

# Image roots: one with this host's glibc, one whose glibc is older.
libc=$(ldd /bin/ls | awk '/libc.so.6/ {print $3}')
mkdir -p "$WORK/new/lib/x86_64-linux-gnu" "$WORK/old/lib/x86_64-linux-gnu"
cp "$libc" "$WORK/new/lib/x86_64-linux-gnu/libc.so.6"
# The old one: every GLIBC_2.2x/2.3x name renamed so the newest left is
# older than 2.20 (what a glibc of that age defines, as far as version
# names go).
python3 - "$libc" "$WORK/old/lib/x86_64-linux-gnu/libc.so.6" <<'EOP'
import re, sys
b = open(sys.argv[1], "rb").read()
b = re.sub(rb"GLIBC_2\.([23]\d)", lambda m: b"GLIBC_0." + m.group(1), b)
open(sys.argv[2], "wb").write(b)
EOP
for root in new old; do
	img=$(newest "$WORK/$root/lib/x86_64-linux-gnu/libc.so.6")
	want=ok
	[ "$(printf '%s\n%s\n' "$img" "$shim_need" | sort -V | tail -1)" = "$img" ] || want=fail
	[ "$img" = "$shim_need" ] && want=ok
	js=$("$G" doctor --json --program "$WORK/$root") || true
	got=$(status_of "$js" program)
	[ "$got" = "$want" ] || fail "image $root (glibc $img, shim needs $shim_need): doctor says $got, want $want: $js"
done
echo "ok"
