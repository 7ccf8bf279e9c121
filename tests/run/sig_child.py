#!/usr/bin/env python3
"""sig_child.py: a training command for the lifetime tests of `zbso run` (test_run_guard.py).
Standard library only. Appends one line per event to --record FILE: "ready PID PGID
GRANDCHILD_PID" once started, "INT" for each SIGINT, "TERM" for each SIGTERM. Prints
nothing unless --chatty (then a line every 10 ms), so no SIGPIPE can end it; starts a
grandchild (sleep) in its own process group unless --no-grandchild. After the first SIGINT
or SIGTERM it keeps running --linger seconds (default 1), so a second signal would be
recorded, then exits 130 (SIGINT) or 143 (SIGTERM); without a signal it sleeps forever."""

import os
import signal
import subprocess
import sys
import time


def main(argv):
    record, chatty, linger, grandchild = None, False, 1.0, True
    i = 1
    while i < len(argv):
        if argv[i] == "--record":
            record = argv[i + 1]
            i += 1
        elif argv[i] == "--linger":
            linger = float(argv[i + 1])
            i += 1
        elif argv[i] == "--chatty":
            chatty = True
        elif argv[i] == "--no-grandchild":
            grandchild = False
        i += 1
    got = []

    def note(text):
        with open(record, "a") as f:
            f.write(text + "\n")

    def on_signal(sig, _frame):
        got.append(sig)
        note("INT" if sig == signal.SIGINT else "TERM")

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    gc = subprocess.Popen(["sleep", "600"]) if grandchild else None
    note(f"ready {os.getpid()} {os.getpgid(0)} {gc.pid if gc else 0}")
    while not got:
        if chatty:
            print("step", flush=True)
        time.sleep(0.01)
    end = time.monotonic() + linger
    while time.monotonic() < end:
        time.sleep(0.01)
    if gc:
        gc.kill()
    sys.exit(130 if got[0] == signal.SIGINT else 143)


if __name__ == "__main__":
    main(sys.argv)
