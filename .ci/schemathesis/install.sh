#!/usr/bin/env bash
# Installs schemathesis (requirements.txt, from PyPI) into a venv at
# target/tmp/schemathesis, where tests/openapi.rs looks for it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec bash "$here/../python-venv.sh" "$here/requirements.txt" \
  "${1:-$here/../../${CARGO_TARGET_DIR:-target}/tmp/schemathesis}"
