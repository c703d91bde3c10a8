// The DNS wire format (RFC 1035, RFC 6891): a pure codec, no sockets.
//
// Names are kept in uncompressed wire form (length-prefixed labels ending
// with the root's zero byte) so that comparing, hashing and writing them
// needs no text escaping. Parsers never read past the packet, reject
// compression pointers that point forwards or loop, labels over 63 bytes and
// names over 255 bytes. Record data (rdata) is kept uncompressed: names
// inside the rdata of the types RFC 3597 lets peers compress are expanded on
// parse and re-compressed on write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::dns {

namespace type {
inline constexpr uint16_t kA = 1;
inline constexpr uint16_t kNS = 2;
inline constexpr uint16_t kCNAME = 5;
inline constexpr uint16_t kSOA = 6;
inline constexpr uint16_t kPTR = 12;
inline constexpr uint16_t kHINFO = 13;
inline constexpr uint16_t kMX = 15;
inline constexpr uint16_t kTXT = 16;
inline constexpr uint16_t kAAAA = 28;
inline constexpr uint16_t kSRV = 33;
inline constexpr uint16_t kOPT = 41;
inline constexpr uint16_t kIXFR = 251;
inline constexpr uint16_t kAXFR = 252;
inline constexpr uint16_t kANY = 255;
}  // namespace type

inline constexpr uint16_t kClassIN = 1;
inline constexpr uint16_t kClassANY = 255;

enum class Rcode : uint8_t {
    kNoError = 0,
    kFormErr = 1,
    kServFail = 2,
    kNXDomain = 3,
    kNotImp = 4,
    kRefused = 5,
};
const char* to_string(Rcode rcode);     // "NOERROR", "FORMERR", ...
const char* type_name(uint16_t qtype);  // "A", "AAAA", ... "other" for the rest

inline constexpr size_t kMaxNameLength = 255;
inline constexpr size_t kMaxLabelLength = 63;
inline constexpr size_t kHeaderSize = 12;
inline constexpr uint16_t kClassicUdpSize = 512;
// The payload size we advertise and honour (DNS flag day 2020).
inline constexpr uint16_t kEdnsUdpSize = 1232;

// "www.Example.com" or "www.example.com." -> wire form. Error for empty
// labels, labels over 63 bytes, names over 255 bytes. "." and "" are the root.
Result<std::string> name_from_text(std::string_view text);
// Wire form -> "www.example.com." (bytes outside [-_a-zA-Z0-9] escaped as \DDD).
std::string name_to_text(std::string_view wire);
// ASCII lower-casing of every label byte (length bytes untouched).
std::string name_lower(std::string_view wire);
// True when `name` equals `suffix` or ends with it at a label boundary.
// Both in wire form, compared case-sensitively (lower them first).
bool name_is_under(std::string_view name, std::string_view suffix);
// Number of labels (the root has none).
size_t name_label_count(std::string_view wire);
// The first label of a name (without its length byte) and the parent name.
std::string_view name_first_label(std::string_view wire);
std::string_view name_parent(std::string_view wire);

struct Header {
    uint16_t id = 0;
    bool qr = false;
    uint8_t opcode = 0;
    bool aa = false;
    bool tc = false;
    bool rd = false;
    bool ra = false;
    bool ad = false;
    bool cd = false;
    uint8_t rcode = 0;  // the low 4 bits; EDNS carries the upper 8
};

struct Question {
    std::string name;  // wire form, as asked
    uint16_t qtype = 0;
    uint16_t qclass = kClassIN;
    bool operator==(const Question&) const = default;
};

struct Record {
    std::string name;  // wire form
    uint16_t rtype = 0;
    uint16_t rclass = kClassIN;
    uint32_t ttl = 0;
    std::string rdata;  // uncompressed
    bool operator==(const Record&) const = default;
};

struct Edns {
    uint16_t udp_size = kEdnsUdpSize;
    uint8_t extended_rcode = 0;
    uint8_t version = 0;
    bool dnssec_ok = false;
    std::string options;  // raw option TLVs
    bool operator==(const Edns&) const = default;
};

struct Message {
    Header header;
    std::vector<Question> questions;
    std::vector<Record> answers;
    std::vector<Record> authority;
    std::vector<Record> additional;  // never the OPT record: see `edns`
    std::optional<Edns> edns;
};

// Parses a whole message. Error (kInvalidArgument) for truncated packets,
// bad names or pointers, a misplaced or repeated OPT, and trailing bytes.
Result<Message> parse_message(std::span<const uint8_t> packet);

// What a parser of a query salvages for the error reply when parsing fails.
struct QueryHeaderPeek {
    bool has_header = false;  // at least 12 bytes
    Header header;
};
QueryHeaderPeek peek_header(std::span<const uint8_t> packet);

struct WriteResult {
    std::string bytes;
    bool truncated = false;  // TC set: answer/authority dropped to fit
    // Answer records forming one A or AAAA RRset written back to back with
    // equal sizes (offset of the first, size of each, count): the server
    // shuffles them per reply without re-encoding.
    size_t shuffle_offset = 0;
    size_t shuffle_size = 0;
    size_t shuffle_count = 0;
};
// Writes `message` with name compression. When it does not fit in
// `max_size`, the additional section is dropped first (no TC, RFC 2181 9);
// if still too big, answer and authority too, with TC set. The OPT record is
// written from message.edns when present.
WriteResult write_message(const Message& message, size_t max_size = 65535);

// Rdata builders (uncompressed).
std::string rdata_address(const IpAddress& address);
std::string rdata_srv(uint16_t priority, uint16_t weight, uint16_t port, std::string_view target);
std::string rdata_soa(std::string_view mname, std::string_view rname, uint32_t serial,
                      uint32_t refresh, uint32_t retry, uint32_t expire, uint32_t minimum);
std::string rdata_txt(const std::vector<std::string>& strings);  // each <= 255 bytes
// A record's rdata holding one name (CNAME, PTR, NS): the name itself.

// The SOA "minimum" field of a SOA rdata; nullopt when malformed.
std::optional<uint32_t> soa_minimum(std::string_view rdata);

}  // namespace sb::dns
