#!/usr/bin/env bash
# Runs every libFuzzer target of a PODSIM_FUZZ build for SECONDS each, FUZZ_JOBS at a time (default:
# one per core), and prints the executions per target. Exit status 1 when any target found a crash, a sanitizer
# report, an input over 10 s or over 2 GB (the reproducer is kept under BUILD/fuzz/artifacts/).
#
#   tests/fuzz/run-fuzzers.sh BUILD SECONDS [TARGET...]     (make fuzz FUZZ_SECONDS=...)
#
# Corpora: BUILD/fuzz/corpus/TARGET collects what the fuzzer finds interesting and is kept between
# runs; seeds come from the shipped configs, models, topologies, tests/validation and tests/data
# (decompressed where gzipped) and from tests/fuzz/regressions.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: run-fuzzers.sh BUILD SECONDS [TARGET...]}
seconds=${2:?usage: run-fuzzers.sh BUILD SECONDS [TARGET...]}
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(run_config whole_run dump resume model topology sweep validation profile chrome_trace xplane
           hlo_op_stats xla_metrics nvtx chakra pod_viewer hlo_proto hlo)
fi
work=$build/fuzz
seeds=$work/seeds
rm -rf "$seeds"
mkdir -p "$seeds" "$work/artifacts" "$work/logs"

seed() {  # seed TARGET FILE...
  mkdir -p "$seeds/$1"
  local target=$1
  shift
  local f
  for f in "$@"; do
    # The 6,144-chip PaLM step takes seconds even optimised; under ASan it would trip the 10 s limit.
    # So does the whole run of 10 million steps of random lengths (0.9 s optimised, 14 s under ASan:
    # it simulates a program for each of about a thousand lengths before it refuses the run's time).
    # CTest still replays both under the sanitizers, without a time limit.
    case "$f" in *palm-540b* | *wholerun_default_10M_steps_uniform_lengths*) continue ;; esac
    cp "$f" "$seeds/$target/$(basename "$(dirname "$f")")__$(basename "$f")"
  done
}
seed run_config configs/*.yaml tests/validation/*.yaml
seed whole_run configs/*.yaml tests/validation/*.yaml tests/fuzz/regressions/run_config/*
seed dump configs/*.yaml tests/fuzz/regressions/run_config/*
seed model models/*.yaml
seed topology topologies/*.yaml
seed sweep configs/sweeps/*.yaml
[ -d tests/data/sweeps ] && compgen -G "tests/data/sweeps/*" >/dev/null && seed sweep tests/data/sweeps/*
seed validation tests/validation/*.yaml tests/validation/collectives/*.yaml
seed profile tests/data/*.*
seed xplane tests/data/*.xplane.pb
seed hlo_op_stats tests/data/*.csv
seed xla_metrics tests/data/pytorch_xla_metrics_*.txt
seed pod_viewer tests/data/*.pod_viewer.json
mkdir -p "$seeds/chrome_trace" "$seeds/nvtx" "$seeds/chakra" "$seeds/hlo_proto"
zcat tests/data/hta__nccl_data.json.gz > "$seeds/chrome_trace/hta__nccl_data.json"
zcat tests/data/jaxtoolbox__pax_fsdp4_proc0__nvtx_gpu_proj_trace.csv.gz > "$seeds/nvtx/nvtx_gpu_proj_trace.csv"
tar -xzf tests/data/chakra__feeder_tests_trace.tar.gz -C "$seeds/chakra"
find "$seeds/chakra" -type f ! -name '*.et' -delete
# The compiled module is 6.5 MB: its first 64 KiB (the fuzzing length limit) start the HloProto.
zcat tests/data/*.hlo.pb.gz | head -c 65536 > "$seeds/hlo_proto/module.hlo.pb" || true
# Compiled modules as text: the small fixture whole is 500 KB; its first 64 KiB (header, stack-frame
# tables, the first fused computations) and the public samples' openings.
mkdir -p "$seeds/hlo"
zcat tests/data/xla-truth/hlo/tiny-minimal-dot.hlo.txt.gz | head -c 65536 > "$seeds/hlo/tiny.hlo" || true
for f in tests/data/xla__hlo_*.hlo; do head -c 65536 "$f" > "$seeds/hlo/$(basename "$f")"; done
# podsim's own trace of a small config: a valid Chrome trace small enough to mutate whole.
podsim_bin=$(find "$build" -maxdepth 1 -name podsim -type f | head -1)
if [ -n "$podsim_bin" ]; then
  "$podsim_bin" run configs/vit-cifar-mesh-8x1-b128.yaml --trace "$seeds/chrome_trace/podsim_trace.json" >/dev/null
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
jobs=${FUZZ_JOBS:-$(nproc)}
# One target: its line of the table in $work/logs/TARGET.result, and the log's findings after it.
run_target() {
  local t=$1
  local bin=$build/tests/fuzz/podsim_fuzz_$t
  local corpus=$work/corpus/$t
  mkdir -p "$corpus"
  local dirs=("$corpus")
  [ -d "$seeds/$t" ] && dirs+=("$seeds/$t")
  [ -d tests/fuzz/regressions/$t ] && dirs+=("tests/fuzz/regressions/$t")
  local max_len
  case $t in
    profile|chrome_trace|xplane|hlo_op_stats|xla_metrics|nvtx|chakra|pod_viewer|hlo_proto|hlo)
      dirs+=(tests/fuzz/regressions/profile); max_len=65536 ;;
    *) max_len=8192 ;;
  esac
  local log=$work/logs/$t.log
  local status=ok
  "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=$max_len \
    -print_final_stats=1 -artifact_prefix="$work/artifacts/$t-" "${dirs[@]}" >"$log" 2>&1 || status=FOUND
  local runs took rate
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  took=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  took=${took:-$seconds}
  rate=$(( ${runs:-0} / (took > 0 ? took : 1) ))
  {
    printf '%-14s %8s %12s %9s %8s  %s\n' "$t" "$took" "${runs:-?}" "$rate" "$(ls "$corpus" | wc -l)" "$status"
    if [ "$status" != ok ]; then
      grep -E 'ERROR|SUMMARY|runtime error|deadly signal|timeout|out-of-memory|Test unit written' "$log" | head -8 | sed 's/^/    /'
    fi
  } >"$work/logs/$t.result"
}

for t in "${targets[@]}"; do
  [ -x "$build/tests/fuzz/podsim_fuzz_$t" ] || { echo "$build/tests/fuzz/podsim_fuzz_$t: not built (configure with -DPODSIM_FUZZ=ON)"; exit 2; }
done
# FUZZ_JOBS targets at a time (default: one per core), each for SECONDS.
running=0
for t in "${targets[@]}"; do
  rm -f "$work/logs/$t.result"
  run_target "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
failed=()
printf '%-14s %8s %12s %9s %8s  %s\n' target seconds executions exec/s corpus result
for t in "${targets[@]}"; do
  cat "$work/logs/$t.result"
  grep -q ' ok$' <(head -1 "$work/logs/$t.result") || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found defects in: ${failed[*]} (logs in $work/logs, reproducers in $work/artifacts)"
  exit 1
fi
