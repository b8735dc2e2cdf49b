#!/usr/bin/env bash
# The main job: a 4-rank heterogeneous training run on real Fashion-MNIST (ranks slowed 1x, 1x,
# 1.5x, 2.5x) with the DYNAMIX agent choosing per-rank batch sizes, printing per-epoch progress
# and the final result. The agent is pretrained in the cluster simulator first (about 10 s; kept in
# runs/agent/policy.pt) and used for inference on the real run. Extra arguments go to
# `dynamix train` (e.g. --set policy.name=static to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
policy=runs/agent/policy.pt
if [[ ! -f $policy ]]; then
  mkdir -p runs/agent
  build/bin/dynamix agent pretrain --episodes 300 --seed 1 --output "$policy" | tail -n 3
fi
mpirun -np 4 --oversubscribe --bind-to none build/bin/dynamix train \
  --config configs/fashion_mnist_hetero.yaml --overwrite \
  --set policy.name=dynamix --set policy.checkpoint="$policy" --set policy.learn=false "$@"
