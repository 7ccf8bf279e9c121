"""test_cmake_install.py: `cmake --install BUILD --prefix TMP` puts every part in place: the
zbso binary, libzbso.so with its SONAME links, the public header, a pkg-config file that
a C program compiles and links against (and runs, with LD_LIBRARY_PATH
naming the prefix's library directory), the man pages (man -l renders them from the prefix), the bash, zsh and
fish completions and the Python wheel. Needs the wheel built (the python/wheel_build
fixture) and cc and pkg-config."""

import glob
import os
import shutil
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("ZBSO_BUILD_DIR", "")

PROGRAM = r'''
#include <stdio.h>
#include <zbso/zbso.h>
int main(void) { printf("%s\n", zbso_strerror(ZBSO_ENOTFOUND)); return 0; }
'''


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


class TestCmakeInstall(unittest.TestCase):
    def test_install_tree(self):
        self.assertTrue(os.path.exists(os.path.join(BUILD, "CMakeCache.txt")), BUILD)
        tmp = tempfile.mkdtemp(prefix="zbso-install-")
        self.addCleanup(shutil.rmtree, tmp, True)
        prefix = os.path.join(tmp, "prefix")
        p = run(["cmake", "--install", BUILD, "--prefix", prefix])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        libdir = glob.glob(os.path.join(prefix, "lib*"))
        self.assertEqual(len(libdir), 1, libdir)
        libdir = libdir[0]
        expect = ["bin/zbso", "include/zbso/zbso.h", "share/man/man1/zbso.1",
                  "share/man/man1/zbso-run.1", "share/man/man1/zbso-serve.1",
                  "share/bash-completion/completions/zbso",
                  "share/zsh/vendor-completions/_zbso",
                  "share/fish/vendor_completions.d/zbso.fish"]
        for rel in expect:
            self.assertTrue(os.path.isfile(os.path.join(prefix, rel)), rel)
        self.assertTrue(os.access(os.path.join(prefix, "bin/zbso"), os.X_OK))
        for name in ("libzbso.so", "libzbso.so.0"):
            self.assertTrue(os.path.islink(os.path.join(libdir, name)), name)
        wheels = glob.glob(os.path.join(prefix, "share/zbso/python/zbso-*.whl"))
        self.assertEqual(len(wheels), 1, wheels)
        p = run([os.path.join(prefix, "bin/zbso"), "version"])
        self.assertEqual(p.returncode, 0, p.stderr)
        # pkg-config gives what a C program needs, and the program runs.
        env = {**os.environ, "PKG_CONFIG_PATH": os.path.join(libdir, "pkgconfig")}
        p = run(["pkg-config", "--modversion", "zbso"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout.strip(), r"^\d+\.\d+\.\d+$")
        p = run(["pkg-config", "--cflags", "--libs", "zbso"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        words = [w[:2] + os.path.normpath(w[2:]) if w[:2] in ("-I", "-L") else w
                 for w in p.stdout.split()]
        self.assertIn(f"-I{prefix}/include", words)
        self.assertIn(f"-L{libdir}", words)
        self.assertIn("-lzbso", words)
        src = os.path.join(tmp, "prog.c")
        with open(src, "w") as f:
            f.write(PROGRAM)
        flags = run(["pkg-config", "--cflags", "--libs", "zbso"], env=env).stdout.split()
        p = run(["cc", "-std=c17", "-Wall", "-Werror", src, "-o", os.path.join(tmp, "prog"),
                 *flags])
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run([os.path.join(tmp, "prog")], env={**os.environ, "LD_LIBRARY_PATH": libdir})
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "not found"), p.stderr)
        # man finds the pages under the prefix.
        p = run(["man", "-M", os.path.join(prefix, "share/man"), "-P", "cat", "zbso-run"],
                env={**os.environ, "MANWIDTH": "100"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--max-tries", p.stdout)


if __name__ == "__main__":
    unittest.main()
