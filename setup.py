"""Builds the Python module `podsim` with CMake for `pip install .` (see pyproject.toml).

The extension _podsim is the CMake target of python/CMakeLists.txt, built against the Python that
runs pip; the package gets models/, topologies/ and configs/ beside it, where the extension looks
for them (sim/config/search_paths.cpp), so the installed module needs no source tree.

CMake builds in build-python/ of the checkout and later installs reuse it. The environment's
CMAKE_CXX_COMPILER_LAUNCHER (ccache) and CMAKE_BUILD_PARALLEL_LEVEL apply as for any CMake build.
"""

import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent
DATA_DIRS = ("models", "topologies", "configs")


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = ROOT / "build-python"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     "-DPODSIM_BUILD_TESTS=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
        cache = build_dir / "CMakeCache.txt"
        # Another interpreter than the last build's: configure afresh (objects are kept).
        if cache.exists() and f"Python_EXECUTABLE:FILEPATH={sys.executable}\n" not in cache.read_text():
            configure.append("--fresh")
        subprocess.run(configure, check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "_podsim", "--parallel", jobs],
                       check=True)
        built = sorted((build_dir / "python" / "podsim").glob("_podsim*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one _podsim extension in {build_dir}/python/podsim, found {built}")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


class BuildPyWithData(build_py):
    """The pure-Python package plus podsim's data files, inside the package."""

    def run(self):
        super().run()
        package = pathlib.Path(self.build_lib) / "podsim"
        for name in DATA_DIRS:
            shutil.rmtree(package / name, ignore_errors=True)
            shutil.copytree(ROOT / name, package / name)


setup(
    packages=["podsim"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("podsim._podsim")],
    cmdclass={"build_ext": CMakeBuild, "build_py": BuildPyWithData},
    # setuptools' own build tree goes beside CMake's, not into a CMake build/ of the checkout.
    options={"build": {"build_base": str(ROOT / "build-python" / "setuptools")}},
    zip_safe=False,
)
