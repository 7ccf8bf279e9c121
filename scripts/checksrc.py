#!/usr/bin/env python3
"""checksrc.py: the C style rules that must hold in every file (in the spirit of curl's
checksrc): no banned function, lines of at most 100 columns, no tab, no trailing
whitespace, a newline at the end. Layout beyond that is .clang-format's business.

usage: scripts/checksrc.py [FILE...]
With no FILE, checks the git-tracked *.c and *.h files under src/, include/, bench/, tests/
and fuzz/. Prints "FILE:LINE:COL: RULE: message" per problem and exits 1 if there was one,
0 if none, 2 on a usage or I/O error. Standard library only (ctest style/checksrc)."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("src/", "include/", "bench/", "tests/", "fuzz/")
MAX_COLUMNS = 100  # .clang-format's ColumnLimit; almost every line already fits

# Banned functions and why; the replacement is in the message.
BANNED = {
    "sprintf": "no bound on the output; use snprintf",
    "vsprintf": "no bound on the output; use vsnprintf",
    "strcpy": "no bound on the output; use snprintf or memcpy with a checked length",
    "strcat": "no bound on the output; use snprintf or memcpy with a checked length",
    "strncpy": "leaves the output unterminated when the input is too long and pads with "
               "NULs; use snprintf or memcpy with a checked length",
    "strncat": "its bound is the room left, not the buffer size, a classic overflow; use "
               "snprintf",
    "gets": "cannot be bounded (removed from C11); use fgets",
    "atoi": "cannot report bad input or overflow (undefined); use strtol and check end "
            "and errno",
    "atol": "cannot report bad input or overflow (undefined); use strtol and check end "
            "and errno",
    "atoll": "cannot report bad input or overflow (undefined); use strtoll and check end "
             "and errno",
    "atof": "cannot report bad input; use strtod and check end",
    "strtok": "keeps hidden state: not thread-safe nor reentrant; use strtok_r",
    "gmtime": "returns a shared static buffer: not thread-safe; use gmtime_r",
    "localtime": "returns a shared static buffer: not thread-safe; use localtime_r",
    "ctime": "returns a shared static buffer: not thread-safe; use strftime with localtime_r",
    "asctime": "returns a shared static buffer: not thread-safe; use strftime",
    "tmpnam": "the name can be taken before it is opened; use mkstemp",
    "tempnam": "the name can be taken before it is opened; use mkstemp",
    "mktemp": "the name can be taken before it is opened; use mkstemp",
    "rand": "hidden global state, weak and not thread-safe; use core/rng.h or getrandom",
    "srand": "hidden global state, weak and not thread-safe; use core/rng.h or getrandom",
}
BANNED_CALL = re.compile(r"(?<![\w.>])(" + "|".join(BANNED) + r")\s*\(")


def blank_comments_and_strings(text):
    """text with the contents of comments, string and character literals replaced by
    spaces (newlines kept), so that names inside them are not taken for calls."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c if j - i >= 2 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check_text(text):
    """The problems of one file's text, as (line, column, rule, message)."""
    problems = []
    lines = text.split("\n")
    for no, line in enumerate(lines, 1):
        if len(line) > MAX_COLUMNS:
            problems.append((no, MAX_COLUMNS + 1, "LONGLINE",
                             f"line is {len(line)} columns, over {MAX_COLUMNS}"))
        if "\t" in line:
            problems.append((no, line.index("\t") + 1, "TABS", "tab character; indent with "
                             "spaces"))
        stripped = line.rstrip(" \t\r\f\v")
        if stripped != line:
            problems.append((no, len(stripped) + 1, "TRAILINGSPACE", "trailing whitespace"))
    if text and not text.endswith("\n"):
        problems.append((len(lines), len(lines[-1]) + 1, "NOEOLNL",
                         "no newline at the end of the file"))
    code = blank_comments_and_strings(text)
    for m in BANNED_CALL.finditer(code):
        name = m.group(1)
        no = code.count("\n", 0, m.start()) + 1
        col = m.start() - (code.rfind("\n", 0, m.start()) + 1) + 1
        problems.append((no, col, "BANNEDFUNC", f"{name}() is banned: {BANNED[name]}"))
    return sorted(problems)


def default_files():
    out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "--", *DIRS], check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0")
            if f.endswith((".c", ".h")) and os.path.isfile(os.path.join(ROOT, f))]


def main(argv):
    if any(a.startswith("-") for a in argv):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    base = "" if argv else ROOT
    try:
        files = argv or default_files()
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"checksrc: cannot list the files to check ({e}); name them", file=sys.stderr)
        return 2
    if not files:
        print("checksrc: no files to check", file=sys.stderr)
        return 2
    count = 0
    for path in files:
        try:
            with open(os.path.join(base, path), encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            print(f"checksrc: {path}: {e}", file=sys.stderr)
            return 2
        for no, col, rule, msg in check_text(text):
            print(f"{path}:{no}:{col}: {rule}: {msg}")
            count += 1
    if count:
        print(f"checksrc: {count} problem(s) in {len(files)} file(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
