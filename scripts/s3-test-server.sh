#!/usr/bin/env bash
# A real S3 server for keepwork's tests: Ceph's RADOS Gateway on loopback (README.md "Tests against a
# real S3 server"; what RGW needs from keepwork: docs/s3-providers.md).
#
#   bash scripts/s3-test-server.sh up     start it (installs the Debian packages if radosgw is missing)
#   bash scripts/s3-test-server.sh env    print the `export` lines the tests read
#   bash scripts/s3-test-server.sh down   stop it
#
# What `up` builds, entirely under $KEEPWORK_RGW_DIR, daemons run directly (no systemd, no mgr):
#
#   ceph-mon (v1 127.0.0.1:$KEEPWORK_RGW_MON_PORT, auth none)
#     └─ ceph-osd (memstore: objects live in RAM and vanish on stop)
#          └─ radosgw (beast on ${KEEPWORK_RGW_HOST:-127.0.0.1}:$KEEPWORK_RGW_PORT) ─ user with fixed keys, bucket keepwork-test
#
# `up` is idempotent: when our radosgw is alive and answers, it does nothing. Otherwise it stops
# our own stale daemons (pid files whose process command line names our ceph.conf; nothing else
# is ever signalled), wipes the folder and starts afresh. Any failure exits non-zero with the
# tail of the daemons' logs. The settings in ceph.conf each fix a failure seen in scripted starts.
set -euo pipefail

BASE=${KEEPWORK_RGW_DIR:-/tmp/keepwork-rgw}
PORT=${KEEPWORK_RGW_PORT:-7480}
# The address radosgw listens on (the monitor and the OSD stay on loopback); another than
# 127.0.0.1 when it runs in a network namespace of its own (test/cluster/partition.test.ts).
HOST=${KEEPWORK_RGW_HOST:-127.0.0.1}
MON_PORT=${KEEPWORK_RGW_MON_PORT:-6789}
BUCKET=keepwork-test
REGION=us-east-1
ACCESS_KEY=keepwork-test-access-key
SECRET_KEY=keepwork-test-secret-key
CONF=$BASE/ceph.conf
MARKER=$BASE/.keepwork-rgw
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export KEEPWORK_RGW_T0=${KEEPWORK_RGW_T0:-$(date +%s%N)}   # shared with the `_start` child
T0=$KEEPWORK_RGW_T0
STARTING=0   # 1 while `up` starts daemons: a failure then stops them again

say() { local ms=$(( ($(date +%s%N) - T0) / 1000000 )); printf '[s3-test-server %d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*" >&2; }

# Fails loudly; during a start also shows the tail of every daemon log and stops what started.
die() {
  say "ERROR: $*"
  if [ "$STARTING" = 1 ]; then
    STARTING=0
    local f
    for f in "$BASE"/log/*; do
      [ -s "$f" ] || continue
      echo "----- tail of $f -----" >&2
      tail -n 25 "$f" >&2
    done
    stop_daemons
  fi
  exit 1
}

# A process is alive when /proc has it and it is not a zombie.
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }

# Prints the pid in pid file $1 if that process is alive and its command line names our conf.
our_pid() {
  local pid
  pid=$(cat "$1" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qF -- "$CONF" || return 1
  echo "$pid"
}

port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
http_answers() { curl -s -o /dev/null --max-time 2 "http://$HOST:$PORT/"; }

# wait_for <what> <seconds> <pidfile> <command...>: poll the command; fail fast if the daemon died.
wait_for() {
  local what=$1 secs=$2 pidfile=$3; shift 3
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    our_pid "$pidfile" >/dev/null || die "the daemon for '$what' is not running"
    [ "$(date +%s)" -lt "$deadline" ] || die "timed out after ${secs}s waiting for $what"
    sleep 0.2
  done
}

NEEDED_COMMANDS=(radosgw ceph-mon ceph-osd ceph radosgw-admin monmaptool ceph-authtool uuidgen curl)

missing_commands() {
  local cmd
  for cmd in "${NEEDED_COMMANDS[@]}"; do command -v "$cmd" >/dev/null || echo "$cmd"; done
}

install_packages() {
  [ -n "$(missing_commands)" ] || return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "Ceph is not installed and this is not root (no sudo): install radosgw ceph-mon ceph-osd ceph-common uuid-runtime curl"
    sudo=(sudo -n)
  fi
  say "installing radosgw, ceph-mon, ceph-osd, ceph-common, uuid-runtime, curl (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get -o DPkg::Lock::Timeout=300 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
  "${sudo[@]}" "${apt[@]}" update -q </dev/null >&2 || die "apt-get update failed"
  "${sudo[@]}" "${apt[@]}" install -y -q --no-install-recommends \
    radosgw ceph-mon ceph-osd ceph-common uuid-runtime curl </dev/null >&2 || die "apt-get install failed"
  local still
  still=$(missing_commands | tr '\n' ' ')
  [ -z "$still" ] || die "still missing after apt-get install: $still"
  say "packages installed"
}

write_conf() {
  cat > "$CONF" <<EOF
[global]
fsid = $1
mon_host = v1:127.0.0.1:$MON_PORT
mon_initial_members = a
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_msgr2 = false
auth_cluster_required = none
auth_service_required = none
auth_client_required = none
auth_allow_insecure_global_id_reclaim = false
mon_warn_on_insecure_global_id_reclaim_allowed = false
run_dir = $BASE/run
admin_socket = $BASE/run/\$name.asok
pid_file = $BASE/run/\$name.pid
log_file = $BASE/log/\$name.log
keyring = $BASE/keyring
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pgp_num = 8
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
mon_max_pg_per_osd = 1000
# paxos batches proposals for 1 s by default: each of radosgw's pool creations would cost ~2 s
paxos_propose_interval = 0.1
# by default the monitor stops itself when its disk has less than 5 % free
mon_data_avail_warn = 1
mon_data_avail_crit = 0

[mon]
mon_data = $BASE/mon.\$id

[osd]
osd_data = $BASE/osd.\$id
osd_objectstore = memstore
memstore_device_bytes = 4294967296
# with auth none the OSD's own start-up CRUSH update can race its first monmap ("wrong fsid",
# 1 start in 4): the script adds it to CRUSH from the CLI instead
osd_crush_update_on_start = false
osd_class_update_on_start = false

[client.rgw.a]
rgw_data = $BASE/rgw.a
# without tcp_nodelay small responses stall ~40 ms on Nagle + delayed ACK
rgw_frontends = beast endpoint=$HOST:$PORT tcp_nodelay=1
rgw_dns_name = localhost
EOF
}

# Stops our daemons, radosgw first, the monitor last. Only pids from our pid files whose command
# line names our conf are signalled: TERM, then KILL after 10 s.
stop_daemons() {
  local f name pid
  for f in "$BASE"/run/client.rgw.*.pid "$BASE"/run/osd.*.pid "$BASE"/run/mon.*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    pid=$(our_pid "$f") || { rm -f "$f"; continue; }
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 200); do alive "$pid" || break; sleep 0.05; done
    if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; say "$name ($pid) killed with SIGKILL"; else say "$name ($pid) stopped"; fi
    rm -f "$f"
  done
}

# Empties $BASE, refusing to delete a folder this script did not create.
reset_base() {
  if [ -e "$BASE" ] && [ ! -e "$MARKER" ] && [ -n "$(ls -A "$BASE" 2>/dev/null)" ]; then
    die "$BASE exists and was not made by this script; set KEEPWORK_RGW_DIR to another folder"
  fi
  rm -rf "$BASE"
  mkdir -p "$BASE"/{run,log,mon.a,osd.0,rgw.a}
  touch "$MARKER"
}

start_mon() {
  ceph-authtool --create-keyring "$BASE/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  # --addv with an explicit v1 address: `--add a 127.0.0.1:<port>` makes a msgr2 (v2) address for
  # any port but 6789, which a cluster with ms_bind_msgr2 = false cannot be reached on.
  monmaptool --create --fsid "$1" --addv a "[v1:127.0.0.1:$MON_PORT]" "$BASE/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$BASE/monmap" --keyring "$BASE/keyring" 2>>"$BASE/log/mon-start.err" \
    || die "ceph-mon --mkfs failed"
  ceph-mon -c "$CONF" -i a 2>>"$BASE/log/mon-start.err" || die "ceph-mon did not start"
  wait_for "the monitor" 60 "$BASE/run/mon.a.pid" timeout 10 ceph -c "$CONF" mon stat
  say "monitor up (pid $(cat "$BASE/run/mon.a.pid"))"
}

start_osd() {
  local uuid id
  uuid=$(uuidgen)
  id=$(timeout 30 ceph -c "$CONF" osd new "$uuid") || die "ceph osd new failed"
  timeout 30 ceph -c "$CONF" osd crush add "osd.$id" 1.0 root=default >/dev/null 2>&1 || die "ceph osd crush add failed"
  ceph-osd -c "$CONF" -i "$id" --mkfs --osd-uuid "$uuid" 2>>"$BASE/log/osd-start.err" || die "ceph-osd --mkfs failed"
  ceph-osd -c "$CONF" -i "$id" 2>>"$BASE/log/osd-start.err" || die "ceph-osd did not start"
  # No mgr runs, so `ceph df`/`ceph osd df` would hang; `osd dump` answers from the monitor.
  wait_for "osd.$id up" 60 "$BASE/run/osd.$id.pid" \
    bash -c "timeout 10 ceph -c '$CONF' osd dump 2>/dev/null | grep -q '^osd.$id up'"
  say "osd.$id up (pid $(cat "$BASE/run/osd.$id.pid"))"
}

start_rgw() {
  radosgw -c "$CONF" -n client.rgw.a 2>>"$BASE/log/rgw-start.err" || die "radosgw did not start"
  wait_for "radosgw on $HOST:$PORT" 60 "$BASE/run/client.rgw.a.pid" http_answers
  say "radosgw answering on $HOST:$PORT (pid $(cat "$BASE/run/client.rgw.a.pid"))"
  timeout 60 radosgw-admin -c "$CONF" user create --uid=keepwork-test --display-name=keepwork-test \
    --access-key="$ACCESS_KEY" --secret="$SECRET_KEY" >"$BASE/user.json" 2>>"$BASE/log/rgw-start.err" \
    || die "radosgw-admin user create failed"
}

# Creates the bucket with the project's own S3 client (needs `npm ci` to have run).
create_bucket() {
  (cd "$ROOT" && eval "$(print_env)" && node --input-type=module -e "
    import { S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
    const s3 = new S3Client({ endpoint: 'http://$HOST:$PORT', region: '$REGION', forcePathStyle: true });
    for (let i = 1; ; i++) {
      try { await s3.send(new CreateBucketCommand({ Bucket: '$BUCKET' })); break; }
      catch (e) {
        if (e.name === 'BucketAlreadyOwnedByYou') break;
        if (i >= 10) { console.error('CreateBucket failed:', e.name, e.\$metadata?.httpStatusCode, e.message); process.exit(1); }
        await new Promise((r) => setTimeout(r, 300 * i));
      }
    }
    s3.destroy();
  ") 2>>"$BASE/log/bucket.err" || die "could not create bucket $BUCKET"
  say "bucket $BUCKET ready; access key $ACCESS_KEY"
}

# One start from scratch; exits non-zero (after showing the logs and stopping what started) on failure.
start_once() {
  reset_base
  STARTING=1
  local fsid
  fsid=$(uuidgen)
  write_conf "$fsid"
  start_mon "$fsid"
  start_osd
  start_rgw
  create_bucket
  touch "$BASE/ready"
  STARTING=0
}

cmd_up() {
  if our_pid "$BASE/run/client.rgw.a.pid" >/dev/null && [ -e "$BASE/ready" ] && http_answers; then
    say "already running on $HOST:$PORT ($BASE)"
    return 0
  fi
  install_packages
  command -v node >/dev/null || die "node is not on PATH (the bucket is created with the project's S3 client)"
  [ -d "$ROOT/node_modules/@aws-sdk/client-s3" ] || die "$ROOT/node_modules/@aws-sdk/client-s3 is missing: run npm ci first"
  [ -d "$BASE/run" ] && stop_daemons
  if http_answers; then die "something else already answers on $HOST:$PORT; set KEEPWORK_RGW_PORT"; fi
  if port_taken "$MON_PORT"; then die "127.0.0.1:$MON_PORT (monitor) is taken by another process; set KEEPWORK_RGW_MON_PORT"; fi
  # A start fails rarely (1 in ~80 here) for reasons that do not repeat: try twice, loudly.
  local attempt
  for attempt in 1 2; do
    # A separate bash, so that errexit holds inside it (it would not in an `if` subshell).
    # Without fd 9 (the lock of `serialised`): the daemons outlive this script and must not hold it.
    if bash "${BASH_SOURCE[0]}" _start </dev/null 9>&-; then
      say "up: s3://$BUCKET at http://$HOST:$PORT (stop with: bash scripts/s3-test-server.sh down)"
      return 0
    fi
    say "start attempt $attempt failed (logs above)"
  done
  die "radosgw did not come up; logs are in $BASE/log"
}

cmd_down() {
  rm -f "$BASE/ready"
  [ -d "$BASE/run" ] || { say "nothing to stop in $BASE"; return 0; }
  stop_daemons
  say "down"
}

print_env() {
  cat <<EOF
export KEEPWORK_TEST_S3_URL='s3://$BUCKET?endpoint=http://$HOST:$PORT&region=$REGION'
export AWS_ACCESS_KEY_ID='$ACCESS_KEY'
export AWS_SECRET_ACCESS_KEY='$SECRET_KEY'
export AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true
EOF
}

# `up` and `down` of one $BASE take turns: a second `up` started at the same moment (two test runs)
# waits for the first and then finds the server alive, instead of wiping the folder under it.
serialised() {
  mkdir -p "$(dirname "$BASE")"
  exec 9>"$BASE.lock"
  flock 9
  "$@"
}

case "${1:-}" in
  up) serialised cmd_up </dev/null ;;
  _start) start_once ;;
  down) serialised cmd_down ;;
  env) print_env ;;
  *) echo "usage: $0 up|down|env" >&2; exit 2 ;;
esac
