#!/usr/bin/env bash
# A real local Kubernetes cluster: etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler, with one node for each of the router, subgraph and client pools.
#
#   scripts/cluster.sh up     [--state DIR] [--nodes real|kwok]   start (or reuse a healthy one)
#   scripts/cluster.sh down   [--state DIR]   stop exactly what `up` started, undo what it changed, remove DIR
#   scripts/cluster.sh status [--state DIR]   show nodes and pools
#   scripts/cluster.sh images [--state DIR] [name...]   build graphfleet's images, import them into every node
#
# --nodes real (the default): three real kubelets with their own containerd run real
# containers, all inside a network namespace with no route out (scripts/realnodes.sh);
# needs root. --nodes kwok: kwok stands in for the kubelets (no containers run), the
# control plane listens on loopback; for tests that need only the API or many nodes.
# DIR defaults to .graphfleet/cluster in the clone; DIR/kubeconfig is the admin
# kubeconfig. Several clusters (a developer's and a test run's) coexist.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/realnodes.sh"

usage="usage: cluster.sh up|down|status|images [--state DIR] [--nodes real|kwok] [image...]"
cmd=${1:-}; shift || true
STATE=$GF_ROOT/.graphfleet/cluster
NODES=real
IMAGES=()
while [ $# -gt 0 ]; do
  case $1 in
    --state) STATE=$2; shift 2 ;;
    --nodes)
      NODES=$2; shift 2
      case $NODES in real | kwok) ;; *) die "--nodes takes real or kwok, not '$NODES'" ;; esac
      ;;
    -*) die "unknown argument '$1' ($usage)" ;;
    *) IMAGES+=("$1"); shift ;;
  esac
done
mkdir -p "$(dirname "$STATE")"
STATE=$(cd "$(dirname "$STATE")" && pwd)/$(basename "$STATE")
KUBECONFIG_FILE=$STATE/kubeconfig
COMPONENTS="etcd kube-apiserver kube-controller-manager kube-scheduler kwok"
POOLS="router subgraph client"
export PATH="$(tools_path):$PATH"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# alive NAME: the recorded PID still runs the binary we started (guards against PID reuse).
alive() {
  local pidf=$STATE/$1.pid pid
  [ -f "$pidf" ] || return 1
  pid=$(cat "$pidf")
  [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = "$1" ]
}

start() { # start NAME ARGS...: background process in its own session, logging into the state dir
  local name=$1; shift
  setsid "$@" >"$STATE/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/$name.pid"
}

wait_for() { # wait_for WHAT SECONDS COMMAND...
  local what=$1 secs=$2 i; shift 2
  for ((i = 0; i < secs * 5; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  die "$what not ready after ${secs}s (logs in $STATE)"
}

certs() {
  local d=$STATE/pki; mkdir -p "$d"
  (
    cd "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=graphfleet-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=graphfleet-admin" -keyout admin.key -out admin.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile admin.ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

kubeconfig() { real_kubeconfig "$KUBECONFIG_FILE" "127.0.0.1:$API_PORT" admin; }

nodes_yaml() {
  local pool
  for pool in $POOLS; do
    cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: $pool-0
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    type: kwok
    kubernetes.io/hostname: $pool-0
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    graphfleet.dev/pool: $pool
spec:
  taints:
  - {key: graphfleet.dev/pool, value: $pool, effect: NoSchedule}
status:
  allocatable: {cpu: "32", memory: 128Gi, pods: "110"}
  capacity: {cpu: "32", memory: 128Gi, pods: "110"}
NODE
  done
}

healthy() {
  local c
  for c in $COMPONENTS; do alive "$c" || return 1; done
  kubectl --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz >/dev/null 2>&1
}

# The fake pods' addresses. kwok pods run no process, but the operator (and the tests
# running it in-process) still reads each pod's admin port; without a route of its own that
# traffic would take the host's default route off the machine.
KWOK_CIDR=10.0.0.0/24

# Make connections to the fake pods fail at once, on this machine: an `unreachable` route
# for their range (shared by every kwok cluster here, so it is left in place on `down`).
keep_kwok_pods_local() {
  ip route replace unreachable "$KWOK_CIDR" \
    || die "cannot add the route keeping kwok pod addresses ($KWOK_CIDR) on this machine (needs root)"
}

up() {
  if [ -f "$STATE/ports" ] && healthy; then
    log "cluster already running (state: $STATE)"
    return 0
  fi
  [ -d "$STATE" ] && { [ "$(mode)" = real ] && real_down || down_quiet; }
  for t in etcd kube-apiserver kube-controller-manager kube-scheduler kwok kubectl; do
    command -v "$t" >/dev/null || die "tool $t is not built; run scripts/tools.sh first"
  done
  local t0=$SECONDS
  mkdir -p "$STATE"
  echo kwok >"$STATE/mode"
  ETCD_PORT=$(free_port); ETCD_PEER=$(free_port); API_PORT=$(free_port)
  KCM_PORT=$(free_port); SCHED_PORT=$(free_port); KWOK_PORT=$(free_port)
  declare -p ETCD_PORT ETCD_PEER API_PORT KCM_PORT SCHED_PORT KWOK_PORT >"$STATE/ports"
  certs
  kubeconfig
  local pki=$STATE/pki
  start etcd etcd --name graphfleet --data-dir "$STATE/etcd" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "graphfleet=http://127.0.0.1:$ETCD_PEER" \
    --unsafe-no-fsync --quota-backend-bytes 4294967296
  wait_for etcd 20 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
  start kube-apiserver kube-apiserver --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$API_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --endpoint-reconciler-type none \
    --allow-privileged --enable-priority-and-fairness=false --profiling=false
  wait_for kube-apiserver 60 kubectl --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz
  start kube-controller-manager kube-controller-manager --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=false --controllers '*,-csrsigning,-csrapproving' \
    --node-monitor-grace-period 40s --profiling=false \
    --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 \
    --kube-api-qps 500 --kube-api-burst 1000
  start kube-scheduler kube-scheduler --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --profiling=false \
    --kube-api-qps 500 --kube-api-burst 1000
  start kwok kwok --kubeconfig "$KUBECONFIG_FILE" --server-address "127.0.0.1:$KWOK_PORT" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-ip "${KWOK_CIDR%.0/24}.1" --cidr "${KWOK_CIDR%.0/24}.1/24" --node-lease-duration-seconds 40
  keep_kwok_pods_local
  nodes_yaml | kubectl --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null
  wait_for "kwok nodes" 30 kubectl --kubeconfig "$KUBECONFIG_FILE" wait --for=condition=Ready node --all --timeout=1s
  # The node lifecycle controller lifts the not-ready taint once kwok reports the node Ready.
  wait_for "node taints" 30 bash -c "! kubectl --kubeconfig '$KUBECONFIG_FILE' get nodes -o jsonpath='{.items[*].spec.taints[*].key}' | grep -q node.kubernetes.io/not-ready"
  wait_for "default service account" 30 kubectl --kubeconfig "$KUBECONFIG_FILE" -n default get serviceaccount default
  log "cluster ready in $((SECONDS - t0)) s; kubeconfig: $KUBECONFIG_FILE"
}

# Stops the recorded processes, newest first; only PIDs that still run the binary we started.
down_quiet() {
  local c pid i
  for c in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
    alive "$c" || continue
    pid=$(cat "$STATE/$c.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do alive "$c" || break; sleep 0.1; done
    alive "$c" && kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$STATE"
}

# The kind of cluster at $STATE, if any.
mode() { cat "$STATE/mode" 2>/dev/null || echo none; }

real_up_or_reuse() {
  if [ "$(mode)" = real ] && real_healthy; then
    log "cluster already running (state: $STATE)"
    return 0
  fi
  [ -d "$STATE" ] && { [ "$(mode)" = real ] && real_down || down_quiet; }
  real_up
}

# images NAME...: build (cached by content hash) and import into every real node.
images() {
  [ "$(mode)" = real ] || die "images go to real nodes; $STATE holds no real cluster"
  real_ids
  local names=("${IMAGES[@]}") pi
  [ ${#names[@]} -gt 0 ] || names=(gateway operator subgraphs k6 gatling)
  "$GF_ROOT/scripts/images.sh" build "${names[@]}"
  for pi in $REAL_POOLS; do
    proc_alive "containerd-${pi%:*}" containerd || die "containerd of ${pi%:*}-0 is not running (log: $STATE/logs/containerd-${pi%:*}.log)"
    "$GF_ROOT/scripts/images.sh" import "$STATE/nodes/${pi%:*}/containerd/containerd.sock" "${names[@]}" ||
      die "importing ${names[*]} into ${pi%:*}-0 failed"
  done
}

case $cmd in
  up) if [ "$NODES" = real ]; then real_up_or_reuse; else up; fi ;;
  down)
    if [ "$(mode)" = real ]; then real_down; else down_quiet; fi
    log "cluster stopped (state $STATE removed)"
    ;;
  images) images ;;
  status)
    if [ "$(mode)" = real ]; then real_status; exit 0; fi
    healthy || die "no healthy cluster at $STATE (start it with scripts/cluster.sh up)"
    kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes -L graphfleet.dev/pool \
      -o custom-columns='NODE:.metadata.name,POOL:.metadata.labels.graphfleet\.dev/pool,READY:.status.conditions[?(@.type=="Ready")].status,TAINTS:.spec.taints[*].key,CPU:.status.allocatable.cpu'
    ;;
  *) die "$usage" ;;
esac
