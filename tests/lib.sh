# The preamble the tiers' run.sh files share (sourced, not run). A missing dependency is a
# failure with a message naming the tier and the command that installs it, never a skip.
#
#   source "$(dirname "$0")/../lib.sh"; tier_init NAME
#
# tier_init sets REPO (the repository's root) and BUILD_DIR (default build), and exports
# CELLSCOPE_BIN as an absolute path (default $BUILD_DIR/cellscope).

tier_fail() {
  echo "$TIER: $*" >&2
  exit 1
}

tier_init() {
  TIER=$1
  REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  BUILD_DIR=${BUILD_DIR:-build}
  CELLSCOPE_BIN=${CELLSCOPE_BIN:-$BUILD_DIR/cellscope}
  [[ "$CELLSCOPE_BIN" = /* ]] || CELLSCOPE_BIN="$REPO/$CELLSCOPE_BIN"
  export CELLSCOPE_BIN
}

# node on the PATH.
need_node() {
  command -v node >/dev/null 2>&1 || tier_fail "node is not installed (scripts/setup.sh installs it)"
}

# The locked npm packages of DIR: `check` (fail when stale) or `install` (npm ci when stale).
need_npm() {
  local dir=$1 mode=${2:-check}
  bash "$REPO/scripts/npm-deps.sh" "$dir" "$mode" ||
    tier_fail "the npm packages of ${dir#"$REPO"/} are missing or stale (bash scripts/npm-deps.sh ${dir#"$REPO"/} install)"
}

# The cellscope binary, built.
need_bin() {
  [[ -x "$CELLSCOPE_BIN" ]] || tier_fail "$CELLSCOPE_BIN is not built (make build)"
}

# The PyPI wheels named by `name==version` specs, unpacked once into $BUILD_DIR/realworld/src/
# (their sources are what the real-world and reliability tiers read; nothing is copied into the
# repository). pip's cache and the stamps make later runs offline.
fetch_wheels() {
  local work="$BUILD_DIR/realworld" spec name version wheel
  [[ "$work" = /* ]] || work="$REPO/$work"
  mkdir -p "$work/wheels" "$work/src"
  for spec in "$@"; do
    name=${spec%%==*}
    version=${spec##*==}
    [[ -f "$work/src/$name/.unpacked-$version" ]] && continue
    echo "$TIER: fetching $spec"
    python3 -m pip download -q --no-deps -d "$work/wheels" "$spec" || tier_fail "pip download $spec failed"
    wheel=$(ls "$work/wheels/${name}-${version}"-*.whl 2>/dev/null | head -1)
    [[ -n "$wheel" ]] || tier_fail "no wheel for $spec"
    rm -rf "${work:?}/src/$name" && mkdir -p "$work/src/$name"
    python3 -m zipfile -e "$wheel" "$work/src/$name" || tier_fail "cannot unpack $wheel"
    touch "$work/src/$name/.unpacked-$version"
  done
}

# The `name==version` lines of tests/realworld/libraries.txt whose name matches the regex $1.
library_specs() {
  grep -E "^($1)==" "$REPO/tests/realworld/libraries.txt"
}
