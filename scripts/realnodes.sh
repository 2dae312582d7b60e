# The local cluster on real nodes: sourced by scripts/cluster.sh, never run.
# shellcheck shell=bash
#
# Everything runs inside a network namespace this script creates (no default route:
# no packet can leave the machine), joined to the host by one veth pair whose /30 is
# the only way in: the host reaches the API server at $NS_ADDR:6443.
#
#   control plane   etcd, kube-apiserver (advertised to pods at $API_ADDR through the
#                   `kubernetes` Service), kube-controller-manager, kube-scheduler
#   per node        a private containerd (own socket, root, state, runc root, CNI ptp
#                   network 10.244.IDX.0/24) and a kubelet (node IP 10.77.0.IDX, cgroup
#                   root /gf-ID-POOL pinned to its cores)
#   once            kube-proxy (nftables), CoreDNS as pods behind the kube-dns Service
#
# Every resource is recorded in $STATE/created as it is made, so `down` undoes exactly
# what `up` did, even after a half-finished start.

REAL_POOLS="router:1 subgraph:2 client:3"
API_ADDR=10.77.0.100     # the API server as pods see it (kubernetes Service endpoint)
DNS_IP=10.96.0.10        # the kube-dns Service
# Kernel settings kubelet writes machine-wide at start; restored right after.
KUBELET_SYSCTLS="kernel/panic kernel/panic_on_oops vm/overcommit_memory vm/panic_on_oom kernel/keys/root_maxkeys kernel/keys/root_maxbytes"

real_ids() { # sets ID, NETNS, VETH_HOST, VETH_NS (stable for a state dir)
  ID=$(printf '%s' "$STATE" | sha1sum | cut -c1-8)
  NETNS=gf-$ID
  VETH_HOST=gfh-$ID
  VETH_NS=gfn-$ID
}

record() { echo "$*" >>"$STATE/created"; }
in_ns() { nsenter --net="/run/netns/$NETNS" "$@"; }

# start_in_ns NAME BINARY ARGS...: a background process inside the namespace, in its
# own session, logging to $STATE/logs/NAME.log; its PID (nsenter execs, so the PID is
# the component's) goes to $STATE/pids/NAME.
start_in_ns() {
  local name=$1; shift
  setsid nsenter --net="/run/netns/$NETNS" "$@" >"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/pids/$name"
  record "process $name $(basename "$1")"
}

# proc_alive NAME BINARY: the recorded PID still runs BINARY (guards against PID reuse).
proc_alive() {
  local pidf=$STATE/pids/$1 pid
  [ -f "$pidf" ] || return 1
  pid=$(cat "$pidf")
  [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = "$2" ]
}

stop_proc() { # stop_proc NAME BINARY [SECONDS]: TERM, wait, then KILL
  local name=$1 bin=$2 secs=${3:-10} pid i
  proc_alive "$name" "$bin" || return 0
  pid=$(cat "$STATE/pids/$name")
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < secs * 10; i++)); do proc_alive "$name" "$bin" || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  log "killed $name ($bin, pid $pid) after ${secs}s"
}

# fail COMPONENT LOG MESSAGE: a clear error naming the component and its log.
fail() {
  local component=$1 logf=$2; shift 2
  if [ -f "$logf" ]; then
    echo "--- last lines of $logf" >&2
    tail -n 15 "$logf" >&2
  fi
  die "$component: $* (log: $logf; clean up with: scripts/cluster.sh down --state $STATE)"
}

# wait_until COMPONENT LOG SECONDS COMMAND...: COMMAND exiting 3 means it never will.
wait_until() {
  local component=$1 logf=$2 secs=$3 i rc; shift 3
  for ((i = 0; i < secs * 5; i++)); do
    rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    [ "$rc" = 0 ] && return 0
    [ "$rc" = 3 ] && fail "$component" "$logf" "exited during start"
    sleep 0.2
  done
  fail "$component" "$logf" "not ready after ${secs}s"
}

# A /30 for the host<->namespace link that no interface on the host uses yet.
pick_link_net() {
  local n used
  used=$(ip -o -4 addr show | awk '{print $4}')
  for ((n = 1; n < 255; n++)); do
    grep -q "^10\.78\.$n\." <<<"$used" || { echo "10.78.$n"; return 0; }
  done
  die "no free 10.78.N.0/30 for the cluster's host link"
}

real_certs() {
  local d=$STATE/pki pool
  mkdir -p "$d"
  (
    cd "$d"
    sign() { # sign NAME SUBJECT EXTENSIONS
      openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      printf '%b' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    }
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=graphfleet-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    sign apiserver "/CN=kube-apiserver" \
      "subjectAltName=IP:127.0.0.1,IP:$NS_ADDR,IP:$API_ADDR,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n"
    sign admin "/O=system:masters/CN=graphfleet-admin" 'extendedKeyUsage=clientAuth\n'
    sign kube-proxy "/CN=system:kube-proxy" 'extendedKeyUsage=clientAuth\n'
    for pool in router subgraph client; do
      sign "node-$pool" "/O=system:nodes/CN=system:node:$pool-0" 'extendedKeyUsage=clientAuth\n'
    done
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

# real_kubeconfig FILE SERVER CERT: a kubeconfig for the client cert pki/CERT.{crt,key}
# (the kwok cluster's admin kubeconfig too).
real_kubeconfig() {
  local d=$STATE/pki
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: graphfleet-local
  cluster:
    server: https://$2
    certificate-authority: $d/ca.crt
users:
- name: $3
  user:
    client-certificate: $d/$3.crt
    client-key: $d/$3.key
contexts:
- name: graphfleet-local
  context: {cluster: graphfleet-local, user: $3}
current-context: graphfleet-local
KC
}

# The namespace, its link to the host, and the node bridge. Nothing routes out.
real_network() {
  # `ip netns add` makes /run/netns a shared bind mount the first time; down undoes
  # that too when it made it and no other namespace is left.
  mountpoint -q /run/netns 2>/dev/null || record "netns-mount /run/netns"
  ip netns add "$NETNS" || die "could not create network namespace $NETNS"
  record "netns $NETNS"
  ip -n "$NETNS" link set lo up
  local net; net=$(pick_link_net)
  HOST_ADDR=$net.1; NS_ADDR=$net.2
  echo "NS_ADDR=$NS_ADDR HOST_ADDR=$HOST_ADDR" >"$STATE/link.env"
  ip link add "$VETH_HOST" type veth peer name "$VETH_NS" netns "$NETNS"
  record "link $VETH_HOST"
  ip addr add "$HOST_ADDR/30" dev "$VETH_HOST"
  ip link set "$VETH_HOST" up
  ip -n "$NETNS" addr add "$NS_ADDR/30" dev "$VETH_NS"
  ip -n "$NETNS" link set "$VETH_NS" up
  # Node addresses live on an empty bridge (this kernel has no dummy links).
  ip -n "$NETNS" link add gf-nodes type bridge
  ip -n "$NETNS" link set gf-nodes up
  ip -n "$NETNS" addr add "$API_ADDR/24" dev gf-nodes
  local pi
  for pi in $REAL_POOLS; do ip -n "$NETNS" addr add "10.77.0.${pi#*:}/32" dev gf-nodes; done
  # ClusterIPs for processes of the namespace itself (pods are DNATed before routing).
  ip -n "$NETNS" route add 10.96.0.0/16 dev gf-nodes
  ip -n "$NETNS" route add blackhole 10.244.0.0/16
  in_ns sysctl -qw net.ipv4.ip_forward=1
  # The only routes in the namespace are its own: check it (ip route get sends nothing).
  if in_ns ip route get 1.1.1.1 >/dev/null 2>&1; then
    die "network namespace $NETNS has a route out of the machine"
  fi
}

real_control_plane() {
  local pki=$STATE/pki kc=$STATE/kubeconfig-ns
  mkdir -p "$STATE/etcd"
  start_in_ns etcd etcd --name graphfleet --data-dir "$STATE/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster graphfleet=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --unsafe-no-fsync --quota-backend-bytes 4294967296
  wait_until etcd "$STATE/logs/etcd.log" 20 running etcd etcd in_ns curl -fsS http://127.0.0.1:2379/health
  # The `kubernetes` Service's endpoint is $API_ADDR:6443, kept by the lease reconciler.
  start_in_ns kube-apiserver kube-apiserver --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --advertise-address "$API_ADDR" --secure-port 6443 \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" --authorization-mode Node,RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 --allow-privileged \
    --enable-priority-and-fairness=false --profiling=false \
    --kubelet-preferred-address-types InternalIP
  wait_until kube-apiserver "$STATE/logs/kube-apiserver.log" 90 \
    running kube-apiserver kube-apiserver kubectl --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz
  start_in_ns kube-controller-manager kube-controller-manager --kubeconfig "$kc" \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port 10257 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=false --controllers '*,-csrsigning,-csrapproving' \
    --profiling=false --concurrent-deployment-syncs 10 --concurrent-replicaset-syncs 10 \
    --kube-api-qps 200 --kube-api-burst 400
  start_in_ns kube-scheduler kube-scheduler --kubeconfig "$kc" \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port 10259 --leader-elect=false --profiling=false \
    --kube-api-qps 200 --kube-api-burst 400
}

# CPU pinning: the router node gets core 0 alone, subgraph and client share the rest
# (one core on this 2-core machine), as the published setup gives the router its own node.
pool_cpus() {
  local last; last=$(($(nproc) - 1))
  if [ "$last" -lt 1 ]; then echo 0; return; fi
  case $1 in router) echo 0 ;; *) echo "1-$last" ;; esac
}

real_cgroups() { # real_cgroups POOL: the node's cgroup root in every v1 hierarchy
  local pool=$1 c root=/gf-$ID-$1 dir
  for c in /sys/fs/cgroup/*/; do
    case $c in */unified/) continue ;; esac
    mkdir -p "$c$root/kubepods"
    record "cgroup $c$root"
  done
  # kubelet (CPU manager policy none) would create kubepods with every CPU of the
  # machine, which a pinned parent refuses; it leaves an existing kubepods alone, so
  # it is made here, pinned like its parent (pods' cgroups inherit it).
  for dir in "/sys/fs/cgroup/cpuset$root" "/sys/fs/cgroup/cpuset$root/kubepods"; do
    cat /sys/fs/cgroup/cpuset/cpuset.mems >"$dir/cpuset.mems"
    pool_cpus "$pool" >"$dir/cpuset.cpus"
  done
}

real_containerd() { # real_containerd POOL IDX
  local pool=$1 idx=$2 n=$STATE/nodes/$1
  mkdir -p "$n/containerd/root" "$n/containerd/state" "$n/cni/net.d" "$n/cni/ipam" "$STATE/run/$pool/runc"
  cat >"$n/containerd/config.toml" <<TOML
version = 2
root = "$n/containerd/root"
state = "$n/containerd/state"
oom_score = 0
[grpc]
  address = "$n/containerd/containerd.sock"
[ttrpc]
  address = "$n/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/pause:3.10"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "$(command -v runc)"
        Root = "$STATE/run/$pool/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$n/cni/net.d"
    max_conf_num = 1
TOML
  # ptp: every pod has its own veth to the node, so all pod traffic is routed (and
  # conntracked) by the namespace's stack: Services work between pods of one node too.
  cat >"$n/cni/net.d/10-$pool.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "gf-$pool",
  "plugins": [
    {"type": "ptp", "mtu": 1500,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.$idx.0/24"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$n/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
  start_in_ns "containerd-$pool" containerd --config "$n/containerd/config.toml"
  wait_until "containerd on $pool-0" "$STATE/logs/containerd-$pool.log" 20 \
    running "containerd-$pool" containerd ctr -a "$n/containerd/containerd.sock" version
}

# real_images POOL: the images every node needs (sandbox, cluster DNS), by content hash.
real_images() {
  local sock=$STATE/nodes/$1/containerd/containerd.sock
  "$GF_ROOT/scripts/images.sh" import "$sock" pause coredns >>"$STATE/logs/images.log" 2>&1 ||
    fail "image import into $1-0" "$STATE/logs/images.log" "could not import pause/coredns"
}

# kubelet keeps this path whatever its --root-dir.
DEVICE_PLUGIN_SOCKET=/var/lib/kubelet/device-plugins/kubelet.sock

real_kubelet() { # real_kubelet POOL IDX
  local pool=$1 idx=$2 n=$STATE/nodes/$1
  mkdir -p "$n/kubelet" "$n/pod-logs"
  real_kubeconfig "$n/kubeconfig" "127.0.0.1:6443" "node-$pool"
  cat >"$n/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 10.77.0.$idx
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 1024$idx
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: /gf-$ID-$pool
enforceNodeAllocatable: []
failSwapOn: false
failCgroupV1: false
oomScoreAdj: 0
containerRuntimeEndpoint: unix://$n/containerd/containerd.sock
imageServiceEndpoint: unix://$n/containerd/containerd.sock
podLogsDir: $n/pod-logs
resolvConf: ""
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 60
registerWithTaints:
- {key: graphfleet.dev/pool, value: $pool, effect: NoSchedule}
YAML
  # Extra kubelet flags, for all nodes or one (GRAPHFLEET_KUBELET_ARGS_ROUTER=...).
  local per_node=GRAPHFLEET_KUBELET_ARGS_${pool^^} extra
  read -r -a extra <<<"${GRAPHFLEET_KUBELET_ARGS:-} ${!per_node:-}"
  start_in_ns "kubelet-$pool" kubelet --config "$n/kubelet-config.yaml" --kubeconfig "$n/kubeconfig" \
    --root-dir "$n/kubelet" --hostname-override "$pool-0" --node-ip "10.77.0.$idx" \
    --node-labels "graphfleet.dev/pool=$pool" --v=1 "${extra[@]}"
}

# running NAME BINARY COMMAND...: COMMAND, or 3 (never) once the process has exited.
# Right after the start the PID may still be setsid/nsenter, not yet exec'd into BINARY.
running() {
  starting "$1" "$2" || return 3
  "${@:3}"
}

starting() { # starting NAME BINARY: runs BINARY, or is about to exec it
  local exe
  exe=$(basename "$(readlink "/proc/$(cat "$STATE/pids/$1")/exe" 2>/dev/null)")
  case $exe in "$2" | setsid | nsenter) return 0 ;; *) return 1 ;; esac
}

# node_ready POOL: its node is Ready; a kubelet that has exited fails at once.
node_ready() {
  starting "kubelet-$1" kubelet || return 3
  kubectl --kubeconfig "$KUBECONFIG_FILE" wait --for=condition=Ready "node/$1-0" --timeout=1s
}

real_kube_proxy() {
  mkdir -p "$STATE/kube-proxy"
  real_kubeconfig "$STATE/kube-proxy/kubeconfig" "127.0.0.1:6443" kube-proxy
  cat >"$STATE/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: $STATE/kube-proxy/kubeconfig}
hostnameOverride: router-0
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: 10.244.0.0/16
nodePortAddresses: ["10.77.0.0/24"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
  start_in_ns kube-proxy kube-proxy --config "$STATE/kube-proxy/config.yaml" --v=1
}

save_sysctls() {
  local k
  for k in $KUBELET_SYSCTLS; do echo "$k=$(cat "/proc/sys/$k")"; done >"$STATE/sysctl-before"
  record "sysctls"
}

restore_sysctls() {
  [ -f "$STATE/sysctl-before" ] || return 0
  local k v
  while IFS='=' read -r k v; do
    [ "$(cat "/proc/sys/$k")" = "$v" ] || echo "$v" >"/proc/sys/$k"
  done <"$STATE/sysctl-before"
}

real_dns() {
  sed "s/@DNS_IP@/$DNS_IP/; s/@COREDNS_VERSION@/$COREDNS_VERSION/" "$GF_ROOT/scripts/cluster-dns.yaml" |
    kubectl --kubeconfig "$KUBECONFIG_FILE" apply -f - >/dev/null
  wait_until "CoreDNS (kube-system/coredns)" "$STATE/logs/kubelet-subgraph.log" 90 \
    kubectl --kubeconfig "$KUBECONFIG_FILE" -n kube-system rollout status deployment/coredns --timeout=1s
}

real_up() {
  [ "$(id -u)" = 0 ] || die "real nodes need root (kubelet, containerd, network namespaces)"
  local t
  for t in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kube-proxy; do
    command -v "$t" >/dev/null || die "tool $t is not built; run scripts/tools.sh first"
  done
  "$GF_ROOT/scripts/host-packages.sh" containerd runc containernetworking-plugins conntrack iptables nftables iproute2
  CNI_BIN=/usr/lib/cni
  [ -x $CNI_BIN/ptp ] || die "CNI plugins missing in $CNI_BIN (package containernetworking-plugins)"
  "$GF_ROOT/scripts/images.sh" build pause coredns
  local t0=$SECONDS pi
  real_ids
  ip netns list | grep -qw "$NETNS" && die "network namespace $NETNS exists already: run scripts/cluster.sh down --state $STATE"
  mkdir -p "$STATE/logs" "$STATE/pids" "$STATE/run"
  echo real >"$STATE/mode"
  echo "ID=$ID NETNS=$NETNS VETH_HOST=$VETH_HOST" >"$STATE/ids.env"
  real_network
  real_certs
  real_kubeconfig "$KUBECONFIG_FILE" "$NS_ADDR:6443" admin
  real_kubeconfig "$STATE/kubeconfig-ns" "127.0.0.1:6443" admin
  real_control_plane
  save_sysctls
  for pi in $REAL_POOLS; do
    real_cgroups "${pi%:*}"
    real_containerd "${pi%:*}" "${pi#*:}"
    real_images "${pi%:*}"
  done
  # One kubelet at a time: each binds the machine-wide device-plugin socket after
  # clearing its folder, so two starting together can collide (EADDRINUSE, exit).
  for pi in $REAL_POOLS; do
    rm -f "$DEVICE_PLUGIN_SOCKET"
    real_kubelet "${pi%:*}" "${pi#*:}"
    wait_until "kubelet ${pi%:*}-0" "$STATE/logs/kubelet-${pi%:*}.log" 60 \
      running "kubelet-${pi%:*}" kubelet test -S "$DEVICE_PLUGIN_SOCKET"
  done
  real_kube_proxy
  local pool
  for pi in $REAL_POOLS; do
    pool=${pi%:*}
    wait_until "kubelet $pool-0" "$STATE/logs/kubelet-$pool.log" 60 node_ready "$pool"
  done
  # kubelet has written its kernel settings by now; a kernel oops must not reboot this machine.
  restore_sysctls
  wait_until "node taints" "$STATE/logs/kube-controller-manager.log" 30 bash -c \
    "! kubectl --kubeconfig '$KUBECONFIG_FILE' get nodes -o jsonpath='{.items[*].spec.taints[*].key}' | grep -q node.kubernetes.io/not-ready"
  wait_until "default service account" "$STATE/logs/kube-controller-manager.log" 30 \
    kubectl --kubeconfig "$KUBECONFIG_FILE" -n default get serviceaccount default
  real_dns
  restore_sysctls
  log "cluster with real nodes ready in $((SECONDS - t0)) s; kubeconfig: $KUBECONFIG_FILE"
}

real_healthy() {
  [ -f "$STATE/ids.env" ] || return 1
  real_ids
  local c pi
  for c in etcd kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do
    proc_alive "$c" "$c" || return 1
  done
  for pi in $REAL_POOLS; do
    proc_alive "kubelet-${pi%:*}" kubelet || return 1
    proc_alive "containerd-${pi%:*}" containerd || return 1
  done
  kubectl --kubeconfig "$KUBECONFIG_FILE" get --raw /readyz >/dev/null 2>&1
}

# Pods first, so kubelet tears down their sandboxes (network, mounts) itself.
real_drain() {
  proc_alive kube-apiserver kube-apiserver || return 0
  local k="kubectl --kubeconfig $STATE/kubeconfig-ns" i
  stop_proc kube-controller-manager kube-controller-manager
  stop_proc kube-scheduler kube-scheduler
  in_ns $k delete pods --all-namespaces --all --grace-period=2 --wait=false >/dev/null 2>&1 || true
  for ((i = 0; i < 150; i++)); do
    [ -z "$(in_ns $k get pods -A --no-headers 2>/dev/null)" ] && break
    sleep 0.2
  done
}

real_node_leftovers() { # real_node_leftovers POOL: containers kubelet did not remove
  local a=$STATE/nodes/$1/containerd/containerd.sock c
  proc_alive "containerd-$1" containerd || return 0
  for c in $(ctr -a "$a" -n k8s.io tasks ls -q 2>/dev/null); do
    ctr -a "$a" -n k8s.io tasks kill -s KILL "$c" >/dev/null 2>&1 || true
  done
  sleep 0.5
  for c in $(ctr -a "$a" -n k8s.io containers ls -q 2>/dev/null); do
    ctr -a "$a" -n k8s.io tasks delete -f "$c" >/dev/null 2>&1 || true
    ctr -a "$a" -n k8s.io containers delete "$c" >/dev/null 2>&1 || true
  done
}

real_down() {
  [ -f "$STATE/created" ] || { rm -rf "$STATE"; return 0; }
  real_ids
  local pi pool s m c
  real_drain
  stop_proc kube-proxy kube-proxy
  for pi in $REAL_POOLS; do stop_proc "kubelet-${pi%:*}" kubelet 20; done
  for pi in $REAL_POOLS; do
    pool=${pi%:*}
    real_node_leftovers "$pool"
    stop_proc "containerd-$pool" containerd
    # shims outlive containerd; only those serving this node's socket
    for s in $(pgrep -f "containerd-shim-runc-v2 .*-address $STATE/nodes/$pool/" || true); do
      kill -KILL "$s" 2>/dev/null || true
    done
  done
  for c in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_proc "$c" "$c"; done
  # Mounts (kubelet's rshared root, volumes, overlay rootfs, netns, shm), deepest first.
  awk -v r="$STATE/" 'index($5, r) == 1 {print $5}' /proc/self/mountinfo | sort -ru |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # Cgroups, deepest first: the roots made here and what kubelet made beside them (it
  # also writes into the empty v2 hierarchy); the ID is this state dir's alone. A process
  # still inside (a container without its shim) is killed first.
  for c in /sys/fs/cgroup/*/gf-"$ID"-*; do
    [ -d "$c" ] || continue
    find "$c" -name cgroup.procs -exec cat {} + 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || {
      sleep 0.5
      find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || log "cgroup $c could not be removed"
    }
  done
  # The namespace takes its links, routes, nftables/iptables rules and per-net sysctls.
  ip link del "$VETH_HOST" 2>/dev/null || true
  ip netns del "$NETNS" 2>/dev/null || true
  if grep -qx "netns-mount /run/netns" "$STATE/created" && [ -z "$(ls -A /run/netns 2>/dev/null)" ]; then
    umount /run/netns 2>/dev/null || true
  fi
  restore_sysctls
  rm -rf "$STATE"
}

real_status() {
  real_healthy || die "no healthy cluster at $STATE (start it with scripts/cluster.sh up)"
  kubectl --kubeconfig "$KUBECONFIG_FILE" get nodes \
    -o custom-columns='NODE:.metadata.name,POOL:.metadata.labels.graphfleet\.dev/pool,READY:.status.conditions[?(@.type=="Ready")].status,IP:.status.addresses[0].address,TAINTS:.spec.taints[*].key,RUNTIME:.status.nodeInfo.containerRuntimeVersion'
  local pi
  for pi in $REAL_POOLS; do
    echo "${pi%:*}-0: cpus $(cat "/sys/fs/cgroup/cpuset/gf-$ID-${pi%:*}/cpuset.cpus")"
  done
}
