#!/usr/bin/env bash
# The main job: a 4-rank heterogeneous training run on real Fashion-MNIST (ranks slowed 1x, 1x,
# 1.5x, 2.5x), printing per-epoch progress and the final result. Extra arguments go to
# `dynamix train` (e.g. --set policy.name=static).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -np 4 --oversubscribe --bind-to none build/bin/dynamix train \
  --config configs/fashion_mnist_hetero.yaml --overwrite "$@"
