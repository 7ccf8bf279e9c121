"""test_checksrc.py: scripts/checksrc.py fails on each rule it enforces and passes clean code
(ctest style/test_checksrc). Each case writes a small C file to a temporary directory and
runs the checker on it. Standard library only."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKSRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "checksrc.py")

CLEAN = """/* clean.c: passes every rule. */
#include <stdio.h>
#include <stdlib.h>

/* strcpy(), sprintf(), atoi() and gets() in a comment are not calls. */
static int my_atoi(const char *s) { return (int)strtol(s, NULL, 10); }

int f(char *out, size_t n, const char *in)
{
    const char *msg = "never strcpy(a, b) or sprintf(x) here";
    char c = '"';
    snprintf(out, n, "%s%c%s", in, c, msg); // vsnprintf( and strtok( in a line comment
    return my_atoi(in) + (int)strtod(in, NULL);
}
"""


class CheckSrcTest(unittest.TestCase):
    maxDiff = None

    def run_on(self, text, name="case.c"):
        with tempfile.TemporaryDirectory(prefix="zbso-checksrc-") as d:
            path = os.path.join(d, name)
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            r = subprocess.run([sys.executable, CHECKSRC, path], capture_output=True, text=True,
                               timeout=60)
        return r.returncode, r.stdout.replace(path, name)

    def assert_flags(self, text, expect):
        rc, out = self.run_on(text)
        self.assertEqual(rc, 1, f"checksrc passed a file it must refuse:\n{text}")
        self.assertIn(expect, out)

    def test_clean_file_passes(self):
        rc, out = self.run_on(CLEAN)
        self.assertEqual((rc, out), (0, ""))

    def test_banned_functions(self):
        for name in ("sprintf", "vsprintf", "strcpy", "strcat", "strncpy", "strncat", "gets",
                     "atoi", "atol", "atoll", "atof", "strtok", "gmtime", "localtime", "ctime",
                     "asctime", "tmpnam", "tempnam", "mktemp", "rand", "srand"):
            with self.subTest(name=name):
                self.assert_flags(f"void g(void)\n{{\n    (void){name} (0);\n}}\n",
                                  f"case.c:3:11: BANNEDFUNC: {name}() is banned")

    def test_banned_after_a_string_with_an_escaped_quote(self):
        self.assert_flags('const char *s = "a\\"b"; int x = atoi(s);\n',
                          "case.c:1:33: BANNEDFUNC: atoi()")

    def test_banned_after_a_block_comment_on_the_line(self):
        self.assert_flags("/* x */ char *p = strcat(a, b);\n", "case.c:1:19: BANNEDFUNC")

    def test_long_line(self):
        self.assert_flags("int x;" + " " * 88 + "/* 101 */\n",
                          "case.c:1:101: LONGLINE: line is 103 columns, over 100")

    def test_line_of_exactly_100_columns_passes(self):
        rc, out = self.run_on("/*" + "x" * 96 + "*/\n")
        self.assertEqual((rc, out), (0, ""))

    def test_tab(self):
        self.assert_flags("int f(void)\n{\n\treturn 0;\n}\n", "case.c:3:1: TABS")

    def test_trailing_whitespace(self):
        self.assert_flags("int x; \n", "case.c:1:7: TRAILINGSPACE")
        self.assert_flags("int x;\r\n", "case.c:1:7: TRAILINGSPACE")

    def test_no_newline_at_end(self):
        self.assert_flags("int x;", "case.c:1:7: NOEOLNL")

    def test_exit_status_2_for_a_missing_file(self):
        r = subprocess.run([sys.executable, CHECKSRC, "/nonexistent/zbso.c"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/zbso.c", r.stderr)


if __name__ == "__main__":
    unittest.main()
