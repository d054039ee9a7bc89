#!/usr/bin/env bash
# A minimr cluster of separate network hosts on one machine: the JobTracker and each worker run in a
# network namespace of their own, joined by a bridge, so every byte between them crosses a (virtual)
# network exactly as between machines. Needs root and iproute2. Addresses are those of these
# namespaces only (10.77.0.0/24 on a bridge this script creates), never anything outside.
#
#   cluster/netns-cluster.sh up [WORKERS]     create hosts, start the JobTracker and WORKERS workers (default 3)
#   cluster/netns-cluster.sh run CMD...        run a minimr command on the JobTracker's host
#   cluster/netns-cluster.sh down              stop everything and remove the namespaces
set -euo pipefail

PREFIX=${MINIMR_NETNS_PREFIX:-mr}
BRIDGE=${PREFIX}br0
SUBNET=${MINIMR_NETNS_SUBNET:-10.77.0}
STATE=${MINIMR_NETNS_STATE:-/tmp/minimr-netns-$PREFIX}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MINIMR="node $ROOT/bin/minimr.js"

host_up() { # name ip
  local ns=$PREFIX-$1
  ip netns add "$ns"
  ip link add "v-$PREFIX-$1" type veth peer name eth0 netns "$ns"
  ip link set "v-$PREFIX-$1" master "$BRIDGE" up
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
}

up() {
  local workers=${1:-3}
  mkdir -p "$STATE"
  # The cluster secret, shared by the JobTracker, the workers and `run` (the hosts share this file system).
  [ -s "$STATE/secret" ] || (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$STATE/secret")
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  host_up jt "$SUBNET.1"
  ip netns exec "$PREFIX-jt" $MINIMR jobtracker --host "$SUBNET.1" --port 7700 --dir "$STATE/jt" --secret-file "$STATE/secret" \
    --heartbeat-ms 300 --block-size 256k --replication 2 >"$STATE/jt.log" 2>&1 &
  echo $! >"$STATE/jt.pid"
  for i in $(seq 1 "$workers"); do
    host_up "w$i" "$SUBNET.$((10 + i))"
    ip netns exec "$PREFIX-w$i" $MINIMR worker --jobtracker "ws://$SUBNET.1:7700" --host "$SUBNET.$((10 + i))" \
      --id "w$i" --rack "/rack-$(( (i - 1) % 2 ))" --dir "$STATE/w$i" --secret-file "$STATE/secret" >"$STATE/w$i.log" 2>&1 &
    echo $! >"$STATE/w$i.pid"
  done
  # Wait until every worker has registered.
  for _ in $(seq 1 100); do
    n=$(run_info 2>/dev/null | grep -c workerId || true)
    [ "${n:-0}" -ge "$workers" ] && { echo "netns cluster up: JobTracker ws://$SUBNET.1:7700, $workers workers"; return 0; }
    sleep 0.2
  done
  echo "workers did not register; logs in $STATE" >&2
  return 1
}

run_info() {
  ip netns exec "$PREFIX-jt" node --input-type=module -e "
    import { JobClient } from '$ROOT/dist/src/runtime/index.js';
    import { clientCredentials } from '$ROOT/dist/src/runtime/wire/index.js';
    const url = 'ws://$SUBNET.1:7700';
    const c = await JobClient.connect(url, { security: { credentials: await clientCredentials(url, { secretFile: '$STATE/secret' }) } });
    for (const w of (await c.clusterInfo()).workers) console.log('workerId', w.workerId, w.host, w.rack);
    c.close();"
}

run() {
  MINIMR_JOBTRACKER="ws://$SUBNET.1:7700" MINIMR_SECRET_FILE="$STATE/secret" ip netns exec "$PREFIX-jt" $MINIMR "$@"
}

down() {
  for f in "$STATE"/*.pid; do
    [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 0.3
  for ns in $(ip netns list | awk '{print $1}' | grep "^$PREFIX-" || true); do ip netns del "$ns"; done
  ip link del "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  run) shift; run "$@" ;;
  info) run_info ;;
  down) down ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
