"""deploy/monitoring against the daemon's real metrics (issue 28, items 4 and 5):
every metric name and label that the rule file's expressions, the Grafana
dashboard's queries and the community mixins' kube-proxy and CoreDNS queries
(tests/data/monitoring/mixin-queries.yaml) use must be in a live scrape.

The scrape: the daemon on a file source with a Corefile (DNS on 127.0.0.1:53,
CoreDNS's `prometheus` on 127.0.0.1:9153, a forward set of a dead upstream
and a stub) after a few digs, both /metrics endpoints; and the daemon on the
fake API server (tests/fake_apiserver) for the API source's families. Each
in a namespace of its own, loopback only.

Labels that Prometheus adds to a target (job, instance, and the mixins'
cluster, pod, k8s_app) are not the daemon's to expose; `up` is Prometheus's.
A histogram's _bucket, _sum and _count are its family.
"""
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

import dns_stub
import network_namespace
from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes, terminate
from network_namespace import in_ns, run_in
from probes import curl, free_port, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fake_apiserver"))
import fake_apiserver as fake  # noqa: E402
import kube_objects  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
MONITORING = ROOT / "deploy" / "monitoring"
MIXINS = ROOT / "tests" / "data" / "monitoring" / "mixin-queries.yaml"

TARGET_LABELS = {"job", "instance", "cluster", "pod", "k8s_app"}
PROMETHEUS_SERIES = {"up"}
# PromQL's keywords whose "(...)" is a list of label names.
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
OTHER_KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan"}
# Aggregations may take their label list before the parenthesis: `sum by (a) (x)`.
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
                "count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}

COREFILE = """\
.:53 {
    bind 127.0.0.1
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    autopath @kubernetes
    prometheus 127.0.0.1:9153
    forward . 127.0.0.1:9 127.0.0.2:53 {
        policy sequential
    }
    cache 30
}
"""


# ---- PromQL: the series a query selects -------------------------------------

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<duration>(?:\d+(?:ms|[smhdwy]))+)(?![A-Za-z0-9_:])
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<matcher>=~|!~|!=|=)
  | (?P<punct>[{}(),])
  | (?P<operator>==|>=|<=|[-+*/%^<>])
""", re.VERBOSE)


def tokens(query):
    """PromQL's tokens of `query` as (kind, text), without spaces; a range or
    subquery `[...]` is one token."""
    out, at = [], 0
    while at < len(query):
        found = TOKEN.match(query, at)
        if not found:
            raise ValueError(f"cannot read PromQL at {query[at:at + 20]!r} of {query!r}")
        if found.lastgroup != "space":
            out.append((found.lastgroup, found.group()))
        at = found.end()
    return out


def references(query):
    """(selectors, grouping): each selector (metric name, [label names of its
    matchers]) and the labels named by by/without/on/ignoring/group_* lists.
    Grafana's label_values(SELECTOR, LABEL) counts LABEL as SELECTOR's."""
    values = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", query)
    if values:
        selectors, grouping = references(values.group(1))
        (name, labels), = selectors
        return [(name, labels + [values.group(2)])], grouping
    toks = tokens(query)
    selectors, grouping, i = [], [], 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else None
        if kind == "name" and text in LABEL_LIST_KEYWORDS:
            assert following == "(", f"{text} without a label list in {query!r}"
            i += 2
            while toks[i][1] != ")":
                if toks[i][0] == "name":
                    grouping.append(toks[i][1])
                i += 1
        elif kind == "name" and (following == "(" or text in AGGREGATIONS):
            pass  # a function or an aggregation
        elif kind == "name" and text.lower() not in OTHER_KEYWORDS:
            labels = []
            if following == "{":
                i += 2
                while toks[i][1] != "}":
                    if toks[i][0] == "name" and toks[i + 1][0] == "matcher":
                        labels.append(toks[i][1])
                    i += 1
            selectors.append((text, labels))
        i += 1
    return selectors, grouping


# ---- the exposition text ----------------------------------------------------

SAMPLE = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})? \S+$")
LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"')


def families(*texts):
    """{family name: set of label names} of exposition texts; a histogram's or a
    summary's samples belong to its family."""
    kinds, found = {}, {}
    for text in texts:
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split()
                kinds[name] = kind
                found.setdefault(name, set())
            elif line and not line.startswith("#"):
                sample = SAMPLE.match(line)
                assert sample, f"not an exposition line: {line!r}"
                name = sample.group(1)
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in kinds and kinds.get(base) in ("histogram", "summary"):
                    name = base
                assert name in kinds, f"sample {line!r} before its TYPE"
                found[name].update(LABEL.findall(sample.group(2) or ""))
    return found


def family_of(name, exposed):
    if name in exposed:
        return name
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    return base if base in exposed else None


def unexposed(query, exposed, recorded=()):
    """What `query` uses that `exposed` (families()) lacks: a sorted list of
    "metric NAME" and "label NAME of METRIC" / "grouping label NAME"."""
    selectors, grouping = references(query)
    missing, labels_in_query = set(), set(TARGET_LABELS)
    for name, labels in selectors:
        if name in PROMETHEUS_SERIES or name in recorded:
            continue
        family = family_of(name, exposed)
        if family is None:
            missing.add(f"metric {re.sub(r'_(bucket|sum|count)$', '', name)}")
            continue
        labels_in_query |= exposed[family]
        missing |= {f"label {label} of {name}" for label in labels
                    if label not in TARGET_LABELS and label not in exposed[family]}
    # A grouping label is checked against every selector of the query (which
    # one it groups is not read), and only once every selector was found.
    for label in grouping:
        if label not in labels_in_query and not missing:
            missing.add(f"grouping label {label}")
    return sorted(missing)


# ---- the queries --------------------------------------------------------------

def rule_queries():
    with open(MONITORING / "switchboard.rules.yaml") as f:
        groups = yaml.safe_load(f)["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    recorded = {rule["record"] for rule in rules if "record" in rule}
    return [rule["expr"] for rule in rules], recorded


def dashboard_queries():
    with open(MONITORING / "switchboard-dashboard.json") as f:
        dashboard = json.load(f)
    queries = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    queries += [var["query"]["query"] for var in dashboard["templating"]["list"]
                if var["type"] == "query"]
    return queries


# ---- the reader's own tests: it must see what a query uses ------------------

def test_references_reads_names_matchers_and_grouping():
    assert references('histogram_quantile(0.99, sum by (instance, le) (rate('
                      'a_bucket{job=~"$job", ip_family="IPv4"}[$__rate_interval])))') == (
        [("a_bucket", ["job", "ip_family"])], ["instance", "le"])
    assert references('sum(rate(x{rcode="SERVFAIL"}[5m])) by (to) / ignoring(z) y > 0.03') == (
        [("x", ["rcode"]), ("y", [])], ["to", "z"])
    assert references("b > c and time() - b > 300") == ([("b", []), ("c", []), ("b", [])], [])
    assert references('absent(up{job="kube-proxy"} == 1)') == ([("up", ["job"])], [])
    assert references('label_values(m{job=~"$job"}, instance)') == ([("m", ["job", "instance"])], [])
    assert references('m{a="}by (q)"}') == ([("m", ["a"])], [])
    assert references("rate(m[5m] offset 1h30m)") == ([("m", [])], [])


def test_unexposed_names_what_a_scrape_lacks():
    text = ("# TYPE h histogram\nh_bucket{f=\"1\",le=\"+Inf\"} 1\nh_sum{f=\"1\"} 0\n"
            "h_count{f=\"1\"} 1\n# TYPE c counter\nc{kind=\"a\"} 0\n")
    exposed = families(text)
    assert unexposed('sum by (f, le) (rate(h_bucket{f="x", job="j"}[5m])) / h_count', exposed) == []
    assert unexposed('c{kind="a", kinds="b"} + d', exposed) == ["label kinds of c", "metric d"]
    assert unexposed("sum by (nope) (c)", exposed) == ["grouping label nope"]
    assert unexposed("h_total", exposed) == ["metric h_total"]
    assert unexposed("sum by (f) (rate(g_bucket[5m]))", exposed) == ["metric g"]


# ---- the live scrape ------------------------------------------------------------

def dns_scrape(switchboard_bin, tmp_path):
    """(proxy /metrics, CoreDNS /metrics) of the daemon serving DNS from a Corefile
    after a cluster name, a missing one and a forwarded one asked twice."""
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(COREFILE)
    with network_namespace.namespace("mon") as netns:
        stub = dns_stub.Stub(netns, "127.0.0.2")
        try:
            return dns_scrape_in(switchboard_bin, netns, tmp_path)
        finally:
            stub.close()


def dns_scrape_in(switchboard_bin, netns, tmp_path):
    processes = []
    log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
    try:
        def dig(name):
            return run_in(netns, "dig", "+short", "+time=2", "+tries=1", "@127.0.0.1", name).stdout
        wait_for(lambda: "10.96.0.10" in dig("web.default.svc.cluster.local"),
                 f"the cluster name answered; log: {log_path}")
        dig("nope.default.svc.cluster.local")
        assert dig("example.org").strip() == "127.0.0.2"
        dig("example.org")  # from the cache

        def scraped():
            proxy = curl(netns, "http://127.0.0.1:10249/metrics")
            coredns = curl(netns, "http://127.0.0.1:9153/metrics")
            return proxy, coredns
        # Forward series appear with their first value: a reply, a failed health probe.
        wait_for(lambda: all("coredns_forward_healthcheck_failures_total{" in text and
                             "coredns_forward_requests_total{" in text
                             for _, text in scraped()),
                 f"forward series on both endpoints; log: {log_path}")
        (proxy_status, proxy), (coredns_status, coredns) = scraped()
        assert (proxy_status, coredns_status) == (200, 200)
        return proxy, coredns
    finally:
        stop_processes(processes)


def api_scrape(switchboard_bin, tmp_path):
    """/metrics of the daemon (DNS on) on the fake API server, after every watch
    relisted (410 Gone), a services watch sent lines that do not decode, and an
    EndpointSlice stamped with a trigger time was programmed."""
    with network_namespace.namespace("mon") as ns:
        pki = fake.make_pki(str(tmp_path / "pki"))
        api = fake.FakeApiServer(pki, seed=5)
        api.apply(kube_objects.service("web", ["10.96.0.10"],
                                       [kube_objects.service_port(80, name="http", target=8080)]))
        api.start(netns=ns)
        kubeconfig = fake.write_kubeconfig(str(tmp_path / "kubeconfig"), api.url,
                                           ca_file=os.path.join(pki, "ca.crt"), token="good-token")
        port = free_port()
        log_path = tmp_path / "api-daemon.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                in_ns(ns, [switchboard_bin, f"--kubeconfig={kubeconfig}", "--hostname-override=node-a",
                           "--dns-listen=127.0.0.1", f"--metrics-bind-address=127.0.0.1:{port}",
                           f"--healthz-bind-address=127.0.0.1:{free_port()}"]),
                stdout=subprocess.DEVNULL, stderr=log)
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            wait_for(lambda: "\nswitchboard_apiserver_ready 1\n" in curl(ns, url)[1],
                     f"switchboard_apiserver_ready 1; log: {log_path}")
            api.drop_watches(expire=True)  # every watch relists
            wait_for(lambda: 'switchboard_watch_relists_total{resource="services"} 1' in curl(ns, url)[1],
                     f"the services relist; log: {log_path}")
            # The resumed services watch then sends lines that do not decode.
            api.inject("garbage", resource="services")
            api.drop_watches()
            slice_ = kube_objects.endpoint_slice(
                "web", [kube_objects.endpoint("10.244.0.10", node="node-a")], suffix="abc")
            # Now, as the EndpointSlice controller stamps it (after the daemon started).
            slice_["metadata"].setdefault("annotations", {})[
                "endpoints.kubernetes.io/last-change-trigger-time"] = \
                datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            api.apply(slice_)
            wanted = ['switchboard_watch_decode_errors_total{resource="services"}',
                      'switchboard_watch_relists_total{resource="endpointslices"}',
                      'coredns_kubernetes_dns_programming_duration_seconds_count{service_kind="cluster_ip"}',
                      'kubeproxy_network_programming_duration_seconds_count{ip_family="IPv4"} 1']
            last = {}

            def missing():
                last["text"] = curl(ns, url)[1]
                return [series for series in wanted if series not in last["text"]]
            try:
                wait_for(lambda: not missing(), "the series")
            except (AssertionError, pytest.fail.Exception):
                (tmp_path / "api-scrape.txt").write_text(last["text"])
                pytest.fail(f"not in the scrape ({tmp_path / 'api-scrape.txt'}): {missing()}; "
                            f"log: {log_path}")
            return last["text"]
        finally:
            terminate(process)
            api.stop()
            network_namespace.run(in_ns(ns, [switchboard_bin, "--cleanup"]), check=False)


@pytest.fixture(scope="module")
def exposed(switchboard_bin, root, tmp_path_factory):
    """families() of both daemons' scrapes, taken once for the module's tests."""
    return families(*dns_scrape(switchboard_bin, tmp_path_factory.mktemp("dns")),
                    api_scrape(switchboard_bin, tmp_path_factory.mktemp("api")))


def test_rules_use_only_exposed_metrics_and_labels(exposed):
    queries, recorded = rule_queries()
    assert len(queries) >= 17
    problems = {q: unexposed(q, exposed, recorded) for q in queries}
    assert {q: p for q, p in problems.items() if p} == {}


def test_dashboard_uses_only_exposed_metrics_and_labels(exposed):
    queries = dashboard_queries()
    assert len(queries) >= 20
    problems = {q: unexposed(q, exposed) for q in queries}
    assert {q: p for q, p in problems.items() if p} == {}


def test_mixin_queries_find_every_series_but_the_listed_ones(exposed):
    with open(MIXINS) as f:
        sources = yaml.safe_load(f)["sources"]
    for source in sources:
        allowed = {f"metric {name}" for name in source["not_exposed"]}
        problems = {q: unexposed(q, exposed) for q in source["queries"]}
        unexpected = {q: sorted(set(p) - allowed) for q, p in problems.items() if set(p) - allowed}
        assert unexpected == {}, f"{source['repo']} {source['files']}"
        seen = set().union(*map(set, problems.values()))
        assert seen == allowed, (f"{source['repo']}: not_exposed lists {sorted(allowed - seen)}, "
                                 "which the scrape now has or no query uses")
