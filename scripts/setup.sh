#!/usr/bin/env bash
# Installs what Cellscope needs to build and test on Debian 12, and nothing when it is all there.
# Idempotent: `apt-get update` runs only when a package is missing. Run as root (or with sudo).
set -euo pipefail

PACKAGES=(
  build-essential   # g++ 12 (C++20)
  cmake             # >= 3.25
  ninja-build
  ccache
  pkg-config
  git
  libboost-dev            # Boost.Asio / Boost.Beast (header-only)
  libprotobuf-dev         # graph document schema (protocol/)
  protobuf-compiler       # protoc
  nlohmann-json3-dev
  libspdlog-dev
  libgtest-dev
  libgmock-dev
  libtree-sitter-dev      # parser runtime (the Python grammar comes from npm at configure time)
  libcli11-dev            # command-line parsing
  libeigen3-dev           # kernels (later issues)
  libmimalloc-dev         # fast malloc for the executables (cmake/Allocator.cmake)
  clang-format
  clang-tidy
  python3                 # CLI tests (stdlib only) and the MindSpore ground-truth tier
  python3-venv
  ca-certificates
)

log() { printf '[setup] %s\n' "$*" >&2; }

if [[ "$(uname -s)" != Linux ]] || ! command -v dpkg-query >/dev/null 2>&1; then
  log "not a Debian-based system: install the equivalents of: ${PACKAGES[*]} nodejs npm"
  exit 0
fi

is_installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${PACKAGES[@]}"; do
  is_installed "$p" || missing+=("$p")
done
# node + npm fetch the tree-sitter-python grammar; any install on PATH will do (e.g. NodeSource).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if ((${#missing[@]} == 0)); then
  exit 0
fi

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
  else
    log "missing packages (${missing[*]}) and not root: run 'apt-get install ${missing[*]}' as root"
    exit 1
  fi
fi

log "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "done"
