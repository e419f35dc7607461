#!/usr/bin/env bash
# gpusliced.service as installed, and the watchdog-action drop-in example
# beside it, pass `systemd-analyze verify` with nothing to say (unknown
# keys, bad values and missing programs are all reported there). The
# unit keeps the settings docs/install.md promises: Type=notify,
# ExecReload (SIGHUP), RuntimeDirectory and StateDirectory gpuslice, the
# sandbox and the NVIDIA devices.
. "$(dirname "$0")/lib.sh" "$1"

command -v systemd-analyze >/dev/null ||
	skip "systemd-analyze is not installed (scripts/deps.sh installs systemd)"
ROOT=$WORK/root
DESTDIR=$ROOT cmake --install "$B" --component gpuslice \
	>"$WORK/install.log" 2>&1 || fail "cmake --install failed"
unit=$(find "$ROOT" -name gpusliced.service | head -1)
[ -n "$unit" ] || fail "no gpusliced.service installed"
dropin=$(find "$ROOT" -name watchdog-action.conf.example | head -1)
[ -n "$dropin" ] || fail "no watchdog-action.conf.example installed"

for want in '^Type=notify$' '^ExecReload=/bin/kill -HUP \$MAINPID$' \
	'^RuntimeDirectory=gpuslice$' '^StateDirectory=gpuslice$' \
	'^ProtectSystem=strict$' '^ProtectHome=yes$' '^NoNewPrivileges=yes$' \
	'^DeviceAllow=char-nvidia-frontend rw$' '^DeviceAllow=char-nvidia-uvm rw$' \
	'^CapabilityBoundingSet=' "^ExecStart=$PREFIX/sbin/gpusliced --config $ETC/gpuslice/gpusliced.yaml\$"; do
	grep -q -- "$want" "$unit" || fail "gpusliced.service has no line matching $want"
done

# verify checks that ExecStart's program exists: point it at the tree
# just installed (the only change).
U=$WORK/units
mkdir -p "$U/gpusliced.service.d"
sed "s|$PREFIX/sbin/gpusliced|$ROOT$PREFIX/sbin/gpusliced|" "$unit" >"$U/gpusliced.service"
verify() {
	SYSTEMD_UNIT_PATH=$U: systemd-analyze verify "$U/gpusliced.service" 2>&1
}

# The drop-in directory is read: a bad key there is reported ...
{
	sed "s|$PREFIX/sbin/gpusliced|$ROOT$PREFIX/sbin/gpusliced|" "$dropin"
	echo "NoSuchKey=1"
} >"$U/gpusliced.service.d/watchdog-action.conf"
out=$(verify || true)
case $out in *watchdog-action.conf*NoSuchKey*) ;;
*) fail "systemd-analyze did not read the drop-in directory: $out" ;; esac

# ... and the real unit with the real drop-in draw no remark at all.
sed "s|$PREFIX/sbin/gpusliced|$ROOT$PREFIX/sbin/gpusliced|" "$dropin" \
	>"$U/gpusliced.service.d/watchdog-action.conf"
out=$(verify) || fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify has remarks: $out"
grep -q -- '--watchdog-action kill' "$U/gpusliced.service.d/watchdog-action.conf" ||
	fail "the drop-in does not set the watchdog's action"
"$ROOT$PREFIX/sbin/gpusliced" --watchdog-action kill --check-config >/dev/null ||
	fail "gpusliced does not take --watchdog-action kill"
echo "ok"
