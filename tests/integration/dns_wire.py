"""dns_wire: DNS messages as the integration tests build and read them, in
one place: names, queries, questions, records and replies (RFC 1035 4.1).

Used by the stubs (dns_stub) and by the client scripts the tests run inside
network namespaces (`python3 -c` with this folder on PYTHONPATH:
probes.python_in), so it is standard library only and imports nothing else
of the test bed.

The builders make well-formed messages only; a test that needs a malformed
one starts from a well-formed one and cuts or changes its bytes. The
parsers assume well-formed input (what the daemon or a stub sends) and raise
IndexError or struct.error on anything else.
"""
from __future__ import annotations

import dataclasses
import socket
import struct

TYPE_A, TYPE_NS, TYPE_SOA, TYPE_TXT, TYPE_AAAA = 1, 2, 6, 16, 28
CLASS_IN = 1
QR, TC, RD, RA = 0x8000, 0x0200, 0x0100, 0x0080
NOERROR, FORMERR, SERVFAIL, NXDOMAIN, NOTIMP = 0, 1, 2, 3, 4


def encode_name(name):
    """`name` in wire format (labels, then the root); "" and "." are the root."""
    return b"".join(bytes([len(label)]) + label.encode()
                    for label in name.split(".") if label) + b"\0"


def query(qid, name, qtype=TYPE_A, *, flags=RD, additional=()):
    """A query of one question (class IN); `additional`: records (bytes) for the
    additional section."""
    return struct.pack("!HHHHHH", qid, flags, 1, 0, 0, len(additional)) + \
        encode_name(name) + struct.pack("!HH", qtype, CLASS_IN) + b"".join(additional)


def framed(packet):
    """`packet` with the two-byte length prefix of DNS over TCP."""
    return struct.pack("!H", len(packet)) + packet


def record(rtype, rdata, *, ttl=60, owner=b"\xc0\x0c"):
    """A resource record of class IN; the owner defaults to a pointer to the question's
    name."""
    return owner + struct.pack("!HHIH", rtype, CLASS_IN, ttl, len(rdata)) + rdata


def a_record(address, ttl=60):
    return record(TYPE_A, socket.inet_aton(address), ttl=ttl)


def soa_record(zone, *, ttl=60, serial=1, refresh=60, retry=60, expire=60, minimum=60,
               mname="ns.test", rname="admin.test"):
    rdata = encode_name(mname) + encode_name(rname) + struct.pack(
        "!IIIII", serial, refresh, retry, expire, minimum)
    return record(TYPE_SOA, rdata, ttl=ttl, owner=encode_name(zone))


def message_id(packet):
    return struct.unpack("!H", packet[:2])[0]


def rcode(packet):
    return packet[3] & 0x0f


def truncated(packet):
    return bool(packet[2] & (TC >> 8))


def answer_count(packet):
    return struct.unpack("!H", packet[6:8])[0]


def parse_question(packet):
    """(name, qtype, end) of a message's first question: the name lowercased, "." for
    the root; end is the offset just past the question (type and class included)."""
    labels, pos = [], 12
    while packet[pos]:
        n = packet[pos]
        labels.append(packet[pos + 1:pos + 1 + n].decode())
        pos += n + 1
    qtype, = struct.unpack("!H", packet[pos + 1:pos + 3])
    return ".".join(labels).lower() or ".", qtype, pos + 5


def _skip_name(packet, pos):
    """The offset past a (possibly compressed) name at pos."""
    while packet[pos]:
        if packet[pos] >= 0xc0:
            return pos + 2
        pos += packet[pos] + 1
    return pos + 1


@dataclasses.dataclass(frozen=True)
class Record:
    rtype: int
    ttl: int
    rdata: bytes

    @property
    def address(self):
        """An A record's address as text."""
        return socket.inet_ntoa(self.rdata)


def answers(packet):
    """The answer section's records of a reply with one question."""
    pos = parse_question(packet)[2]
    out = []
    for _ in range(answer_count(packet)):
        pos = _skip_name(packet, pos)
        rtype, _, ttl, length = struct.unpack("!HHIH", packet[pos:pos + 10])
        out.append(Record(rtype, ttl, packet[pos + 10:pos + 10 + length]))
        pos += 10 + length
    return out
