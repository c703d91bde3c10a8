"""forward's DNS over TLS upstreams (issue 27): `forward . tls://IP { tls CA;
tls_servername NAME }` answers through a real DoT server, and a certificate
that does not verify (another name, another CA) fails the query (SERVFAIL).

The DoT server is unbound on 127.0.0.20:853 inside the test's namespace,
authoritative (local-data) for one name per case, with a certificate of a CA
this test makes (openssl CLI) for the name dot.test and the IP 127.0.0.20.
`switchboard plan` refuses a missing CA file and a resolv.conf without a
nameserver with the Corefile's file:line.
"""
import json
import subprocess

import pytest

from clusters import ONE_SERVICE
from daemons import start_corefile_daemon, stop_processes
from network_namespace import popen_in, run_in
from probes import wait_for

DOT = "127.0.0.20"

COREFILE = """\
.:53 {{
    bind 127.0.0.1
    kubernetes cluster.local
    forward . tls://{dot} {{
        tls {ca}
        tls_servername dot.test
    }}
}}
wrongname.example {{
    forward . tls://{dot} {{
        tls {ca}
        tls_servername other.test
    }}
}}
wrongca.example {{
    forward . tls://{dot}:853 {{
        tls {other_ca}
        tls_servername dot.test
    }}
}}
byaddress.example {{
    forward . tls://{dot} {{
        tls {ca}
    }}
}}
"""

UNBOUND = """\
server:
    interface: {dot}@853
    tls-port: 853
    tls-service-key: "{key}"
    tls-service-pem: "{pem}"
    do-daemonize: no
    use-syslog: no
    logfile: ""
    username: ""
    chroot: ""
    pidfile: ""
    directory: "{folder}"
    do-ip6: no
    num-threads: 1
    access-control: 127.0.0.0/8 allow
    module-config: "iterator"
{zones}
remote-control:
    control-enable: no
"""

ZONES = ["tls.example", "wrongname.example", "wrongca.example", "byaddress.example"]


def openssl(*argv, cwd):
    subprocess.run(["openssl", *argv], cwd=cwd, check=True, capture_output=True)


def make_ca(folder, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=folder)
    return folder / f"{name}.pem"


def make_server_cert(folder, ca):
    (folder / "san.ext").write_text(f"subjectAltName=DNS:dot.test,IP:{DOT}\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=dot.test",
            "-keyout", "server.key", "-out", "server.csr", cwd=folder)
    openssl("x509", "-req", "-in", "server.csr", "-CA", ca.name, "-CAkey",
            ca.with_suffix(".key").name, "-CAcreateserial", "-days", "1",
            "-extfile", "san.ext", "-out", "server.pem", cwd=folder)
    return folder / "server.key", folder / "server.pem"


@pytest.fixture
def dot_daemon(switchboard_bin, netns, tmp_path):
    ca = make_ca(tmp_path, "test-ca")
    other_ca = make_ca(tmp_path, "other-ca")
    key, pem = make_server_cert(tmp_path, ca)
    zones = "\n".join(f'    local-zone: "{zone}." static\n'
                      f'    local-data: "www.{zone}. 60 IN A 192.0.2.80"' for zone in ZONES)
    (tmp_path / "unbound.conf").write_text(
        UNBOUND.format(dot=DOT, key=key, pem=pem, folder=tmp_path, zones=zones))
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(COREFILE.format(dot=DOT, ca=ca, other_ca=other_ca))
    run_in(netns, "ip", "addr", "add", f"{DOT}/32", "dev", "lo", check=True)
    processes = []
    try:
        unbound_log = open(tmp_path / "unbound.log", "w")
        processes.append(popen_in(netns, ["unbound", "-d", "-c", tmp_path / "unbound.conf"],
                                  stdout=unbound_log, stderr=unbound_log))
        log_path = start_corefile_daemon(switchboard_bin, netns, tmp_path, processes)
        wait_for(lambda: ask(netns, "www.tls.example")[0] == "NOERROR",
                 f"an answer over TLS; daemon log: {log_path}, unbound log: "
                 f"{tmp_path / 'unbound.log'}")
        yield netns
    finally:
        stop_processes(processes)


def ask(namespace, name):
    """(status, answers) of one A query to the daemon; status "" when none came."""
    result = run_in(namespace, "dig", "+time=5", "+tries=1", "@127.0.0.1", name, "A")
    status = ""
    for line in result.stdout.splitlines():
        if "status:" in line:
            status = line.split("status:")[1].split(",")[0].strip()
    answers = run_in(namespace, "dig", "+time=5", "+tries=1", "+short", "@127.0.0.1", name,
                     "A").stdout.split() if status == "NOERROR" else []
    return status, answers


def test_a_verified_tls_upstream_answers(dot_daemon):
    assert ask(dot_daemon, "www.tls.example") == ("NOERROR", ["192.0.2.80"])


def test_without_tls_servername_the_address_san_is_verified(dot_daemon):
    assert ask(dot_daemon, "www.byaddress.example") == ("NOERROR", ["192.0.2.80"])


def test_a_certificate_for_another_name_fails_the_query(dot_daemon):
    assert ask(dot_daemon, "www.wrongname.example")[0] == "SERVFAIL"


def test_a_certificate_another_ca_signed_fails_the_query(dot_daemon):
    assert ask(dot_daemon, "www.wrongca.example")[0] == "SERVFAIL"


def plan(switchboard_bin, tmp_path, corefile):
    (tmp_path / "cluster.json").write_text(json.dumps(ONE_SERVICE))
    (tmp_path / "Corefile").write_text(corefile)
    return subprocess.run([switchboard_bin, "plan", f"--source=file:{tmp_path / 'cluster.json'}",
                           "--hostname-override=n1", f"--dns-corefile={tmp_path / 'Corefile'}"],
                          capture_output=True, text=True, timeout=30)


def test_plan_refuses_a_missing_ca_file_with_its_line(switchboard_bin, tmp_path):
    result = plan(switchboard_bin, tmp_path,
                  ".:53 {\n kubernetes cluster.local\n forward . tls://192.0.2.1 {\n"
                  f"  tls {tmp_path / 'absent.pem'}\n }}\n}}\n")
    assert result.returncode == 2, result
    assert f"{tmp_path / 'Corefile'}:4:" in result.stderr
    assert "absent.pem" in result.stderr


def test_plan_refuses_a_resolv_conf_without_nameserver(switchboard_bin, tmp_path):
    (tmp_path / "resolv.conf").write_text("search example.org\n")
    result = plan(switchboard_bin, tmp_path,
                  f".:53 {{\n kubernetes cluster.local\n forward . {tmp_path / 'resolv.conf'}\n}}\n")
    assert result.returncode == 2, result
    assert f"{tmp_path / 'Corefile'}:3: forward: no nameservers found" in result.stderr
