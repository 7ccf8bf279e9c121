"""test_docs_selftest.py: each check of test_docs.py fails when the thing it checks breaks
(ctest docs/test_docs_selftest). Copies the repository's tracked files to a temporary
directory (no .git there, so test_docs.py walks the files), breaks one thing at a time and
runs the one check that must catch it. Standard library only."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CHECKER = os.path.join(HERE, "test_docs.py")


def tracked():
    out = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], check=True,
                         capture_output=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.isfile(os.path.join(REPO, f))]


class SelfTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="zbso-docs-")
        for rel in tracked():
            dst = os.path.join(cls.tmp, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(os.path.join(REPO, rel), dst)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def run_check(self, name):
        env = dict(os.environ, ZBSO_DOCS_ROOT=self.tmp, PYTHONDONTWRITEBYTECODE="1")
        return subprocess.run([sys.executable, CHECKER, name], env=env, capture_output=True,
                              text=True, timeout=120)

    def broken(self, rel, edit):
        """Applies edit (text -> text) to rel in the copy until the with-block ends."""
        path = os.path.join(self.tmp, rel)
        test = self

        class Ctx:
            def __enter__(self):
                with open(path, encoding="utf-8") as f:
                    self.saved = f.read()
                new = edit(self.saved)
                test.assertNotEqual(new, self.saved, f"the edit changed nothing in {rel}")
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)

            def __exit__(self, *exc):
                with open(path, "w", encoding="utf-8") as f:
                    f.write(self.saved)
        return Ctx()

    def assert_catches(self, check, rel, edit, expect):
        """check passes on the copy, fails with expect in its output once rel is broken."""
        ok = self.run_check(check)
        self.assertEqual(ok.returncode, 0, f"{check} fails on the unbroken copy, which holds "
                         f"the tracked files only (git add new ones):\n{ok.stderr}")
        with self.broken(rel, edit):
            r = self.run_check(check)
        self.assertNotEqual(r.returncode, 0, f"{check} missed a broken {rel}")
        self.assertIn(expect, r.stderr)

    def test_outside_document(self):
        ref = "/* see ../" + "shared/SPEC.md */\n"
        self.assert_catches("CitationTest.test_no_document_outside_the_repository",
                            "src/core/prune.c", lambda t: t + ref, "src/core/prune.c:")

    def test_bare_spec_md_outside_docs(self):
        self.assert_catches("CitationTest.test_no_document_outside_the_repository",
                            "src/core/report.c", lambda t: t + "/* SPEC" + ".md */\n",
                            "not the repository's docs/SPEC.md")

    def test_unknown_spec_section(self):
        self.assert_catches("CitationTest.test_spec_sections_cited_exist",
                            "src/core/prune.c", lambda t: t + "/* SPEC §3.97 */\n",
                            "cites §3.97")

    def test_spec_heading_removed(self):
        self.assert_catches("CitationTest.test_spec_sections_cited_exist",
                            "docs/SPEC.md", lambda t: t.replace("### 3.5 ", "### "),
                            "cites §3.5")

    def test_unknown_seed(self):
        self.assert_catches("CitationTest.test_seeds_cited_have_a_heading",
                            "src/core/prune.c", lambda t: t + "/* seed 005 */\n",
                            "cites seed 005")

    def test_design_path_missing(self):
        self.assert_catches("DesignTableTest.test_paths_exist", "docs/DESIGN.md",
                            lambda t: t.replace("`src/core/prune.c`", "`src/core/pruning.c`"),
                            "src/core/pruning.c does not exist")

    def test_spec_section_without_row(self):
        self.assert_catches("DesignTableTest.test_every_spec_section_has_a_row",
                            "docs/SPEC.md", lambda t: t + "\n### 3.99 Something new\n", "3.99")

    def test_broken_link(self):
        self.assert_catches("MarkdownLinkTest.test_relative_links_resolve", "docs/GPU.md",
                            lambda t: t.replace("(data/GPU-run.log)", "(GPU-run.log)"),
                            "broken link GPU-run.log")

    def test_layout_line_missing(self):
        self.assert_catches("ReadmeLayoutTest.test_layout_lists_every_directory", "README.md",
                            lambda t: t.replace("\nsrc/sim/ ", "\n        "),
                            "src/sim/: missing")

    def test_new_source_directory(self):
        ok = self.run_check("ReadmeLayoutTest.test_layout_lists_every_directory")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        d = os.path.join(self.tmp, "src", "newmod")
        os.makedirs(d)
        try:
            with open(os.path.join(d, "newmod.c"), "w") as f:
                f.write("/* newmod.c */\n")
            r = self.run_check("ReadmeLayoutTest.test_layout_lists_every_directory")
        finally:
            shutil.rmtree(d)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("src/newmod/: missing", r.stderr)


if __name__ == "__main__":
    unittest.main()
