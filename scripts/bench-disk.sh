#!/usr/bin/env bash
# A disk as users have one, for benchmarks: a journaled ext4 (or xfs) in a file on the root
# filesystem, attached to a loop device and mounted, with a tmp folder in it for TMPDIR. This
# machine's root is ext4 without a journal, which makes file creation and fsync cheaper than on
# the disks apps run on (docs/benchmarks.md).
#
#   bash scripts/bench-disk.sh up [ext4|xfs]   make and mount it (idempotent; needs root)
#   bash scripts/bench-disk.sh env [ext4|xfs]  print the `export TMPDIR=…` line the benches read
#   bash scripts/bench-disk.sh down [ext4|xfs] unmount it and free the loop device and the file
#
# ext4: /mnt/ext4j (mkfs.ext4 with its default journal, data=ordered); xfs: /mnt/xfs (xfsprogs,
# installed if missing). Size: $KEEPWORK_BENCH_DISK_GB (default 8) GiB, sparse.
set -euo pipefail

FS=${2:-ext4}
case "$FS" in
ext4) MNT=/mnt/ext4j ;;
xfs) MNT=/mnt/xfs ;;
*) echo "bench-disk: the file system is ext4 or xfs, not $FS" >&2 && exit 2 ;;
esac
IMG=/var/tmp/keepwork-bench-$FS.img
GB=${KEEPWORK_BENCH_DISK_GB:-8}

say() { printf '[bench-disk] %s\n' "$*" >&2; }

mounted() { findmnt -n "$MNT" >/dev/null 2>&1; }

up() {
  [[ $(id -u) == 0 ]] || { say "needs root (a loop device and a mount)"; exit 1; }
  if mounted; then
    say "$FS already mounted on $MNT"
  else
    if [[ $FS == xfs ]] && ! command -v mkfs.xfs >/dev/null; then
      say "installing xfsprogs (Debian package)"
      apt-get install -y --no-install-recommends xfsprogs >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends xfsprogs >/dev/null; }
    fi
    if [[ ! -f $IMG ]]; then
      truncate -s "${GB}G" "$IMG"
      if [[ $FS == ext4 ]]; then mkfs.ext4 -q -F -O has_journal "$IMG"; else mkfs.xfs -q -f "$IMG"; fi
    fi
    mkdir -p "$MNT"
    mount -o loop "$IMG" "$MNT"
    say "$FS on $(findmnt -n -o SOURCE "$MNT") mounted on $MNT"
  fi
  mkdir -p "$MNT/tmp"
  chmod 1777 "$MNT/tmp"
  if [[ $FS == ext4 ]]; then
    dumpe2fs -h "$(findmnt -n -o SOURCE "$MNT")" 2>/dev/null | grep -q has_journal || { say "no journal on $MNT"; exit 1; }
  fi
}

down() {
  if mounted; then
    umount "$MNT"
    say "unmounted $MNT"
  fi
  rm -f "$IMG"
}

case "${1:-}" in
up) up ;;
env) echo "export TMPDIR=$MNT/tmp" ;;
down) down ;;
*) echo "usage: bash scripts/bench-disk.sh up|env|down [ext4|xfs]" >&2 && exit 2 ;;
esac
