#!/usr/bin/env bash
# CTest `install`: podsim as a user installs it, away from the source tree.
#  1. `cmake --install` into a temporary prefix ships the data (PREFIX/share/podsim), and the
#     installed CLI runs the default config from an empty directory, with the numbers of the build
#     tree's podsim; an unknown model names where it looked and PODSIM_HOME.
#  2. `pip install .` into a fresh virtual environment, offline, with no build isolation, for each
#     interpreter that can build offline (setuptools and wheel; Debian: python3-setuptools
#     python3-wheel): `import podsim` runs the default config from an empty directory.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR WORK_DIR PYTHON...
# WORK_DIR keeps a copy of the Python build between runs (an incremental rebuild); the prefix and
# the environments live in a temporary directory outside any podsim tree.
set -euo pipefail
build=$1 source=$2 work=$3
shift 3
unset PODSIM_HOME
tmp=$(mktemp -d /tmp/podsim-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# --- 1. cmake --install
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > /dev/null
for f in bin/podsim share/podsim/models/gpt2-2b.yaml share/podsim/topologies/tpu-v4.yaml \
         share/podsim/configs/default.yaml share/podsim/configs/sweeps/gpt2-fsdp-slices.yaml; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
mkdir "$tmp/empty" && cd "$tmp/empty"
"$prefix/bin/podsim" run --format json > "$tmp/installed.json" || fail "installed podsim run"
"$build/podsim" run "$source/configs/default.yaml" --format json > "$tmp/built.json"
cmp -s "$tmp/installed.json" "$tmp/built.json" || fail "installed podsim's default report differs from the build's"
"$prefix/bin/podsim" run > "$tmp/installed.txt"
grep -q "^podsim: gpt2-2b-fsdp-v4-8$" "$tmp/installed.txt" || fail "installed podsim run: $(head -3 "$tmp/installed.txt")"
# Bare names in a config outside any podsim tree resolve against the installed data.
sed 's/^name: .*/name: elsewhere/' "$source/configs/default.yaml" > "$tmp/empty/mine.yaml"
"$prefix/bin/podsim" check mine.yaml > /dev/null || fail "installed podsim check of a config outside the tree"
# An unknown model: exit 2, and the message says where podsim looked, never the source tree.
sed 's/^model: .*/model: gpt2-nonesuch/' mine.yaml > unknown.yaml
set +e
"$prefix/bin/podsim" check unknown.yaml > "$tmp/unknown.txt" 2>&1
code=$?
set -e
[ "$code" = 2 ] || fail "unknown model: exit $code, expected 2"
grep -q "unknown model 'gpt2-nonesuch'.*looked in $prefix/share/podsim;.*PODSIM_HOME" "$tmp/unknown.txt" ||
  fail "unknown model message: $(cat "$tmp/unknown.txt")"
! grep -q "$source" "$tmp/unknown.txt" || fail "the installed podsim looked in the source tree: $(cat "$tmp/unknown.txt")"
# The module that cmake --install put under the prefix finds the same data from its own location.
site=$(find "$prefix/lib" -name '_podsim*.so' -printf '%h\n' | head -1)
build_python=$(sed -n 's/^Python_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")
if [ -n "$site" ] && [ -n "$build_python" ]; then
  PYTHONPATH=$(dirname "$site") "$build_python" -c "
import json, sys, podsim
assert podsim.__file__.startswith('$prefix'), podsim.__file__
assert podsim.run() == json.load(open('$tmp/built.json'))" || fail "the module installed by cmake --install"
fi
echo "cmake --install: the installed podsim runs the default config from an empty directory"

# --- 2. pip install . into fresh virtual environments
# A copy of the files `pip install .` needs, under WORK_DIR; its build-python/ (CMake's build) is
# kept across runs.
src=$work/src
mkdir -p "$src"
find "$src" -mindepth 1 -maxdepth 1 ! -name build-python -exec rm -rf {} +
for f in CMakeLists.txt setup.py pyproject.toml README.md cmake sim python bench models topologies configs; do
  cp -a "$source/$f" "$src/"
done
tested=0
seen=" "
for python in "$@"; do
  real=$(readlink -f "$(command -v "$python" || true)" || true)
  [ -n "$real" ] || { echo "skipped: no interpreter $python"; continue; }
  case "$seen" in *" $real "*) continue ;; esac
  seen="$seen$real "
  env=$tmp/venv-$(basename "$real")
  "$real" -m venv --system-site-packages "$env"
  if ! "$env/bin/python" -c "import setuptools, wheel, pip" 2> /dev/null; then
    echo "skipped: $python ($real) cannot build offline: its environment lacks setuptools or wheel"
    continue
  fi
  # Offline and alone: no index, no find-links of a pip config.
  PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    "$env/bin/pip" install --no-build-isolation --no-deps "$src" > "$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install . with $python"; }
  cd "$tmp/empty"
  "$env/bin/python" - "$tmp/built.json" <<'PY' || fail "import podsim with $python"
import json, os, sys
import podsim
assert os.path.realpath(podsim.__file__).startswith(os.path.realpath(sys.prefix)), podsim.__file__
report = podsim.run()
built = json.load(open(sys.argv[1]))
assert report == built, "the installed module's default report differs from the build's podsim"
assert podsim.check()["name"] == "gpt2-2b-fsdp-v4-8"
try:
    podsim.run({"schema": "podsim.run/v1", "model": "gpt2-nonesuch", "topology": "tpu-v4",
                "slice": "2x2x1", "training": {"global_batch": 8}})
    raise AssertionError("an unknown model was accepted")
except podsim.ConfigError as e:
    package = os.path.dirname(os.path.realpath(podsim.__file__))
    assert "PODSIM_HOME" in str(e) and f"looked in {package}" in str(e), str(e)
print(f"{sys.executable}: podsim {report['name']}, step {report['step_time_s']:.3f} s")
PY
  tested=$((tested + 1))
done
[ "$tested" -gt 0 ] || { echo "SKIPPED: no interpreter could build the module offline (apt install python3-venv python3-setuptools python3-wheel)"; exit 77; }
echo "pip install .: the installed module runs the default config from an empty directory ($tested interpreter(s))"
