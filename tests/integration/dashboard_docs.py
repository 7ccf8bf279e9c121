"""dashboard_docs.py: makes the dashboard screenshots of docs/img (README, docs/DESIGN.md):
a fresh `zbso serve` on SQLite, the simulator's cifar100 workload on v100 at eta 0.5
replayed through it (simreplay.py: 140 recurrences, two at a time, 2000x faster than the
traces), then the job page and one trial page in chromium at 1280 px wide; and (issue 25)
the same workload on a40 beside it, the server given a grid intensity of 400 g/kWh and a
price of 0.25 EUR/kWh, for the time-against-energy view, the learning-curve overlay and
the comparison of the two jobs.

    python3 tests/integration/dashboard_docs.py [--bin build/src/cli/zbso] [--out docs/img]

Standard library only; traffic only to the server it starts."""

import argparse
import base64
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "src", "cli", "zbso"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "img"))
    ap.add_argument("--speedup", type=float, default=2000.0)
    a = ap.parse_args(argv)
    os.environ["ZBSO_BIN"] = os.path.abspath(a.bin)
    sys.path.insert(0, HERE)
    import cdp  # noqa: E402  (after ZBSO_BIN is set for zbsoserver)
    import simreplay  # noqa: E402
    from zbsoserver import Server  # noqa: E402

    srv = Server(args=("--carbon-intensity", "400", "--energy-price", "0.25", "--currency",
                       "EUR"))
    browser = None
    try:
        srv.start()
        w = simreplay.Workload("cifar100", "v100")
        rp = simreplay.Replay(srv.host, srv.port, w, eta=0.5, beta=2.0, seed=1,
                              speedup=a.speedup, parallel=2).run()
        if rp.errors:
            raise SystemExit(f"replay failed: {rp.errors[:3]}")
        other = simreplay.Replay(srv.host, srv.port, simreplay.Workload("cifar100", "a40"),
                                 eta=0.5, beta=2.0, seed=1, speedup=a.speedup,
                                 parallel=2).run()
        if other.errors:
            raise SystemExit(f"replay failed: {other.errors[:3]}")
        time.sleep(1.0)   # curve points of continuing reports: written within 0.25 s
        job = rp.job_id
        # The trial page shows the last converged run of the job's best batch size.
        best = srv.request("GET", f"/jobs/{job}").json["best_batch_size"]
        trials = srv.request("GET", f"/jobs/{job}/trials?limit=1000").json["trials"]
        trial = [t for t in trials if t["converged"] and t["batch_size"] == best][-1]
        browser = cdp.Browser()
        page = browser.page(1280, 800)
        base = f"http://{srv.host}:{srv.port}/"
        os.makedirs(a.out, exist_ok=True)

        def shoot(hash_, name, bottom_js, top_js="0", ready_js="true"):
            page.navigate(base + hash_)
            page.wait("document.getElementById('main').dataset.state === 'ready'")
            page.wait(ready_js)
            top = page.eval(top_js)
            height = page.eval(bottom_js) - top
            data = page.call("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": top, "width": 1280, "height": height, "scale": 1}})
            path = os.path.join(a.out, name)
            with open(path, "wb") as f:
                f.write(base64.b64decode(data["data"]))
            print(f"{path}: 1280x{int(height)}, {os.path.getsize(path)} bytes")

        # The job from the top to the end of the timeline (the trial table is plain text);
        # the trial page whole.
        shoot(f"#/job/{job}", "dashboard-job.png",
              "(e => e.getBoundingClientRect().top + window.scrollY)"
              "(document.getElementById('trials'))")
        shoot(f"#/job/{job}/trial/{trial['trial_number']}", "dashboard-trial.png",
              "(e => e.getBoundingClientRect().bottom + window.scrollY + 16)"
              "(document.getElementById('curves'))")
        # Issue 25: one section of the job page each, and the comparison.
        def section(sid):
            box = f"document.getElementById('{sid}').getBoundingClientRect()"
            return (f"{box}.top + window.scrollY - 8", f"{box}.bottom + window.scrollY + 8")

        curves = "document.querySelector('[data-slot=overlay]').dataset.trials !== undefined"
        for sid, name in (("pareto", "dashboard-pareto.png"),
                          ("overlay", "dashboard-curves.png")):
            top_js, bottom_js = section(sid)
            shoot(f"#/job/{job}", name, bottom_js, top_js, curves)
        shoot(f"#/compare/{job}/{other.job_id}", "dashboard-compare.png",
              "(e => e.getBoundingClientRect().bottom + window.scrollY + 16)"
              "(document.getElementById('compare-chart'))")
        if page.errors:
            raise SystemExit(f"console errors: {page.errors}")
        print(f"{job}: {rp.recurrences} recurrences, {rp.trials} trials; trial "
              f"{trial['trial_number']} (batch size {trial['batch_size']}, "
              f"{trial['epochs']} epochs)")
    finally:
        if browser is not None:
            browser.close()
        srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
