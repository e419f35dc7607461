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
A run whose first literal is an SQL statement is data, not a message, and
is left as it is; other data (embedded programs, tables) may be fenced:
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
# an SQL statement: data, not a message
SQL = re.compile(r'(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|PRAGMA)\b')
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


def starts_sql(line):
    """Whether the line's first literal is an SQL statement (data)."""
    q = line.find('"')
    return q >= 0 and SQL.match(line, q + 1) is not None


def scan(lines):
    """The indexes i where line i and line i+1 form a split literal."""
    hits = []
    fenced = False
    sql_run = False
    for i in range(len(lines) - 1):
        if FENCE_OFF in lines[i]:
            fenced = True
        if FENCE_ON in lines[i]:
            fenced = False
            continue
        cont = ends_inside_run(lines[i]) and \
            lines[i + 1].lstrip().startswith('"')
        if not (i - 1 in hits or sql_run):
            sql_run = starts_sql(lines[i])
        if fenced or not cont:
            sql_run = sql_run and cont
            continue
        if not sql_run:
            hits.append(i)
    return hits


def fix_file(path, hits):
    """Joins each split literal; an inner \\n then starts a new source
    line, so each source line is one line of output."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    hit = set(hits)
    runs = []  # (head, number of joins)
    for i in hits:
        if i - 1 in hit:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    # bottom-up, so that the lines of the runs above keep their indexes
    for head, k in reversed(runs):
        nxt = lines[head + 1]
        ind = nxt[:len(nxt) - len(nxt.lstrip())]
        line = lines[head]
        for j in range(head + 1, head + k + 1):
            line = line.rstrip()[:-1] + lines[j].lstrip()[1:]
        lines[head:head + k + 1] = NEWLINE_INSIDE.sub(
            lambda m: '\\n"\n' + ind + '"', line).split("\n")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    do_fix = "--fix" in argv
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    found = 0
    for rel in product_files(root):
        path = os.path.join(root, rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        hits = scan(lines)
        if not hits:
            continue
        if do_fix:
            fix_file(path, hits)
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
