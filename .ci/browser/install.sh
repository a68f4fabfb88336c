#!/usr/bin/env bash
# Installs what tests/ui_browser.rs drives the web UI with: Debian's chromium
# and chromium-driver (apt, when /usr/bin/chromium is missing; as root, else
# with sudo), and tests/browser's node modules, playwright-core and axe-core
# pinned by package-lock.json (npm ci). Playwright never downloads a browser:
# the script launches /usr/bin/chromium.
#
# Idempotent and safe to run concurrently (a lock on node_modules.lock): npm
# ci runs again only when package-lock.json changed since the last install.
# Needs node and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
project="$(cd "$here/../../tests/browser" && pwd)"

exec 9>"$project/node_modules.lock"
flock 9

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  if [ "$(id -u)" = 0 ]; then sudo=(); else sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium chromium-driver >/dev/null
fi

# The lock file npm ci installed from, kept beside the modules it produced.
installed="$project/node_modules/.toolscore-package-lock.json"
if ! cmp -s "$project/package-lock.json" "$installed"; then
  (cd "$project" && npm ci --silent --no-audit --no-fund --loglevel=error)
  cp "$project/package-lock.json" "$installed"
fi

echo "browser test tools: $(/usr/bin/chromium --version 2>/dev/null)," \
  "playwright-core $(node -p "require('$project/node_modules/playwright-core/package.json').version")," \
  "axe-core $(node -p "require('$project/node_modules/axe-core/package.json').version")"
