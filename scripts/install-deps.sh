#!/usr/bin/env bash
# Installs the Debian packages trex needs to build, test and benchmark.
# Idempotent: runs `apt-get update` and `apt-get install` only when a package is missing,
# and names what it installs. Run as root (CI and the Quick start do).
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ cmake ninja-build make pkg-config
  # lp: COIN-OR CBC/CLP in-process (EPL-1.0); glpsol runs as a separate process only (GPL-3+)
  coinor-libcbc-dev coinor-libclp-dev coinor-libosi-dev coinor-libcgl-dev coinor-libcoinutils-dev
  glpk-utils
  # command line and data
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev hyperfine coinor-cbc
  # the GEMM baseline for kernel tests and benchmarks (BSD-3)
  libopenblas-dev
  # HTTP for the chat-completions client and the loopback test server (curl: MIT-like;
  # cpp-httplib: MIT), zstd and xxhash for corpus export and hashing (BSD)
  libcurl4-openssl-dev libcpp-httplib-dev libzstd-dev libxxhash-dev
  # MPI is the distributed engine (BSD-3); io_uring for the swap optimizer's slow tier (MIT);
  # SentencePiece tokenizers (Apache-2.0)
  libopenmpi-dev openmpi-bin liburing-dev libsentencepiece-dev sentencepiece
  # SQLite for the kernel tuner's skill database (public domain)
  libsqlite3-dev
  # Python baselines and reference implementations, run by Debian's /usr/bin/python3 only:
  # PuLP and scipy (HiGHS) for corpus baselines, networkx for the ORGEval baseline,
  # PyTorch for the eager-kernel baseline and the model cross-check
  python3-numpy python3-scipy python3-pulp python3-networkx python3-torch
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
