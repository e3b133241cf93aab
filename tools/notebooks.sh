#!/usr/bin/env bash
# `make notebooks`: regenerates the data the notebooks plot (with podsim itself), executes every
# notebook in notebooks-export/ and exports it to HTML with its figures embedded.
set -euo pipefail
cd "$(dirname "$0")/.."
podsim=build/podsim
data=notebooks-export/data
mkdir -p "$data"

$podsim validate --suite tests/validation --format json > "$data/validation.json" || true
$podsim sweep configs/sweeps/gpt2-fsdp-slices.yaml --out "$data/sweep-gpt2" --no-progress > "$data/sweep-gpt2.txt"
$podsim run configs/maxtext-22b-fsdp-v4-128.yaml --trace "$data/maxtext-22b.trace.json" --format json \
  > "$data/maxtext-22b.report.json"
$podsim run configs/default.yaml --trace "$data/gpt2-2b.trace.json" --format json > "$data/gpt2-2b.report.json"
for axis in tensor fsdp; do
  $podsim collective --topology tpu-v4 --slice 4x4x4 --mesh fsdp=16,tensor=4 --op all-gather --axis $axis \
    --sweep-bytes 1KiB..4GiB > "$data/collective-v4-4x4x4-$axis.csv"
done
$podsim collective --topology tpu-v4 --slice 2x2x4 --mesh data=4,z=4 --op all-gather --axis z \
  --sweep-bytes 1KiB..4GiB > "$data/collective-v4-2x2x4-line.csv"

for nb in notebooks-export/*.ipynb; do
  (cd notebooks-export && jupyter nbconvert --to notebook --execute --inplace "$(basename "$nb")")
  jupyter nbconvert --to html "$nb"
done
echo "notebooks: exported $(ls notebooks-export/*.html | wc -l) HTML files to notebooks-export/"
