#!/usr/bin/env bash
# CTest `cluster-examples`: runs the Slurm scripts and the Kubernetes Jobs' commands of docs/cluster/
# as the schedulers would (their environment variables set by hand, one task after another) on a
# 6-config sweep, and checks that the merged results equal an unsharded run.
# Usage: cluster_examples_test.sh PODSIM_BINARY SOURCE_DIR WORK_DIR
set -euo pipefail
podsim=$1 source=$2 work=$3
sweep=$source/configs/sweeps/vit-cifar-mesh.yaml
docs=$source/docs/cluster
rm -rf "$work" && mkdir -p "$work"
unset SLURM_ARRAY_TASK_ID SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_COUNT JOB_COMPLETION_INDEX
"$podsim" sweep "$sweep" --out "$work/whole" --no-progress > /dev/null

# Slurm: sbatch --array=0-2, then the merge job.
for id in 0 1 2; do
  SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=2 SLURM_ARRAY_TASK_COUNT=3 \
    SLURM_CPUS_PER_TASK=2 PODSIM=$podsim bash "$docs/podsim-sweep.sbatch" "$sweep" "$work/slurm" > /dev/null 2>&1
done
PODSIM=$podsim bash "$docs/podsim-merge.sbatch" "$sweep" "$work/slurm" > /dev/null
cmp "$work/whole/results.csv" "$work/slurm/merged/results.csv"
# A lost task makes the merge fail and name it.
rm -rf "$work/slurm/shard-1" "$work/slurm/merged"
if PODSIM=$podsim bash "$docs/podsim-merge.sbatch" "$sweep" "$work/slurm" > "$work/merge.log" 2>&1; then
  echo "merge of a partial set succeeded"; exit 1
fi
grep -q "missing shard 2/3" "$work/merge.log"

# Kubernetes: the Jobs' container commands, with what the Job controller and the manifest set.
command_of() { sed -n '/args:/{n;s/^ *- //p}' "$1"; }
completions=$(sed -n 's/^ *completions: *//p' "$docs/podsim-sweep-job.yaml")
shards=$(sed -n 's/.*name: SHARDS, value: "\([0-9]*\)".*/\1/p' "$docs/podsim-sweep-job.yaml")
[ "$completions" = "$shards" ] || { echo "SHARDS ($shards) differs from completions ($completions)"; exit 1; }
mkdir -p "$work/bin" && ln -sf "$podsim" "$work/bin/podsim"
for index in 0 1 2; do
  PATH=$work/bin:$PATH JOB_COMPLETION_INDEX=$index SHARDS=3 SWEEP=$sweep OUT=$work/k8s \
    sh -c "$(command_of "$docs/podsim-sweep-job.yaml")" > /dev/null 2>&1
done
PATH=$work/bin:$PATH SWEEP=$sweep OUT=$work/k8s sh -c "$(command_of "$docs/podsim-merge-job.yaml")" > /dev/null
cmp "$work/whole/results.csv" "$work/k8s/merged/results.csv"
rm -rf "$work"
echo "Slurm and Kubernetes examples: merged shards equal the unsharded sweep"
