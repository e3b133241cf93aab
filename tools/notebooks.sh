#!/usr/bin/env bash
# `make notebooks`: executes every notebook in notebooks-export/ and exports it to HTML with its
# figures embedded. The notebooks call podsim through its Python module (build/python), in the
# kernel's own process: no podsim subprocess and no intermediate files.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
export PODSIM_HOME="$PWD"

for nb in notebooks-export/*.ipynb; do
  (cd notebooks-export && jupyter nbconvert --to notebook --execute --inplace "$(basename "$nb")")
  jupyter nbconvert --to html "$nb"
done
echo "notebooks: exported $(ls notebooks-export/*.html | wc -l) HTML files to notebooks-export/"
