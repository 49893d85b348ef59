#!/usr/bin/env bash
# Makes sure a headless Chromium is installed for the status-page test (test/http/status-page.test.ts).
#
#   bash scripts/chromium.sh ensure   install Debian's `chromium` if no browser is found (idempotent)
#   bash scripts/chromium.sh path     print the browser's path (exit 1 when there is none)
#
# The test drives it with playwright-core (a dev dependency) through `executablePath`; no browser is
# downloaded by npm. KEEPWORK_CHROMIUM overrides the path. Installing needs root and apt-get
# (Debian/Ubuntu); elsewhere install Chromium yourself and set KEEPWORK_CHROMIUM.
set -euo pipefail

say() { printf '[chromium] %s\n' "$*" >&2; }

find_browser() {
  if [ -n "${KEEPWORK_CHROMIUM:-}" ] && [ -x "$KEEPWORK_CHROMIUM" ]; then echo "$KEEPWORK_CHROMIUM"; return 0; fi
  for p in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome /usr/bin/google-chrome-stable; do
    if [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  return 1
}

case "${1:-ensure}" in
  path)
    find_browser
    ;;
  ensure)
    if p=$(find_browser); then say "found $p"; exit 0; fi
    if ! command -v apt-get >/dev/null; then say "ERROR: no Chromium found and no apt-get to install it; set KEEPWORK_CHROMIUM"; exit 1; fi
    if [ "$(id -u)" != 0 ]; then say "ERROR: no Chromium found; installing it needs root (apt-get install chromium)"; exit 1; fi
    say "installing Debian's chromium (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    # Another apt-get (a second install, an unattended upgrade) holds dpkg's lock: wait for it, never fail on it.
    apt=(apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" install -y --no-install-recommends chromium >/dev/null 2>&1 || { "${apt[@]}" update >/dev/null && "${apt[@]}" install -y --no-install-recommends chromium >/dev/null; }
    p=$(find_browser) || { say "ERROR: chromium was installed but no browser binary is found"; exit 1; }
    say "installed $p"
    ;;
  *)
    echo "usage: $0 ensure|path" >&2
    exit 2
    ;;
esac
