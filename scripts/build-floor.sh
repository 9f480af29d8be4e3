#!/usr/bin/env bash
# Builds the release netcheck binary for a glibc floor: it starts on any x86-64 Linux with
# glibc 2.28 or newer (RHEL 8, Amazon Linux 2023, Ubuntu 20.04+, Debian 10+; the NVIDIA and
# AWS deep-learning images), whatever glibc the build machine has.
#
#   scripts/build-floor.sh            # → target/floor/netcheck
#   NETCHECK_GLIBC_FLOOR=2.31 scripts/build-floor.sh
#
# How: cargo-zigbuild links against zig's glibc 2.28 stubs (`--target
# x86_64-unknown-linux-gnu.2.28`) and compiles the C parts (ring, mimalloc) with `zig cc` for
# the same floor. Both tools come from PyPI (`ziglang`, `cargo-zigbuild`); the script installs
# them with pip when they are missing. Only libc is linked at build time: CUDA, NCCL and
# libfabric are still loaded at run time from the image the binary runs in.
#
# The output path is what deploy/ copies and what the glibc floor test reads
# (tests/glibc_floor.rs, through NETCHECK_FLOOR_BINARY or this default path).
# A cold build takes about 6 minutes on 2 idle cores (release profile: fat LTO).
set -euo pipefail
cd "$(dirname "$0")/.."

floor="${NETCHECK_GLIBC_FLOOR:-2.28}"
arch="${NETCHECK_FLOOR_ARCH:-x86_64}"
target="${arch}-unknown-linux-gnu"
out_dir="${NETCHECK_FLOOR_DIR:-target/floor}"

# cargo-zigbuild and zig: from PATH when there, else installed from PyPI into a venv under
# target/ (a system pip may refuse: PEP 668).
tools="target/floor-tools"
if ! command -v cargo-zigbuild >/dev/null || ! { command -v zig >/dev/null || python3 -c 'import ziglang' 2>/dev/null; }; then
  if [ ! -x "$tools/bin/cargo-zigbuild" ]; then
    command -v python3 >/dev/null || { echo "error: python3 is needed to install cargo-zigbuild and ziglang from PyPI" >&2; exit 3; }
    echo "build-floor: installing cargo-zigbuild and ziglang from PyPI into $tools" >&2
    if python3 -m venv "$tools" 2>/dev/null; then
      "$tools/bin/python3" -m pip install --quiet ziglang cargo-zigbuild
    else
      rm -rf "$tools"
      python3 -m pip install --quiet --break-system-packages ziglang cargo-zigbuild 2>/dev/null \
        || python3 -m pip install --quiet ziglang cargo-zigbuild
    fi
  fi
  [ -d "$tools/bin" ] && PATH="$PWD/$tools/bin:$PATH"
  # pip's scripts folder may not be on PATH (user or system installs).
  PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
fi
rustup target list --installed 2>/dev/null | grep -qx "$target" || rustup target add "$target" 2>/dev/null || true

echo "build-floor: cargo zigbuild --release --target ${target}.${floor}" >&2
start=$SECONDS
cargo zigbuild --release --locked --bin netcheck --target "${target}.${floor}"
mkdir -p "$out_dir"
cp "target/${target}/release/netcheck" "$out_dir/netcheck"
echo "build-floor: $out_dir/netcheck (glibc >= ${floor}) in $((SECONDS - start)) s" >&2
# The newest glibc symbol version the binary needs, for the log (the test checks it).
if command -v objdump >/dev/null; then
  newest=$(objdump -T "$out_dir/netcheck" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
  echo "build-floor: newest glibc symbol version needed: ${newest:-none}" >&2
fi
