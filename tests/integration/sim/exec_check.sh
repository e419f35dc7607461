# exec_check.sh - shared by the interpreter's program tests: source it
# after lib.sh. run_checks PROG "CHECK ...": runs the nvcc-built PROG
# (both targets, default and sm_90) on a fresh one-GPU sim and fails
# unless every named check printed "ok NAME" and the program "all ok".
# Exits 77 (skipped) when nvcc was absent at build time.
OUT=$B/tests/exec
run_checks() {
	local prog=$1 want=$2 kind bin start end check
	ls "$OUT/$prog"-* >/dev/null 2>&1 ||
		{ echo "SKIP: nvcc was not found at build time: no $prog programs"; exit 77; }
	"$GS" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null || fail "sim init"
	for kind in default sm90; do
		bin=$OUT/$prog-$kind
		[ -x "$bin" ] || fail "$bin was not built"
		start=$(date +%s.%N)
		timeout 120 "$bin" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "$prog-$kind failed"; }
		end=$(date +%s.%N)
		grep -q '^all ok$' "$WORK/out" || { cat "$WORK/out"; fail "$prog-$kind did not finish"; }
		for check in $want; do
			grep -q "^ok $check\$" "$WORK/out" || { cat "$WORK/out"; fail "$prog-$kind: check $check did not pass"; }
		done
		printf '%s-%s: %s checks ok in %s s\n' "$prog" "$kind" "$(grep -c '^ok ' "$WORK/out")" \
			"$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
	done
}
