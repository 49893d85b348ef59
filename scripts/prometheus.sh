#!/usr/bin/env bash
# Makes sure Prometheus and promtool are installed for the Prometheus test (test/http/prometheus.test.ts).
#
#   bash scripts/prometheus.sh ensure   install Debian's `prometheus` (2.42) if either binary is missing (idempotent)
#   bash scripts/prometheus.sh path     print the two paths, prometheus then promtool, one a line (exit 1 when one is missing)
#
# The test starts its own Prometheus (a temp folder, a loopback port); the package's systemd
# service is not used (in a container without systemd, apt's policy keeps it from starting).
# KEEPWORK_PROMETHEUS and KEEPWORK_PROMTOOL override the paths. Installing needs root and apt-get
# (Debian/Ubuntu); elsewhere install Prometheus 2.x yourself and set the two variables.
set -euo pipefail

say() { printf '[prometheus] %s\n' "$*" >&2; }

find_bin() { # $1: name, $2: override
  if [ -n "$2" ] && [ -x "$2" ]; then echo "$2"; return 0; fi
  command -v "$1" 2>/dev/null && return 0
  for d in /usr/bin /usr/local/bin; do
    if [ -x "$d/$1" ]; then echo "$d/$1"; return 0; fi
  done
  return 1
}

find_both() {
  find_bin prometheus "${KEEPWORK_PROMETHEUS:-}" && find_bin promtool "${KEEPWORK_PROMTOOL:-}"
}

case "${1:-ensure}" in
  path)
    find_both
    ;;
  ensure)
    if p=$(find_both); then say "found $(echo "$p" | tr '\n' ' ')"; exit 0; fi
    if ! command -v apt-get >/dev/null; then say "ERROR: no prometheus/promtool found and no apt-get to install them; set KEEPWORK_PROMETHEUS and KEEPWORK_PROMTOOL"; exit 1; fi
    if [ "$(id -u)" != 0 ]; then say "ERROR: no prometheus/promtool found; installing them needs root (apt-get install prometheus)"; exit 1; fi
    say "installing Debian's prometheus (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    # Another apt-get (a second install, an unattended upgrade) holds dpkg's lock: wait for it, never fail on it.
    apt=(apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" install -y --no-install-recommends prometheus >/dev/null 2>&1 || { "${apt[@]}" update >/dev/null && "${apt[@]}" install -y --no-install-recommends prometheus >/dev/null; }
    p=$(find_both) || { say "ERROR: prometheus was installed but a binary is missing"; exit 1; }
    say "installed $(echo "$p" | tr '\n' ' ')"
    ;;
  *)
    echo "usage: $0 ensure|path" >&2
    exit 2
    ;;
esac
