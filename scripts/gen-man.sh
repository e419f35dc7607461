#!/bin/sh
# gen-man.sh - a manual page from a program's --help text:
#   scripts/gen-man.sh PROGRAM SECTION "one-line summary" > NAME.SECTION
# The page carries the --help text as it is (one source of truth: the
# program's own usage text); cmake/install.cmake runs this at build time
# for every installed program. Fails when the program prints nothing.
set -eu
prog=$1
sec=$2
summary=$3
name=$(basename "$prog")
help=$("$prog" --help 2>&1 || true)
[ -n "$help" ] || {
	echo "gen-man: $prog --help printed nothing" >&2
	exit 1
}
printf '.TH %s %s "" "gpuslice" "gpuslice manual"\n' "$(echo "$name" | tr a-z A-Z)" "$sec"
printf '.SH NAME\n%s \\- %s\n' "$name" "$summary"
printf '.SH DESCRIPTION\nThe text below is what\n.B %s --help\nprints.\n.PP\n.nf\n' "$name"
# roff: backslashes doubled, a line starting with . or ' escaped
printf '%s\n' "$help" | sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
printf '.fi\n.SH SEE ALSO\ngpuslice(1), gpusliced(8); docs/ in the gpuslice source\n'
