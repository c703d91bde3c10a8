#!/usr/bin/env bash
# demo.sh BUILD_DIR: a guided tour of switchboard on a throw-away test bed.
#
# Builds a netbed.py test bed shaped after the Kubernetes documentation's
# example Services in deploy/examples/ (clusterip.json, nodeport.json,
# headless-statefulset.json, externalname.json): a namespace per Node at its
# InternalIP, a pod namespace per endpoint at its address, an "outside"
# client on the LAN. Runs one nginx per pod (a page naming the pod and the
# address it saw), switchboard in nftables mode on node-a with kubeadm's
# Corefile and the kube-dns ClusterIP as a node-local DNS address, and shows
# each command with its output, DNS from a Pod's resolv.conf included.
# Needs root. Everything it makes is removed on exit, also on Ctrl-C.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../../build}
BIN=$BUILD/proxy/switchboard
PYTHON=/usr/bin/python3
EXAMPLES=("$HERE/../../deploy/examples/clusterip.json" "$HERE/../../deploy/examples/nodeport.json"
  "$HERE/../../deploy/examples/headless-statefulset.json" "$HERE/../../deploy/examples/externalname.json")
# The coredns ConfigMap's Corefile as kubeadm ships it.
COREFILE=$(cd "$HERE/../data/kubeadm" && pwd)/Corefile
PREFIX=sbdemo$$
NODE_NS=$PREFIX-node-a
CLIENT_NS=$PREFIX-client
# kubelet's clusterDNS on kubeadm (the kube-dns Service of clusterip.json),
# and NodeLocal DNSCache's address: node-a answers both itself.
KUBE_DNS_IP=10.96.0.10
NODE_LOCAL_DNS=169.254.20.10
# `ip netns exec` bind-mounts the files here over /etc: the client Pod's
# resolv.conf, and node-a's (the Corefile's `forward . /etc/resolv.conf`).
CLIENT_ETC=/etc/netns/$CLIENT_NS
NODE_ETC=/etc/netns/$NODE_NS

if [[ $(id -u) -ne 0 ]]; then
  echo "demo: needs root (it creates network namespaces); run: sudo ./dev demo" >&2
  exit 1
fi
if [[ ! -x $BIN ]]; then
  echo "demo: $BIN is not built: run ./dev build" >&2
  exit 1
fi

WORK=$(mktemp -d /tmp/switchboard-demo.XXXXXX)
SWITCHBOARD_PID=

cleanup() {
  trap - EXIT INT TERM HUP
  # The terminal or pipe may be gone (`./dev demo | head`): cleaning up must
  # not depend on being able to print, nor stop at the first failure.
  trap '' PIPE
  set +e
  printf '\n==> cleaning up\n' 2>/dev/null
  if [[ -n $SWITCHBOARD_PID ]] && kill -TERM "$SWITCHBOARD_PID" 2>/dev/null; then
    wait "$SWITCHBOARD_PID" 2>/dev/null
  fi
  if [[ -e /run/netns/$NODE_NS ]]; then
    ip netns exec "$NODE_NS" "$BIN" --proxy-mode=nftables --cleanup >/dev/null 2>&1
  fi
  # Stops what runs in the bed's namespaces (nginx) and deletes them.
  "$PYTHON" "$HERE/netbed.py" down --prefix "$PREFIX" >/dev/null 2>&1
  rm -rf "$WORK" "$CLIENT_ETC" "$NODE_ETC"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# A closed output pipe: write errors (and `set -e`) end the script, via cleanup.
trap '' PIPE

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
# show NAMESPACE COMMAND...: prints the command as a newcomer would type it, then runs it.
show() {
  local ns=$1
  shift
  printf '\033[36m$ ip netns exec %s %s\033[0m\n' "$ns" "$*"
  ip netns exec "$ns" "$@" || echo "(exit $?)"
}

step "A small cluster in network namespaces, shaped after deploy/examples/{clusterip,nodeport,headless-statefulset,externalname}.json"
mkdir -p "$WORK/cluster"
cp "${EXAMPLES[@]}" "$WORK/cluster/"
# One line per pod: NAME NAMESPACE NODE IPV4 TCP-PORTS.
"$PYTHON" "$HERE/netbed.py" up --prefix "$PREFIX" --cluster "${EXAMPLES[@]}" >"$WORK/pods"
NODE_IP=$(ip -n "$NODE_NS" -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
OUTSIDE_IP=$(ip -n "$PREFIX-outside" -4 -o addr show dev lan0 | awk 'NR == 1 {print $4}' | cut -d/ -f1)
echo "outside client $OUTSIDE_IP, node-a $NODE_IP (runs switchboard), and the pods:"
printf '  %-26s %-7s %-12s %s\n' POD NODE IP "TCP PORTS"
while read -r name _ node ip ports; do
  printf '  %-26s %-7s %-12s %s\n' "$name" "$node" "$ip" "$ports"
done <"$WORK/pods"

step "One nginx per pod (Debian's nginx-light), each saying who it is"
while read -r name ns node _ ports; do
  [[ $ports == - ]] && continue
  dir=$WORK/$name
  mkdir -p "$dir"
  listen=
  for port in ${ports//,/ }; do
    listen+="        listen $port;"$'\n'
  done
  cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    server {
$listen        default_type text/plain;
        location / { return 200 "Hello from $name on $node (port \$server_port), you came from \$remote_addr\n"; }
    }
}
EOF
  ip netns exec "$ns" nginx -c "$dir/nginx.conf" -e "$dir/error.log"
done <"$WORK/pods"
echo "nginx runs in every pod, the not-ready and terminating ones too: the proxy must skip those"

step "The Services and their endpoints (kubernetes.io/docs/concepts/services-networking/service/)"
# Prints the listing on stderr and "CLUSTER-IP NODE-PORT" of the two demo Services on stdout.
read -r CLUSTER_IP NODE_PORT < <(
  "$PYTHON" - "${EXAMPLES[@]}" <<'PYTHON'
import json, sys
items = [item for path in sys.argv[1:] for item in json.load(open(path))["items"]]
endpoints = {}
for item in items:
    if item["kind"] == "EndpointSlice":
        name = item["metadata"]["labels"]["kubernetes.io/service-name"]
        for ep in item["endpoints"]:
            c = ep.get("conditions", {})
            state = "ready" if c.get("ready", True) else "terminating" if c.get("terminating") else "not ready"
            who = (ep.get("targetRef") or {}).get("name", ep["addresses"][0])
            endpoints.setdefault(name, []).append(f"{who} ({state})")
for item in items:
    if item["kind"] == "Service":
        meta, spec = item["metadata"], item["spec"]
        ports = ", ".join(
            f"{p['port']}" + (f":{p['nodePort']}" if "nodePort" in p else "")
            + f"/{p['protocol']} -> {p.get('targetPort', p['port'])}"
            for p in spec.get("ports", [])
        )
        address = spec.get("clusterIP") or f"-> {spec.get('externalName')}"
        print(f"{meta.get('namespace', 'default')}/{meta['name']}: {spec.get('type', 'ClusterIP')} "
              f"{address} {ports}", file=sys.stderr)
        for ep in endpoints.get(meta["name"], []):
            print(f"    {ep}", file=sys.stderr)
service = {i["metadata"]["name"]: i["spec"] for i in items
           if i["kind"] == "Service" and i["metadata"].get("namespace", "default") == "default"}
print(service["nginx-service"]["clusterIP"], service["my-service"]["ports"][0]["nodePort"])
PYTHON
)

step "switchboard in nftables mode on node-a, fed from those files, DNS from kubeadm's Corefile"
# Names outside the cluster go to node-a's resolv.conf (the Corefile's
# `forward . /etc/resolv.conf`): the outside client's address, where nothing
# answers DNS, so the demo never leaves the bed.
mkdir -p "$NODE_ETC"
echo "nameserver $OUTSIDE_IP" >"$NODE_ETC/resolv.conf"
ARGS=(--proxy-mode=nftables "--source=file:$WORK/cluster" --hostname-override=node-a
  --cluster-cidr=10.244.0.0/16 --metrics-bind-address=127.0.0.1:10249
  --healthz-bind-address=127.0.0.1:10256
  "--dns-corefile=$COREFILE" "--dns-local-address=$KUBE_DNS_IP,$NODE_LOCAL_DNS")
printf '\033[36m$ ip netns exec %s %s &\033[0m\n' "$NODE_NS" "switchboard ${ARGS[*]}"
ip netns exec "$NODE_NS" "$BIN" "${ARGS[@]}" >"$WORK/switchboard.log" 2>&1 &
SWITCHBOARD_PID=$!
ready=
for _ in $(seq 100); do
  if ip netns exec "$NODE_NS" curl -sf -o /dev/null --max-time 1 http://127.0.0.1:10249/readyz; then
    ready=yes
    break
  fi
  kill -0 "$SWITCHBOARD_PID" 2>/dev/null || break
  sleep 0.1
done
if [[ -z $ready ]]; then
  echo "switchboard did not become ready; its log:" >&2
  cat "$WORK/switchboard.log" >&2
  exit 1
fi
echo "ready (GET /readyz answered 200)"

step "1. A pod calls nginx-service's ClusterIP: ready endpoints only, on either node"
echo "   (its targetPort http-web-svc is port 80 in one Deployment, 8080 in the other)"
for _ in 1 2 3 4 5; do
  show "$PREFIX-client" curl -s --max-time 2 "http://$CLUSTER_IP/"
done

step "2. Someone outside calls my-service's NodePort on node-a"
echo "   (externalTrafficPolicy Cluster: the pod sees a node address, not the caller's $OUTSIDE_IP)"
for _ in 1 2 3 4; do
  show "$PREFIX-outside" curl -s --max-time 2 "http://$NODE_IP:$NODE_PORT/"
done

step "3. DNS from a Pod, as kubelet writes its resolv.conf (clusterDNS = the kube-dns ClusterIP)"
mkdir -p "$CLIENT_ETC"
printf 'search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver %s\noptions ndots:5\n' \
  "$KUBE_DNS_IP" >"$CLIENT_ETC/resolv.conf"
# Only DNS counts below: the HTTP flows of steps 1 and 2 go.
ip netns exec "$NODE_NS" conntrack -F >/dev/null 2>&1 || true
show "$CLIENT_NS" cat /etc/resolv.conf
echo "   node-a carries $KUBE_DNS_IP on its own link and answers it; no CoreDNS Pod is asked"
show "$NODE_NS" ip -br addr show dev sb-dns0
echo "   the full name, then the short one through the search path:"
# wget as the Kubernetes docs type it: busybox's (what most images have),
# else GNU wget, else curl (the one ./dev setup installs).
if busybox wget --help >/dev/null 2>&1; then
  WGET=(busybox wget -q -O-)
elif command -v wget >/dev/null; then
  WGET=(wget -q -O-)
else
  WGET=(curl -s --max-time 2)
fi
show "$CLIENT_NS" "${WGET[@]}" nginx-service.default.svc.cluster.local
show "$CLIENT_NS" curl -s --max-time 2 http://nginx-service
echo "   the headless Service's StatefulSet Pod by name, and the Service's records:"
show "$CLIENT_NS" getent hosts web-0.nginx.default.svc.cluster.local
show "$CLIENT_NS" curl -s --max-time 2 http://web-0.nginx
show "$CLIENT_NS" getent ahostsv4 nginx.default.svc.cluster.local
echo "   the ExternalName Service prod/my-service: a CNAME to its externalName"
echo "   (asked as CNAME: an A query would chase my.database.example.com upstream, outside the bed)"
show "$CLIENT_NS" dig +noall +answer my-service.prod.svc.cluster.local CNAME
echo "   over TCP too, and NodeLocal DNSCache's address answers the same:"
show "$CLIENT_NS" dig +tcp +short nginx-service.default.svc.cluster.local
show "$CLIENT_NS" dig +short "@$NODE_LOCAL_DNS" nginx-service.default.svc.cluster.local
echo "   and node-a's conntrack table has no entry for any of that DNS traffic, UDP or TCP"
show "$NODE_NS" conntrack -L -d "$KUBE_DNS_IP"
show "$NODE_NS" conntrack -L -d "$NODE_LOCAL_DNS"
echo "   while the HTTP flows to nginx-service's ClusterIP, DNATed, have theirs:"
show "$NODE_NS" conntrack -L -d "$CLUSTER_IP"

step "4. The Plan switchboard computed: the JSON of \`switchboard plan\` (nginx-service shown)"
printf '\033[36m$ ip netns exec %s curl -s http://127.0.0.1:10249/debug/services\033[0m\n' "$NODE_NS"
ip netns exec "$NODE_NS" curl -s --max-time 2 http://127.0.0.1:10249/debug/services >"$WORK/plan.json"
"$PYTHON" - "$WORK/plan.json" <<'PYTHON'
import json, sys
plan = json.load(open(sys.argv[1]))
print(f"(node {plan['node']}, {len(plan['services'])} service ports; the nginx-service one:)")
print(json.dumps([s for s in plan["services"] if s["service"] == "nginx-service"], indent=2))
PYTHON

step "And what it put in the kernel: its own nftables tables (switchboard-dns holds the notrack rules), nothing else"
show "$NODE_NS" nft list tables

echo
echo "Done. Everything is removed now; Ctrl-C during a run cleans up the same way."
