#!/usr/bin/env bash
# A minimr cluster of separate network hosts on one machine: the JobTracker and each worker run in a
# network namespace of their own, joined by a bridge, so every byte between them crosses a (virtual)
# network exactly as between machines. Needs root and iproute2. Addresses are those of these
# namespaces only (10.77.0.0/24 on a bridge this script creates), never anything outside.
#
#   cluster/netns-cluster.sh up [WORKERS]     create hosts, start the JobTracker and WORKERS workers (default 3)
#   cluster/netns-cluster.sh run CMD...        run a minimr command on the JobTracker's host
#   cluster/netns-cluster.sh info              list the registered workers (id, host, rack, data port)
#   cluster/netns-cluster.sh token             print the join token (workers and clients join with it)
#   cluster/netns-cluster.sh stop-capture      end the capture of MINIMR_NETNS_CAPTURE=wN (see `up`)
#   cluster/netns-cluster.sh down              stop everything and remove the namespaces
#
# The cluster is TLS (wss:// and HTTPS data ports, certificates from the JobTracker's own authority);
# workers join with `minimr join-token`'s string. MINIMR_NETNS_PLAINTEXT=1: plain text instead.
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
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  host_up jt "$SUBNET.1"
  # TLS by default (the JobTracker listens beyond loopback): on first start it makes the cluster secret,
  # its certificate authority and its own certificate in its directory.
  # MINIMR_NETNS_PLAINTEXT=1 runs the cluster in plain text (--insecure-plaintext), for comparison;
  # MINIMR_NETNS_JT_ARGS adds flags to the JobTracker's command line.
  local plain=()
  [ "${MINIMR_NETNS_PLAINTEXT:-}" = 1 ] && plain=(--insecure-plaintext)
  # shellcheck disable=SC2086
  ip netns exec "$PREFIX-jt" $MINIMR jobtracker --host "$SUBNET.1" --port 7700 --dir "$STATE/jt" "${plain[@]}" \
    --heartbeat-ms 300 --block-size 256k --replication 2 ${MINIMR_NETNS_JT_ARGS:-} >"$STATE/jt.log" 2>&1 &
  echo $! >"$STATE/jt.pid"
  for _ in $(seq 1 150); do
    [ -s "$STATE/jt/join-url" ] && break
    sleep 0.2
  done
  # Workers and `run` join with the one string `minimr join-token` prints: the JobTracker's URL, the
  # secret, and the fingerprint of its authority, which they pin (no secret file is copied anywhere).
  (umask 077 && $MINIMR join-token --dir "$STATE/jt" >"$STATE/join-token")
  for i in $(seq 1 "$workers"); do
    host_up "w$i" "$SUBNET.$((10 + i))"
    if [ "${MINIMR_NETNS_CAPTURE:-}" = "w$i" ]; then
      # Everything on this worker's link, from before it registers (test/cluster/netns.test.ts reads it).
      ip netns exec "$PREFIX-w$i" tcpdump -i eth0 -s 0 -U -w "$STATE/w$i.pcap" >"$STATE/tcpdump-w$i.log" 2>&1 &
      echo $! >"$STATE/tcpdump-w$i.pid"
      for _ in $(seq 1 50); do grep -q listening "$STATE/tcpdump-w$i.log" 2>/dev/null && break; sleep 0.1; done
    fi
    MINIMR_JOIN_TOKEN=$(cat "$STATE/join-token") ip netns exec "$PREFIX-w$i" $MINIMR worker --host "$SUBNET.$((10 + i))" \
      --id "w$i" --rack "/rack-$(( (i - 1) % 2 ))" --dir "$STATE/w$i" >"$STATE/w$i.log" 2>&1 &
    echo $! >"$STATE/w$i.pid"
  done
  # Wait until every worker has registered.
  for _ in $(seq 1 150); do
    n=$(run_info 2>/dev/null | grep -c workerId || true)
    [ "${n:-0}" -ge "$workers" ] && { echo "netns cluster up: JobTracker $(cat "$STATE/jt/join-url"), $workers workers"; return 0; }
    sleep 0.2
  done
  echo "workers did not register; logs in $STATE" >&2
  return 1
}

run_info() {
  MINIMR_JOIN_TOKEN=$(cat "$STATE/join-token") ip netns exec "$PREFIX-jt" node --input-type=module -e "
    import { JobClient, parseJoinToken } from '$ROOT/dist/src/runtime/index.js';
    const t = parseJoinToken(process.env.MINIMR_JOIN_TOKEN);
    const credentials = { user: 'root', secret: Buffer.from(t.secret) };
    const c = await JobClient.connect(t.url, { security: { credentials, ...(t.ca ? { tlsPin: t.ca } : {}) } });
    for (const w of (await c.clusterInfo()).workers) console.log('workerId', w.workerId, w.host, w.rack, w.dataPort);
    c.close();"
}

run() {
  MINIMR_JOIN_TOKEN=$(cat "$STATE/join-token") ip netns exec "$PREFIX-jt" $MINIMR "$@"
}

stop_capture() { # ends the capture MINIMR_NETNS_CAPTURE started, its file complete
  for f in "$STATE"/tcpdump-*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$f"
  done
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
  token) cat "$STATE/join-token" ;;
  stop-capture) stop_capture ;;
  down) down ;;
  *) sed -n '2,15p' "$0"; exit 2 ;;
esac
