#!/usr/bin/env bash
# Runs what BlockX can run today on one machine, on embedded defaults: a private etcd from
# .cache (temporary data dir, free ports) and the block Coordinator from dist/blockx.
# Ctrl-C stops both and removes the data dir.
set -euo pipefail
cd "$(dirname "$0")/.."
ETCD="${BLOCKX_ETCD_BIN:-$PWD/.cache/etcd/root/usr/bin/etcd}"
data="$(mktemp -d /tmp/blockx-local-etcd.XXXXXX)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
client_port="$(free_port)"; peer_port="$(free_port)"; coord_port="${COORDINATOR_PORT:-$(free_port)}"
pids=()
cleanup() {
  # Newest first: the Coordinator stops before the etcd it watches.
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill "${pids[$i]}" 2>/dev/null || true; wait "${pids[$i]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$data"
}
trap cleanup EXIT INT TERM
"$ETCD" --name local --data-dir "$data" \
  --listen-client-urls "http://127.0.0.1:$client_port" --advertise-client-urls "http://127.0.0.1:$client_port" \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "local=http://127.0.0.1:$peer_port" --logger zap --log-level error &
pids+=($!)
echo "etcd:        127.0.0.1:$client_port"
echo "coordinator: 127.0.0.1:$coord_port (coordinator.v1.CoordinatorService; Ctrl-C stops everything)"
ETCD_ENDPOINTS="127.0.0.1:$client_port" COORDINATOR_LISTEN="127.0.0.1:$coord_port" ./dist/blockx coordinator &
pids+=($!)
wait -n "${pids[@]}"
