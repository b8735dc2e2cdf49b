#!/usr/bin/env bash
# Installs what DYNAMIX needs to build, test and run on Debian (12 "bookworm" or newer).
# Idempotent: packages already present are skipped by apt. Run as root or with sudo available.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libtorch-dev                       # LibTorch (CPU build in Debian): models, autograd, optimizers
  libopenblas0-openmp                # fast BLAS for LibTorch (the reference libblas3 is ~20x slower)
  libopenmpi-dev openmpi-bin         # MPI runtime and collectives
  libyaml-cpp-dev                    # YAML configs
  nlohmann-json3-dev                 # JSON outputs and checkpoint metadata
  libcli11-dev                       # command line
  libeigen3-dev                      # small dense linear algebra (least-squares fits)
  libhwloc-dev                       # placement: NUMA nodes, cores, GPUs' NUMA affinity, binding
  libgtest-dev libgmock-dev          # unit tests
  libbenchmark-dev                   # micro-benchmarks
  zlib1g-dev                         # gzip-compressed IDX files; checkpoint CRC32
  clang llvm                         # eBPF programs (clang -target bpf)
  clang-format                       # scripts/format.sh: the checked-in .clang-format, checked in CI
  libbpf-dev libelf-dev bpftool      # eBPF loader, skeletons, vmlinux.h from kernel BTF
  iproute2                           # network namespaces / tc tbf for the retransmit test
  dataset-fashion-mnist              # real Fashion-MNIST, offline
  python3-matplotlib                 # plots (served to /usr/bin/python3)
  python3-yaml                       # scripts/experiments/run_suite.py reads suite files
  python3-numpy                      # scripts/tools/to_npy.py and the .npy end-to-end test
  python3-torch                      # PyTorch DDP side by side (scripts/pytorch/, e2e_pytorch_ddp)
  slurmctld slurmd slurm-client munge  # a real one-node Slurm for e2e_slurm_real (scripts/slurm/local_slurm.sh)
)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
