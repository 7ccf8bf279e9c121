"""deploy/deb: deploy/debian/build-deb.sh packages this build (the zbso binary,
libzbso.so, the header, the systemd unit, /etc/zbso/zbso.env, and the man pages and shell
completions that `cmake --install` installs, at Debian's paths; `man -l` renders a page
taken out of the package); the package is installed with apt-get in a scratch Debian 12
root (a container of the base image, so apt fetches exactly the Depends that
dpkg-shlibdeps wrote), `zbso --version` runs, and removing then purging it leaves none of
its files."""

import os
import re
import tempfile
import unittest

from deployutil import (BASE_IMAGE, SRC, build_dir, podman, record_figures, require_tools,
                        run, unique)

FILES = ["/usr/bin/zbso", "/usr/include/zbso/zbso.h", "/lib/systemd/system/zbso.service",
         "/etc/zbso/zbso.env", "/usr/libexec/zbso/zbso-guard",
         "/usr/share/bash-completion/completions/zbso",
         "/usr/share/zsh/vendor-completions/_zbso",
         "/usr/share/fish/vendor_completions.d/zbso.fish"]
# The base image keeps /usr/share/man out of every install (path-exclude, as the official
# slim image does), so the pages are checked in the package, not in the container.
MAN_PAGES = [f"/usr/share/man/man1/{p}.1.gz" for p in ("zbso", "zbso-serve", "zbso-run")]


class DebTest(unittest.TestCase):
    def test_build_install_remove(self):
        require_tools("dpkg-deb", "dpkg-shlibdeps", "podman", "man")
        out = os.path.join(build_dir(), "deploy")
        deb = run([os.path.join(SRC, "deploy", "debian", "build-deb.sh"), build_dir(), out],
                  timeout=120).stdout.strip().splitlines()[-1]
        self.assertTrue(deb.endswith(".deb") and os.path.isfile(deb), deb)
        info = run(["dpkg-deb", "--info", deb]).stdout
        for dep in ("libmicrohttpd12", "libjansson4", "libsqlite3-0", "libpq5", "libcurl4"):
            self.assertRegex(info, rf"Depends:.*\b{dep}\b")
        listing = run(["dpkg-deb", "--contents", deb]).stdout
        for path in FILES + MAN_PAGES + ["/usr/lib/x86_64-linux-gnu/libzbso.so.0"]:
            self.assertIn("." + path, listing)
        # One page per command of the build, none left out.
        pages = sorted(f[:-2] for f in os.listdir(os.path.join(build_dir(), "man"))
                       if f.endswith(".1"))
        self.assertEqual(sorted(re.findall(r"\./usr/share/man/man1/(\S+)\.1\.gz$", listing,
                                           re.M)), pages)
        with tempfile.TemporaryDirectory(prefix="zbso-deb-") as tmp:
            run(["dpkg-deb", "--extract", deb, tmp])
            p = run(["man", "-l", "-P", "cat",
                     os.path.join(tmp, "usr/share/man/man1/zbso-run.1.gz")])
            self.assertRegex(p.stdout, r"zbso-run\s+-\s+run a training command")
            self.assertIn("--max-tries", p.stdout)
        self.assertEqual(run(["dpkg-deb", "--field", deb, "Package"]).stdout.strip(), "zbso")

        name = os.path.basename(deb)
        check_gone = " && ".join(f"test ! -e {p}" for p in FILES)
        script = "\n".join([
            "set -eux",
            "export DEBIAN_FRONTEND=noninteractive",
            "apt-get update -qq",
            f"apt-get install -y -qq /debs/{name} >/dev/null",
            "zbso --version",
            "ldconfig -p | grep -q 'libzbso.so.0 '",
            "test -f /usr/include/zbso/zbso.h",
            "test -s /usr/share/bash-completion/completions/zbso",
            "test \"$(stat -c %a /etc/zbso/zbso.env)\" = 600",
            "dpkg-query -W -f '${Status}\\n' zbso",
            "apt-get remove -y -qq zbso >/dev/null",
            # A removed package keeps its conffile until purged.
            "test -e /etc/zbso/zbso.env && test ! -e /usr/bin/zbso",
            "apt-get purge -y -qq zbso >/dev/null",
            check_gone,
            "test ! -e /usr/lib/x86_64-linux-gnu/libzbso.so.0",
            "! dpkg-query -W zbso 2>/dev/null",
            "echo removed-clean",
        ])
        p = podman("run", "--rm", "--name", unique("deb"), "--network", "host",
                   "-v", f"{os.path.dirname(deb)}:/debs:ro", BASE_IMAGE, "sh", "-c", script,
                   timeout=300)
        self.assertRegex(p.stdout, r"(?m)^zbso \d+\.\d+\.\d+")
        self.assertIn("install ok installed", p.stdout)
        self.assertIn("removed-clean", p.stdout)
        size = int(re.search(r"Installed-Size: (\d+)", info).group(1))
        record_figures("deb", {"deb_bytes": os.path.getsize(deb), "installed_kb": size})


if __name__ == "__main__":
    unittest.main()
