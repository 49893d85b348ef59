#!/usr/bin/env bash
# A Redis server for bench/peer-bullmq (the BullMQ side of bench/drain): Debian's redis-server on
# loopback, on a non-default port, with no persistence (no RDB, no AOF), data in RAM only.
#
#   bash scripts/redis-bench-server.sh up     install redis-server if missing, start it (idempotent)
#   bash scripts/redis-bench-server.sh env    print the `export` line bench/peer-bullmq reads
#   bash scripts/redis-bench-server.sh down   stop it (only the pid in our pid file)
#
# Everything lives under $KEEPWORK_REDIS_DIR (default /tmp/keepwork-redis).
set -euo pipefail

BASE=${KEEPWORK_REDIS_DIR:-/tmp/keepwork-redis}
PORT=${KEEPWORK_REDIS_PORT:-6391}
PIDFILE=$BASE/redis.pid

say() { printf '[redis-bench-server] %s\n' "$*" >&2; }

# Our server: the pid in our pid file is alive and its command line names our port.
our_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "127.0.0.1:$PORT" || return 1
  echo "$pid"
}

answers() { redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; }

install() {
  command -v redis-server >/dev/null && return 0
  say "installing redis-server (Debian package)"
  if ! apt-get install -y --no-install-recommends redis-server >/dev/null; then
    apt-get update >/dev/null && apt-get install -y --no-install-recommends redis-server >/dev/null
  fi
}

up() {
  install
  if our_pid >/dev/null && answers; then
    say "already up on 127.0.0.1:$PORT"
    return 0
  fi
  mkdir -p "$BASE"
  redis-server --bind 127.0.0.1 --port "$PORT" --save '' --appendonly no --protected-mode yes \
    --daemonize yes --pidfile "$PIDFILE" --dir "$BASE" --logfile "$BASE/redis.log" \
    --maxmemory-policy noeviction
  for _ in $(seq 1 50); do
    answers && { say "up on 127.0.0.1:$PORT"; return 0; }
    sleep 0.1
  done
  say "ERROR: redis-server did not answer; log tail:"; tail -n 20 "$BASE/redis.log" >&2; exit 1
}

down() {
  local pid
  if pid=$(our_pid); then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    say "stopped (pid $pid)"
  else
    say "not running"
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  env) echo "export KEEPWORK_BENCH_REDIS_URL='redis://127.0.0.1:$PORT'" ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
