"""The Kubernetes source against a fake API server (tests/fake_apiserver).

Most cases drive `kube_dump` (the KubeSource alone, mirroring its Store into
a JSON file: see tests/fake_apiserver/kube_dump.cpp), so each point of the
consistency contract is checked on the Store itself. The daemon cases run
the real `switchboard` binary with --kubeconfig, exactly as against a
cluster, inside a network namespace (root), and compare GET /debug/services
with `switchboard plan --source file:` of the fake server's final objects.

Timings are shortened through SWITCHBOARD_KUBE_TUNING (watches of 2-3 s,
100 ms initial backoff); every wait is bounded.
"""
import copy
import json
import os
import random
import subprocess
import sys
import time
import uuid

import pytest

import kube_objects
from network_namespace import in_ns, run_in

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fake_apiserver"))
import fake_apiserver as fake  # noqa: E402

TUNING = ("watch_timeout_min_s=2,watch_timeout_max_s=3,watch_grace_s=2,request_timeout_s=3,"
          "backoff_initial_ms=100,backoff_cap_ms=1000")
NODE = "node-a"


def service(name, cluster_ip, port=80, extra_ports=0):
    """A ClusterIP Service whose ports p0, p1... (port, port + 1...) target 8080, 8081..."""
    return kube_objects.service(name, [cluster_ip], [
        kube_objects.service_port(port + i, name=f"p{i}", target=8080 + i)
        for i in range(extra_ports + 1)])


def slice_of(name, service_name, addresses, node=NODE, ready=True):
    """EndpointSlice `name` of `service_name`: its endpoints on `node`, port p0 8080."""
    return kube_objects.endpoint_slice(
        service_name, [kube_objects.endpoint(a, node=node, ready=ready) for a in addresses],
        (("p0", 8080, "TCP"),), name=name)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return fake.make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture(scope="module")
def kube_dump_bin(build_dir):
    path = build_dir / "tests" / "fake_apiserver" / "kube_dump"
    assert path.exists(), f"{path} is not built: run ./dev build"
    return path


def seed(api, services=3):
    for i in range(services):
        api.apply(service(f"svc-{i}", cluster_ip=f"10.96.0.{10 + i}"))
        api.apply(slice_of(f"svc-{i}-abc", f"svc-{i}", [f"10.244.0.{10 + i}"]))
    api.apply(kube_objects.node(NODE, ["192.168.0.10"], hostname=False))


@pytest.fixture
def api(pki):
    server = fake.FakeApiServer(pki, seed=1)
    seed(server)
    server.start()
    yield server
    server.stop()


class Dump:
    """A running kube_dump and the state it mirrors."""

    def __init__(self, binary, kubeconfig, folder, extra=()):
        self.out = os.path.join(folder, f"state-{uuid.uuid4().hex}.json")
        self.log_path = self.out + ".log"
        self.log = open(self.log_path, "w")
        env = dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING)
        self.process = subprocess.Popen(
            [str(binary), "--kubeconfig", kubeconfig, "--node", NODE, "--out", self.out, *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env=env)

    def state(self):
        try:
            with open(self.out) as f:
                return json.load(f)
        except (OSError, ValueError):
            return {}

    def wait(self, predicate, timeout=20, what="condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if state and predicate(state):
                return state
            assert self.process.poll() is None, f"kube_dump exited: {self.logs()}"
            time.sleep(0.05)
        pytest.fail(f"timed out waiting for {what}; last state: "
                    f"{json.dumps(self.state())[:2000]}\nlog:\n{self.logs()[-3000:]}")

    def metric(self, name, **labels):
        text = self.state().get("metrics", "")
        total = 0
        for line in text.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            if all(f'{k}="{v}"' in line for k, v in labels.items()):
                total += int(line.rsplit(" ", 1)[1])
        return total

    def logs(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


@pytest.fixture
def run_dump(kube_dump_bin, tmp_path):
    started = []

    def run(kubeconfig, extra=()):
        dump = Dump(kube_dump_bin, kubeconfig, str(tmp_path), extra)
        started.append(dump)
        return dump

    yield run
    for dump in started:
        dump.stop()


def token_kubeconfig(tmp_path, api, pki, token="good-token"):
    return fake.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url,
                                 ca_file=os.path.join(pki, "ca.crt"), token=token)


def mirrors(api):
    """A predicate: the dumped Store holds exactly the server's objects, each
    at its current resourceVersion."""
    expected = api.versions()

    def check(state):
        if not state.get("synced"):
            return False
        for kind, key in (("Service", "services"), ("EndpointSlice", "endpointslices"),
                          ("Node", "nodes")):
            got = {name: value["rv"] for name, value in state.get(key, {}).items()}
            if got != expected[kind]:
                return False
        return True
    return check


def watch_requests(api, resource_path):
    with api.lock:
        return [r for r in api.requests if r[1] == resource_path and r[2].get("watch") == "true"]


SERVICES = "/api/v1/services"
SLICES = "/apis/discovery.k8s.io/v1/endpointslices"
PODS = "/api/v1/pods"


# ---- auth and TLS ----------------------------------------------------------

def test_token_auth_list_pagination_then_watch(api, pki, run_dump, tmp_path):
    for i in range(3, 1203):  # more than two pages of 500
        api.apply(service(f"svc-{i}", cluster_ip=f"10.96.{i // 256}.{i % 256}"))
    listed_rv = api.rv
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    state = dump.wait(mirrors(api), what="initial sync")
    dump.wait(lambda s: s["ready"], what="ready")
    assert len(state["services"]) == 1203
    with api.lock:
        lists = [r for r in api.requests if r[1] == SERVICES and "watch" not in r[2]]
        assert all(r[3] == "token" for r in api.requests)
    assert [r[2].get("continue") is not None for r in lists] == [False, True, True]
    assert all(r[2]["limit"] == "500" for r in lists)
    node_lists = [r for r in api.requests if r[1] == "/api/v1/nodes"]
    assert node_lists[0][2]["fieldSelector"] == f"metadata.name={NODE}"
    dump.wait(lambda s: watch_requests(api, SERVICES), what="a watch")
    first_watch = watch_requests(api, SERVICES)[0][2]
    assert first_watch["allowWatchBookmarks"] == "true"
    assert 2 <= int(first_watch["timeoutSeconds"]) <= 3
    assert first_watch["resourceVersion"] == str(listed_rv)

    api.apply(service("svc-0", cluster_ip="10.96.0.10", port=81))
    api.delete("Service", "default", "svc-1")
    api.apply(slice_of("svc-2-abc", "svc-2", ["10.244.0.99"]))
    state = dump.wait(mirrors(api), what="watch events applied")
    assert state["services"]["default/svc-0"]["ports"] == [81]
    assert state["endpointslices"]["default/svc-2-abc"]["addresses"] == ["10.244.0.99"]
    assert "default/svc-1" not in state["services"]


def test_client_certificate_auth(api, pki, run_dump, tmp_path):
    kubeconfig = fake.write_kubeconfig(
        str(tmp_path / "kubeconfig"), api.url, ca_file=os.path.join(pki, "ca.crt"),
        client_cert=os.path.join(pki, "client.crt"), client_key=os.path.join(pki, "client.key"))
    dump = run_dump(kubeconfig)
    dump.wait(mirrors(api), what="sync with a client certificate")
    with api.lock:
        assert {r[3] for r in api.requests} == {"certificate"}


def test_wrong_ca_is_refused_with_one_clear_log_line(api, pki, run_dump, tmp_path):
    kubeconfig = fake.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url,
                                       ca_file=os.path.join(pki, "other-ca.crt"),
                                       token="good-token")
    dump = run_dump(kubeconfig)
    # Several retries happen in this time (100 ms initial backoff).
    time.sleep(3)
    state = dump.state()
    assert state.get("synced") is False and state.get("ready") is False
    assert state["services"] == {}
    assert dump.metric("switchboard_apiserver_reconnects_total") >= 3
    with api.lock:
        assert api.requests == []  # no request ever left the failed handshake
    lines = [line for line in dump.logs().splitlines() if "rejected" in line]
    assert len(lines) == 1, dump.logs()
    assert api.url in lines[0] and "retrying" in lines[0]


def test_insecure_skip_tls_verify_accepts_any_certificate(api, pki, run_dump, tmp_path):
    kubeconfig = fake.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url, insecure=True,
                                       token="good-token")
    dump = run_dump(kubeconfig)
    dump.wait(mirrors(api), what="sync without verification")


def test_bad_token_is_rejected_and_a_rotated_token_file_recovers(api, pki, run_dump, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("wrong-token\n")
    kubeconfig = fake.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url,
                                       ca_file=os.path.join(pki, "ca.crt"),
                                       token_file=str(token_file))
    dump = run_dump(kubeconfig)
    dump.wait(lambda s: dump.metric("switchboard_apiserver_requests_total", code="401") >= 6,
              what="repeated 401s")
    state = dump.state()
    assert state["synced"] is False and state["ready"] is False
    lines = [line for line in dump.logs().splitlines() if "authentication failed" in line]
    assert len(lines) == 1, dump.logs()
    assert "authentication failed" in lines[0] and api.url in lines[0]
    # A bound token rotates in place: the next request reads the new one.
    token_file.write_text("good-token\n")
    dump.wait(mirrors(api), what="recovery after the token file changed")
    dump.wait(lambda s: s["ready"], what="ready")


def test_certificate_must_name_the_server(api, pki, run_dump, tmp_path):
    config = json.loads(open(token_kubeconfig(tmp_path, api, pki)).read())
    config["clusters"][0]["cluster"]["tls-server-name"] = "not-the-apiserver.example"
    path = tmp_path / "mismatch"
    path.write_text(json.dumps(config))
    dump = run_dump(str(path))
    dump.wait(lambda s: dump.metric("switchboard_apiserver_reconnects_total") >= 3,
              what="retries")
    assert dump.state()["synced"] is False
    lines = [line for line in dump.logs().splitlines() if "rejected" in line]
    assert len(lines) == 1 and "mismatch" in lines[0], dump.logs()
    # The same server by a name its certificate holds (DNS SAN localhost).
    config["clusters"][0]["cluster"].pop("tls-server-name")
    config["clusters"][0]["cluster"]["server"] = f"https://localhost:{api.port}"
    path.write_text(json.dumps(config))
    dump = run_dump(str(path))
    dump.wait(mirrors(api), what="sync through the DNS name")


def test_in_cluster_credentials_and_master_override(api, pki, kube_dump_bin, tmp_path):
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    (folder / "token").write_text("good-token")
    (folder / "ca.crt").write_text(open(os.path.join(pki, "ca.crt")).read())
    env = dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING,
               SWITCHBOARD_SERVICEACCOUNT_DIR=str(folder),
               KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT=str(api.port))
    out = tmp_path / "state.json"

    def run_until_synced(extra, timeout=20):
        process = subprocess.Popen([str(kube_dump_bin), "--node", NODE, "--out", str(out),
                                    *extra], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + timeout
            check = mirrors(api)
            while time.monotonic() < deadline:
                try:
                    if check(json.loads(out.read_text())):
                        return True
                except (OSError, ValueError):
                    pass
                time.sleep(0.05)
            return False
        finally:
            process.terminate()
            process.wait(10)
            out.unlink(missing_ok=True)

    assert run_until_synced([])
    with api.lock:
        assert {r[3] for r in api.requests} == {"token"}
    # --master wins over KUBERNETES_SERVICE_HOST/_PORT (here: a dead port).
    env["KUBERNETES_SERVICE_PORT"] = "1"
    assert not run_until_synced([], timeout=2)
    assert run_until_synced(["--master", api.url])


# ---- consistency (one case per behaviour) ------------------------------------

def test_not_synced_until_every_first_list_is_complete(api, pki, run_dump, tmp_path):
    api.inject("stall", "endpointslices", watch_only=False)
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    state = dump.wait(lambda s: len(s["services"]) == 3, what="services listed")
    time.sleep(1)
    state = dump.state()
    assert state["synced"] is False and state["ready"] is False
    assert state["endpointslices"] == {}
    # The stalled LIST times out (request_timeout_s=3) and is retried.
    dump.wait(mirrors(api), timeout=30, what="sync after the stalled list")


def test_this_nodes_pods_are_watched_only_when_asked_with_a_field_selector(api, pki, run_dump,
                                                                          tmp_path):
    api.apply(kube_objects.pod("web-1", "shop", ["10.244.0.21", "fd00:10:244::21"]))
    api.apply(kube_objects.pod("web-2", "shop", ["10.244.1.22"], node="node-b"))
    plain = run_dump(token_kubeconfig(tmp_path, api, pki))
    plain.wait(mirrors(api), what="sync without Pods")
    plain.stop()
    with api.lock:
        assert not [r for r in api.requests if r[1] == PODS]

    dump = run_dump(token_kubeconfig(tmp_path, api, pki), ("--watch-pods", "true"))
    state = dump.wait(lambda s: mirrors(api)(s) and s["pods"], what="sync with this node's Pods")
    assert state["pods"] == {"shop/web-1": {"rv": api.versions()["Pod"]["shop/web-1"],
                                            "node": NODE,
                                            "ips": ["10.244.0.21", "fd00:10:244::21"]}}
    with api.lock:
        pod_requests = [r for r in api.requests if r[1] == PODS]
    assert pod_requests and all(r[2]["fieldSelector"] == f"spec.nodeName={NODE}"
                                for r in pod_requests)
    dump.wait(lambda s: watch_requests(api, PODS), what="a Pod watch")

    api.apply(kube_objects.pod("web-3", "shop", ["10.244.0.23"]))
    api.apply(kube_objects.pod("web-4", "shop", ["10.244.1.24"], node="node-b"))
    api.delete("Pod", "shop", "web-1")
    state = dump.wait(lambda s: set(s["pods"]) == {"shop/web-3"}, what="Pod events applied")
    assert state["pods"]["shop/web-3"]["ips"] == ["10.244.0.23"]
    assert dump.metric("switchboard_watch_events_total", resource="pods", type="ADDED") >= 1
    assert dump.metric("switchboard_watch_events_total", resource="pods", type="DELETED") == 1


def test_a_server_without_the_servicecidr_api_holds_nothing_back(api, pki, run_dump, tmp_path):
    # The fake server, like a cluster before Kubernetes 1.33, answers 404 for
    # /apis/networking.k8s.io/v1/servicecidrs.
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="sync without ServiceCIDRs")
    dump.wait(lambda s: s["ready"], what="ready without ServiceCIDRs")
    assert dump.metric("switchboard_apiserver_requests_total", resource="servicecidrs",
                       code="404") >= 1
    logs = dump.logs()
    assert len([line for line in logs.splitlines() if "servicecidrs not served" in line]) == 1, logs
    assert "retrying with backoff" not in logs, logs


def test_bookmarks_advance_the_resource_version(api, pki, run_dump, tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    listed_rv = api.rv
    dump.wait(mirrors(api), what="initial sync")
    # Only slices change: the services watch sees nothing but bookmarks, yet
    # its next watch resumes from a newer resourceVersion.
    for i in range(5):
        api.apply(slice_of("svc-0-abc", "svc-0", [f"10.244.1.{i}"]))
    newest = api.rv
    dump.wait(lambda s: any(int(r[2].get("resourceVersion", 0)) >= newest
                            for r in watch_requests(api, SERVICES)),
              timeout=20, what="a services watch resuming from a bookmark's resourceVersion")
    assert newest > listed_rv
    assert dump.metric("switchboard_watch_events_total", resource="services",
                       type="BOOKMARK") >= 1
    # History before the bookmark is gone now; no relist is needed.
    api.compact()
    api.apply(service("svc-0", cluster_ip="10.96.0.10", port=90))
    dump.wait(mirrors(api), what="update after compaction")
    assert dump.metric("switchboard_watch_relists_total", resource="services") == 0


@pytest.mark.parametrize("how", ["gone_http", "gone_event"])
def test_410_gone_relists_and_drops_deleted_objects(api, pki, run_dump, tmp_path, how):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    # The node is cut off while a Service and a slice are deleted and one is
    # added; the deletions never reach it as watch events.
    api.set_partitioned(True)
    dump.wait(lambda s: not s["ready"], what="not ready while partitioned")
    api.delete("Service", "default", "svc-1")
    api.delete("EndpointSlice", "default", "svc-1-abc")
    api.apply(service("added", cluster_ip="10.96.5.5"))
    if how == "gone_http":
        api.compact()  # the client's resourceVersion is now too old: HTTP 410
    else:
        api.inject("gone_event", "services")
        api.inject("gone_event", "endpointslices")
    api.set_partitioned(False)
    state = dump.wait(mirrors(api), what="relist after 410")
    assert "default/svc-1" not in state["services"]
    assert "default/svc-1-abc" not in state["endpointslices"]
    assert "default/added" in state["services"]
    assert dump.metric("switchboard_watch_relists_total", resource="services") >= 1
    assert dump.metric("switchboard_watch_relists_total", resource="endpointslices") >= 1
    dump.wait(lambda s: s["ready"], what="ready again")


def test_disconnect_mid_chunk_resumes_from_the_last_resource_version(api, pki, run_dump,
                                                                     tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    dump.wait(lambda s: watch_requests(api, SERVICES), what="a watch")
    before = len(watch_requests(api, SERVICES))
    # The next services watch delivers one event, then dies inside a chunk.
    api.inject("drop", "services", after_events=1)
    dump.wait(lambda s: len(watch_requests(api, SERVICES)) > before, what="the next watch")
    first = api.apply(service("svc-0", cluster_ip="10.96.0.10", port=100))
    second = api.apply(service("svc-1", cluster_ip="10.96.0.11", port=101))
    dump.wait(mirrors(api), what="both updates after the drop")
    resumed = [r for r in watch_requests(api, SERVICES)
               if int(r[2]["resourceVersion"]) >= int(first["metadata"]["resourceVersion"])]
    assert resumed, "no watch resumed from the delivered event's resourceVersion"
    assert dump.metric("switchboard_watch_relists_total", resource="services") == 0
    assert dump.metric("switchboard_apiserver_reconnects_total", resource="services") >= 1
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_5xx_reconnects_with_backoff_from_the_last_resource_version(api, pki, run_dump,
                                                                    tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    for _ in range(3):
        api.inject("500", "services")
    api.apply(service("svc-2", cluster_ip="10.96.0.12", port=102))
    api.delete("Service", "default", "svc-0")
    dump.wait(lambda s: api.pending_faults() == 0, what="the 500s served")
    dump.wait(lambda s: dump.metric("switchboard_apiserver_requests_total",
                                    resource="services", code="500") == 3, what="three 500s")
    api.apply(service("after-500s", cluster_ip="10.96.0.13"))
    dump.wait(mirrors(api), what="convergence after 500s")
    assert dump.metric("switchboard_apiserver_reconnects_total", resource="services") >= 3
    assert dump.metric("switchboard_watch_relists_total", resource="services") == 0
    with api.lock:  # resumed by WATCH from a resourceVersion, never by a new LIST
        assert len([r for r in api.requests if r[1] == SERVICES and "watch" not in r[2]]) == 1
    dump.wait(lambda s: s["ready"], what="ready after 500s")


def test_429_retry_after_is_honoured(api, pki, run_dump, tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    api.inject("429", "services", retry_after=2)
    dump.wait(lambda s: api.pending_faults() == 0, what="the 429 served")
    t429 = [t for kind, _, t in api.served_faults if kind == "429"][0]

    def services_requests_after():
        with api.lock:
            return [r[4] for r in api.requests if r[1] == SERVICES and r[4] > t429]
    dump.wait(lambda s: services_requests_after(), what="the retry after 429")
    retry = min(services_requests_after())
    # The backoff alone would retry after 50-100 ms; Retry-After says 2 s.
    assert retry - t429 >= 1.8
    assert dump.metric("switchboard_apiserver_requests_total", resource="services",
                       code="429") == 1


def test_garbage_lines_are_counted_and_skipped_without_losing_the_stream(api, pki, run_dump,
                                                                         tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    api.inject("garbage", "services")
    dump.wait(lambda s: api.pending_faults() == 0, what="garbage served")
    reconnects = dump.metric("switchboard_apiserver_reconnects_total", resource="services")
    api.apply(service("after-garbage", cluster_ip="10.96.7.7"))
    dump.wait(mirrors(api), what="the event after the garbage")
    # Not JSON, an invalid object, an event without an object.
    assert dump.metric("switchboard_watch_decode_errors_total", resource="services") == 3
    assert dump.metric("switchboard_apiserver_reconnects_total",
                       resource="services") == reconnects
    assert "Not A Valid Name" in dump.logs()


def test_a_stalled_watch_is_abandoned_and_resumed(api, pki, run_dump, tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    api.inject("stall", "services")
    dump.wait(lambda s: api.pending_faults() == 0, what="the stall served")
    api.apply(service("during-stall", cluster_ip="10.96.8.8"))
    # timeoutSeconds (<= 3) + grace (2) later the client gives up on it.
    dump.wait(mirrors(api), timeout=20, what="the update after the stall")
    assert dump.metric("switchboard_apiserver_reconnects_total", resource="services") >= 1
    assert "stalled" in dump.logs()


def test_watches_that_end_at_once_back_off(api, pki, run_dump, tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    # More short watches than the backoff (100 ms doubling to a 1 s cap)
    # lets through in the window; a client that resets its backoff on each
    # clean end takes them all in a tight loop.
    faults = 200
    for _ in range(faults):
        api.inject("short", "services")
    dump.wait(lambda s: api.pending_faults() <= faults - 3, what="three short watches")
    time.sleep(3)
    served = faults - api.pending_faults()
    # 50-100, 100-200, 200-400, 400-800 ms, then 0.5-1 s each: at most about
    # ten in the few seconds waited here.
    assert served <= 20, f"{served} short watches served: no backoff"
    assert dump.metric("switchboard_apiserver_reconnects_total", resource="services") >= 3
    assert "watch ended within a second" in dump.logs()
    with api.lock:
        api.faults.clear()
    api.apply(service("after-short", cluster_ip="10.96.9.9"))
    dump.wait(mirrors(api), what="convergence after the short watches")


# ---- randomized ---------------------------------------------------------------

def random_mutations(api, rng, count, inject_faults):
    fault_cycle = ["drop", "gone_http", "gone_event", "garbage", "stall", "short", "500", "429",
                   "401", "partition", "compact"]
    live_services = set(f"svc-{i}" for i in range(3))
    live_slices = set(f"svc-{i}-abc" for i in range(3))
    for n in range(count):
        if inject_faults and n % 50 == 25:
            fault = fault_cycle[(n // 50) % len(fault_cycle)]
            resource = rng.choice(["services", "endpointslices", None])
            if fault == "partition":
                api.set_partitioned(True)
                time.sleep(0.3)
                api.set_partitioned(False)
            elif fault == "compact":
                api.compact()
            else:
                # garbage, gone_event and short only exist inside a watch stream.
                in_stream = fault in ("garbage", "gone_event", "short")
                api.inject(fault, resource, watch_only=in_stream or rng.random() < 0.7,
                           retry_after=1, after_events=rng.randint(0, 3))
        op = rng.random()
        name = f"svc-{rng.randint(0, 60)}"
        if op < 0.35:
            api.apply(service(name, cluster_ip=f"10.96.1.{int(name[4:])}",
                                   port=rng.randint(1, 65535), extra_ports=rng.randint(0, 2)))
            live_services.add(name)
        elif op < 0.5:
            if api.delete("Service", "default", name):
                live_services.discard(name)
        elif op < 0.85:
            slice_name = f"{name}-{rng.choice('abc')}"
            addresses = [f"10.244.{rng.randint(0, 3)}.{rng.randint(1, 250)}"
                         for _ in range(rng.randint(1, 4))]
            api.apply(slice_of(slice_name, name, sorted(set(addresses)),
                                          ready=rng.random() < 0.8,
                                          node=rng.choice([NODE, "node-b"])))
            live_slices.add(slice_name)
        else:
            slice_name = f"{name}-{rng.choice('abc')}"
            if api.delete("EndpointSlice", "default", slice_name):
                live_slices.discard(slice_name)
        if n % 10 == 0:
            time.sleep(0.01)


def test_randomized_mutations_with_every_fault_converge(api, pki, run_dump, tmp_path):
    dump = run_dump(token_kubeconfig(tmp_path, api, pki))
    dump.wait(mirrors(api), what="initial sync")
    random_mutations(api, random.Random(4), 1000, inject_faults=True)
    # Serve what is still queued (a fault waits for its next request).
    dump.wait(lambda s: api.pending_faults() == 0, timeout=60, what="all faults served")
    assert {kind for kind, _, _ in api.served_faults} == set(fake.FAULTS)
    state = dump.wait(mirrors(api), timeout=60, what="convergence after 1000 mutations")
    assert state["ready"] or dump.wait(lambda s: s["ready"], what="ready")
    for metric in ("switchboard_watch_relists_total", "switchboard_apiserver_reconnects_total",
                   "switchboard_watch_decode_errors_total"):
        assert dump.metric(metric) >= 1, metric


# ---- the daemon, exactly as against a cluster -----------------------------------

def test_plan_from_the_api_server_equals_plan_from_its_dump(api, pki, switchboard_bin,
                                                             tmp_path):
    """`switchboard plan --kubeconfig` (no kernel involved) lists the fake
    server and plans exactly what the file source plans from its objects."""
    random_mutations(api, random.Random(3), 300, inject_faults=False)
    for i in range(3, 700):  # two pages of Services
        api.apply(service(f"bulk-{i}", cluster_ip=f"10.97.{i // 256}.{i % 256}"))
    dump_file = tmp_path / "objects.json"
    dump_file.write_text(json.dumps(api.dump()))
    expected = subprocess.run(
        [str(switchboard_bin), "plan", "--source", f"file:{dump_file}",
         "--hostname-override", NODE], capture_output=True, text=True, timeout=60, check=True)
    got = subprocess.run(
        [str(switchboard_bin), "plan", "--kubeconfig", token_kubeconfig(tmp_path, api, pki),
         "--hostname-override", NODE], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING))
    assert got.returncode == 0, got.stderr
    assert json.loads(got.stdout) == json.loads(expected.stdout)
    assert len(json.loads(got.stdout)) > 0


def test_pod_env_from_the_api_server_equals_pod_env_from_its_dump(api, pki, switchboard_bin,
                                                                   tmp_path):
    """`switchboard pod-env --kubeconfig` reads the Services from the API server
    (issue 14): the same variables as from the file of its objects."""
    random_mutations(api, random.Random(5), 100, inject_faults=False)
    api.apply(kube_objects.service("kubernetes", ["10.96.0.1"],
                                   [kube_objects.service_port(443, name="https", target=6443)]))
    dump_file = tmp_path / "objects.json"
    dump_file.write_text(json.dumps(api.dump()))
    expected = subprocess.run(
        [str(switchboard_bin), "pod-env", "--namespace", "default", "--source",
         f"file:{dump_file}"], capture_output=True, text=True, timeout=60, check=True)
    got = subprocess.run(
        [str(switchboard_bin), "pod-env", "--namespace", "default", "--kubeconfig",
         token_kubeconfig(tmp_path, api, pki), "--hostname-override", NODE],
        capture_output=True, text=True, timeout=60,
        env=dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING))
    assert got.returncode == 0, got.stderr
    assert got.stdout == expected.stdout
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1\n" in got.stdout
    assert got.stdout.count("_SERVICE_HOST=") > 1


def test_daemon_exits_2_naming_a_bad_kubeconfig(switchboard_bin, tmp_path):
    bad = tmp_path / "kubeconfig"
    bad.write_text("clusters: []\n")
    result = subprocess.run([str(switchboard_bin), "plan", "--kubeconfig", str(bad),
                             "--hostname-override", NODE],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert str(bad) in result.stderr and "current-context" in result.stderr


def _debug_services(netns, port):
    result = run_in(netns, "curl", "-sf", f"http://127.0.0.1:{port}/debug/services",
                    timeout=10)
    return result.stdout if result.returncode == 0 else None


def test_daemon_converges_to_the_servers_objects(pki, switchboard_bin, netns, tmp_path):
    api = fake.FakeApiServer(pki, seed=2)
    seed(api)
    api.start(netns=netns)
    daemon = None
    try:
        kubeconfig = token_kubeconfig(tmp_path, api, pki)
        metrics_port = 10249
        log = open(tmp_path / "daemon.log", "w")
        daemon = subprocess.Popen(
            in_ns(netns, [str(switchboard_bin), "--proxy-mode=nftables",
             "--kubeconfig", kubeconfig, "--hostname-override", NODE,
             f"--metrics-bind-address=127.0.0.1:{metrics_port}",
             "--healthz-bind-address=127.0.0.1:10256"]),
            stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING))
        random_mutations(api, random.Random(9), 1000, inject_faults=True)
        deadline = time.monotonic() + 90
        while api.pending_faults() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert {kind for kind, _, _ in api.served_faults} == set(fake.FAULTS)
        dump_file = tmp_path / "final.json"
        dump_file.write_text(json.dumps(api.dump()))
        expected = subprocess.run(
            [str(switchboard_bin), "plan", "--source", f"file:{dump_file}",
             "--hostname-override", NODE], capture_output=True, text=True, check=True).stdout
        got = None
        while time.monotonic() < deadline:
            assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            got = _debug_services(netns, metrics_port)
            if got == expected:
                break
            time.sleep(0.2)
        assert got == expected, (tmp_path / "daemon.log").read_text()[-3000:]
    finally:
        if daemon and daemon.poll() is None:
            daemon.terminate()
            daemon.wait(10)
        api.stop()


def test_an_invalid_modified_leaves_the_state_a_relist_gives(pki, switchboard_bin, netns,
                                                            tmp_path):
    """Issue 10, point 7: daemon A sees a Service valid, then a MODIFIED that
    fails validation; daemon B starts after the change (its LIST holds the
    invalid version). Both end with the same /debug/services, the one
    `switchboard plan` gives for the server's objects. The two daemons share
    one namespace (the fake server listens there) and so run different proxy
    modes, which own different kernel objects; the plan does not depend on
    the mode."""
    api = fake.FakeApiServer(pki, seed=4)
    seed(api)
    flip = service("flip", cluster_ip="10.96.1.1")
    api.apply(flip)
    api.apply(slice_of("flip-abc", "flip", ["10.244.1.1"]))
    api.start(netns=netns)
    kubeconfig = token_kubeconfig(tmp_path, api, pki)
    daemons = []

    def start(mode, metrics_port, healthz_port):
        log = open(tmp_path / f"daemon-{mode}.log", "w")
        daemons.append(subprocess.Popen(
            # Two daemons side by side in one namespace, each on its own: without
            # node state, the second does not take the first's sockets over.
            in_ns(netns, [str(switchboard_bin), f"--proxy-mode={mode}",
             "--kubeconfig", kubeconfig, "--hostname-override", NODE,
             f"--metrics-bind-address=127.0.0.1:{metrics_port}",
             f"--healthz-bind-address=127.0.0.1:{healthz_port}", "--state-dir="]),
            stdout=log, stderr=subprocess.STDOUT,
            env=dict(os.environ, SWITCHBOARD_KUBE_TUNING=TUNING)))
        return metrics_port

    def services_of(port):
        text = _debug_services(netns, port)
        return {s["service"] for s in json.loads(text)["services"]} if text else set()

    def wait(predicate, what, timeout=60, state=lambda: ""):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for daemon in daemons:
                assert daemon.poll() is None, what
            if predicate():
                return
            time.sleep(0.2)
        logs = "".join((tmp_path / f).read_text()[-2000:] for f in os.listdir(tmp_path)
                       if f.startswith("daemon-"))
        pytest.fail(f"timed out waiting for {what}: {state()}\n{logs}")

    try:
        watched = start("nftables", 10249, 10256)
        wait(lambda: "flip" in services_of(watched), "daemon A to serve flip")
        broken = copy.deepcopy(flip)
        broken["spec"]["ports"][0]["port"] = 0  # out of range: fails validation
        api.apply(broken)

        def rejected_by_watched():
            text = run_in(netns, "curl", "-sf", f"http://127.0.0.1:{watched}/metrics",
                          timeout=10).stdout
            return 'switchboard_watch_decode_errors_total{resource="services"} 1' in text
        wait(rejected_by_watched, "daemon A to reject the MODIFIED Service")

        listed = start("iptables", 10259, 10266)
        wait(lambda: services_of(listed), "daemon B to serve its first plan")
        dump_file = tmp_path / "objects.json"
        dump_file.write_text(json.dumps(api.dump()))
        expected = subprocess.run(
            [str(switchboard_bin), "plan", "--source", f"file:{dump_file}",
             "--hostname-override", NODE], capture_output=True, text=True, timeout=60,
            check=True).stdout
        assert "flip" not in {s["service"] for s in json.loads(expected)["services"]}
        wait(lambda: _debug_services(netns, watched) == expected ==
             _debug_services(netns, listed), "both daemons to give the plan of the objects",
             state=lambda: f"A serves {sorted(services_of(watched))}, "
                           f"B serves {sorted(services_of(listed))}")
    finally:
        for daemon in daemons:
            if daemon.poll() is None:
                daemon.terminate()
                daemon.wait(10)
        api.stop()
