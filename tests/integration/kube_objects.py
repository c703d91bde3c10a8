"""kube_objects: the Kubernetes objects the integration tests feed the
daemon, as `kubectl get ... -o json` prints them (the file source reads a
List of them; the fake API server serves the same shapes).

Every test builds its Services, EndpointSlices, Nodes, Pods and Lists here, so a
field the API server adds is added once. Defaults are the API server's
(single-stack IPv4, ClusterIP, Cluster traffic policies, no affinity);
`spec` keywords pass camelCase fields through unchanged for what the named
parameters do not cover (healthCheckNodePort, publishNotReadyAddresses...).
uids are derived from kind, namespace and name, so a rebuilt object is the
same object.
"""
import json
import os
import pathlib
import uuid


def _meta(kind, name, namespace=None, labels=None):
    meta = {
        "name": name,
        "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}/{namespace}/{name}")),
        "resourceVersion": "1",
        "creationTimestamp": "2026-01-01T00:00:00Z",
    }
    if namespace is not None:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    return meta


def service_port(port, *, name="", protocol="TCP", target=None, node_port=None):
    """One Service port; target defaults to the port itself, as the API server does."""
    doc = {"protocol": protocol, "port": port, "targetPort": port if target is None else target}
    if name:  # the API server omits an empty port name
        doc["name"] = name
    if node_port:
        doc["nodePort"] = node_port
    return doc


def service(
    name,
    cluster_ips,
    ports,
    *,
    namespace="default",
    type="ClusterIP",
    external_traffic_policy=None,
    internal_traffic_policy="Cluster",
    affinity_timeout=None,
    load_balancer_ips=(),
    load_balancer_source_ranges=(),
    external_ips=(),
    external_name=None,
    **spec,
):
    """A Service. cluster_ips empty: headless ("None"). external_name: an ExternalName
    Service (no cluster IP, no selector). affinity_timeout: ClientIP affinity with that
    timeout."""
    cluster_ips = list(cluster_ips)
    if external_name is not None:
        body = {"type": "ExternalName", "externalName": external_name, "ports": list(ports)}
    else:
        body = {
            "type": type,
            "clusterIP": cluster_ips[0] if cluster_ips else "None",
            "clusterIPs": cluster_ips or ["None"],
            "ipFamilies": ["IPv6" if ":" in ip else "IPv4" for ip in cluster_ips] or ["IPv4"],
            "ipFamilyPolicy": "PreferDualStack" if len(cluster_ips) > 1 else "SingleStack",
            "ports": list(ports),
            "selector": {"app": name},
            "sessionAffinity": "None",
            "internalTrafficPolicy": internal_traffic_policy,
        }
    if type in ("NodePort", "LoadBalancer") or external_ips:
        body["externalTrafficPolicy"] = external_traffic_policy or "Cluster"
    if affinity_timeout is not None:
        body["sessionAffinity"] = "ClientIP"
        body["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": affinity_timeout}}
    if load_balancer_source_ranges:
        body["loadBalancerSourceRanges"] = list(load_balancer_source_ranges)
    if external_ips:
        body["externalIPs"] = list(external_ips)
    body.update(spec)
    status = {"loadBalancer": {}}
    if load_balancer_ips:
        status["loadBalancer"]["ingress"] = [{"ip": ip, "ipMode": "VIP"} for ip in load_balancer_ips]
    return {"apiVersion": "v1", "kind": "Service", "metadata": _meta("Service", name, namespace),
            "spec": body, "status": status}


def endpoint(address, *, node=None, pod=None, hostname=None, ready=True, serving=None,
             terminating=False, pod_namespace="default"):
    """One EndpointSlice endpoint; pod: the name its targetRef names."""
    doc = {
        "addresses": [address],
        "conditions": {
            "ready": ready,
            "serving": ready if serving is None else serving,
            "terminating": terminating,
        },
    }
    if hostname:
        doc["hostname"] = hostname
    if node:
        doc["nodeName"] = node
    if pod:
        doc["targetRef"] = {"kind": "Pod", "namespace": pod_namespace, "name": pod}
    return doc


HTTP_8080 = (("http", 8080, "TCP"),)


def endpoint_slice(service_name, endpoints, ports=HTTP_8080, *, name=None, suffix="a",
                   namespace="default", ipv6=False):
    """An EndpointSlice of `service_name` (named `<service>-<suffix>` unless `name`).
    ports: (service port name, number, protocol) triples: the slice's port name is the
    Service port's name and its number the resolved target port."""
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _meta("EndpointSlice", name or f"{service_name}-{suffix}", namespace,
                          {"kubernetes.io/service-name": service_name}),
        "addressType": "IPv6" if ipv6 else "IPv4",
        "endpoints": list(endpoints),
        "ports": [{"name": port_name, "port": number, "protocol": protocol}
                  for port_name, number, protocol in ports],
    }


def node(name, addresses, *, pod_cidrs=(), hostname=True, **spec):
    """A Node with InternalIP `addresses` (and its Hostname address unless not `hostname`);
    pod_cidrs as the node IPAM controller assigns them (--detect-local-mode=NodeCIDR)."""
    body = dict(spec)
    if pod_cidrs:
        body.update(podCIDR=pod_cidrs[0], podCIDRs=list(pod_cidrs))
    status = [{"type": "InternalIP", "address": address} for address in addresses]
    if hostname:
        status.append({"type": "Hostname", "address": name})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta("Node", name, None, {"kubernetes.io/hostname": name}),
        "spec": body,
        "status": {"addresses": status},
    }


def pod(name, namespace, ips, *, node="node-a", dns_policy="ClusterFirst", dns_config=None,
        host_network=False, phase="Running", created="2026-01-01T00:00:00Z", labels=None):
    """A Pod scheduled to `node` with status.podIPs `ips` (and podIP the first), as a
    Deployment's Pod looks (a container, the usual status); `dns_config` is
    spec.dnsConfig as a dict; dns_policy None leaves spec.dnsPolicy out."""
    meta = _meta("Pod", name, namespace, labels or {"app": name.split("-")[0]})
    meta["creationTimestamp"] = created
    spec = {"containers": [{"name": "app", "image": "registry.example/app:1"}],
            "nodeName": node, "restartPolicy": "Always"}
    if dns_policy is not None:
        spec["dnsPolicy"] = dns_policy
    if dns_config is not None:
        spec["dnsConfig"] = dns_config
    if host_network:
        spec["hostNetwork"] = True
    status = {"phase": phase, "podIPs": [{"ip": ip} for ip in ips]}
    if ips:
        status["podIP"] = ips[0]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def service_cidr(name, cidrs):
    """A ServiceCIDR (networking.k8s.io/v1, cluster-scoped) as the API server stores it."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR", "metadata": _meta("ServiceCIDR", name),
            "spec": {"cidrs": list(cidrs)}}


def cluster_list(items):
    """The List document the file source reads."""
    return {"apiVersion": "v1", "kind": "List", "items": list(items),
            "metadata": {"resourceVersion": ""}}


def write_atomically(path, doc):
    """Writes doc as JSON through a rename, so a watcher never reads half a file."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, path)
