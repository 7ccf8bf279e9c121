"""setup.py: bundles libzbso.so into the zbso package when it is built (pip install ./python),
found as the package finds it at import (zbso/_find.py: $ZBSO_LIBRARY, else the source
checkout's build directory, never a sanitizer build). Without one the package is built
without it and finds the library at import time. The metadata is in pyproject.toml."""

import importlib.util
import os
import shutil

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _finder():
    """zbso/_find.py loaded on its own (importing the zbso package would load the library)."""
    spec = importlib.util.spec_from_file_location("_zbso_find",
                                                  os.path.join(HERE, "zbso", "_find.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_to_bundle():
    """The library the built package ships, or None: $ZBSO_LIBRARY, else the checkout's
    first non-sanitizer build (zbso/_find.py's order without the package itself)."""
    find = _finder()
    for what, path, skipped in find.candidates(os.path.join(HERE, "zbso")):
        if what == "inside the package" or skipped or not os.path.exists(path):
            continue
        return os.path.realpath(path)
    return None


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        lib = library_to_bundle()
        if lib is None:
            self.warn("no libzbso.so to bundle (build it, or set ZBSO_LIBRARY): the package "
                      "will look for it at import time")
            return
        dest = os.path.join(self.build_lib, "zbso", "libzbso.so")
        self.announce(f"bundling {lib} as {dest}", level=2)
        shutil.copyfile(lib, dest)
        os.chmod(dest, 0o755)
        # The guard process that puts GPU power limits back if the script is killed
        # (SPEC 6.1): libzbso looks for it beside itself. The build tree keeps it in
        # src/power, the library in src/client.
        guard = os.path.join(os.path.dirname(os.path.dirname(lib)), "power", "zbso-guard")
        if os.path.exists(guard):
            shutil.copyfile(guard, os.path.join(self.build_lib, "zbso", "zbso-guard"))
            os.chmod(os.path.join(self.build_lib, "zbso", "zbso-guard"), 0o755)
        else:
            self.warn(f"no {guard} to bundle: the power-limit optimizer will look for "
                      "zbso-guard at run time (ZBSO_GUARD)")


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: tag it for this platform, not py3-none-any."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPyWithLibrary}
try:  # setuptools >= 70.1 has its own; older ones use the wheel package's (Debian 12)
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

if bdist_wheel is not None:
    class BdistWheelAnyPython(bdist_wheel):
        """py3-none-<platform>: the library is loaded by ctypes, not linked against a
        Python ABI, so one wheel serves every CPython >= 3.9 of the platform."""

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = BdistWheelAnyPython

setup(cmdclass=cmdclass, distclass=BinaryDistribution)
