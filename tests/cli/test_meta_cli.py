"""test_meta_cli.py: `zbso version`, `zbso completion SHELL` and the man pages: the version
names the commit and every backend; each completion script loads in its shell (bash:
`complete -p zbso`; zsh: compdef; fish: `complete -C`) and completes commands,
subcommands and flags taken from the --help texts; every man page (built from the same
texts by scripts/manpages.py) renders with `man -l` and holds every flag of its command's
--help. Fails when bash, zsh, fish or man is missing (scripts/setup.sh installs them)."""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ZBSO_BIN = os.environ.get("ZBSO_BIN", "")
MAN_DIR = os.environ.get("ZBSO_MAN_DIR", "")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def need(tool):
    path = shutil.which(tool)
    if path is None:
        raise AssertionError(f"{tool} is not installed (scripts/setup.sh installs it)")
    return path


class TestVersion(unittest.TestCase):
    def test_version(self):
        p = run([ZBSO_BIN, "version"])
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.splitlines()[0]
        self.assertEqual(first, run([ZBSO_BIN, "--version"]).stdout.strip())
        # The commit the binary was built from: a real commit of this checkout (HEAD when
        # built after the last commit), "+dirty" when the tree had changes.
        m = re.search(r"^commit: +([0-9a-f]{12})(\+dirty)?$", p.stdout, re.M)
        self.assertIsNotNone(m, p.stdout)
        r = run(["git", "-C", REPO, "merge-base", "--is-ancestor", m.group(1), "HEAD"])
        self.assertEqual(r.returncode, 0, f"{m.group(1)} is not a commit of HEAD's history")
        for word in ("sqlite (SQLite 3.", "postgresql (libpq ", "mysql/mariadb (MariaDB",
                     "libmicrohttpd 0.", "jansson 2.", "libcurl "):
            self.assertIn(word, p.stdout)
        p = run([ZBSO_BIN, "version", "--bogus"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("unexpected argument '--bogus'", p.stderr)


class TestCompletion(unittest.TestCase):
    def script(self, shell):
        p = run([ZBSO_BIN, "completion", shell])
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(self.tmp, "zbso." + shell)
        with open(path, "w") as f:
            f.write(p.stdout)
        return path

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="zbso-compl-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_bad_shell(self):
        for args, msg in ((["tcsh"], "shell 'tcsh' is not bash, zsh or fish"),
                          ([], "name the shell")):
            p = run([ZBSO_BIN, "completion", *args])
            self.assertEqual(p.returncode, 2)
            self.assertIn(msg, p.stderr)

    def test_bash(self):
        bash = need("bash")
        path = self.script("bash")
        probe = ('source "$1"; complete -p zbso; '
                 'c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _zbso; '
                 'echo "${COMPREPLY[*]}"; }; '
                 'c zbso s; c zbso jobs ""; c zbso run --max; c zbso completion z; '
                 'c zbso run -- --ma')
        p = run([bash, "--norc", "-c", probe, "bash", path])
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0], "complete -o bashdefault -o default -F _zbso zbso")
        self.assertEqual(lines[1], "serve simulate")
        self.assertEqual(lines[2], "ls show trials curve export rm")
        self.assertEqual(lines[3], "--max-tries")
        self.assertEqual(lines[4], "zsh")
        self.assertEqual(lines[5], "")   # after "--": the command's own words, not ours

    def test_zsh(self):
        zsh = need("zsh")
        path = self.script("zsh")
        p = run([zsh, "-f", "-c", 'autoload -Uz compinit; compinit -u -d "$2/zcd"; '
                 'source "$1"; print -r -- "$_comps[zbso]"', "zsh", path, self.tmp])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "_zbso")
        self.assertEqual(run([zsh, "-n", path]).returncode, 0)

    def test_fish(self):
        fish = need("fish")
        path = self.script("fish")
        env = {**os.environ, "PATH": os.path.dirname(ZBSO_BIN) + ":" + os.environ["PATH"],
               "HOME": self.tmp, "XDG_CONFIG_HOME": self.tmp, "XDG_DATA_HOME": self.tmp}
        p = run([fish, "--no-config", "-c",
                 f"source {path}; complete -C 'zbso mon'; complete -C 'zbso jobs '; "
                 "complete -C 'zbso serve --metr'"], env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        words = [line.split("\t")[0] for line in p.stdout.splitlines()]
        self.assertEqual(words[0], "monitor")
        self.assertEqual(sorted(words[1:7]), sorted(["ls", "show", "trials", "curve",
                                                      "export", "rm"]))
        self.assertEqual(words[7:], ["--metrics-per-job"])


class TestManPages(unittest.TestCase):
    def test_each_page_renders_with_every_flag(self):
        man = need("man")
        commands = re.findall(r"^  (\S+) ", run([ZBSO_BIN, "--help"]).stdout.split(
            "commands:")[1], re.M)
        self.assertIn("run", commands)
        pages = sorted(glob.glob(os.path.join(MAN_DIR, "*.1")))
        self.assertEqual(sorted(os.path.basename(p) for p in pages),
                         sorted(["zbso.1"] + [f"zbso-{c}.1" for c in commands]))
        env = {**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "0", "LC_ALL": "C"}
        for page in pages:
            with self.subTest(page=os.path.basename(page)):
                p = run([man, "--warnings", "-l", page], env=env)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stderr, "")
                text = re.sub(r".\x08", "", p.stdout)
                self.assertIn("NAME", text)
                self.assertIn("SEE ALSO", text)
                name = os.path.basename(page)[:-2]
                if name == "zbso":
                    for c in commands:
                        self.assertRegex(text, rf"\n +{c} +")
                    continue
                help_text = run([ZBSO_BIN, name[5:], "--help"]).stdout
                for flag in set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", help_text)):
                    self.assertIn(flag, text)


if __name__ == "__main__":
    unittest.main()
