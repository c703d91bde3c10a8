"""api_daemon: what the benchmarks that drive the daemon through the fake API
server in a network namespace share (tests/bench/bench-daemon-api,
tests/bench/bench-scale, tests/bench/bench-soak; tests/bench/bench-file-source
feeds DaemonRun a folder instead): the cluster they load
(Cluster), one daemon run against it (DaemonRun: cold start, metrics, one
change's latency, memory), the kernel's nftables change notifications, and a
percentile.

Two observers of "the kernel has it". DaemonRun asks the kernel
(tests/bench/kernel_probe.py) and subscribes to nothing, so that the full
syncs of a large cluster cost the kernel what they cost without a
benchmark. bench-soak, at 200 Services, rebuilds the table from the
notifications the kernel sends as it commits a batch, to a netlink socket
subscribed to the group `nft monitor` reads (nftables_notifications). `nft
monitor` itself is no observer: it formats each element in many small
writes after the kernel is done, which added about 1 ms to the median and
most of the tail (docs/store.md).

Standard library only; the scripts put tests/integration and
tests/fake_apiserver on sys.path first.
"""
import errno
import gc
import http.client
import os
import shutil
import socket
import subprocess
import sys
import time

import fake_apiserver
import kube_objects
import network_namespace

METRICS_HOST, METRICS_PORT = "127.0.0.1", 10249
METRICS = f"{METRICS_HOST}:{METRICS_PORT}"
NETLINK_NETFILTER = 12
NFNLGRP_NFTABLES = 7
NODE = "node-a"
SERVICE_PORT = kube_objects.service_port(80, name="p0", target=8080)
SLICE_PORTS = (("p0", 8080, "TCP"),)
LAST_SYNC = "kubeproxy_sync_proxy_rules_last_timestamp_seconds"
KERNEL_PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_probe.py")
PARTIAL = "kubeproxy_sync_partial_proxy_rules_duration_seconds"
FULL = "kubeproxy_sync_full_proxy_rules_duration_seconds"


def endpoint_ip(n):
    """The n-th endpoint address, 10.128.0.0 + n."""
    return f"10.{128 + n // 65536}.{(n // 256) % 256}.{n % 256}"


def service_ip(i):
    """Service i's ClusterIP, 10.96.0.0 + i."""
    return f"10.{96 + i // 65536}.{(i // 256) % 256}.{i % 256}"


class Cluster:
    """What the fake server holds: groups of Services, each group
    (Services, endpoints each, endpoints a slice holds at most), one port,
    every endpoint ready on this node. Service i is svc-<i> in namespace
    ns-<i % namespaces> ("default" when 1), its slices svc-<i>-<s> split as
    the EndpointSlice controller splits them (full slices, then the rest).
    Endpoint addresses are numbered across the cluster in Service order.

    Changes go to the first group's slices: change(k) replaces one address
    of one slice by endpoint_ip(endpoints + k), a new one. Consecutive k
    visit slices 7919 apart, so every slice is changed once before any is
    changed twice, and a slice's k-th change replaces its k-th endpoint."""

    def __init__(self, groups, namespaces):
        self.groups = groups
        self.namespaces = namespaces
        self.services = sum(count for count, _, _ in groups)
        self.endpoints = sum(count * each for count, each, _ in groups)
        count, each, size = groups[0]
        self.target_slices = count * -(-each // size)
        self.changed = {}  # (Service, slice) -> its addresses after the changes made

    def namespace(self, i):
        return f"ns-{i % self.namespaces}" if self.namespaces > 1 else "default"

    def slice(self, i, s, addresses):
        return kube_objects.endpoint_slice(
            f"svc-{i}", [kube_objects.endpoint(a, node=NODE) for a in addresses],
            SLICE_PORTS, name=f"svc-{i}-{s}", namespace=self.namespace(i))

    def objects(self):
        """The Node, then each Service followed by its slices."""
        yield kube_objects.node(NODE, ["192.168.0.10"])
        i = first = 0
        for count, each, size in self.groups:
            for _ in range(count):
                yield kube_objects.service(f"svc-{i}", [service_ip(i)], [SERVICE_PORT],
                                           namespace=self.namespace(i))
                for s, start in enumerate(range(0, each, size)):
                    yield self.slice(i, s, [endpoint_ip(first + n)
                                            for n in range(start, min(each, start + size))])
                i += 1
                first += each

    def change(self, k):
        """The k-th endpoint change: (the changed slice, its new address)."""
        _, each, size = self.groups[0]
        i, s = divmod((k * 7919) % self.target_slices, -(-each // size))
        addresses = self.changed.get((i, s)) or [
            endpoint_ip(i * each + n) for n in range(s * size, min(each, (s + 1) * size))]
        address = endpoint_ip(self.endpoints + k)
        addresses = list(addresses)
        addresses[(k // self.target_slices) % len(addresses)] = address
        self.changed[(i, s)] = addresses
        return self.slice(i, s, addresses), address


def nftables_notifications(ns):
    """A netlink socket in `ns` subscribed to nftables' change notifications."""
    def make():
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        sock.bind((0, 1 << (NFNLGRP_NFTABLES - 1)))
        sock.settimeout(0.2)  # the reader looks at `stop` at least this often
        return sock
    return network_namespace.call_inside(ns, make)


def read_notifications(sock, out, stop, dropped=None):
    """Puts (time received, message bytes) on `out` until `stop` is set. Each
    ENOBUFS (the kernel dropped notifications: the socket's buffer was full)
    appends its time to the list `dropped` when one is given."""
    while not stop.is_set():
        try:
            data = sock.recv(1 << 16)
        except socket.timeout:
            continue
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:
                if dropped is not None:
                    dropped.append(time.monotonic())
                continue
            return
        out.put((time.monotonic(), data))


def histogram_delta(before, after, name):
    """(observations, their mean in ms) of histogram `name` between two
    DaemonRun.metrics() readings."""
    count = after.get(name + "_count", 0.0) - before.get(name + "_count", 0.0)
    total = after.get(name + "_sum", 0.0) - before.get(name + "_sum", 0.0)
    return int(count), total * 1000 / max(1.0, count)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class DaemonRun:
    """switchboard (`binary`) in a network namespace of its own against a fake
    API server holding `cluster`, as a context manager. Entering loads the
    cluster (load_s: the fake server's part, not timed as the daemon's),
    starts the daemon (nftables backend, DNS on 127.0.0.1:53,
    --min-sync-period=0, its --state-dir in `folder`), waits for its first
    sync (cold_s: from the start to kubeproxy_sync_proxy_rules_last_timestamp_
    seconds set, polled every 20 ms) and starts tests/bench/kernel_probe.py
    in the namespace, the observer of "the kernel has it". Leaving stops them
    all and deletes the namespace. The server keeps `history` events, enough
    for every change the caller makes."""

    COLD_START_LIMIT = 300  # s

    def __init__(self, binary, cluster, folder, history):
        self.binary = binary
        self.cluster = cluster
        self.folder = folder
        self.history = history
        self.ns = self.state = self.api = self.daemon = self.probe = None

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        self.ns = network_namespace.create(f"{network_namespace.new_prefix()}-bench")
        source = self._start_source()
        self.state = os.path.join(self.folder, f"state-{self.ns}")
        started = time.monotonic()
        # `ip netns exec` execs the daemon: the Popen's pid is the daemon's.
        self.daemon = network_namespace.popen_in(
            self.ns, [self.binary, *source,
                      f"--hostname-override={NODE}", "--proxy-mode=nftables",
                      "--min-sync-period=0", "--dns-listen=127.0.0.1:53",
                      f"--metrics-bind-address={METRICS}", "--healthz-bind-address=",
                      f"--state-dir={self.state}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = started + self.COLD_START_LIMIT
        synced = False
        while not synced and time.monotonic() < deadline and self.daemon.poll() is None:
            synced = bool(self.metrics().get(LAST_SYNC))
            if not synced:
                time.sleep(0.02)
        self.cold_s = time.monotonic() - started
        if self.daemon.poll() is not None:
            raise RuntimeError(f"{self.binary} exited with {self.daemon.returncode}")
        if not synced:
            raise RuntimeError(f"{self.binary}: no sync in {self.COLD_START_LIMIT} s")
        self.probe = network_namespace.popen_in(
            self.ns, [sys.executable, KERNEL_PROBE], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True)
        ready = self.probe.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"kernel_probe: {ready or 'exited'}")

    def _start_source(self):
        """Loads the cluster into the fake API server and starts it in the
        namespace (load_s: how long the load took); returns the daemon's
        source flags. A subclass may feed the daemon otherwise
        (tests/bench/bench-file-source: a folder of files)."""
        self.api = fake_apiserver.FakeApiServer(os.path.join(self.folder, "pki"),
                                                history=self.history, chunking="line")
        loading = time.monotonic()
        gc.disable()  # collections during a load of 100k Services doubled its time
        try:
            self.api.apply_many(self.cluster.objects())
        finally:
            gc.enable()
        self.load_s = time.monotonic() - loading
        # The loaded objects live as long as the run: kept out of the
        # collections, a full one of which took 2 s at 100k Services and would
        # stall the server's watch (its timestamps).
        gc.freeze()
        self.api.start(netns=self.ns)
        kubeconfig = fake_apiserver.write_kubeconfig(
            os.path.join(self.folder, "kubeconfig"), self.api.url,
            ca_file=os.path.join(self.folder, "pki", "ca.crt"), token="good-token")
        return ["--kubeconfig", kubeconfig]

    def __exit__(self, *exc):
        for process in (self.probe, self.daemon):
            if process and process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
        if self.api:
            self.api.stop()
        if self.ns:
            network_namespace.delete(self.ns)
        if self.state:
            shutil.rmtree(self.state, ignore_errors=True)
        # The server holds cycles (its handler class refers to it): collected
        # now, before the next run's load freezes whatever is left.
        self.api = None
        gc.unfreeze()
        gc.collect()

    def metrics(self):
        """The daemon's metrics, {name: the value of its first series}; {} while it
        does not answer. Read over a socket made in the namespace: no process
        started, so polling costs the daemon's two cores little."""
        conn = http.client.HTTPConnection(METRICS_HOST, METRICS_PORT, timeout=2)
        try:
            conn.sock = network_namespace.call_inside(
                self.ns, lambda: socket.create_connection((METRICS_HOST, METRICS_PORT), 2))
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        except (OSError, http.client.HTTPException):
            return {}
        finally:
            conn.close()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, labels, rest = line.partition("{")
                value = rest.rpartition("}")[2] if labels else name.split(maxsplit=1)[1]
                values.setdefault(name.split()[0], float(value.split()[0]))
        return values

    def status_mb(self, field):
        """A size from the daemon's /proc/PID/status (VmHWM, VmRSS) in MB."""
        with open(f"/proc/{self.daemon.pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def kernel_has(self, address, timeout):
        """When the kernel was first seen with endpoint `address` (kernel_probe),
        None when not within `timeout` s."""
        self.probe.stdin.write(f"wait {address} {timeout}\n")
        self.probe.stdin.flush()
        answer = self.probe.stdout.readline().strip()
        return None if answer == "-" else float(answer)

    def kernel_count(self, addresses):
        """How many of the endpoint addresses the kernel has now."""
        self.probe.stdin.write(f"count {' '.join(addresses)}\n")
        self.probe.stdin.flush()
        return int(self.probe.stdout.readline())

    def written_at(self, rv):
        """When the fake server began writing event `rv` to the daemon's watch;
        None when it has not within 2 s (its watch thread records it after the
        write)."""
        recorded_by = time.monotonic() + 2
        while time.monotonic() < recorded_by:
            with self.api.lock:
                written = self.api.written_at.get(rv)
            if written is not None:
                return written
            time.sleep(0.001)
        return None

    def change(self, k, timeout=10):
        """Makes the cluster's k-th endpoint change and waits for the kernel to
        have it: (ms from the fake server's write of the watch event, ms from
        apply(), which adds the fake's own latency), None when not seen within
        `timeout` s."""
        obj, address = self.cluster.change(k)
        applied = time.monotonic()
        rv = int(self.api.apply(obj)["metadata"]["resourceVersion"])
        seen = self.kernel_has(address, timeout)
        written = self.written_at(rv)
        if seen is None or written is None:
            return None
        return (seen - written) * 1000, (seen - applied) * 1000
