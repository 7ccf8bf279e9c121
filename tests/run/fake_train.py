#!/usr/bin/env python3
"""fake_train.py: a stand-in training script for the `zbso run` tests. Standard library
only. Prints `epoch E val_acc=X` once per epoch, X = E * rate(batch size), sleeping a few
ms per epoch (a fake NVML burns energy as time passes). Writes its argv, pid and the
ZEUS_* environment as one JSON line to --record FILE (appended) so tests can check them.

Options: --bs N --epochs N --rates BS:RATE,... (default rate 0.1) --sleep-ms MS
  --record FILE  --ignore-term (keep going after SIGTERM, logging it)
  --exit-code C --fail-epoch E (exit C at epoch E)  --client (report through the server
  named by ZEUS_BSO_SERVER_URL, as the zbso/Zeus client would, and print nothing to parse)
Extra arguments are accepted and only recorded."""

import json
import os
import signal
import sys
import time
import urllib.request


def parse(argv):
    opts = {"bs": 0, "epochs": 100, "rates": "", "sleep_ms": 5, "record": None,
            "ignore_term": False, "exit_code": 0, "fail_epoch": 0, "client": False}
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--ignore-term", "--client"):
            opts[a[2:].replace("-", "_")] = True
        elif a.startswith("--") and a[2:].replace("-", "_") in opts and i + 1 < len(argv):
            key = a[2:].replace("-", "_")
            val = argv[i + 1]
            opts[key] = val if key in ("rates", "record") else int(val)
            i += 1
        i += 1
    return opts


def rate_for(rates, bs):
    for item in filter(None, rates.split(",")):
        b, r = item.split(":")
        if int(b) == bs:
            return float(r)
    return 0.1


def post(path, body):
    url = os.environ["ZEUS_BSO_SERVER_URL"] + path
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def main():
    opts = parse(sys.argv)
    if opts["record"]:
        env = {k: v for k, v in os.environ.items() if k.startswith("ZEUS_")}
        with open(opts["record"], "a") as f:
            f.write(json.dumps({"argv": sys.argv[1:], "pid": os.getpid(), "env": env}) + "\n")
    if opts["ignore_term"]:
        def on_term(signum, frame):
            print("got SIGTERM, ignoring it", flush=True)
        signal.signal(signal.SIGTERM, on_term)
    bs = opts["bs"] or int(os.environ.get("ZEUS_BATCH_SIZE", "0"))
    rate = rate_for(opts["rates"], bs)
    start = time.monotonic()
    for epoch in range(1, opts["epochs"] + 1):
        time.sleep(opts["sleep_ms"] / 1000.0)
        if epoch == opts["fail_epoch"]:
            print(f"failing at epoch {epoch}", flush=True)
            sys.exit(opts["exit_code"])
        acc = min(1.0, epoch * rate)
        if opts["client"]:
            ans = post("/report", {
                "job_id": os.environ["ZEUS_BSO_JOB_ID"], "batch_size": bs,
                "trial_number": int(os.environ["ZEUS_BSO_TRIAL_NUMBER"]),
                "time": time.monotonic() - start, "energy": 0.0, "metric": acc,
                "current_epoch": epoch})
            print(f"epoch {epoch} acc {acc:.4f} -> {ans}", flush=True)
            if ans["stop_train"]:
                sys.exit(0 if ans["converged"] else 1)
        else:
            print(f"epoch {epoch} val_acc={acc:.4f}", flush=True)
    if opts["ignore_term"]:
        while True:
            time.sleep(0.05)
    sys.exit(opts["exit_code"])


if __name__ == "__main__":
    main()
