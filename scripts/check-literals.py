#!/usr/bin/env python3
"""Messages stay on one source line (STYLE.md; kernel coding style, 2).

A log line, an error message or a help sentence that is split into
adjacent string literals across source lines cannot be found with grep.
This check lists every place in product code (every tracked .c/.h outside
a tests/ folder) where a line ends inside a string literal run, that is:
a line whose last token is a string literal not ending in "\\n", followed
by a line whose first token is a string literal.

Literals that end in "\\n" are allowed to continue on the next line: each
source line is then one line of output (usage texts, tables).
Data that is not a message (SQL schemas, embedded programs) may be fenced:
    /* literals: off */ ... /* literals: on */

Usage:
  check-literals.py [--fix] [ROOT]     exit 1 and list the places;
                                       --fix joins them in place.
"""
import os
import re
import subprocess
import sys

FENCE_OFF = "/* literals: off */"
FENCE_ON = "/* literals: on */"
# an escaped newline inside a literal, not at its end, not in a char
NEWLINE_INSIDE = re.compile(r'(?<!\\)\\n(?![\"\'])')


def product_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h"],
                         capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if "tests/" not in f and
            not f.startswith("tests")]


def ends_inside_run(line):
    s = line.rstrip()
    if not s.endswith('"') or s.endswith('\\n"'):
        return False
    t = s.lstrip()
    # comments and preprocessor lines are not code
    return not (t.startswith(("#", "//", "*", "/*")))


def scan(lines):
    """Yield the indexes i where line i and line i+1 form a split literal."""
    fenced = False
    for i in range(len(lines) - 1):
        if FENCE_OFF in lines[i]:
            fenced = True
        if FENCE_ON in lines[i]:
            fenced = False
            continue
        if fenced:
            continue
        if ends_inside_run(lines[i]) and lines[i + 1].lstrip().startswith('"'):
            yield i


def fix_file(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fenced = False
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE_OFF in line:
            fenced = True
        if FENCE_ON in line:
            fenced = False
        joined = False
        indent = ""
        while (not fenced and i + 1 < len(lines) and ends_inside_run(line)
               and lines[i + 1].lstrip().startswith('"')):
            nxt = lines[i + 1]
            indent = nxt[:len(nxt) - len(nxt.lstrip())]
            line = line.rstrip()[:-1] + nxt.lstrip()[1:]
            joined = True
            i += 1
        if joined:
            # one line of output per source line: break after an inner \n
            line = NEWLINE_INSIDE.sub(lambda m: '\\n"\n' + indent + '"',
                                      line)
        out.extend(line.split("\n"))
        i += 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    do_fix = "--fix" in argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    found = 0
    for rel in product_files(root):
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        hits = list(scan(lines))
        if not hits:
            continue
        if do_fix:
            fix_file(path)
            print(f"{rel}: joined {len(hits)}")
            continue
        for i in hits:
            found += 1
            print(f"{rel}:{i + 1}: message split across lines: "
                  f"{lines[i].strip()[:60]}")
    if found:
        print(f"{found} split message(s); join them (scripts/check-literals.py"
              " --fix) or fence data with /* literals: off */",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
