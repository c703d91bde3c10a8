"""The cluster the IPVS scenarios run in the qemu guest, and what IPVS
should hold for it.

One node (node1: the guest itself, InternalIP 192.168.50.1), four Pods
(pod-a, pod-b, pod-c on node1; pod-r's endpoint says node2, though its
namespace is on the same bridge, so a policy that wrongly picks it is seen
answering), a Service per scenario. The cluster changes in steps (an
endpoint added to the lc, sed and nq Services, one removed from drain);
cluster_list(step) is the file source's List after that step, expected(step)
the virtual servers and real servers it should give, as `ipvsadm -Sn`
lines, and ipvsadm_delta(step) the ipvsadm commands that make the kernel
follow (the reference the checks are validated with before switchboard's
backend programs the same: a removed real server gets weight 0, the drain
that the backend does). Standard library and kube_objects only.
"""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
import kube_objects  # noqa: E402

NODE = "node1"
# The node's own addresses and namespaces are made by ipvs_scenarios'
# node_bed check: eth0 192.168.50.1 (a veth to "outside", 192.168.50.100),
# cbr0 10.244.1.1 (the Pods' bridge), veth-client 10.244.2.1 (to "client",
# 10.244.2.2 and the sources below).
NODE_IP = "192.168.50.1"
POD_CIDR = "10.244.1.0/24"
CLIENT_SOURCES = tuple(f"10.244.2.{100 + i}" for i in range(6))  # six clients in one namespace
POD_PORT_TCP = 8080
POD_PORT_UDP = 5353
SCHEDULER_ANNOTATION = "kube-proxy.kubernetes.io/ipvs-scheduler"
HELPER_TABLE = "switchboard-ipvs"  # the backend's name, which the reference takes

PODS = {  # name -> (address, node)
    "pod-a": ("10.244.1.11", NODE),
    "pod-b": ("10.244.1.12", NODE),
    "pod-c": ("10.244.1.13", NODE),
    "pod-r": ("10.244.1.14", "node2"),
}


@dataclasses.dataclass(frozen=True)
class Port:
    name: str
    protocol: str  # TCP or UDP
    port: int
    target: int
    node_port: int = 0


HTTP = Port("http", "TCP", 80, POD_PORT_TCP)


@dataclasses.dataclass(frozen=True)
class Service:
    name: str
    cluster_ip: str
    endpoints: tuple[str, ...]  # Pod names
    ports: tuple[Port, ...] = (HTTP,)
    type: str = "ClusterIP"
    local: bool = False  # externalTrafficPolicy Local
    affinity_seconds: int = 0  # sessionAffinity ClientIP with this timeout
    scheduler: str = ""  # the annotation's; empty: the daemon's default (rr)


SERVICES = (
    Service("web", "10.96.0.10", ("pod-a", "pod-b"), type="NodePort", ports=(
        Port("http", "TCP", 80, POD_PORT_TCP, node_port=30080),
        Port("dns", "UDP", 53, POD_PORT_UDP, node_port=30053))),
    # Traffic only from the restart check, whose IPVS counters show the
    # virtual server was kept.
    Service("marker", "10.96.0.11", ("pod-c",)),
    Service("sticky", "10.96.0.12", ("pod-a", "pod-b", "pod-c"), affinity_seconds=10800),
    Service("local", "10.96.0.13", ("pod-a", "pod-r"), type="NodePort", local=True,
            ports=(Port("http", "TCP", 80, POD_PORT_TCP, node_port=30081),)),
    Service("empty", "10.96.0.14", ()),
    Service("sched-rr", "10.96.1.1", ("pod-a", "pod-b", "pod-c"), scheduler="rr"),
    Service("sched-sh", "10.96.1.2", ("pod-a", "pod-b", "pod-c"), scheduler="sh"),
    Service("sched-dh", "10.96.1.3", ("pod-a", "pod-b", "pod-c"), scheduler="dh"),
    Service("sched-lc", "10.96.1.4", ("pod-a",), scheduler="lc"),
    Service("sched-sed", "10.96.1.5", ("pod-a",), scheduler="sed"),
    Service("sched-nq", "10.96.1.6", ("pod-a",), scheduler="nq"),
    Service("drain", "10.96.1.7", ("pod-a", "pod-b")),
)

# The steps after the initial cluster: step name -> (Service, its endpoints).
STEPS = {
    "lc-add-b": ("sched-lc", ("pod-a", "pod-b")),
    "sed-add-b": ("sched-sed", ("pod-a", "pod-b")),
    "nq-add-b": ("sched-nq", ("pod-a", "pod-b")),
    "drain-remove-b": ("drain", ("pod-a",)),
}


def services_after(step: str | None) -> list[Service]:
    """The Services once every step up to STEP (None: the initial cluster) is applied."""
    names = list(STEPS)
    applied = names[: names.index(step) + 1] if step else []
    out = []
    for svc in SERVICES:
        for name in applied:
            if STEPS[name][0] == svc.name:
                svc = dataclasses.replace(svc, endpoints=STEPS[name][1])
        out.append(svc)
    return out


def _service_object(svc: Service) -> dict:
    doc = kube_objects.service(
        svc.name, [svc.cluster_ip],
        [kube_objects.service_port(p.port, name=p.name, protocol=p.protocol, target=p.target,
                                   node_port=p.node_port or None) for p in svc.ports],
        type=svc.type, external_traffic_policy="Local" if svc.local else None,
        affinity_timeout=svc.affinity_seconds or None,
    )  # fmt: skip
    if svc.scheduler:
        doc["metadata"]["annotations"] = {SCHEDULER_ANNOTATION: svc.scheduler}
    return doc


def _slice_object(svc: Service) -> dict:
    endpoints = [kube_objects.endpoint(PODS[pod][0], node=PODS[pod][1], pod=pod)
                 for pod in svc.endpoints]
    return kube_objects.endpoint_slice(
        svc.name, endpoints, ports=[(p.name, p.target, p.protocol) for p in svc.ports])


def cluster_list(step: str | None = None) -> dict:
    node = kube_objects.node(NODE, [NODE_IP], pod_cidrs=[POD_CIDR])
    items: list[dict] = [node]
    for svc in services_after(step):
        items += [_service_object(svc), _slice_object(svc)]
    return kube_objects.cluster_list(items)


def _flag(protocol: str) -> str:
    return "-t" if protocol == "TCP" else "-u"


def virtual_servers(svc: Service) -> list[tuple[str, list[str]]]:
    """(virtual server, its real servers' addresses) of a Service: one per
    ClusterIP port, one per NodePort on the node's address (only the local
    endpoints there with externalTrafficPolicy Local)."""
    out = []
    for port in svc.ports:
        everyone = [f"{PODS[pod][0]}:{port.target}" for pod in svc.endpoints]
        out.append((f"{_flag(port.protocol)} {svc.cluster_ip}:{port.port}", everyone))
        if port.node_port:
            local = [f"{PODS[pod][0]}:{port.target}" for pod in svc.endpoints
                     if PODS[pod][1] == NODE]
            out.append((f"{_flag(port.protocol)} {NODE_IP}:{port.node_port}",
                        local if svc.local else everyone))
    return out


def expected(step: str | None = None) -> list[str]:
    """The `ipvsadm -Sn` lines the cluster after STEP gives (Services without
    endpoints have no virtual server here: the helper rules reject them)."""
    lines = []
    for svc in services_after(step):
        if not svc.endpoints:
            continue
        scheduler = svc.scheduler or "rr"
        persistence = f" -p {svc.affinity_seconds}" if svc.affinity_seconds else ""
        for server, reals in virtual_servers(svc):
            lines.append(f"-A {server} -s {scheduler}{persistence}")
            lines += [f"-a {server} -r {real} -m -w 1" for real in reals]
    return lines


def ipvsadm_delta(step: str) -> list[str]:
    """The ipvsadm commands taking the reference from the step before STEP
    to STEP: new real servers added, removed ones given weight 0."""
    names = list(STEPS)
    before = expected(names[names.index(step) - 1] if names.index(step) else None)
    after = expected(step)
    added = [line for line in after if line not in before]
    removed = [line for line in before if line not in after]
    return ([f"ipvsadm {line}" for line in added]
            + [f"ipvsadm -e {line[3:-5]} -w 0" for line in removed])


def addresses() -> list[str]:
    """Every Service address the dummy link carries."""
    return [svc.cluster_ip for svc in SERVICES]


def helper_rules() -> str:
    """The reference's helper table: rejects for Services without endpoints
    (what IPVS does not do itself; the backend's table has more)."""
    rejects = "\n".join(
        f"        ip daddr {svc.cluster_ip} {p.protocol.lower()} dport {p.port} reject"
        + (" with tcp reset" if p.protocol == "TCP" else "")
        for svc in SERVICES if not svc.endpoints for p in svc.ports)
    return (f"table inet {HELPER_TABLE} {{\n    chain filter-input {{\n"
            f"        type filter hook input priority 0;\n{rejects}\n    }}\n}}\n")
