#!/usr/bin/env bash
# Installs what Cellscope needs to build and test on Debian 12, and nothing when it is all there.
# Idempotent: `apt-get update` runs only when a package is missing. Run as root (or with sudo).
# Then installs the locked npm packages (`npm ci` in webview/, tests/lsp/ and tests/dap/) when their
# node_modules is missing or stale.
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
  libonnx-dev             # onnx.proto: the ONNX exporter compiles its messages from it (graphcore/proto)
  nlohmann-json3-dev
  libspdlog-dev
  libgtest-dev
  libgmock-dev
  libtree-sitter-dev      # parser runtime (the Python grammar comes from npm at configure time)
  libcli11-dev            # command-line parsing
  libeigen3-dev           # the CPU runtime's kernels (elementwise, reductions)
  libdnnl-dev             # oneDNN: the runtime's convolutions and matrix products (ISA picked at run time)
  libyaml-dev             # config files (YAML/JSON) named in mindspore_config.json
  libmimalloc-dev         # fast malloc for the executables (cmake/Allocator.cmake)
  zlib1g-dev              # checkpoint CRCs, deflated .npz members (dataset reader)
  libssl-dev              # OpenSSL 3: TLS, SHA-256 and certificates of `cellscope agent` / `deploy`
  libpng-dev              # PNG decoding for ImageFolderDataset (dataset reader)
  libjpeg62-turbo-dev     # JPEG decoding for ImageFolderDataset (dataset reader)
  clang-format
  clang-tidy
  python3                 # CLI tests (stdlib only) and the MindSpore ground-truth tier
  python3-venv
  ca-certificates
  neovim                  # the second LSP client of the LSP tier (tests/lsp/nvim)
  chromium                # the browser of the view tier (webview/test, driven by playwright-core)
  python3-torch           # the reference numerics of the runtime tier (tests/runtime/check_torch.py)
  python3-numpy
)

log() { printf '[setup] %s\n' "$*" >&2; }

# The locked npm packages (scripts/npm-deps.sh: no-op when fresh), after node/npm are there:
# the graph view (built into the binary), the LSP tests and the reliability tier.
lsp_test_deps() {
  local repo
  repo="$(dirname "$0")/.."
  bash "$repo/scripts/npm-deps.sh" "$repo/webview" install
  bash "$repo/scripts/npm-deps.sh" "$repo/tests/lsp" install
  bash "$repo/scripts/npm-deps.sh" "$repo/tests/dap" install
  bash "$repo/scripts/npm-deps.sh" "$repo/tests/reliability" install
}

if [[ "$(uname -s)" != Linux ]] || ! command -v dpkg-query >/dev/null 2>&1; then
  log "not a Debian-based system: install the equivalents of: ${PACKAGES[*]} nodejs npm"
  if command -v npm >/dev/null 2>&1; then lsp_test_deps; fi
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
  lsp_test_deps
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
lsp_test_deps
