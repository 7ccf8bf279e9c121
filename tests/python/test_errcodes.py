"""python/zbso/_lib.py copies the error codes and size limits of include/zbso/zbso.h by hand;
this test fails when the copy drifts from the header or from the library's zbso_strerror."""

import os
import re
import unittest

import support

HEADER = os.path.join(support.REPO, "include", "zbso", "zbso.h")


def header_codes():
    """{name without ZBSO_: value} of enum zbso_error in include/zbso/zbso.h."""
    with open(HEADER, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"enum zbso_error\s*\{(.*?)\};", text, re.DOTALL)
    if not m:
        raise AssertionError(f"{HEADER}: no enum zbso_error")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.DOTALL)
    codes = {}
    for name, value in re.findall(r"ZBSO_([A-Z0-9_]+)\s*=\s*(-?\d+)", body):
        codes[name] = int(value)
    entries = [e for e in (x.strip() for x in body.split(",")) if e]
    if len(codes) != len(entries):
        raise AssertionError(f"{HEADER}: every enumerator of zbso_error needs an explicit "
                             f"value; parsed {len(codes)} of {len(entries)}: {entries}")
    return codes


def header_define(name):
    with open(HEADER, encoding="utf-8") as f:
        m = re.search(r"^#define\s+" + name + r"\s+(\d+)\b", f.read(), re.MULTILINE)
    if not m:
        raise AssertionError(f"{HEADER}: no #define {name}")
    return int(m.group(1))


class TestErrorCodes(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(os.environ.get("ZBSO_LIBRARY", "")):
            raise AssertionError("set ZBSO_LIBRARY to the built libzbso.so")
        from zbso import _lib
        cls.lib = _lib
        cls.codes = header_codes()

    def python_codes(self):
        return {k: v for k, v in vars(self.lib).items()
                if re.fullmatch(r"OK|E[A-Z]+", k) and isinstance(v, int)}

    def test_python_codes_are_the_headers(self):
        self.assertEqual((self.codes.get("OK"), self.codes.get("EINVAL")), (0, -1),
                         f"{HEADER}: enum zbso_error not parsed")
        self.assertEqual(self.python_codes(), self.codes,
                         "python/zbso/_lib.py's error codes differ from enum zbso_error")

    def test_size_limits_are_the_headers(self):
        self.assertEqual(self.lib.ERRBUF_MAX, header_define("ZBSO_ERRBUF_MAX"))
        self.assertEqual(self.lib.MAX_GPUS, header_define("ZBSO_MAX_GPUS"))
        self.assertEqual(self.lib.MAX_CPUS, header_define("ZBSO_MAX_CPUS"))

    def test_library_names_every_code(self):
        names = {}
        for name, value in self.codes.items():
            text = self.lib.text(self.lib.strerror(value))
            self.assertNotEqual(text, "unknown error",
                                f"zbso_strerror(ZBSO_{name} = {value}) does not know the code")
            names[text] = names.get(text, []) + [name]
        dups = {t: n for t, n in names.items() if len(n) > 1}
        self.assertEqual(dups, {}, "zbso_strerror gives several codes one name")

    def test_library_knows_no_other_code(self):
        lo = min(self.codes.values())
        for value in range(lo - 64, 65):
            if value in self.codes.values():
                continue
            self.assertEqual(self.lib.text(self.lib.strerror(value)), "unknown error",
                             f"zbso_strerror knows code {value}, which enum zbso_error "
                             "and python/zbso/_lib.py lack")

    def test_exceptions_map_only_known_codes(self):
        from zbso.optimizer.batch_size import exceptions
        unknown = set(exceptions._BY_CODE) - set(self.codes.values())
        self.assertEqual(unknown, set(), "exceptions.py maps codes zbso.h does not define")


if __name__ == "__main__":
    unittest.main()
