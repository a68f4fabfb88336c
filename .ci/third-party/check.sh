#!/usr/bin/env bash
# Checks that THIRD-PARTY-LICENSES.txt (the notice the image ships) is what
# cargo-about makes of Cargo.lock today; with --write, rewrites it.
#
#   bash .ci/third-party/check.sh           # .ci/run: fails when it is stale
#   bash .ci/third-party/check.sh --write   # after a dependency change
#
# Installs cargo-about 0.9.3, pinned, from crates.io (`cargo install
# --locked`) into target/tmp/cargo-about when it is missing. Offline once
# the crates are fetched: licence texts come from the crates' sources.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
version=0.9.3
root="$target/tmp/cargo-about"
about="$root/bin/cargo-about"
if [ "$("$about" --version 2>/dev/null || true)" != "cargo-about $version" ]; then
  cargo install --locked --quiet cargo-about --version "$version" --features cli --root "$root"
fi
notice="$repo/THIRD-PARTY-LICENSES.txt"
fresh="$target/tmp/THIRD-PARTY-LICENSES.txt"
mkdir -p "$target/tmp"
# --frozen: offline and reproducible (licence texts from the crates' own
# files, nothing from clearlydefined.io).
"$about" generate --frozen --manifest-path "$repo/Cargo.toml" \
  -c "$here/about.toml" "$here/about.hbs" -o "$fresh"
if [ "${1:-}" = --write ]; then
  cp "$fresh" "$notice"
  echo "wrote $notice"
elif ! cmp -s "$fresh" "$notice"; then
  diff -u "$notice" "$fresh" | head -40 >&2 || true
  echo "THIRD-PARTY-LICENSES.txt is stale: run bash .ci/third-party/check.sh --write" >&2
  exit 1
else
  echo "THIRD-PARTY-LICENSES.txt is current"
fi
