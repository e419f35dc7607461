#!/usr/bin/env bash
# No product .c file over 1,500 lines (docs/architecture.md): a file that
# grows past it holds more than one thing and is split along its sections.
# Product files: every tracked .c outside a tests/ folder.
# Usage: check-sizes.sh [ROOT] [LIMIT]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
limit=${2:-1500}
cd "$root"
over=0
while read -r f; do
	n=$(wc -l <"$f")
	if [ "$n" -gt "$limit" ]; then
		echo "$f: $n lines (limit $limit)"
		over=$((over + 1))
	fi
done < <(git ls-files '*.c' | grep -v -e '^tests/' -e '/tests/')
echo "$over product file(s) over $limit lines"
[ "$over" -eq 0 ]
