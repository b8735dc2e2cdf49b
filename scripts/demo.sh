#!/usr/bin/env bash
# The main job: a 4-rank heterogeneous training run on real Fashion-MNIST (ranks slowed 1x, 1x,
# 1.5x, 2.5x) with the DYNAMIX agent choosing per-rank batch sizes, printing per-epoch progress
# and the final result. The agent is the pretrained policy shipped in the repository
# (agent/ppo/default_policy.pt, built into the binary), used for inference. Extra arguments go to
# `dynamix train` (e.g. --set policy.name=proportional to compare).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 4 --oversubscribe --bind-to none build/bin/dynamix train \
  --config configs/fashion_mnist_hetero.yaml --overwrite --set policy.name=dynamix "$@"
