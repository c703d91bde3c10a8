"""The DNS server's memory and reply bounds against a hostile client (issue
10): both caches bounded in bytes (the forward cache filled with huge
upstream answers, the rendered-reply cache with many distinct names), the
daemon's RSS growth measured from /proc; and --dns-rrl, Knot DNS's response
rate limiting of UDP replies, counted at the client.

Root: the daemon programs nftables, so it runs in a plain network namespace
(conftest's `netns`); the fake upstream (dns_stub) listens on its loopback
(127.0.0.2) and every client is a Python script inside the namespace.
"""

import pytest

import dns_stub
import dns_wire
import kube_objects
from clusters import web_and_edge
from network_namespace import run_in
from probes import free_port, metric, python_in, wait_for

MIB = 1 << 20

# Every TXT question is answered with RECORDS empty TXT records at the
# question's name: 13 bytes each on the wire (a compression pointer for the
# name), the whole ~200-byte name each once parsed.
RECORDS = 2000  # ~26 KB a reply, ~600 KB parsed


def heavy(stub, query):
    """The heavy upstream's answer: RECORDS empty TXT records for a TXT question, an
    empty NOERROR for any other."""
    if query.qtype != dns_wire.TYPE_TXT:
        return dns_stub.reply(query)
    return dns_stub.reply(query, answers=[dns_wire.record(dns_wire.TYPE_TXT, b"\x00")] * RECORDS)


# Sends COUNT questions of type QTYPE, for q<i>.<three 60-byte labels>.SUFFIX,
# over 8 sockets (the kernel spreads them over the workers), at most WINDOW
# unanswered per socket, and prints how many replies came back.
FLOOD_CLIENT = r'''
import select, socket, sys
import dns_wire
port, qtype, suffix, count, window = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                      int(sys.argv[4]), int(sys.argv[5]))
sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(8)]
def query(i):
    label = "x" * 60
    return dns_wire.query(i & 0xffff, f"q{i:06d}.{label}.{label}.{label}.{suffix}", qtype)
answered, i = 0, 0
while i < count:
    waiting = 0
    for s in sockets:
        for _ in range(window):
            if i < count:
                s.sendto(query(i), ("127.0.0.1", port)); i += 1; waiting += 1
    while waiting:
        ready, _, _ = select.select(sockets, [], [], 2.0)
        if not ready:
            break
        for s in ready:
            s.recv(65535); answered += 1; waiting -= 1
print(answered)
'''


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def flood(namespace, port, qtype, suffix, count, window):
    """Sends FLOOD_CLIENT's `count` names under `suffix`; returns the replies counted."""
    # Room for a long client on a loaded machine.
    result = python_in(namespace, FLOOD_CLIENT, port, qtype, suffix, count,
                    window, timeout=600)
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


@pytest.fixture
def dns_daemon(daemon_factory, netns, tmp_path):
    """start(*flags) runs the daemon answering cluster.json on 127.0.0.1:PORT and
    forwarding to 127.0.0.2, once it answers."""
    source = tmp_path / "cluster.json"
    kube_objects.write_atomically(source, web_and_edge())

    def start(*flags):
        port = free_port()
        daemon = daemon_factory(source, f"--dns-listen=127.0.0.1:{port}",
                                "--dns-upstream=127.0.0.2", *flags)
        wait_for(lambda: daemon.get("/readyz")[0] == 200, "/readyz 200")

        def answers():
            result = run_in(netns, "dig", "+short", "+time=2", "+tries=1", "-p", port,
                            "@127.0.0.1", "web.default.svc.cluster.local")
            return result.stdout.strip() == "10.96.0.10"
        wait_for(answers, "a DNS answer")
        return daemon, port

    return start


def test_forward_cache_holds_its_bytes_whatever_the_answers_weigh(dns_daemon, netns, dns_stubs):
    start = dns_daemon
    dns_stubs(netns, "127.0.0.2", heavy)
    daemon, port = start()
    pid = daemon.process.pid
    before = rss_bytes(pid)
    # One answer at a time: a burst of 26 KB datagrams would overflow the
    # forwarder's socket buffer, and a lost answer is not cached.
    answered = flood(netns, port, 16, "heavy.example", 300, window=1)
    assert answered >= 290  # replies (truncated to the client's size) came back
    grown = rss_bytes(pid) - before
    print(f"forward cache: 300 answers of {RECORDS} records, RSS grew {grown / MIB:.1f} MiB")
    text = daemon.get("/metrics")[2]
    series = '{server="dns://:%d",type="success",zones=".",view=""}' % int(port)
    kept = metric(text, "coredns_cache_entries" + series)
    evicted = metric(text, "coredns_cache_evictions_total" + series)
    print(f"forward cache: {kept} entries kept, {evicted} evicted")
    cached = metric(text, "switchboard_dns_cache_bytes" + series)
    # The flags path's bound: 10 000 entries x 2 KiB per store.
    assert cached is not None and 0 < cached <= 10000 * 2048
    assert kept + evicted >= 290  # every answer was stored (and most evicted)
    # 300 answers of ~600 KB parsed would be ~180 MiB: the store keeps ~20.
    assert grown < 20 * MIB + 25 * MIB


def test_render_cache_holds_its_bytes_under_many_distinct_names(dns_daemon, netns):
    start = dns_daemon
    daemon, port = start()
    pid = daemon.process.pid
    before = rss_bytes(pid)
    answered = flood(netns, port, 1, "svc.cluster.local", 80000, window=16)
    assert answered >= 79000  # NXDOMAIN for each
    grown = rss_bytes(pid) - before
    print(f"render cache: 80000 distinct names, RSS grew {grown / MIB:.1f} MiB")
    text = daemon.get("/metrics")[2]
    held = metric(text, "switchboard_dns_render_cache_bytes")
    # Two serving threads per worker (UDP, TCP), 4 MiB each, at most 2 workers here.
    assert held is not None and 0 < held <= 4 * 4 * MIB
    assert metric(text, "switchboard_dns_render_cache_flushes_total") > 0
    # 80 000 entries of ~600 bytes would be ~45 MiB kept.
    assert grown < 8 * MIB + 12 * MIB


# Sends COUNT A questions for NAME (formatted with the query's index i) from
# one socket in bursts of 100, reading what comes back after each burst, and
# prints "answers truncated elapsed_seconds".
RRL_CLIENT = r'''
import select, socket, sys, time
import dns_wire
port, count, template = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE: no reply lost here
answers = truncated = 0
def drain(idle):
    global answers, truncated
    while select.select([s], [], [], idle)[0]:
        if dns_wire.truncated(s.recv(65535)):
            truncated += 1
        else:
            answers += 1
began = time.monotonic()
for i in range(count):
    s.sendto(dns_wire.query(i, template.format(i=i)), ("127.0.0.1", port))
    if i % 100 == 99:
        drain(0.05)
drain(1.0)
print(answers, truncated, time.monotonic() - began - 1.0)
'''


def rrl_flood(namespace, port, count=1000, name="web.default.svc.cluster.local"):
    result = python_in(namespace, RRL_CLIENT, port, count, name, timeout=600)
    assert result.returncode == 0, result.stderr
    answers, truncated, elapsed = result.stdout.split()
    return int(answers), int(truncated), float(elapsed)


def test_rrl_limits_a_flood_to_the_rate_and_slips_every_second_reply(dns_daemon, netns):
    start = dns_daemon
    rate = 10
    daemon, port = start(f"--dns-rrl={rate}", "--dns-rrl-slip=2")
    answers, truncated, elapsed = rrl_flood(netns, port)
    print(f"rrl on: {answers} answers, {truncated} truncated of 1000 in {elapsed:.1f} s")
    # The bucket holds one second of tokens; the client's clock spans the
    # server's (first query sent before, last reply read after). The
    # readiness probe took one token a while ago.
    assert rate - 1 <= answers <= rate * elapsed + rate + 1
    limited = 1000 - answers
    assert limited // 2 - 1 <= truncated <= limited // 2 + 1
    text = daemon.get("/metrics")[2]
    assert metric(text, "switchboard_dns_rrl_slipped_total") == truncated
    assert metric(text, "switchboard_dns_rrl_dropped_total") == limited - truncated


def nxdomain(stub, query):
    """NXDOMAIN without SOA for every question: forwarded replies of one flow (nxdomain
    is keyed by the client prefix alone) whatever the name."""
    return dns_stub.reply(query, rcode=dns_wire.NXDOMAIN)


def test_rrl_limits_forwarded_replies_too(dns_daemon, netns, dns_stubs):
    start = dns_daemon
    dns_stubs(netns, "127.0.0.2", nxdomain)
    rate = 10
    daemon, port = start(f"--dns-rrl={rate}", "--dns-rrl-slip=0")
    # Distinct names: each one a cache miss, answered when the upstream's
    # reply reaches the worker's inbox.
    answers, truncated, elapsed = rrl_flood(netns, port, 300, "n{i}.nx.example")
    print(f"rrl on, forwarded: {answers} answers, {truncated} truncated of 300 in {elapsed:.1f} s")
    assert 1 <= answers <= rate * elapsed + rate + 1
    assert truncated == 0  # slip 0: every limited reply dropped
    text = daemon.get("/metrics")[2]
    dropped = metric(text, "switchboard_dns_rrl_dropped_total")
    assert 300 - answers - 5 <= dropped <= 300 - answers  # 5 replies may be lost on the way


def test_rrl_whitelist_exempts_its_clients(dns_daemon, netns):
    start = dns_daemon
    daemon, port = start("--dns-rrl=10", "--dns-rrl-whitelist=127.0.0.0/8")
    answers, truncated, _ = rrl_flood(netns, port)
    print(f"rrl on, client whitelisted: {answers} answers, {truncated} truncated of 1000")
    assert (answers, truncated) == (1000, 0)
    assert metric(daemon.get("/metrics")[2], "switchboard_dns_rrl_dropped_total") == 0


def test_without_rrl_every_query_is_answered(dns_daemon, netns):
    start = dns_daemon
    daemon, port = start()
    answers, truncated, _ = rrl_flood(netns, port)
    print(f"rrl off: {answers} answers, {truncated} truncated of 1000")
    assert (answers, truncated) == (1000, 0)
    assert metric(daemon.get("/metrics")[2], "switchboard_dns_rrl_dropped_total") is None
