"""network_namespace: the network namespaces of the integration tests, made,
entered and removed in one place.

Names: every namespace a test run makes is `<prefix>-<tag>` with the prefix
`sbt<pid>x<n>` (the pytest process's pid, a counter), so parallel runs never
collide and a run killed with SIGKILL is swept by the next one
(sweep_stale()). The demo's namespaces (`sbdemo<pid>-*`) follow the same
rule.

Ownership: a namespace made by create() belongs to this process until
delete(); delete() first kills every process inside it (the tests started
them all: daemons, stubs, clients). What is still owned at interpreter exit
is deleted then, and clean_up_on_sigterm() turns SIGTERM into
KeyboardInterrupt so fixture finalizers run on it too.

Commands are argument lists, never shell strings. Sockets can be made inside
a namespace from this process (socket_in), so stub servers run as threads
of the test process.

Thread safety: create() and delete() are called from the test's thread;
socket_in() and call_inside() may be called from any thread (each moves
only a short-lived thread of its own).
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import pathlib
import re
import signal
import socket
import subprocess
import threading
import time

OWN_PREFIX = re.compile(r"^(?:sbt(\d+)x\d+|sbdemo(\d+))$")
CLONE_NEWNET = 0x40000000

_prefix_numbers = itertools.count(1)
_owned: set[str] = set()


class CommandError(RuntimeError):
    """A command run with check=True exited non-zero; the message names it."""


def run(argv, *, check=True, timeout=30, input=None):
    """Runs argv (a list) with text output captured; CommandError naming the command when
    it exits non-zero and `check`."""
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                          timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise CommandError(f"{' '.join(map(str, argv))}: exit {proc.returncode}: "
                           f"{proc.stderr.strip()}")
    return proc


def in_ns(ns, argv):
    """The argument list that runs argv inside network namespace ns."""
    return ["ip", "netns", "exec", ns, *map(str, argv)]


def run_in(ns, *argv, check=False, timeout=30, input=None):
    """run() of argv inside ns; by default the exit code is the caller's to judge."""
    return run(in_ns(ns, argv), check=check, timeout=timeout, input=input)


def popen_in(ns, argv, **kwargs):
    """subprocess.Popen of argv inside ns (kwargs as for Popen)."""
    return subprocess.Popen(in_ns(ns, argv), **kwargs)


def state_folder(ns, state_dir="/run/switchboard"):
    """The daemon's node state folder for `ns` (proxy/app/node_state.h): `state_dir`/
    netns-COOKIE, the namespace's SO_NETNS_COOKIE (socket option 71)."""
    cookie = run_in(ns, "python3", "-c",
                    "import socket, struct; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
                    "print(struct.unpack('Q', s.getsockopt(socket.SOL_SOCKET, 71, 8))[0])",
                    check=True).stdout.strip()
    return pathlib.Path(state_dir) / f"netns-{cookie}"


def new_prefix():
    """A fresh `sbt<pid>x<n>` prefix, unique in this run and across parallel runs."""
    return f"sbt{os.getpid()}x{next(_prefix_numbers)}"


def list_namespaces():
    out = run(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def exists(ns):
    # `ip netns list` shows "name (id: N)" only once an id is assigned.
    return os.path.exists(f"/run/netns/{ns}")


def sysctl(ns, *settings):
    # -e: a key this kernel lacks (br_netfilter not built) is not an error.
    run(in_ns(ns, ["sysctl", "-e", "-q", "-w", *settings]))


def create(ns, *, loopback=True, accept_dad=True, keep=False):
    """Makes namespace ns (owned until delete(), or left up at exit when `keep`: a
    shell's `netbed.py up`), with `lo` up unless not `loopback`. accept_dad=False makes
    IPv6 addresses usable at once: duplicate address detection would keep link-local
    addresses (neighbour discovery's source) tentative."""
    run(["ip", "netns", "add", ns])
    if not keep:
        _owned.add(ns)
    try:
        if not accept_dad:
            sysctl(ns, "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0")
        if loopback:
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
    except BaseException:
        delete(ns)
        raise
    return ns


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_processes_inside(ns, grace=2.0):
    """Stops every process inside ns: SIGTERM, then SIGKILL after `grace` seconds."""
    pids = [int(p) for p in run(["ip", "netns", "pids", ns], check=False).stdout.split()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in pids if _pid_alive(p)]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        while alive and time.monotonic() < deadline:
            time.sleep(0.05)
            alive = [p for p in alive if _pid_alive(p)]
        if not alive:
            return


def delete(ns):
    """Kills what runs inside ns and deletes it. Idempotent."""
    if exists(ns):
        _kill_processes_inside(ns)
        run(["ip", "netns", "del", ns], check=False)
    _owned.discard(ns)


def remove_prefix(prefix):
    """Deletes every namespace named `<prefix>-*` and what runs inside. Idempotent."""
    for ns in list_namespaces():
        if ns.startswith(prefix + "-"):
            delete(ns)


def sweep_stale():
    """Deletes the namespaces of runs whose process is gone (killed with SIGKILL)."""
    for prefix in {ns.split("-", 1)[0] for ns in list_namespaces() if "-" in ns}:
        match = OWN_PREFIX.match(prefix)
        if match and not _pid_alive(int(match.group(1) or match.group(2))):
            remove_prefix(prefix)


@contextlib.contextmanager
def namespace(tag="node", *, loopback=True, accept_dad=True):
    """A fresh namespace `<new prefix>-<tag>` (with `lo` up unless not `loopback`),
    deleted on leaving (also when the body fails)."""
    sweep_stale()
    clean_up_on_sigterm()
    ns = create(f"{new_prefix()}-{tag}", loopback=loopback, accept_dad=accept_dad)
    try:
        yield ns
    finally:
        delete(ns)


def call_inside(ns, make):
    """Runs make() on a thread moved (alone) into ns and returns its result; sockets made
    there stay in ns whichever thread uses them later."""
    result, failure = [], []

    def body():
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            result.append(make())
        except BaseException as exc:  # re-raised on the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=body, name=f"setns {ns}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]


def socket_in(ns, family=socket.AF_INET, kind=socket.SOCK_DGRAM):
    """A socket of ns's network stack (binds and connects there)."""
    return call_inside(ns, lambda: socket.socket(family, kind))


_libc = ctypes.CDLL(None, use_errno=True)


def _terminated(signum, frame):
    # atexit hooks do not run on a default SIGTERM death; unwinding as for
    # Ctrl-C lets pytest's fixture finalizers and the exit hook clean up.
    raise KeyboardInterrupt(f"signal {signum}")


def clean_up_on_sigterm():
    """SIGTERM unwinds like Ctrl-C (unless someone else handles it already)."""
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)


@atexit.register
def _delete_owned():
    for ns in list(_owned):
        delete(ns)
