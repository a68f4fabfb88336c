#!/usr/bin/env bash
# Installs the OpenTelemetry Python SDK (requirements.txt, from PyPI) into a
# venv at target/tmp/python-otel, where tests/tls.rs looks for it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec bash "$here/../python-venv.sh" "$here/requirements.txt" \
  "${1:-$here/../../${CARGO_TARGET_DIR:-target}/tmp/python-otel}"
