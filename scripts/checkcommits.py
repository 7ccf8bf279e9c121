#!/usr/bin/env python3
"""checkcommits.py: every commit since BASE has a subject line of at most 72 characters
(measurements and reasons go in the body). BASE is the last commit made before the rule
(ea1f4c2); older history keeps its long subjects. Exits 1 listing each offender.

usage: scripts/checkcommits.py [--max N] [REV_RANGE]   (default: BASE..HEAD)
In a shallow clone whose history lacks BASE, the commits present are checked."""
import subprocess
import sys

BASE = "ea1f4c2"
MAX = 72


def git(*args):
    return subprocess.run(["git", *args], capture_output=True, text=True)


def main(argv):
    limit = MAX
    if len(argv) >= 2 and argv[0] == "--max":
        limit, argv = int(argv[1]), argv[2:]
    rng = argv[0] if argv else None
    if rng is None:
        if git("cat-file", "-e", BASE + "^{commit}").returncode == 0:
            rng = BASE + "..HEAD"
        elif git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            rng = "HEAD"
        else:
            print(f"checkcommits: {BASE} is not in this repository's history", file=sys.stderr)
            return 2
    out = git("log", "--format=%h%x00%s", rng)
    if out.returncode != 0:
        print(f"checkcommits: git log {rng}: {out.stderr.strip()}", file=sys.stderr)
        return 2
    bad = []
    for line in out.stdout.splitlines():
        h, _, subject = line.partition("\0")
        if len(subject) > limit:
            bad.append(f"{h}: subject is {len(subject)} characters, over {limit}: {subject}")
    for b in bad:
        print(b)
    print(f"checkcommits: {len(bad)} subject(s) over {limit} characters in {rng}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
