#!/usr/bin/python3
"""netbed: a throw-away Kubernetes node made of network namespaces.

The harness the datapath scenarios (test_datapath.py) and the demo
(demo.sh) stand on. Standard library only; every kernel object is made with
`ip` (iproute2), always with argument lists, never shell strings.

Topology (docs/testbed.md has the picture): an "outside" namespace holds
the LAN, a bridge `lan0` with the client addresses 198.51.100.100 and .101
(RFC 5737). Node k (node-a is k=1, node-b k=2) hangs off it with eth0
198.51.100.k, owns the bridge `cbr0` (10.244.k.1/24, fd00:10:244:k::1/64)
for its pods and a port-less bridge `sbdefault` carrying its default route.
Each pod is a namespace whose eth0 is a veth into its node's cbr0 (hairpin
on), addressed 10.244.k.(10+i) and fd00:10:244:k::(10+i), routed via cbr0.
Bed.from_cluster() instead takes the nodes, pods and addresses from a
cluster file's Nodes and EndpointSlices (the demo's deploy/examples).

Ownership: a Bed owns every namespace named `<prefix>-*`. Bed.down() kills
the processes inside them (they are the pod servers and daemons the bed
started) and deletes them; it is idempotent and also runs at interpreter
exit. Beds made by a process that has since died are swept the next time a
Bed is made (the prefix carries the creator's pid).

Used as a program (`netbed.py COMMAND`):
  up --prefix P [--servers] [--cluster FILE...]
                              build the topology (the default one, or one shaped
                              after cluster files) and leave it up
  down --prefix P             remove everything `up` made
  probe|loop|hold ...         client side, run *inside* a namespace by the
                              harness through `ip netns exec`
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import dataclasses
import errno
import ipaddress
import json
import os
import pathlib
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import kube_objects
import network_namespace
from network_namespace import CommandError, in_ns, list_namespaces, remove_prefix, run, sweep_stale, sysctl

HERE = pathlib.Path(__file__).resolve().parent
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
SERVER_LIFETIME_SECONDS = 900

# Addresses of the bed. RFC 5737 TEST-NETs and private ranges, only ever
# inside the bed's namespaces.
LAN_PREFIX4 = "198.51.100"
LAN_PREFIX6 = "2001:db8:100"
OUTSIDE_ADDRESSES = ("198.51.100.100", "198.51.100.101")
OUTSIDE_ADDRESS6 = "2001:db8:100::100"
LB_PREFIX = "203.0.113.0/24"
CLUSTER_CIDRS = ("10.244.0.0/16", "fd00:10:244::/48")

DEFAULT_TCP_PORTS = (8080, 8081, 8082, 9090)
DEFAULT_UDP_PORTS = (5353, 8080)

class BedError(CommandError):
    pass


@dataclasses.dataclass
class Pod:
    name: str
    node: str
    ns: str
    ipv4: str
    ipv6: str
    # Extra IPv4 addresses a client can bind to, to act as many clients.
    sources: list = dataclasses.field(default_factory=list)
    port: str = ""  # its veth's name in the node namespace


@dataclasses.dataclass
class Node:
    name: str
    ns: str
    ipv4: str  # InternalIP, on the LAN
    ipv6: str
    bridge4: str  # cbr0: the pods' gateway, the address hairpin/masquerade shows
    bridge6: str
    pod_cidr4: str
    pod_cidr6: str


@dataclasses.dataclass
class Answer:
    """One client attempt: who answered (ok) or why nothing did (error)."""

    ok: bool
    pod: str | None = None
    client: str | None = None  # the source address the pod saw
    client_port: int | None = None
    port: int | None = None  # the pod port that answered
    error: str | None = None  # ECONNREFUSED, timeout, EHOSTUNREACH, ...

    @classmethod
    def from_json(cls, doc):
        return cls(**{f.name: doc.get(f.name) for f in dataclasses.fields(cls)})


_live_beds = []


@atexit.register
def _remove_live_beds():
    for bed in list(_live_beds):
        bed.down()


class Bed:
    """The namespaces of one test bed; see the module comment for the topology.

    nodes maps node name -> pod names on it; pods on a node are numbered in
    order (pod i gets .10+i). client_sources gives a pod that many extra
    IPv4 addresses (10.244.k.100+j) to act as distinct clients. The
    addresses are planned here (self.nodes, self.pods); up() makes them.
    """

    def __init__(self, nodes, *, client_sources=None, prefix=None, keep=False):
        self.prefix = prefix or network_namespace.new_prefix()
        self.outside_addresses = list(OUTSIDE_ADDRESSES)
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}
        for k, (name, pods) in enumerate(dict(nodes).items(), start=1):
            self.nodes[name] = Node(
                name=name,
                ns=f"{self.prefix}-{name}",
                ipv4=f"{LAN_PREFIX4}.{k}",
                ipv6=f"{LAN_PREFIX6}::{k}",
                bridge4=f"10.244.{k}.1",
                bridge6=f"fd00:10:244:{k}::1",
                pod_cidr4=f"10.244.{k}.0/24",
                pod_cidr6=f"fd00:10:244:{k}::/64",
            )
            for i, pod in enumerate(pods, start=1):
                self.pods[pod] = Pod(
                    name=pod,
                    node=name,
                    ns=f"{self.prefix}-{pod}",
                    ipv4=f"10.244.{k}.{10 + i}",
                    ipv6=f"fd00:10:244:{k}::{10 + i:x}",
                    sources=[f"10.244.{k}.{100 + j}" for j in range((client_sources or {}).get(pod, 0))],
                    port=f"veth{k}x{i}",
                )
        self.outside = f"{self.prefix}-outside"
        self._workdir = None
        self._servers = []
        self._keep = keep
        if not keep:
            _live_beds.append(self)
            network_namespace.clean_up_on_sigterm()

    @classmethod
    def from_cluster(cls, items, *, prefix=None, keep=False, client="client"):
        """A bed shaped after a cluster file (e.g. deploy/examples/*.json): a node per Node
        object, on the LAN at its InternalIP; a pod per IPv4 endpoint on those nodes, at
        the endpoint's address and named after its Pod; and a `client` pod on the first
        node. pod_ports(items) says which TCP ports each pod's endpoints use."""
        node_ips = {}
        for item in items:
            if item.get("kind") == "Node":
                addresses = item.get("status", {}).get("addresses", [])
                internal = [a["address"] for a in addresses if a.get("type") == "InternalIP" and "." in a["address"]]
                if internal:
                    node_ips[item["metadata"]["name"]] = internal[0]
        if not node_ips:
            raise BedError("the cluster has no Node with an IPv4 InternalIP")
        endpoints = {}  # pod address -> (pod name, node)
        for ip, name, node in _endpoints(items):
            if node in node_ips:
                endpoints.setdefault(ip, (name, node))
        layout = {node: [] for node in sorted(node_ips)}
        for ip, (name, node) in sorted(endpoints.items()):
            layout[node].append(name)
        first = next(iter(layout))
        layout[first].append(client)
        bed = cls(layout, prefix=prefix, keep=keep)
        lan = node_ips[first].rsplit(".", 1)[0]
        bed.outside_addresses = [f"{lan}.100", f"{lan}.101"]
        taken = {ipaddress.ip_network(f"{ip}/24", strict=False) for ip in endpoints}
        spare = (n for n in ipaddress.ip_network("10.244.0.0/16").subnets(new_prefix=24) if n not in taken)
        address_of = {name: ip for ip, (name, _) in endpoints.items()}
        for name, node in bed.nodes.items():
            node.ipv4 = node_ips[name]
            mine = {ip for ip, (_, n) in endpoints.items() if n == name}
            subnet = ipaddress.ip_network(f"{min(mine)}/24", strict=False) if mine else next(spare)
            free = (str(host) for host in subnet.hosts() if str(host) not in mine)
            node.pod_cidr4 = str(subnet)
            node.bridge4 = next(free)
            for pod in bed.pods.values():
                if pod.node == name:
                    pod.ipv4 = address_of[pod.name] if pod.name in address_of else next(free)
        return bed

    @property
    def workdir(self):
        """A scratch folder (cluster files, logs), made on first use, removed by down()."""
        if self._workdir is None:
            self._workdir = pathlib.Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
        return self._workdir

    # ---- topology -------------------------------------------------------

    def up(self):
        sweep_stale()
        try:
            self._make_outside()
            for node in self.nodes.values():
                self._make_node(node)
            for pod in self.pods.values():
                self._make_pod(pod, self.nodes[pod.node])
            self._route_between_nodes()
        except BaseException:
            self.down()
            raise
        return self

    def _netns(self, ns):
        return network_namespace.create(ns, accept_dad=False, keep=self._keep)

    def _make_outside(self):
        ns = self._netns(self.outside)
        run(["ip", "-n", ns, "link", "add", "lan0", "type", "bridge"])
        for address in self.outside_addresses:
            run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "lan0"])
        run(["ip", "-n", ns, "addr", "add", f"{OUTSIDE_ADDRESS6}/64", "dev", "lan0", "nodad"])
        run(["ip", "-n", ns, "link", "set", "lan0", "up"])
        # The LAN bridge is a plain switch: keep its frames out of netfilter.
        sysctl(ns, "net.bridge.bridge-nf-call-iptables=0", "net.bridge.bridge-nf-call-ip6tables=0")

    def _make_node(self, node):
        ns = self._netns(node.ns)
        # As a Kubernetes node is set up: forwarding on, reverse-path filter off
        # (DNATed replies arrive on other interfaces), and bridged pod traffic
        # through netfilter (kubeadm's preflight demands bridge-nf-call-iptables=1):
        # without it a reply from a pod to a pod on the same bridge bypasses
        # conntrack, is never un-DNATed, and the client resets the connection.
        sysctl(
            ns,
            "net.ipv4.ip_forward=1",
            "net.ipv6.conf.all.forwarding=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
            "net.bridge.bridge-nf-call-iptables=1",
            "net.bridge.bridge-nf-call-ip6tables=1",
        )
        lan_port = f"lan-{node.name}"[:15]
        run(["ip", "-n", self.outside, "link", "add", lan_port, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(["ip", "-n", self.outside, "link", "set", lan_port, "master", "lan0", "up"])
        run(["ip", "-n", ns, "addr", "add", f"{node.ipv4}/24", "dev", "eth0"])
        run(["ip", "-n", ns, "addr", "add", f"{node.ipv6}/64", "dev", "eth0", "nodad"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "link", "add", "cbr0", "type", "bridge"])
        run(["ip", "-n", ns, "addr", "add", f"{node.bridge4}/{node.pod_cidr4.split('/')[1]}", "dev", "cbr0"])
        run(["ip", "-n", ns, "addr", "add", f"{node.bridge6}/64", "dev", "cbr0", "nodad"])
        run(["ip", "-n", ns, "link", "set", "cbr0", "up"])
        # Without a default route, packets to Service addresses fail routing
        # before any forward-hook rule sees them. A port-less bridge stands in
        # for the `dummy` link this kernel lacks; nothing ever leaves through it.
        run(["ip", "-n", ns, "link", "add", "sbdefault", "type", "bridge"])
        run(["ip", "-n", ns, "link", "set", "sbdefault", "up"])
        run(["ip", "-n", ns, "route", "add", "default", "dev", "sbdefault"])
        run(["ip", "-n", ns, "-6", "route", "add", "default", "dev", "sbdefault"])

    def _make_pod(self, pod, node):
        ns = self._netns(pod.ns)
        port = pod.port
        run(["ip", "-n", node.ns, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(["ip", "-n", node.ns, "link", "set", port, "master", "cbr0", "up"])
        # The bridge CNI plugin's hairpinMode: a pod reaching itself through its
        # Service has its packet sent back out of the port it came in on.
        run(["ip", "-n", node.ns, "link", "set", "dev", port, "type", "bridge_slave", "hairpin", "on"])
        length4 = node.pod_cidr4.split("/")[1]
        run(["ip", "-n", ns, "addr", "add", f"{pod.ipv4}/{length4}", "dev", "eth0"])
        run(["ip", "-n", ns, "addr", "add", f"{pod.ipv6}/64", "dev", "eth0", "nodad"])
        for source in pod.sources:
            run(["ip", "-n", ns, "addr", "add", f"{source}/{length4}", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "route", "add", "default", "via", node.bridge4])
        run(["ip", "-n", ns, "-6", "route", "add", "default", "via", node.bridge6])

    def _route_between_nodes(self):
        for node in self.nodes.values():
            for other in self.nodes.values():
                if other is not node:
                    run(["ip", "-n", node.ns, "route", "add", other.pod_cidr4, "via", other.ipv4])
                    run(["ip", "-n", node.ns, "-6", "route", "add", other.pod_cidr6, "via", other.ipv6])
        # The outside world reaches load-balancer addresses through the first node.
        first = next(iter(self.nodes.values()))
        run(["ip", "-n", self.outside, "route", "add", LB_PREFIX, "via", first.ipv4])

    def down(self):
        """Stops everything the bed started and removes its namespaces. Idempotent."""
        for proc in self._servers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._servers.clear()
        remove_prefix(self.prefix)
        if self._workdir is not None and not self._keep:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self in _live_beds:
            _live_beds.remove(self)

    @property
    def namespaces(self):
        return [ns for ns in list_namespaces() if ns.startswith(self.prefix + "-")]

    # ---- pod servers ----------------------------------------------------

    def start_servers(self, tcp=DEFAULT_TCP_PORTS, udp=DEFAULT_UDP_PORTS, pods=None):
        """Starts podserver.py in every pod (or the named ones); returns when all listen."""
        started = []
        for pod in pods or list(self.pods):
            argv = [
                PYTHON,
                HERE / "podserver.py",
                "--name",
                pod,
                "--tcp",
                ",".join(map(str, tcp)),
                "--udp",
                ",".join(map(str, udp)),
                "--lifetime",
                SERVER_LIFETIME_SECONDS,
            ]
            proc = subprocess.Popen(
                in_ns(self.pods[pod].ns, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            self._servers.append(proc)
            started.append((pod, proc))
        for pod, proc in started:
            ready, _, _ = select.select([proc.stdout], [], [], 10)
            line = proc.stdout.readline() if ready else ""
            if line.strip() != "ready":
                proc.kill()
                raise BedError(f"server of {pod} did not start: {line!r} {proc.stderr.read()}")

    # ---- clients ----------------------------------------------------------

    def ns_of(self, who):
        """The namespace of a pod or node name, or of "outside"."""
        if who == "outside":
            return self.outside
        if who in self.pods:
            return self.pods[who].ns
        return self.nodes[who].ns

    def probe(
        self, who, host, port, *, proto="tcp", count=1, source=None, source_port=0, timeout=1.0, max_failures=5
    ):
        """Makes `count` fresh connections (TCP) or exchanges (UDP, a new socket each) from
        `who` to host:port; returns one Answer per attempt. Each attempt waits at most
        `timeout` seconds; after `max_failures` failed attempts the rest are skipped (fewer
        Answers come back), so a broken datapath costs seconds, not count * timeout.
        source / source_port: the address and port to send from (default: the kernel's
        choice); a fixed UDP source port makes every attempt the same conntrack flow."""
        argv = [PYTHON, HERE / "netbed.py", "probe", "--proto", proto, "--host", host, "--port", port]
        argv += ["--count", count, "--timeout", timeout, "--max-failures", max_failures]
        if source:
            argv += ["--source", source]
        if source_port:
            argv += ["--source-port", source_port]
        proc = run(in_ns(self.ns_of(who), argv), timeout=count * (timeout + 0.5) + 10)
        return [Answer.from_json(doc) for doc in json.loads(proc.stdout)]

    def loop(self, who, host, port, *, proto="tcp", interval=0.02, timeout=1.0, max_seconds=60):
        """Starts a client connecting over and over until LoopClient.stop()."""
        return LoopClient(self.ns_of(who), host, port, proto, interval, timeout, max_seconds)

    def hold(self, who, host, port, *, timeout=2.0):
        """Opens one TCP connection and keeps it open; see HeldConnection."""
        return HeldConnection(self.ns_of(who), host, port, timeout)


class LoopClient:
    """A background client making one attempt every `interval` until stop() (or max_seconds)."""

    def __init__(self, ns, host, port, proto, interval, timeout, max_seconds):
        argv = [PYTHON, HERE / "netbed.py", "loop", "--proto", proto, "--host", host, "--port", port]
        argv += ["--interval", interval, "--timeout", timeout, "--max-seconds", max_seconds]
        self._proc = subprocess.Popen(
            in_ns(ns, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._max_seconds = max_seconds

    def stop(self):
        """Ends the loop; returns every attempt's Answer, in order."""
        out, err = self._proc.communicate(input="", timeout=self._max_seconds + 10)
        if self._proc.returncode != 0:
            raise BedError(f"loop client failed: {err.strip()}")
        return [Answer.from_json(doc) for doc in json.loads(out)]


class HeldConnection:
    """One long-lived TCP connection, made from inside a namespace.

    greeting is the Answer the pod sent on connect; ping() sends a line over
    the same connection and returns the Answer for its echo (ok and pod kept
    from the greeting, or the error that broke the connection).
    """

    def __init__(self, ns, host, port, timeout):
        argv = [PYTHON, HERE / "netbed.py", "hold", "--host", host, "--port", port, "--timeout", timeout]
        self._proc = subprocess.Popen(
            in_ns(ns, argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._timeout = timeout
        self.greeting = self._read()

    def _read(self):
        ready, _, _ = select.select([self._proc.stdout], [], [], self._timeout + 5)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            return Answer(ok=False, error="client gave no answer")
        return Answer.from_json(json.loads(line))

    def ping(self):
        self._proc.stdin.write("ping\n")
        self._proc.stdin.flush()
        return self._read()

    def close(self):
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=self._timeout + 5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


# ---- the cluster a scenario describes (Kubernetes List JSON) ----------------


def pod_endpoint(pod, *, ready=True, serving=None, terminating=False, ipv6=False):
    """The EndpointSlice endpoint of a Pod of the bed."""
    return kube_objects.endpoint(pod.ipv6 if ipv6 else pod.ipv4, node=pod.node, pod=pod.name,
                                 ready=ready, serving=serving, terminating=terminating)


def _endpoints(items):
    """(IPv4 address, pod name, node name) of every endpoint of the EndpointSlices in items."""
    for item in items:
        if item.get("kind") != "EndpointSlice" or item.get("addressType") != "IPv4":
            continue
        for ep in item.get("endpoints") or []:
            ref = ep.get("targetRef") or {}
            for ip in ep.get("addresses", []):
                yield ip, ref.get("name") or "ep-" + ip.replace(".", "-"), ep.get("nodeName")


def pod_ports(items):
    """Pod name -> the sorted TCP ports its endpoints serve, from the EndpointSlices."""
    ports = {}
    for item in items:
        if item.get("kind") != "EndpointSlice" or item.get("addressType") != "IPv4":
            continue
        numbers = {p["port"] for p in item.get("ports") or [] if p.get("protocol", "TCP") == "TCP" and p.get("port")}
        for _, name, _ in _endpoints([item]):
            ports.setdefault(name, set()).update(numbers)
    return {name: sorted(numbers) for name, numbers in ports.items()}


def node_object(node):
    """The Node object of a node of the bed."""
    return kube_objects.node(node.name, [node.ipv4, node.ipv6],
                             pod_cidrs=[node.pod_cidr4, node.pod_cidr6])


def pod_resolv_conf(namespace, nameserver):
    """The resolv.conf kubelet writes for a Pod of `namespace` (dnsPolicy ClusterFirst,
    clusterDNS `nameserver`)."""
    return (f"search {namespace}.svc.cluster.local svc.cluster.local cluster.local\n"
            f"nameserver {nameserver}\noptions ndots:5\n")


@contextlib.contextmanager
def resolv_confs(files):
    """Writes /etc/netns/<ns>/resolv.conf for each (ns, text) of `files`, which `ip
    netns exec` bind-mounts over /etc/resolv.conf; removes them on exit."""
    folders = []
    try:
        for ns, text in files:
            folder = pathlib.Path("/etc/netns") / ns
            folder.mkdir(parents=True, exist_ok=False)
            folders.append(folder)
            (folder / "resolv.conf").write_text(text)
        yield
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)


# ---- switchboard in a node namespace ---------------------------------------


class Switchboard:
    """The daemon under test, run in one node namespace of a bed on a cluster file.

    The cluster lives in <workdir>/cluster/cluster.json, fed with
    --source file:<folder>; set_cluster() rewrites it through a rename.
    """

    METRICS = "127.0.0.1:10249"
    HEALTHZ = "127.0.0.1:10256"

    def __init__(self, bed, binary, mode, *, node="node-a", extra_args=()):
        self.bed = bed
        self.binary = pathlib.Path(binary)
        self.mode = mode
        self.node = bed.nodes[node]
        self.extra_args = list(extra_args)
        self.folder = bed.workdir / "cluster"
        self.folder.mkdir(exist_ok=True)
        self.log_path = bed.workdir / "switchboard.log"
        self._proc = None
        self._log = None
        self._signalled = False  # we sent the SIGTERM the process exited on

    @property
    def cluster_file(self):
        return self.folder / "cluster.json"

    def set_cluster(self, items, *, add_nodes=True):
        """Writes the cluster (Services, EndpointSlices); the bed's Nodes are added
        unless add_nodes is false (items from a complete cluster file)."""
        nodes = [node_object(node) for node in self.bed.nodes.values()] if add_nodes else []
        kube_objects.write_atomically(self.cluster_file, kube_objects.cluster_list([*nodes, *items]))

    def argv(self):
        return [
            self.binary,
            f"--proxy-mode={self.mode}",
            f"--source=file:{self.folder}",
            f"--hostname-override={self.node.name}",
            f"--cluster-cidr={','.join(CLUSTER_CIDRS)}",
            f"--metrics-bind-address={self.METRICS}",
            f"--healthz-bind-address={self.HEALTHZ}",
            "--min-sync-period=0s",
            *self.extra_args,
        ]

    def command(self):
        """What start() runs: argv() in the node namespace (test_image.py runs it in a
        container there instead)."""
        return in_ns(self.node.ns, self.argv())

    def start(self, wait=True):
        if self._log is None:
            self._log = open(self.log_path, "a")
        self._log.write(f"---- start {time.strftime('%H:%M:%S')}\n")
        self._log.flush()
        self._signalled = False
        self._proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()
        return self

    def running(self):
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self):
        """The daemon's process id (`ip netns exec` execs it), e.g. for its CPU time."""
        return self._proc.pid

    def http_get(self, address, path, timeout=1.0):
        """GET http://address/path from inside the node namespace: (status, body)."""
        url = f"http://{address}{path}"
        proc = run(
            in_ns(self.node.ns, [PYTHON, HERE / "netbed.py", "http-get", url, "--timeout", timeout]),
            check=False,
            timeout=timeout + 10,
        )
        if proc.returncode != 0:
            return None, proc.stderr
        status, _, body = proc.stdout.partition("\n")
        return int(status), body

    def wait_ready(self, timeout=15.0):
        """Waits (bounded) until the daemon reports ready: /readyz (on the metrics address,
        as kube-proxy serves it) answers 200 once the first sync is done."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                raise BedError(f"switchboard exited with {self._proc.returncode}\n{self.log_tail()}")
            status, _ = self.http_get(self.METRICS, "/readyz", timeout=0.5)
            if status == 200:
                return
            time.sleep(0.05)
        raise BedError(f"switchboard not ready within {timeout} s\n{self.log_tail()}")

    def stop(self, timeout=10.0):
        """SIGTERM and wait; returns the exit code (None when it was not running)."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            self._signalled = True
            try:
                self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
                raise BedError(f"switchboard ignored SIGTERM for {timeout} s\n{self.log_tail()}")
        return self._proc.returncode

    def kill(self):
        """SIGKILL and wait, as a crash or the OOM killer ends it (the kernel state and
        the node state stay); start() runs it again."""
        if self.running():
            self._proc.kill()
            self._signalled = True
        if self._proc is not None:
            self._proc.wait()

    def cleanup(self):
        """Runs `switchboard --cleanup` in the node namespace; returns the CompletedProcess."""
        argv = [self.binary, f"--proxy-mode={self.mode}", "--cleanup"]
        return run(in_ns(self.node.ns, argv), check=False, timeout=30)

    def nft_tables(self):
        """`nft list tables` in the node namespace, one "family name" string per table."""
        out = run(in_ns(self.node.ns, ["nft", "list", "tables"])).stdout
        return [line.removeprefix("table ").strip() for line in out.splitlines() if line.strip()]

    def kernel_objects(self):
        """What the daemon's mode has made in the node namespace: nftables tables, or the
        SWITCHBOARD-* chains of the legacy x_tables (libiptc's interface) for iptables."""
        if self.mode == "iptables":
            chains = []
            for save in ("iptables-legacy-save", "ip6tables-legacy-save"):
                out = run(in_ns(self.node.ns, [save]), check=False).stdout
                chains += [line.split()[0] for line in out.splitlines()
                           if line.startswith(":SWITCHBOARD-")]
            return chains
        return self.nft_tables()

    # Per proxy mode: commands that wipe the daemon's rules behind its back.
    # A mode added later adds its line here (the drift scenario fails until then).
    _FLUSH_RULES = {
        "nftables": [["nft", "flush", "table", "inet", "switchboard"]],
        "iptables": [["iptables-legacy", "-t", "nat", "-F", "SWITCHBOARD-SERVICES"],
                     ["iptables-legacy", "-t", "filter", "-F", "SWITCHBOARD-FILTER-SERVICES"]],
    }

    def flush_rules(self):
        """Deletes the daemon's rules (not its table), as an admin or another tool might."""
        if self.mode not in self._FLUSH_RULES:
            raise BedError(f"flush_rules: no command known for --proxy-mode={self.mode}")
        for argv in self._FLUSH_RULES[self.mode]:
            run(in_ns(self.node.ns, argv))

    def flush_conntrack(self):
        run(in_ns(self.node.ns, ["conntrack", "-F"]), check=False)

    def log_tail(self, lines=40):
        if self._log:
            self._log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return "(no switchboard log)"
        return "---- switchboard log (tail)\n" + "\n".join(text.splitlines()[-lines:])

    def close(self):
        """Test teardown: stops the daemon, removes its kernel state and conntrack entries.
        BedError when the daemon had exited by itself, did not exit 0 on SIGTERM, or
        --cleanup failed: each is a defect the scenario's traffic may not have shown."""
        crashed = self._proc is not None and self._proc.poll() is not None and not self._signalled
        try:
            code = self.stop()
        finally:
            cleanup = self.cleanup()
            self.flush_conntrack()
        problems = []
        if crashed:
            problems.append(f"switchboard exited by itself with {code} during the test")
        elif code not in (None, 0):
            problems.append(f"switchboard exited with {code} on SIGTERM")
        if cleanup.returncode != 0:
            problems.append(f"--cleanup exited with {cleanup.returncode}: {cleanup.stderr.strip()}")
        tail = self.log_tail()
        if self._log:
            self._log.close()
            self._log = None
        if problems:
            raise BedError("; ".join(problems) + "\n" + tail)


# ---- a supervised daemon's process tree ------------------------------------


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(word) for word in listing.read().split()]
    except OSError:
        return []


def vm_rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as status:
            return next((int(line.split()[1]) for line in status if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def largest_process(pid):
    """The process of pid's tree (pid and its descendants) with the largest VmRSS."""
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children(tree[-1])
    return max(tree, key=vm_rss_kb)


# ---- client side: runs inside a namespace ----------------------------------


def _error_name(exc):
    if isinstance(exc, socket.timeout):
        return "timeout"
    if isinstance(exc, OSError) and exc.errno in errno.errorcode:
        return errno.errorcode[exc.errno]
    return type(exc).__name__


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _parse_reply(data):
    line = data.split(b"\n", 1)[0]
    if not line:
        return {"ok": False, "error": "closed"}
    return {"ok": True, **json.loads(line)}


def _recv_line(sock):
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def attempt(proto, host, port, source=None, timeout=1.0, source_port=0):
    """One connection (TCP) or one datagram exchange (UDP) on a fresh socket.
    Returns {"ok": True, "pod": ...} or {"ok": False, "error": "ECONNREFUSED" | "timeout" | ...}."""
    kind = socket.SOCK_STREAM if proto == "tcp" else socket.SOCK_DGRAM
    sock = socket.socket(_family(host), kind)
    sock.settimeout(timeout)
    try:
        if source or source_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((source or "", source_port))
        sock.connect((host, port))
        if proto == "udp":
            sock.send(b"hello\n")
            return _parse_reply(sock.recv(4096))
        return _parse_reply(_recv_line(sock))
    except (OSError, ValueError) as exc:
        return {"ok": False, "error": _error_name(exc)}
    finally:
        sock.close()


def _cmd_probe(args):
    results = []
    failed = 0
    while len(results) < args.count and failed < args.max_failures:
        results.append(attempt(args.proto, args.host, args.port, args.source, args.timeout, args.source_port))
        failed += not results[-1]["ok"]
    print(json.dumps(results))


def _cmd_loop(args):
    """Attempts every --interval until stdin reaches EOF or --max-seconds pass."""
    results = []
    deadline = time.monotonic() + args.max_seconds
    while time.monotonic() < deadline:
        results.append(attempt(args.proto, args.host, args.port, None, args.timeout))
        ready, _, _ = select.select([sys.stdin], [], [], args.interval)
        if ready and not sys.stdin.readline():
            break
    print(json.dumps(results))


def _cmd_hold(args):
    """Connects once, prints the greeting; each stdin line is sent and its echo reported."""
    sock = socket.socket(_family(args.host), socket.SOCK_STREAM)
    sock.settimeout(args.timeout)
    try:
        sock.connect((args.host, args.port))
        greeting = _parse_reply(_recv_line(sock))
    except OSError as exc:
        print(json.dumps({"ok": False, "error": _error_name(exc)}), flush=True)
        return
    print(json.dumps(greeting), flush=True)
    for line in sys.stdin:
        try:
            sock.sendall(line.encode())
            echo = _recv_line(sock)
            if echo == line.encode():
                print(json.dumps(greeting), flush=True)
            else:
                print(json.dumps({"ok": False, "error": f"echo {echo!r}"}), flush=True)
        except OSError as exc:
            print(json.dumps({"ok": False, "error": _error_name(exc)}), flush=True)
    sock.close()


def _cmd_http_get(args):
    try:
        with urllib.request.urlopen(args.url, timeout=args.timeout) as response:
            status, body = response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode(errors="replace")
    except (OSError, ValueError) as exc:
        print(f"{args.url}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(f"{status}\n{body}")
    return 0


UP_LAYOUT = {"node-a": ["pod-1", "pod-2", "pod-3", "client"], "node-b": ["pod-4"]}


def _cmd_up(args):
    """Prints one line per pod, "NAME NAMESPACE NODE IPV4 PORTS" (PORTS comma-separated TCP
    ports its endpoints serve, "-" when none), for scripts to start servers with."""
    if args.cluster:
        items = []
        for path in args.cluster:
            items += json.loads(pathlib.Path(path).read_text()).get("items", [])
        bed = Bed.from_cluster(items, prefix=args.prefix, keep=True)
        ports = pod_ports(items)
    else:
        bed = Bed(UP_LAYOUT, prefix=args.prefix, keep=True)
        ports = {pod: list(DEFAULT_TCP_PORTS) for pod in bed.pods if pod != "client"}
    bed.up()
    if args.servers:
        # Detached: the servers outlive this process and end with `down` (or --lifetime).
        bed.start_servers()
    for pod in bed.pods.values():
        print(pod.name, pod.ns, pod.node, pod.ipv4, ",".join(map(str, ports.get(pod.name, []))) or "-")


def _cmd_down(args):
    remove_prefix(args.prefix)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def client(name, handler):
        cmd = sub.add_parser(name)
        cmd.add_argument("--host", required=True)
        cmd.add_argument("--port", type=int, required=True)
        cmd.add_argument("--timeout", type=float, default=1.0)
        cmd.set_defaults(handler=handler)
        return cmd

    probe = client("probe", _cmd_probe)
    probe.add_argument("--proto", choices=("tcp", "udp"), default="tcp")
    probe.add_argument("--count", type=int, default=1)
    probe.add_argument("--source")
    probe.add_argument("--source-port", type=int, default=0)
    probe.add_argument("--max-failures", type=int, default=5)
    loop = client("loop", _cmd_loop)
    loop.add_argument("--proto", choices=("tcp", "udp"), default="tcp")
    loop.add_argument("--interval", type=float, default=0.02)
    loop.add_argument("--max-seconds", type=float, default=60)
    client("hold", _cmd_hold)
    http_get = sub.add_parser("http-get")
    http_get.add_argument("url")
    http_get.add_argument("--timeout", type=float, default=1.0)
    http_get.set_defaults(handler=_cmd_http_get)
    up = sub.add_parser("up")
    up.add_argument("--prefix", required=True)
    up.add_argument("--servers", action="store_true", help="run podserver.py in every pod")
    up.add_argument("--cluster", nargs="*", help="shape the bed after these cluster files")
    up.set_defaults(handler=_cmd_up)
    down = sub.add_parser("down")
    down.add_argument("--prefix", required=True)
    down.set_defaults(handler=_cmd_down)
    args = parser.parse_args(argv)
    return args.handler(args) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
