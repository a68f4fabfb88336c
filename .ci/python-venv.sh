#!/usr/bin/env bash
# Installs a requirements.txt (pinned, from PyPI) into a venv; the scripts in
# .ci/python-otel and .ci/schemathesis call it with theirs.
# Usage: python-venv.sh REQUIREMENTS DIR. Idempotent (reinstalls when the
# requirements change) and safe to run concurrently (a lock beside DIR).
# Needs python3 with venv.
set -euo pipefail
requirements="$1"
dir="$2"
mkdir -p "$dir"
exec 9>"$dir.lock"
flock 9
if [ ! -x "$dir/bin/python" ]; then
  python3 -m venv "$dir"
fi
if ! cmp -s "$requirements" "$dir/.requirements.txt"; then
  "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$dir/.requirements.txt"
fi
