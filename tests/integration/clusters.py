"""clusters: the small clusters several test files run the daemon on, built
with kube_objects (one definition each, so the files cannot drift apart).
"""
import kube_objects

# One ClusterIP Service: what the cluster zone answers (web.default: 10.96.0.10).
ONE_SERVICE = kube_objects.cluster_list([kube_objects.service(
    "web", ["10.96.0.10"], [kube_objects.service_port(80, name="http", target=8080)])])

# The health-check node port of web_and_edge()'s `edge` Service.
HEALTH_PORT = 31999


def http_service(name, cluster_ip, port, **spec):
    """A single-stack ClusterIP Service whose port "http" targets 8080."""
    return kube_objects.service(name, [cluster_ip],
                                [kube_objects.service_port(port, name="http", target=8080)],
                                **spec)


def slice_of(name, addresses, node="node-a"):
    """The EndpointSlice `<name>-abc` of Service `name`: ready endpoints on `node`."""
    return kube_objects.endpoint_slice(
        name, [kube_objects.endpoint(address, node=node) for address in addresses], suffix="abc")


def web_and_edge(extra_services=()):
    """A ClusterIP Service (web, two endpoints) and a LoadBalancer Service with
    externalTrafficPolicy Local (edge, health-check node port HEALTH_PORT) with one ready
    endpoint on node-a; then `extra_services`. items[3] is edge's slice."""
    items = [
        http_service("web", "10.96.0.10", 80),
        slice_of("web", ["10.244.1.10", "10.244.1.11"]),
        http_service("edge", "10.96.0.20", 443, type="LoadBalancer",
                     external_traffic_policy="Local", healthCheckNodePort=HEALTH_PORT),
        slice_of("edge", ["10.244.1.12"]),
    ]
    items.extend(extra_services)
    return kube_objects.cluster_list(items)
