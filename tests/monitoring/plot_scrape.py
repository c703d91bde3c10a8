"""plot_scrape.py [--build DIR] [--seconds N] [--out PNG]: docs/monitoring.png,
four of the dashboard's panels (deploy/monitoring/switchboard-dashboard.json)
drawn from real scrapes. Root: it starts the daemon in a network namespace of
its own (loopback only) on a file source with the Corefile of
tests/integration/test_monitoring.py, sends it DNS queries (cluster names,
missing names, forwarded names that repeat, forwarded names the stub upstream
answers SERVFAIL) while a Service is added every 10 s, and scrapes
/metrics every 2 s. Figures are whatever this machine gives; nothing is
asserted. Needs python3-matplotlib.
"""
import argparse
import itertools
import json
import pathlib
import re
import socket
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
import dns_stub  # noqa: E402
import dns_wire  # noqa: E402
import kube_objects  # noqa: E402
import network_namespace  # noqa: E402
from daemons import start_corefile_daemon, stop_processes  # noqa: E402
from probes import curl, wait_for  # noqa: E402
from test_monitoring import COREFILE  # noqa: E402

SAMPLE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? (\S+)$")


def total(text, name, **labels):
    """The sum of the samples of `name` whose labels include `labels`."""
    out = 0.0
    for line in text.splitlines():
        found = SAMPLE.match(line)
        if found and found.group(1) == name and all(
                f'{key}="{value}"' in (found.group(2) or "") for key, value in labels.items()):
            out += float(found.group(3))
    return out


def cluster(services):
    """web plus `services` more ClusterIP Services, each with one endpoint."""
    items = []
    for i in range(services + 1):
        name = "web" if i == 0 else f"svc-{i}"
        items.append(kube_objects.service(name, [f"10.96.1.{i + 10}"],
                                          [kube_objects.service_port(80, name="http", target=8080)]))
        items.append(kube_objects.endpoint_slice(
            name, [kube_objects.endpoint(f"10.244.1.{i + 10}", node="node-a")], suffix="abc"))
    return kube_objects.cluster_list(items)


def upstream_answer(stub, query):
    if query.labels and query.labels[0].startswith("fail"):
        return dns_stub.reply(query, rcode=dns_wire.SERVFAIL)
    return dns_stub.own_address(stub, query)


def send_queries(ns, stop):
    """Up to ~200 queries a second until `stop`: cluster names, missing ones,
    forwarded names that repeat (cache hits), one that fails upstream, and one
    new name in twelve (a cache miss)."""
    names = itertools.cycle(
        ["web.default.svc.cluster.local"] * 4 + ["nope.default.svc.cluster.local"] * 2 +
        [f"host{i}.example.org" for i in range(4)] + ["fail.example.org", None])
    sock = network_namespace.socket_in(ns)
    sock.settimeout(0.2)
    sock.connect(("127.0.0.1", 53))
    for qid in itertools.count():
        if stop.is_set():
            break
        name = next(names) or f"new{qid}.example.org"  # None: a name not asked before
        sock.send(dns_wire.query(qid & 0xFFFF, name))
        try:
            sock.recv(4096)
        except socket.timeout:
            pass
        time.sleep(0.005)
    sock.close()


def run(binary, seconds, folder):
    """[(time, /metrics text)] of the daemon under the load."""
    (folder / "Corefile").write_text(COREFILE)
    (folder / "cluster.json").write_text(json.dumps(cluster(0)))
    scrapes = []
    with network_namespace.namespace("plot") as ns, \
            dns_stub.Stub(ns, "127.0.0.2", upstream_answer):
        processes, stop = [], threading.Event()
        log_path = start_corefile_daemon(binary, ns, folder, processes)
        try:
            wait_for(lambda: curl(ns, "http://127.0.0.1:10249/readyz")[0] == 200,
                     f"/readyz; log: {log_path}")
            sender = threading.Thread(target=send_queries, args=(ns, stop))
            sender.start()
            started, services = time.monotonic(), 0
            while (elapsed := time.monotonic() - started) < seconds:
                status, text = curl(ns, "http://127.0.0.1:10249/metrics")
                if status == 200:
                    scrapes.append((elapsed, text))
                if int(elapsed // 10) != services:
                    services = int(elapsed // 10)
                    (folder / "cluster.json").write_text(json.dumps(cluster(services)))
                time.sleep(2)
        finally:
            stop.set()
            stop_processes(processes)
        sender.join()
    return scrapes


def rates(scrapes, value):
    """(times, per-second rate of value(text)) between successive scrapes."""
    times, out = [], []
    for (t0, a), (t1, b) in zip(scrapes, scrapes[1:]):
        times.append(t1)
        out.append((value(b) - value(a)) / (t1 - t0))
    return times, out


def plot(scrapes, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 7), constrained_layout=True)
    ax = axes[0][0]
    for rcode in ("NOERROR", "NXDOMAIN", "SERVFAIL"):
        ax.plot(*rates(scrapes, lambda t, r=rcode: total(t, "coredns_dns_responses_total", rcode=r)),
                label=rcode)
    ax.set(title="DNS answers by rcode", ylabel="answers/s")
    ax.legend()
    ax = axes[0][1]
    hits = rates(scrapes, lambda t: total(t, "coredns_cache_hits_total"))
    lookups = rates(scrapes, lambda t: total(t, "coredns_cache_requests_total"))
    ax.plot(hits[0], [h / r if r else 0 for h, r in zip(hits[1], lookups[1])])
    ax.set(title="Forwarder cache hit ratio", ylabel="hits / lookups", ylim=(0, 1.05))
    ax = axes[1][0]
    for kind in ("full", "partial"):
        name = f"kubeproxy_sync_{kind}_proxy_rules_duration_seconds_count"
        times = [t for t, _ in scrapes]
        ax.step(times, [total(text, name, ip_family="IPv4") for _, text in scrapes],
                where="post", label=kind)
    ax.set(title="Syncs, full vs partial (a Service added every 10 s)", ylabel="syncs (count)")
    ax.legend()
    ax = axes[1][1]
    ax.plot([t for t, _ in scrapes],
            [total(text, "process_resident_memory_bytes") / 2**20 for _, text in scrapes])
    ax.set(title="Resident memory", ylabel="MiB", ylim=(0, None))
    for ax in axes.flat:
        ax.set_xlabel("seconds")
        ax.grid(alpha=0.3)
    fig.suptitle("switchboard dashboard panels from a live scrape (tests/monitoring/plot_scrape.py)")
    fig.savefig(out, dpi=80)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"))
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--out", default=str(ROOT / "docs" / "monitoring.png"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sb-plot-") as folder:
        scrapes = run(pathlib.Path(args.build) / "proxy" / "switchboard", args.seconds,
                      pathlib.Path(folder))
    plot(scrapes, args.out)
    print(f"{args.out}: {len(scrapes)} scrapes")


if __name__ == "__main__":
    main()
