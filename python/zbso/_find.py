"""_find.py: where libzbso.so is looked for, in order, without loading anything.

Shared by zbso._lib (at import) and python/setup.py (which bundles the library into the
package when it is built), so both follow one documented order (python/README.md):

1. $ZBSO_LIBRARY, when set: that file and nothing else.
2. libzbso.so inside the package (bundled by `pip install ./python`).
3. In a source checkout (the package is <repo>/python/zbso): <repo>/build/src/client/
   libzbso.so, then the other <repo>/build*/ directories in name order, skipping every
   sanitizer build (its CMakeCache.txt has ZBSO_SANITIZE:BOOL=ON or -fsanitize in the C
   flags; without a CMakeCache.txt, the library holds AddressSanitizer/UBSan symbols):
   such a library only loads with its runtime preloaded.
4. ctypes.util.find_library("zbso") (a system-wide install).

Standard library only; importing it loads no library."""

import glob
import os

LIBRARY_ENV = "ZBSO_LIBRARY"
LIB_NAME = "libzbso.so"
_REL = os.path.join("src", "client", LIB_NAME)
# Bytes found in a library built with -fsanitize=address or -fsanitize=undefined.
_SANITIZER_MARKS = (b"__asan_init", b"__ubsan_handle_", b"libasan.so", b"libubsan.so")


def package_dir():
    """The directory of the zbso package (this file's)."""
    return os.path.dirname(os.path.abspath(__file__))


def checkout_root(pkg_dir=None):
    """The repository root when pkg_dir (default: this package) is <repo>/python/zbso of a
    zbso source checkout, else None."""
    pkg_dir = pkg_dir or package_dir()
    python_dir = os.path.dirname(pkg_dir)
    repo = os.path.dirname(python_dir)
    if os.path.basename(python_dir) != "python":
        return None
    if not os.path.exists(os.path.join(repo, "include", "zbso", "zbso.h")):
        return None
    return repo


def sanitizer_build(build_dir, lib_path):
    """Why the library lib_path of build directory build_dir is a sanitizer build, or "".
    The build's CMakeCache.txt decides (ZBSO_SANITIZE=ON, or -fsanitize in its C flags);
    without one, the library's own bytes do."""
    cache = os.path.join(build_dir, "CMakeCache.txt")
    try:
        with open(cache, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.upper() == "ZBSO_SANITIZE:BOOL=ON":
                    return f"{cache} says ZBSO_SANITIZE=ON"
                if line.startswith("CMAKE_C_FLAGS") and "-fsanitize" in line:
                    return f"{cache} has -fsanitize in {line.split(':')[0]}"
        return ""
    except OSError:
        pass
    try:
        with open(lib_path, "rb") as f:
            data = f.read()
    except OSError:
        return ""
    for mark in _SANITIZER_MARKS:
        if mark in data:
            return f"it holds {mark.decode()} (built with a sanitizer)"
    return ""


def build_libraries(repo):
    """[(path, why skipped or "")] of <repo>/build*/src/client/libzbso.so that exist:
    build/ first, then the others in name order."""
    dirs = [d for d in glob.glob(os.path.join(repo, "build*")) if os.path.isdir(d)]
    dirs.sort(key=lambda d: (os.path.basename(d) != "build", os.path.basename(d)))
    out = []
    for d in dirs:
        lib = os.path.join(d, _REL)
        if os.path.exists(lib):
            out.append((lib, sanitizer_build(d, lib)))
    return out


def candidates(pkg_dir=None):
    """The search order as [(what, path, why skipped or "")], steps 1-3 (step 4,
    find_library, is the loader's). With $ZBSO_LIBRARY set, only that."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return [(f"${LIBRARY_ENV}", env, "")]
    pkg_dir = pkg_dir or package_dir()
    out = [("inside the package", os.path.join(pkg_dir, LIB_NAME), "")]
    repo = checkout_root(pkg_dir)
    if repo:
        out += [("a build directory of the checkout", p, why) for p, why in build_libraries(repo)]
    return out
