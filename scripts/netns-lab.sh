#!/usr/bin/env bash
# Network namespaces for the partition tests (test/cluster/partition.test.ts, test/cluster/netns.ts):
# one bridge in the root namespace and, per host, a namespace joined to it by a veth pair, with an
# nftables table whose two chains (input, output) the tests fill with drop rules to cut links.
#
#   bash scripts/netns-lab.sh ensure                  install iproute2 and nftables if missing (root)
#   bash scripts/netns-lab.sh check                   exit 0 when namespaces can be made here, else say why
#   bash scripts/netns-lab.sh up <lab> <net> <host>…  bridge <lab>br at <net>.1/24; host i in namespace
#                                                     <lab>-<host> at <net>.(10+i), veth <lab><host> ↔ eth0
#   bash scripts/netns-lab.sh down <lab>              kill every process inside the lab's namespaces,
#                                                     delete the namespaces, veths and bridge
#   bash scripts/netns-lab.sh watch <pid> <lab> [dir] (detached) once process <pid> is gone, `down <lab>`
#                                                     and remove [dir] (unless KEEPWORK_KEEP_TMP=1)
#
# <lab> is a short name (≤ 9 characters: interface names are capped at 15) that prefixes everything
# made here; `down` touches only namespaces and links whose names start with it. The rules live in
# the namespaces, so they vanish with them. The kernel here has no netem, so loss is an nftables
# `numgen random` rule and a flap is the test switching a drop rule on and off.
set -euo pipefail

die() { echo "netns-lab: $*" >&2; exit 1; }

cmd_ensure() {
  local missing=()
  command -v ip >/dev/null || missing+=(iproute2)
  command -v nft >/dev/null || missing+=(nftables)
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]} and not root"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2 \
    || { apt-get -o DPkg::Lock::Timeout=300 update -q </dev/null >&2 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}" </dev/null >&2; } \
    || die "apt-get install ${missing[*]} failed"
}

cmd_check() {
  [ "$(id -u)" = 0 ] || die "not root (network namespaces need CAP_NET_ADMIN)"
  command -v ip >/dev/null || die "no ip command (install iproute2: bash scripts/netns-lab.sh ensure)"
  command -v nft >/dev/null || die "no nft command (install nftables: bash scripts/netns-lab.sh ensure)"
  local ns="kwchk$$"
  ip netns add "$ns" 2>/dev/null || die "ip netns add failed (no network namespaces here)"
  local ok=1
  ip netns exec "$ns" nft add table inet probe 2>/dev/null || ok=0
  ip netns del "$ns"
  [ $ok = 1 ] || die "nftables does not work inside a namespace (kernel without nf_tables?)"
  ip link add "kwchk$$" type bridge 2>/dev/null || die "cannot create a bridge"
  ip link del "kwchk$$"
  ip link add "kwchk$$a" type veth peer name "kwchk$$b" 2>/dev/null || die "cannot create a veth pair"
  ip link del "kwchk$$a"
}

cmd_up() {
  local lab=$1 net=$2; shift 2
  [[ $lab =~ ^[a-z0-9]{1,9}$ ]] || die "lab name must be 1-9 of [a-z0-9]: $lab"
  [[ $net =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "net must be the first three octets: $net"
  ip link add "${lab}br" type bridge
  ip addr add "$net.1/24" dev "${lab}br"
  ip link set "${lab}br" up
  local i=0 host ns
  for host in "$@"; do
    ns="$lab-$host"
    ip netns add "$ns"
    ip link add "$lab$host" type veth peer name eth0 netns "$ns"
    ip link set "$lab$host" master "${lab}br"
    ip link set "$lab$host" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$net.$((10 + i))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip netns exec "$ns" nft -f - <<EOF
table inet kwlab {
  chain input { type filter hook input priority 0; policy accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
EOF
    i=$((i + 1))
  done
}

cmd_down() {
  local lab=$1 ns pid link
  [[ $lab =~ ^[a-z0-9]{1,9}$ ]] || die "lab name must be 1-9 of [a-z0-9]: $lab"
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^$lab-" || true); do
    # Every process in a lab namespace was started by the lab's test.
    for pid in $(ip netns pids "$ns" 2>/dev/null || true); do kill -CONT "$pid" 2>/dev/null || true; kill -KILL "$pid" 2>/dev/null || true; done
    for _ in $(seq 100); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.05; done
    ip netns del "$ns" || true
  done
  for link in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -E "^$lab" || true); do
    ip link del "$link" 2>/dev/null || true
  done
}

cmd_watch() {
  local pid=$1 lab=$2 dir=${3:-}
  while kill -0 "$pid" 2>/dev/null; do sleep 1; done
  if ip netns list | grep -qE "^$lab-" || ip link show "${lab}br" >/dev/null 2>&1; then
    echo "netns-lab: process $pid ended without tearing lab $lab down; removing it" >&2
    cmd_down "$lab"
  fi
  if [ -n "$dir" ] && [ -d "$dir" ] && [ "${KEEPWORK_KEEP_TMP:-}" != 1 ]; then rm -rf "$dir"; fi
}

case "${1:-}" in
  ensure) cmd_ensure ;;
  check) cmd_check ;;
  up) shift; cmd_up "$@" ;;
  down) cmd_down "$2" ;;
  watch) cmd_watch "$2" "$3" "${4:-}" ;;
  *) echo "usage: $0 ensure|check|up <lab> <net> <host>...|down <lab>|watch <pid> <lab>" >&2; exit 2 ;;
esac
