#!/usr/bin/env bash
# The Debian packages (scripts/build-deb.sh, built once per input hash
# into ~/.cache/gpuslice) are lintian-clean (every override explained in
# debian/*.lintian-overrides), install with dpkg -i on this machine, and
# work from the installed paths alone, with the build and source trees
# hidden: /usr/sbin/gpusliced on the simulated node with the installed
# /etc/gpuslice/gpusliced.yaml, a workload under /usr/bin/gpuslice run
# capped, an MPS slice made and deleted. Removal leaves no process and,
# outside /var/lib, only what Debian keeps until purge (the conffile and
# systemd's enable/mask links); purge leaves nothing.
#
# Needs root (dpkg -i on the test machine): without it, or with a
# gpuslice package already installed here, it says so and skips (77).
. "$(dirname "$0")/lib.sh" "$1"

[ "$(id -u)" = 0 ] || skip "dpkg -i needs root on the test machine"
command -v dpkg-buildpackage >/dev/null || skip "dpkg-dev is not installed (scripts/deps.sh)"
if dpkg-query -W -f='${Status}' gpuslice 2>/dev/null | grep -q installed; then
	skip "a gpuslice package is installed on this machine already; not touching it"
fi
[ ! -e /run/gpuslice/api.sock ] || skip "a gpusliced serves /run/gpuslice on this machine"

rc=0
DEBS=$(bash "$SRC/scripts/build-deb.sh" 2>"$WORK/build.log" | tail -1) || rc=$?
[ "$rc" = 77 ] && skip "cannot build the packages here: $(tail -1 "$WORK/build.log")"
[ "$rc" = 0 ] || fail "scripts/build-deb.sh failed: $(tail -5 "$WORK/build.log")"
pkgs=("$DEBS"/gpuslice_*.deb "$DEBS"/gpuslice-slurm_*.deb "$DEBS"/gpuslice-kubernetes_*.deb)
for p in "${pkgs[@]}"; do [ -f "$p" ] || fail "no $p"; done

# lintian: nothing at warning or error level is left.
if [ -f "$DEBS/lintian.txt" ]; then
	bad=$(grep -E '^(E|W): ' "$DEBS/lintian.txt" || true)
	[ -z "$bad" ] || fail "lintian: $bad"
fi

# Everything dpkg is asked to do here waits for the lock (apt may be
# running for another build on this machine).
dpkg_do() {
	local i
	for i in $(seq 60); do
		if dpkg "$@" >>"$WORK/dpkg.log" 2>&1; then return 0; fi
		grep -q 'lock' "$WORK/dpkg.log" || return 1
		: >"$WORK/dpkg.log"
		sleep 2
	done
	return 1
}
ours() { # paths on this machine named for gpuslice, outside /var/lib and /proc
	find /etc /usr /lib /run /opt /var -xdev \
		\( -path /var/lib -prune \) -o \
		\( -name '*gpuslice*' -o -name 'gpusliced*' -o -name 'spank_gpuslice*' \) -print 2>/dev/null | sort
}
procs() { # processes running a packaged program (or a deleted one)
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null || true)
		case $exe in
		/usr/sbin/gpusliced* | /usr/bin/gpuslice* | */gpuslice/sim/*) echo "${p#/proc/} $exe" ;;
		esac
	done
}
before=$(ours)
CLEANUP_PURGE=1
purge_on_exit() {
	[ "$CLEANUP_PURGE" = 1 ] || return 0
	pkill_ours
	dpkg --purge gpuslice-kubernetes gpuslice-slurm gpuslice >/dev/null 2>&1 || true
}
pkill_ours() {
	local p
	for p in $(procs | cut -d' ' -f1); do kill -9 "$p" 2>/dev/null || true; done
}
trap 'purge_on_exit; install_cleanup' EXIT

dpkg_do -i "${pkgs[@]}" || fail "dpkg -i failed: $(tail -20 "$WORK/dpkg.log")"
files=$(dpkg -L gpuslice gpuslice-slurm gpuslice-kubernetes | sort -u)
conffiles=$(dpkg-query -W -f='${Conffiles}\n' gpuslice | awk 'NF {print $1}')
[ "$conffiles" = /etc/gpuslice/gpusliced.yaml ] || fail "conffiles: '$conffiles'"
getent group gpuslice >/dev/null || fail "postinst made no gpuslice group"

# The smoke test, with the build and source trees hidden.
cat >"$WORK/smoke.sh" <<'EOS'
set -eu
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
. "$W/funcs.sh"
for d in $HIDE; do [ -z "$(ls -A "$d")" ] || fail "$d is still visible"; done
command -v gpuslice | grep -qx /usr/bin/gpuslice || fail "gpuslice is not /usr/bin/gpuslice"
/usr/sbin/gpusliced --config /etc/gpuslice/gpusliced.yaml --gpus sim >"$W/daemon.log" 2>&1 &
pid=$!
wait_until 15 healthy /run/gpuslice/api.sock || fail "/usr/sbin/gpusliced did not answer on /run/gpuslice/api.sock"
eval "$(gpuslice sim env --dir /var/lib/gpuslice/sim)"
case $LD_LIBRARY_PATH in /usr/lib/*/gpuslice/sim*) ;; *) fail "sim env: LD_LIBRARY_PATH=$LD_LIBRARY_PATH" ;; esac
capped_alloc /usr/bin/gpuslice /usr/bin/gs-alloc
curl -sf --unix-socket /run/gpuslice/api.sock -H 'Content-Type: application/json' \
	-d '{"name": "smoke-mps", "mode": "mps", "memory": "1GiB", "compute": 25, "gpu": 0}' \
	http://localhost/v1/slices >/dev/null || fail "cannot create an MPS slice"
gpuslice list | grep -q smoke-mps || fail "gpuslice list does not show smoke-mps"
curl -sf --unix-socket /run/gpuslice/api.sock -X DELETE http://localhost/v1/slices/smoke-mps >/dev/null ||
	fail "cannot delete smoke-mps"
kill -TERM $pid
wait $pid || fail "gpusliced exited $? on SIGTERM"
echo smoke-ok
EOS
declare -f fail wait_until healthy capped_alloc >"$WORK/funcs.sh"
hide="$B $SRC"
out=$(unshare -m bash -c "for d in $hide; do mount -t tmpfs none \$d; done; W='$WORK' HIDE='$hide' bash '$WORK/smoke.sh'" 2>&1) ||
	fail "smoke test: $out"
case $out in *smoke-ok*) ;; *) fail "smoke test did not finish: $out" ;; esac

# Remove: no process, no packaged file; only /var/lib, the conffile and
# systemd's mask link stay.
dpkg_do -r gpuslice-kubernetes gpuslice-slurm gpuslice || fail "dpkg -r failed: $(tail -20 "$WORK/dpkg.log")"
left=$(procs)
[ -z "$left" ] || fail "processes left after removal: $left"
while IFS= read -r f; do
	[ -d "$f" ] && continue
	case $f in /etc/gpuslice/gpusliced.yaml) continue ;; esac
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is still there after removal"
done <<<"$files"
[ -f /etc/gpuslice/gpusliced.yaml ] || fail "the conffile went with dpkg -r (it stays until purge)"
[ ! -e /run/gpuslice ] || fail "/run/gpuslice is still there after removal"
[ -d /var/lib/gpuslice ] || fail "the state /var/lib/gpuslice went with dpkg -r (it stays until purge)"
# Debian keeps until purge: the conffile, and systemd's record that the
# unit was enabled (the wants link; with systemd running, a mask link).
extra=$(comm -13 <(echo "$before") <(ours) | grep -v -x -e /etc/gpuslice -e /etc/gpuslice/gpusliced.yaml \
	-e /etc/systemd/system/gpusliced.service \
	-e /etc/systemd/system/multi-user.target.wants/gpusliced.service || true)
[ -z "$extra" ] || fail "left outside /var/lib after removal: $extra"

# Purge: nothing at all.
dpkg_do --purge gpuslice-kubernetes gpuslice-slurm gpuslice || fail "dpkg --purge failed: $(tail -20 "$WORK/dpkg.log")"
CLEANUP_PURGE=0
extra=$(comm -13 <(echo "$before") <(ours) || true)
[ -z "$extra" ] || fail "left after purge: $extra"
[ ! -e /var/lib/gpuslice ] || fail "/var/lib/gpuslice is still there after purge"
echo "ok"
