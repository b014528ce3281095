#!/usr/bin/env bash
# Installs the Debian packages trex needs to build, test and benchmark.
# Idempotent: runs `apt-get update` and `apt-get install` (or `npm install`) only when a package
# is missing, and names what it installs. Run as root (CI and the Quick start do).
# --no-npm: the Debian packages only; the npm client library is for the serve tests, and its
# `npm install` costs a fresh clone about 10 s (`make demo` passes it, `make test` does not).
set -euo pipefail
with_npm=1
if [ "${1:-}" = "--no-npm" ]; then with_npm=0; fi

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
  # zstdcat reads the corpus's .jsonl.zst shards in the recipe's Python measurements and their tests
  zstd
  # MPI is the distributed engine (BSD-3); io_uring for the swap optimizer's slow tier (MIT);
  # SentencePiece tokenizers (Apache-2.0)
  libopenmpi-dev openmpi-bin liburing-dev libsentencepiece-dev sentencepiece
  # SQLite for the kernel tuner's skill database (public domain)
  libsqlite3-dev
  # tcmalloc (gperftools, BSD-3) as trex-full's allocator; the build falls back to glibc malloc
  # without it
  libgoogle-perftools-dev
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

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
apt_install() {
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  apt_install "${missing[@]}"
  echo "install-deps: done"
fi

if [ $with_npm = 0 ]; then exit 0; fi

# The official OpenAI client library, which tests/serve/openai_client_test.cc runs against a live
# `trex serve`: Node.js and npm (Debian's, when the machine has no node of its own), and the npm
# package `openai` (Apache-2.0, no dependencies) at the version pinned in its package.json,
# installed into that folder's node_modules/ (kept out of git).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "install-deps: installing nodejs npm"
  apt_install nodejs npm
fi
client="$(cd "$(dirname "$0")/.." && pwd)/tests/serve/openai_client"
want=$(node -p "require('$client/package.json').dependencies.openai")
have=$(node -p "try { require('$client/node_modules/openai/package.json').version } catch (e) { '' }")
if [ "$want" = "$have" ]; then
  echo "install-deps: npm openai $have present"
else
  echo "install-deps: npm install openai@$want into tests/serve/openai_client"
  npm install --prefix "$client" --no-audit --no-fund --no-package-lock --loglevel=error >/dev/null
fi
