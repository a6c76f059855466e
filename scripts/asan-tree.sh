#!/usr/bin/env bash
# Sourced by scripts/fuzz.sh and scripts/sanitizers.sh: the one ASan + UBSan build tree that both
# use (build-asan/ unless ASAN_BUILD_DIR or FUZZ_BUILD_DIR says otherwise). It is a clang tree
# with the libFuzzer harnesses (-DCELLSCOPE_FUZZ=ON): the fuzz tier runs its NAME_fuzz binaries,
# the asan tier its cellscope binary, unit tests and NAME_fuzz_replay binaries, and the whole code
# base is compiled once under ASan instead of twice (docs/reliability.md).
#
#   asan_tree_configure DIR   installs clang-14 and its runtimes when missing, then configures DIR.

asan_tree_configure() {
  local dir=$1 need=() p
  for p in clang-14 libclang-rt-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || need+=("$p")
  done
  if ((${#need[@]})); then
    printf '[asan-tree] installing %s\n' "${need[*]}" >&2
    local sudo=()
    [[ "$(id -u)" -ne 0 ]] && sudo=(sudo)
    "${sudo[@]}" apt-get update -qq &&
      "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null ||
      { printf '[asan-tree] could not install %s\n' "${need[*]}" >&2; return 1; }
  fi
  # A tree configured by an earlier version of this script (GCC, -DCELLSCOPE_SANITIZE) is made
  # anew: CMake cannot switch a configured tree's compiler.
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CELLSCOPE_FUZZ:BOOL=ON' "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  local args=(-S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14
              -DCMAKE_CXX_COMPILER=clang++-14 -DCELLSCOPE_FUZZ=ON)
  cmake "${args[@]}" >/dev/null || cmake "${args[@]}"
}
