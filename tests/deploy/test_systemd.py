"""deploy/systemd: deploy/systemd/zbso.service checked by `systemd-analyze verify` in a
scratch root laid out as the Debian package installs it (this build's zbso at
/usr/bin/zbso, /etc/zbso/zbso.env, the host's systemd units for the targets it names):
no warning at all, and the hardening asked for is there. `systemd-analyze security`
rates it (offline); the exposure is recorded. The unit is not started: this sandbox has
no systemd running as PID 1."""

import glob
import os
import re
import shutil
import tempfile
import unittest

from deployutil import SRC, build_dir, record_figures, require_tools, run

UNIT = os.path.join(SRC, "deploy", "systemd", "zbso.service")
REQUIRED = ["DynamicUser=yes", "StateDirectory=zbso", "ProtectSystem=strict",
            "NoNewPrivileges=yes", "Restart=on-failure", "EnvironmentFile=/etc/zbso/zbso.env",
            "ExecStart=/usr/bin/zbso serve"]


class SystemdTest(unittest.TestCase):
    def setUp(self):
        require_tools("systemd-analyze")
        self.tmp = tempfile.TemporaryDirectory(prefix="zbso-systemd-")
        self.addCleanup(self.tmp.cleanup)
        root = self.root = self.tmp.name
        units = os.path.join(root, "usr", "lib", "systemd", "system")
        os.makedirs(units)
        os.makedirs(os.path.join(root, "usr", "bin"))
        os.makedirs(os.path.join(root, "etc", "zbso"))
        os.symlink("usr/bin", os.path.join(root, "bin"))
        os.symlink("usr/lib", os.path.join(root, "lib"))
        for u in glob.glob("/usr/lib/systemd/system/*.target"):
            shutil.copy(u, units)
        shutil.copy("/usr/bin/kill", os.path.join(root, "usr", "bin"))
        shutil.copy(os.path.join(build_dir(), "src", "cli", "zbso"),
                    os.path.join(root, "usr", "bin", "zbso"))
        shutil.copy(os.path.join(SRC, "deploy", "systemd", "zbso.env"),
                    os.path.join(root, "etc", "zbso", "zbso.env"))
        shutil.copy(UNIT, units)

    def test_verify(self):
        p = run(["systemd-analyze", "verify", "--man=no", f"--root={self.root}",
                 "zbso.service"], check=False)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""))

    def test_verify_catches(self):
        # The check above can fail: a misspelt key and a missing binary are reported.
        unit = os.path.join(self.root, "usr", "lib", "systemd", "system", "zbso.service")
        with open(unit) as f:
            text = f.read()
        with open(unit, "w") as f:
            f.write(text.replace("Restart=on-failure", "Restartt=on-failure"))
        os.unlink(os.path.join(self.root, "usr", "bin", "zbso"))
        p = run(["systemd-analyze", "verify", "--man=no", f"--root={self.root}",
                 "zbso.service"], check=False)
        self.assertIn("Unknown key 'Restartt'", p.stderr)
        self.assertIn("/usr/bin/zbso is not executable", p.stderr)

    def test_hardening(self):
        with open(UNIT) as f:
            lines = {ln.strip() for ln in f}
        for want in REQUIRED:
            self.assertIn(want, lines)
        self.assertTrue(any(re.fullmatch(r"LimitNOFILE=\d+", ln) for ln in lines))
        p = run(["systemd-analyze", "security", "--offline=true", f"--root={self.root}",
                 "--threshold=20", "zbso.service"], check=False)
        m = re.search(r"Overall exposure level for zbso.service: ([0-9.]+) (\w+)", p.stdout)
        self.assertIsNotNone(m, p.stdout[-2000:] + p.stderr[-2000:])
        self.assertEqual(p.returncode, 0, f"exposure {m.group(1)} over 2.0 (threshold 20 tenths)")
        record_figures("systemd", {"exposure": float(m.group(1)), "rating": m.group(2)})


if __name__ == "__main__":
    unittest.main()
