"""A fake Kubernetes API server for testing switchboard's API client.

Its own implementation of the wire protocol (shares no code with the
client): HTTPS with a test CA, bearer-token and client-certificate auth,
LIST with limit/continue pagination, chunked WATCH streams with bookmarks,
resourceVersion bookkeeping with a bounded history window (a watch from an
older resourceVersion gets 410 Gone), and scripted faults.

Use it in-process (pytest) through FakeApiServer's methods, or run it as a
script for benchmarks (see main()). Thread-safe: every public method may be
called from any thread while the server runs.
"""
import argparse
import base64
import bisect
import copy
import json
import os
import random
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

# The test bed's object builders and namespaces (docs/testbed.md): this
# program runs standalone (tests/bench/bench-kube) as well as imported.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import kube_objects  # noqa: E402
import network_namespace  # noqa: E402

RESOURCES = {
    "/api/v1/services": ("services", "Service", "ServiceList", "v1"),
    "/apis/discovery.k8s.io/v1/endpointslices": (
        "endpointslices", "EndpointSlice", "EndpointSliceList", "discovery.k8s.io/v1"),
    "/api/v1/nodes": ("nodes", "Node", "NodeList", "v1"),
    "/api/v1/pods": ("pods", "Pod", "PodList", "v1"),
}
# The field selectors the server understands, by resource: the JSON path of
# the field each names.
FIELD_SELECTORS = {
    "nodes": {"metadata.name": ("metadata", "name")},
    "pods": {"spec.nodeName": ("spec", "nodeName")},
}
KIND_TO_RESOURCE = {kind: res for res, kind, _, _ in RESOURCES.values()}
ITEM_TYPES = {res: (kind, api_version) for res, kind, _, api_version in RESOURCES.values()}

# Fault kinds the server can be told to inject (see FakeApiServer.inject).
FAULTS = ("drop", "gone_http", "gone_event", "garbage", "stall", "short", "500", "429", "401")


def make_pki(folder):
    """Creates a CA, a server certificate for 127.0.0.1/localhost, a client
    certificate and an unrelated CA (for "wrong CA" tests) with openssl."""
    os.makedirs(folder, exist_ok=True)

    def run(*args):
        subprocess.run(["openssl", *args], check=True, cwd=folder,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for ca in ("ca", "other-ca"):
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", f"/CN=switchboard-test-{ca}", "-keyout", f"{ca}.key", "-out", f"{ca}.crt")
    with open(os.path.join(folder, "server.ext"), "w") as ext:
        ext.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                  "extendedKeyUsage=serverAuth\n")
    with open(os.path.join(folder, "client.ext"), "w") as ext:
        ext.write("extendedKeyUsage=clientAuth\n")
    for name, subject in (("server", "/CN=fake-apiserver"),
                          ("client", "/O=system:nodes/CN=system:node:node-a")):
        run("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", f"{name}.key", "-out", f"{name}.csr")
        run("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt")
    return folder


def write_kubeconfig(path, server, ca_file=None, token=None, token_file=None,
                     client_cert=None, client_key=None, insecure=False):
    """A kubeconfig as kubectl writes it (JSON is valid YAML)."""
    cluster = {"server": server}
    if ca_file:
        cluster["certificate-authority"] = ca_file
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    user = {}
    if token:
        user["token"] = token
    if token_file:
        user["tokenFile"] = token_file
    if client_cert:
        with open(client_cert, "rb") as f:
            user["client-certificate-data"] = base64.b64encode(f.read()).decode()
        with open(client_key, "rb") as f:
            user["client-key-data"] = base64.b64encode(f.read()).decode()
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": cluster}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        "users": [{"name": "tester", "user": user}],
    }
    with open(path, "w") as f:
        json.dump(config, f, indent=1)
    return path


def status_body(code, reason, message):
    return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                       "status": "Failure", "message": message, "reason": reason,
                       "code": code}).encode()


def _list_item(resource, obj):
    kind, api_version = ITEM_TYPES[resource]
    return json.dumps(dict(obj, kind=kind, apiVersion=api_version)).encode()


class _Fault:
    def __init__(self, kind, resource, watch_only, retry_after, after_events):
        self.kind = kind
        self.resource = resource
        self.watch_only = watch_only
        self.retry_after = retry_after
        self.after_events = after_events


class FakeApiServer:
    def __init__(self, pki_dir, tokens=("good-token",), history=1000,
                 bookmark_interval=1.0, seed=0, chunking="random"):
        self.pki_dir = pki_dir
        self.tokens = set(tokens)
        self.history_limit = history
        self.bookmark_interval = bookmark_interval
        self.chunking = chunking
        self.random = random.Random(seed)
        self.lock = threading.Condition()
        self.rv = 1000
        self.objects = {res: {} for res, _, _, _ in RESOURCES.values()}
        self.history = []       # (rv, resource, type, object), rv ascending
        self.compacted_rv = self.rv  # watches from an rv below this get 410
        self.faults = []
        self.served_faults = []  # (kind, resource, monotonic time)
        self.requests = []      # (method, path, query dict, auth) for assertions
        self.list_snapshots = {}
        self.closing = False
        self.partitioned = False
        # Counts partitions: a watch opened before one is cut when it next
        # looks, even if the partition was lifted meanwhile, so no watch can
        # stream through a partition a test made.
        self.partition_epoch = 0
        self.httpd = None
        # resourceVersion -> time.monotonic() when a watch began writing that
        # event to its socket (benchmarks measure from there); bounded by
        # the history's length.
        self.written_at = {}
        # (resource, namespace, name) -> (resourceVersion, the object as a LIST
        # item in JSON), filled by apply_many(), so that the first LIST of a
        # large cluster is not the Python server's encoding; an entry for
        # another version than the stored one is ignored.
        self.encoded = {}

    # ---- objects -----------------------------------------------------
    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _record(self, resource, event_type, obj):
        """Appends an event to the history; the caller holds the lock and calls
        _trim() when it is done recording."""
        rv = int(obj["metadata"]["resourceVersion"])
        self.history.append((rv, resource, event_type, obj))

    def _trim(self):
        """Keeps the last `history` events and wakes the watches."""
        if len(self.history) > self.history_limit:
            self.compacted_rv = self.history[len(self.history) - self.history_limit - 1][0]
            self.history = self.history[len(self.history) - self.history_limit:]
        self.lock.notify_all()

    def _store(self, obj):
        """Stores obj (not copied) as the newest version of its object and
        returns its resource; the caller holds the lock."""
        resource = KIND_TO_RESOURCE[obj["kind"]]
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        old = self.objects[resource].get(key)
        meta["uid"] = old["metadata"]["uid"] if old else f"uid-{self.rv + 1}"
        meta["resourceVersion"] = self._next_rv()
        self.objects[resource][key] = obj
        self._record(resource, "MODIFIED" if old else "ADDED", obj)
        return resource

    def apply(self, obj):
        """Adds or replaces an object (a Service, EndpointSlice, Node or Pod dict)."""
        obj = copy.deepcopy(obj)
        with self.lock:
            self._store(obj)
            self._trim()
        return obj

    def apply_many(self, objects):
        """apply() of each object in turn under one hold of the lock, so that a
        watch sends them as one run of events: the bulk path for benchmarks
        (100k Services and their slices load in seconds). The objects are
        stored as given, not copied: the caller must not change them after.
        Each is encoded for LISTs here, while the lock is held."""
        with self.lock:
            for obj in objects:
                resource = self._store(obj)
                meta = obj["metadata"]
                self.encoded[(resource, meta.get("namespace", ""), meta["name"])] = (
                    meta["resourceVersion"], _list_item(resource, obj))
            self._trim()

    def encoded_item(self, resource, obj):
        """obj (a stored version) as a LIST item in JSON."""
        meta = obj["metadata"]
        cached = self.encoded.get((resource, meta.get("namespace", ""), meta["name"]))
        if cached and cached[0] == meta["resourceVersion"]:
            return cached[1]
        return _list_item(resource, obj)

    def delete(self, kind, namespace, name):
        resource = KIND_TO_RESOURCE[kind]
        with self.lock:
            old = self.objects[resource].pop((namespace, name), None)
            if old is None:
                return False
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = self._next_rv()
            self._record(resource, "DELETED", gone)
            self._trim()
            return True

    def compact(self):
        """Forgets the whole history: every watch resuming from an older
        resourceVersion now gets 410 Gone (as after etcd compaction)."""
        with self.lock:
            self.history = []
            self.compacted_rv = self.rv

    def drop_watches(self, expire=False):
        """Cuts every open watch now, as an API server restart or a load
        balancer's idle timeout does; new requests are served at once, so a
        client resumes from its last resourceVersion. With `expire` the
        history is forgotten too and the resourceVersion moves on (another
        resource's write, as in etcd), so every resuming watch gets 410 Gone
        and its client relists."""
        with self.lock:
            if expire:
                self.rv += 1
                self.history = []
                self.compacted_rv = self.rv
            self.partition_epoch += 1
            self.lock.notify_all()

    def dump(self, kinds=("Service", "EndpointSlice", "Node")):
        """The current objects as a Kubernetes List (kubectl get -o json)."""
        with self.lock:
            items = []
            for kind in kinds:
                resource = KIND_TO_RESOURCE[kind]
                for key in sorted(self.objects[resource]):
                    item = copy.deepcopy(self.objects[resource][key])
                    items.append(item)
            return {"apiVersion": "v1", "kind": "List", "items": items,
                    "metadata": {"resourceVersion": str(self.rv)}}

    def versions(self):
        """{kind: {"ns/name": resourceVersion}} of the current objects."""
        with self.lock:
            out = {}
            for _, (resource, kind, _, _) in RESOURCES.items():
                out[kind] = {
                    (f"{ns}/{name}" if ns else name): obj["metadata"]["resourceVersion"]
                    for (ns, name), obj in self.objects[resource].items()}
            return out

    # ---- faults ------------------------------------------------------
    def inject(self, kind, resource=None, watch_only=True, retry_after=1, after_events=0):
        """Queues one fault for the next matching request.

        kind: drop (cut the connection mid-chunk after `after_events` events
        of a watch), gone_http (answer 410), gone_event (an ERROR event with
        code 410 in the stream), garbage (a non-JSON line and an invalid
        object, then carry on), stall (headers, then silence until the
        client gives up), short (a 200 whose stream ends at once, with no
        event), 500, 429 (with Retry-After), 401.
        resource: "services", "endpointslices", "nodes", "pods" or None for any.
        watch_only: apply to WATCH requests only (else to LISTs too).
        """
        assert kind in FAULTS, kind
        with self.lock:
            self.faults.append(_Fault(kind, resource, watch_only, retry_after, after_events))

    def set_partitioned(self, partitioned):
        """While partitioned, open watches are cut and new requests get their
        connection closed unanswered, as when the node loses the network."""
        with self.lock:
            self.partitioned = partitioned
            if partitioned:
                self.partition_epoch += 1
            self.lock.notify_all()

    def pending_faults(self):
        with self.lock:
            return len(self.faults)

    def _take_fault(self, resource, is_watch):
        with self.lock:
            for i, fault in enumerate(self.faults):
                if fault.resource not in (None, resource):
                    continue
                if fault.watch_only and not is_watch:
                    continue
                self.served_faults.append((fault.kind, resource, time.monotonic()))
                return self.faults.pop(i)
        return None

    # ---- lifecycle ---------------------------------------------------
    def start(self, port=0, netns=None):
        """Listens on 127.0.0.1:port (0: any free port); with `netns` (a
        namespace's name) the listening socket is made inside that network
        namespace, so a daemon running there can reach it."""
        server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_ctx.load_cert_chain(os.path.join(self.pki_dir, "server.crt"),
                                   os.path.join(self.pki_dir, "server.key"))
        server_ctx.load_verify_locations(os.path.join(self.pki_dir, "ca.crt"))
        server_ctx.verify_mode = ssl.CERT_OPTIONAL
        api = self

        class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def process_request_thread(self, request, client_address):
                # The TLS handshake runs in the connection's own thread so a
                # slow or failing client never blocks accept().
                try:
                    request.settimeout(30)
                    # As Go's net package does for every TCP connection (the
                    # API server's too): a watch event is sent at once, not
                    # held back by Nagle's algorithm behind an unacked one.
                    request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    tls = server_ctx.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    request.close()
                    return
                super().process_request_thread(tls, client_address)

            def handle_error(self, request, client_address):
                pass  # a client that went away is normal here

        class Handler(_Handler):
            server_api = api

        if netns:
            self.httpd = network_namespace.call_inside(
                netns, lambda: Server(("127.0.0.1", port), Handler))
        else:
            self.httpd = Server(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def stop(self):
        with self.lock:
            self.closing = True
            self.lock.notify_all()
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_api = None

    def log_message(self, *args):
        pass

    def _send(self, code, body, headers=()):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _authenticated(self):
        api = self.server_api
        header = self.headers.get("Authorization", "")
        if header.startswith("Bearer ") and header[len("Bearer "):] in api.tokens:
            return "token"
        try:
            if self.connection.getpeercert():
                return "certificate"
        except (ValueError, OSError):
            pass
        return None

    def do_GET(self):
        api = self.server_api
        parsed = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query).items()}
        auth = self._authenticated()
        with api.lock:
            api.requests.append(("GET", parsed.path, query, auth, time.monotonic()))
            partitioned = api.partitioned
        if partitioned:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if auth is None:
            self._send(401, status_body(401, "Unauthorized", "Unauthorized"))
            return
        if parsed.path not in RESOURCES:
            self._send(404, status_body(404, "NotFound", f"no resource {parsed.path}"))
            return
        resource = RESOURCES[parsed.path][0]
        is_watch = query.get("watch") in ("true", "1")
        fault = api._take_fault(resource, is_watch)
        if fault and self._answer_fault(fault):
            return
        if is_watch:
            self._watch(parsed.path, query, fault)
        else:
            self._list(parsed.path, query)

    def _answer_fault(self, fault):
        """Faults answered instead of the request; True when answered."""
        if fault.kind == "500":
            self._send(500, status_body(500, "InternalError", "injected 500"))
        elif fault.kind == "429":
            self._send(429, status_body(429, "TooManyRequests", "injected 429"),
                       [("Retry-After", str(fault.retry_after))])
        elif fault.kind == "401":
            self._send(401, status_body(401, "Unauthorized", "injected 401"))
        elif fault.kind == "gone_http":
            self._send(410, status_body(410, "Expired", "too old resource version"))
        elif fault.kind == "drop" and fault.after_events == 0 and not fault.watch_only:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif fault.kind == "stall" and not fault.watch_only:
            self._stall()
        else:
            return False
        return True

    def _stall(self):
        api = self.server_api
        deadline = time.monotonic() + 120
        with api.lock:
            while not api.closing and not api.partitioned and time.monotonic() < deadline:
                api.lock.wait(0.5)
                try:
                    # Peek without blocking: has the client hung up?
                    self.connection.settimeout(0)
                    if self.connection.recv(1) == b"":
                        break
                except (BlockingIOError, ssl.SSLWantReadError):
                    pass
                except (OSError, ssl.SSLError):
                    break
                finally:
                    try:
                        self.connection.settimeout(30)
                    except OSError:
                        pass
        self.close_connection = True

    def _filtered(self, resource, query, objects):
        selector = query.get("fieldSelector")
        if not selector:
            return objects
        field, _, value = selector.partition("=")
        outer, inner = FIELD_SELECTORS[resource][field]
        return [o for o in objects if o.get(outer, {}).get(inner, "") == value]

    def _list(self, path, query):
        api = self.server_api
        resource, _, list_kind, api_version = RESOURCES[path]
        limit = int(query.get("limit", "0") or 0)
        token = query.get("continue")
        with api.lock:
            if token:
                snapshot_id, _, offset = token.partition(":")
                snapshot = api.list_snapshots.get(snapshot_id)
                if snapshot is None:
                    self._send(410, status_body(410, "Expired", "continue token expired"))
                    return
                items, rv = snapshot
                offset = int(offset)
            else:
                # A stored object is never changed in place (a write stores a
                # new one), so the snapshot holds the objects themselves: a
                # LIST of 100k costs no copy under the lock.
                objects = api.objects[resource]
                items = [objects[k] for k in sorted(objects)]
                items = self._filtered(resource, query, items)
                rv = str(api.rv)
                offset = 0
                snapshot_id = str(len(api.list_snapshots) + 1)
                api.list_snapshots[snapshot_id] = (items, rv)
        page = items[offset: offset + limit] if limit else items[offset:]
        metadata = {"resourceVersion": rv}
        if limit and offset + limit < len(items):
            metadata["continue"] = f"{snapshot_id}:{offset + limit}"
            metadata["remainingItemCount"] = len(items) - offset - limit
        else:
            with api.lock:
                api.list_snapshots.pop(snapshot_id, None)
        head = json.dumps({"kind": list_kind, "apiVersion": api_version, "metadata": metadata})
        encoded = b",".join(api.encoded_item(resource, item) for item in page)
        self._send(200, b"%s,\"items\":[%s]}" % (head[:-1].encode(), encoded))

    # ---- watch -------------------------------------------------------
    def _chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write_events(self, lines):
        """Writes event lines, cut into chunks at random places (an event
        split over chunks, several events in one chunk)."""
        data = b"".join(lines)
        api = self.server_api
        if api.chunking == "line":
            for line in lines:
                self._chunk(line)
        else:
            while data:
                with api.lock:
                    size = api.random.randint(1, max(1, min(len(data), 3 * len(lines[0]))))
                self._chunk(data[:size])
                data = data[size:]
        self.wfile.flush()

    def _watch(self, path, query, fault):
        api = self.server_api
        resource, kind, _, api_version = RESOURCES[path]
        rv_text = query.get("resourceVersion", "")
        timeout = float(query.get("timeoutSeconds", "1800"))
        bookmarks = query.get("allowWatchBookmarks") == "true"
        with api.lock:
            cursor = int(rv_text) if rv_text not in ("", "0") else api.rv
            too_old = cursor < api.compacted_rv
            epoch = api.partition_epoch
        if too_old:
            self._send(410, status_body(
                410, "Expired", f"too old resource version: {cursor} ({api.compacted_rv})"))
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if fault and fault.kind == "stall":
            self._stall()
            return
        if fault and fault.kind == "short":
            self._chunk(b"")
            self.wfile.flush()
            return
        if fault and fault.kind == "gone_event":
            self._write_events([json.dumps({"type": "ERROR", "object": json.loads(status_body(
                410, "Expired", "too old resource version"))}).encode() + b"\n"])
            self._chunk(b"")
            self.wfile.flush()
            return
        if fault and fault.kind == "garbage":
            bad = {"kind": kind, "apiVersion": api_version,
                   "metadata": {"name": "Not A Valid Name!", "namespace": "default",
                                "resourceVersion": str(cursor)}}
            self._write_events([b"this is not json {\n",
                                json.dumps({"type": "ADDED", "object": bad}).encode() + b"\n",
                                b"{\"type\":\"MODIFIED\"}\n"])
        sent = 0
        deadline = time.monotonic() + timeout
        last_bookmark = time.monotonic()
        while True:
            with api.lock:
                while True:
                    if api.closing:
                        return
                    if api.partitioned or api.partition_epoch != epoch:
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    index = bisect.bisect_right(api.history, (cursor, "\uffff"))
                    events = [e for e in api.history[index:] if e[1] == resource]
                    if not events and api.history[index:]:
                        cursor = api.history[-1][0]  # nothing of ours: skip ahead
                    now = time.monotonic()
                    if events or now >= deadline or (
                            bookmarks and now - last_bookmark >= api.bookmark_interval):
                        break
                    api.lock.wait(min(deadline - now, api.bookmark_interval))
                selector = query.get("fieldSelector")
                events = [e for e in events
                          if not selector or self._filtered(resource, query, [e[3]])]
                lines = [json.dumps({"type": t, "object": dict(o, kind=kind, apiVersion=api_version)}
                                    ).encode() + b"\n" for _, _, t, o in events]
                if events:
                    cursor = max(cursor, events[-1][0])
                elif api.history and api.history[-1][0] > cursor:
                    cursor = api.history[-1][0]
                bookmark_rv = str(max(cursor, int(rv_text or 0)))
            try:
                if fault and fault.kind == "drop" and sent + len(lines) >= fault.after_events:
                    # Cut inside a chunk: a size line promising more than follows.
                    keep = max(0, fault.after_events - sent)
                    if keep:
                        self._write_events(lines[:keep])
                    self.wfile.write(b"400\r\n{\"type\":\"ADDED\",\"obj")
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if lines:
                    writing = time.monotonic()
                    self._write_events(lines)
                    sent += len(lines)
                    with api.lock:
                        for event in events:
                            api.written_at.setdefault(event[0], writing)
                        while len(api.written_at) > api.history_limit:
                            api.written_at.pop(next(iter(api.written_at)))
                elif time.monotonic() >= deadline:
                    self._chunk(b"")
                    self.wfile.flush()
                    return
                elif bookmarks:
                    last_bookmark = time.monotonic()
                    self._write_events([json.dumps({"type": "BOOKMARK", "object": {
                        "kind": kind, "apiVersion": api_version,
                        "metadata": {"resourceVersion": bookmark_rv}}}).encode() + b"\n"])
            except (OSError, ssl.SSLError):
                self.close_connection = True
                return


def bench_service(i, port=80):
    """The benchmark's Service svc-<i>: ClusterIP 10.96.0.0 + i, port `port` ("p0")
    targeting 8080."""
    return kube_objects.service(
        f"svc-{i}", [f"10.{96 + i // 65536}.{(i // 256) % 256}.{i % 256}"],
        [kube_objects.service_port(port, name="p0", target=8080)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pki", required=True, help="folder for the generated certificates")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--services", type=int, default=0)
    parser.add_argument("--endpoints-per-service", type=int, default=10)
    parser.add_argument("--events-per-second", type=float, default=0,
                        help="after start, update Services at this rate")
    parser.add_argument("--events", type=int, default=0, help="how many updates to make")
    args = parser.parse_args()
    make_pki(args.pki)
    api = FakeApiServer(args.pki, history=max(1000, args.events + 10), chunking="line")
    def objects():
        for i in range(args.services):
            yield bench_service(i)
            addrs = [f"10.{128 + (i * args.endpoints_per_service + j) // 65536}."
                     f"{((i * args.endpoints_per_service + j) // 256) % 256}."
                     f"{(i * args.endpoints_per_service + j) % 256}"
                     for j in range(args.endpoints_per_service)]
            yield kube_objects.endpoint_slice(
                f"svc-{i}", [kube_objects.endpoint(a, node="node-a") for a in addrs],
                (("p0", 8080, "TCP"),), suffix="abcde")
    api.apply_many(objects())
    api.start(args.port)
    print(f"READY {api.port}", flush=True)
    # Updates start when the driver says "go" on stdin (after the client synced).
    sys.stdin.readline()
    if args.events_per_second > 0:
        start = time.monotonic()
        for n in range(args.events):
            due = start + n / args.events_per_second
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            api.apply(bench_service(n % max(1, args.services), port=1 + n % 60000))
        print(f"SENT {args.events} {time.monotonic() - start:.3f}", flush=True)
    sys.stdin.readline()
    api.stop()


if __name__ == "__main__":
    main()
