#!/usr/bin/env bash
# Installs schemathesis (requirements.txt, from PyPI) into a venv at
# target/tmp/schemathesis, where tests/openapi.rs looks for it.
# Idempotent; reinstalls when requirements.txt changes. Needs python3 with venv.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../${CARGO_TARGET_DIR:-target}/tmp/schemathesis}"
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [ ! -x "$dir/bin/python" ]; then
  python3 -m venv "$dir"
fi
if ! cmp -s "$here/requirements.txt" "$dir/.requirements.txt"; then
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  cp "$here/requirements.txt" "$dir/.requirements.txt"
fi
