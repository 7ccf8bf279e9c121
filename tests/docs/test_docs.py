"""test_docs.py: keeps the documents in the repository true to the code (ctest docs/test_docs).

Fails when a file cites a document outside the repository, when a "SPEC §n" citation names
a section docs/SPEC.md lacks, when a "seed 00n" citation names a seed docs/ZEUS.md lacks,
when a path in docs/DESIGN.md's SPEC table does not exist or a SPEC section has no row there,
when a relative link in a Markdown page is broken, and when README.md's layout block does
not list exactly the directories of the repository. Standard library only.

ZBSO_DOCS_ROOT overrides the repository root (the self-tests point it at a broken copy)."""

import os
import re
import subprocess
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ZBSO_DOCS_ROOT") or os.path.dirname(os.path.dirname(HERE))

# Trees whose text files are scanned for citations. Fuzz inputs and trace data are bytes,
# not prose; docs/data holds raw program output; tests/docs holds these checks and their
# self-tests, which spell the patterns out.
SCANNED = ("src/", "include/", "tests/", "python/", "bench/", "fuzz/", "scripts/", "docs/",
           ".ci/", "README.md", "CMakeLists.txt")
NOT_SCANNED = ("fuzz/corpus/", "fuzz/regressions/", "docs/data/", "tests/testdata/",
               "tests/docs/")

# Documents that live outside the repository.
SHARED = "shared"
OUTSIDE = [
    (re.compile(r"\.\./" + SHARED + r"\b"), "a path into ../" + SHARED),
    (re.compile(r"/work/" + SHARED + r"\b"), "an absolute path into the project's " + SHARED
     + " folder"),
    (re.compile(r"\b" + SHARED + r"/(?:SPEC|STYLE)\.md"), "a document of the " + SHARED
     + " folder"),
    (re.compile(r"\b" + SHARED + r"/(?:seeds|traces|testdata|hooks)\b"),
     "a folder outside the repository (in-repo: docs/ZEUS.md, data/traces, tests/testdata)"),
    (re.compile(r"\bseeds/\d{3}"), "a seed page file (cite \"seed 00n\": docs/ZEUS.md)"),
]
SPEC_MD = re.compile(r"(?<![\w/.-])(\.\./)?SPEC\.md")
STYLE_MD = re.compile(r"(?<![\w/.-])STYLE\.md")

SECTION_REF = re.compile(r"§\s*(\d+(?:\.\d+)*)(?:\s*-\s*(\d+(?:\.\d+)*))?")
# Seed pages are numbered 000-004; "seed 123456" is a random seed, not a page.
SEED_REF = re.compile(r"\bseeds?\s+(00\d(?:\s*(?:/|,|and|or)\s*00\d)*)\b", re.IGNORECASE)
HEADING_NUM = re.compile(r"^#{2,6}\s+(\d+(?:\.\d+)*)\.?\s", re.MULTILINE)
HEADING_SEED = re.compile(r"^#{2,6}\s+seed\s+(\d{3})\b", re.MULTILINE | re.IGNORECASE)
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")


def tracked_files():
    """Repository-relative paths of the tracked files (every file when git is missing)."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
        if files:
            return [f for f in files if os.path.exists(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        pass
    found = []
    for d, dirs, names in os.walk(ROOT):
        dirs[:] = [x for x in dirs if not x.startswith((".git", "build", "__pycache__"))]
        found += [os.path.relpath(os.path.join(d, n), ROOT) for n in names]
    return found


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def scanned_texts():
    """(path, text) of every scanned text file."""
    for rel in sorted(tracked_files()):
        if not rel.startswith(SCANNED) or rel.startswith(NOT_SCANNED):
            continue
        try:
            yield rel, read(rel)
        except UnicodeDecodeError:
            continue


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def spec_sections():
    return set(HEADING_NUM.findall(read("docs/SPEC.md")))


class CitationTest(unittest.TestCase):
    maxDiff = None

    def test_no_document_outside_the_repository(self):
        bad = []
        style_in_repo = os.path.exists(os.path.join(ROOT, "docs", "STYLE.md"))
        for rel, text in scanned_texts():
            in_docs = rel.startswith("docs/")
            for rx, what in OUTSIDE:
                for m in rx.finditer(text):
                    bad.append(f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}: {what}")
            for m in SPEC_MD.finditer(text):
                # docs/*.md link SPEC.md next to them; everything else names docs/SPEC.md.
                if m.group(1) or not in_docs:
                    bad.append(f"{rel}:{line_of(text, m.start())}: {m.group(0)!r}: "
                               "not the repository's docs/SPEC.md")
            for m in STYLE_MD.finditer(text):
                if not style_in_repo:
                    bad.append(f"{rel}:{line_of(text, m.start())}: STYLE.md is not in "
                               "the repository")
        self.assertEqual(bad, [], "citations of documents outside the repository:\n"
                         + "\n".join(bad))

    def test_spec_sections_cited_exist(self):
        have = spec_sections()
        self.assertIn("3.2", have, "docs/SPEC.md has no numbered headings")
        bad = []
        for rel, text in scanned_texts():
            for m in SECTION_REF.finditer(text):
                for num in filter(None, m.groups()):
                    if num not in have:
                        bad.append(f"{rel}:{line_of(text, m.start())}: cites §{num}, which "
                                   "docs/SPEC.md has no heading for")
        self.assertEqual(bad, [], "\n".join(bad))

    def test_seeds_cited_have_a_heading(self):
        have = set(HEADING_SEED.findall(read("docs/ZEUS.md")))
        self.assertEqual(have, {"000", "001", "002", "003", "004"},
                         "docs/ZEUS.md must have one heading per seed page")
        bad = []
        for rel, text in scanned_texts():
            for m in SEED_REF.finditer(text):
                for num in re.findall(r"00\d", m.group(1)):
                    if num not in have:
                        bad.append(f"{rel}:{line_of(text, m.start())}: cites seed {num}, "
                                   "which docs/ZEUS.md has no heading for")
        self.assertEqual(bad, [], "\n".join(bad))


class DesignTableTest(unittest.TestCase):
    maxDiff = None

    def rows(self):
        text = read("docs/DESIGN.md")
        start = text.find("## SPEC sections, files and tests")
        self.assertGreaterEqual(start, 0, "docs/DESIGN.md lacks its SPEC table section")
        rows = []
        for line in text[start:].splitlines()[1:]:
            if line.startswith("## "):
                break
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("|") and len(cells) == 3 and cells[0].startswith("§"):
                rows.append(cells)
        return rows

    def test_paths_exist(self):
        rows = self.rows()
        self.assertGreater(len(rows), 10)
        bad = []
        for first, files, tests in rows:
            for cell in (files, tests):
                paths = CODE_SPAN.findall(cell)
                if not paths and "not built" not in cell:
                    bad.append(f"{first}: a cell with neither paths nor 'not built': {cell!r}")
                for p in paths:
                    if not os.path.exists(os.path.join(ROOT, p)):
                        bad.append(f"{first}: {p} does not exist")
        self.assertEqual(bad, [], "docs/DESIGN.md SPEC table:\n" + "\n".join(bad))

    def test_every_spec_section_has_a_row(self):
        covered = {re.match(r"§(\d+(?:\.\d+)*)", r[0]).group(1) for r in self.rows()}
        missing = sorted(spec_sections() - covered)
        self.assertEqual(missing, [], "SPEC sections without a row in docs/DESIGN.md's table")


class MarkdownLinkTest(unittest.TestCase):
    maxDiff = None

    def test_relative_links_resolve(self):
        bad = []
        for rel in sorted(tracked_files()):
            if not rel.endswith(".md"):
                continue
            text = read(rel)
            for m in MD_LINK.finditer(text):
                target = m.group(1).split("#")[0]
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                if not os.path.exists(os.path.join(ROOT, os.path.dirname(rel), target)):
                    bad.append(f"{rel}:{line_of(text, m.start())}: broken link {target}")
        self.assertEqual(bad, [], "\n".join(bad))


# Top-level directories whose subdirectories README's layout lists one by one.
EXPANDED = ("src", "tests")


def expected_layout():
    dirs = set()
    for rel in tracked_files():
        parts = rel.split("/")
        if len(parts) < 2 or parts[0].startswith("."):
            continue
        if parts[0] in EXPANDED and len(parts) >= 3:
            dirs.add(parts[0] + "/" + parts[1] + "/")
        elif parts[0] not in EXPANDED:
            dirs.add(parts[0] + "/")
    return dirs


def readme_layout():
    text = read("README.md")
    m = re.search(r"^## Layout\n+```\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    if not m:
        return None
    return [line.split()[0] for line in m.group(1).splitlines()
            if line and not line[0].isspace() and line.split()[0].endswith("/")]


class ReadmeLayoutTest(unittest.TestCase):
    maxDiff = None

    def test_layout_lists_every_directory(self):
        entries = readme_layout()
        self.assertIsNotNone(entries, "README.md has no '## Layout' section with a code block")
        bad = [f"{e}: no such directory" for e in entries
               if not os.path.isdir(os.path.join(ROOT, e))]
        listed = set()
        for e in entries:
            parts = e.rstrip("/").split("/")
            depth = 2 if parts[0] in EXPANDED else 1
            listed.add("/".join(parts[:depth]) + "/")
        want = expected_layout()
        bad += [f"{d}: missing from README.md's layout" for d in sorted(want - listed)]
        bad += [f"{d}: listed in README.md's layout, but it is not a directory with tracked "
                f"files (or, under {'/, '.join(EXPANDED)}/, not a subdirectory)"
                for d in sorted(listed - want)]
        self.assertEqual(bad, [], "\n".join(bad))


if __name__ == "__main__":
    unittest.main()
