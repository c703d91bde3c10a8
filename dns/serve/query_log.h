// The Corefile's `log` and `errors` plugins: one line per query in CoreDNS's
// log format (plugin/log, plugin/pkg/replacer), and one line per failed
// upstream exchange, both on stdout as CoreDNS writes them ("[INFO] ...",
// "[ERROR] plugin/errors: ..."). docs/corefile.md, "log and errors".
//
// The formatting is pure (a DescribedQuery in, a line out) so that every
// placeholder is unit-tested; describe_exchange() parses the wire bytes.
//
// Thread safety: pure functions, and write_stdout_line(), which is one
// write(2) per line so that lines of concurrent threads never interleave.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "dns/wire/wire.h"

namespace sb::dns {

// The classes of a response `log ... { class ... }` selects (CoreDNS's
// response.Classify of response.Typify), as bits.
enum ResponseClass : uint8_t {
    kClassSuccess = 1,  // NOERROR with answers, a delegation, other NOERROR
    kClassDenial = 2,   // NXDOMAIN or NODATA with a SOA in the authority section
    kClassError = 4,    // anything else: SERVFAIL, REFUSED, NXDOMAIN without SOA, ...
};
inline constexpr uint8_t kClassAll = kClassSuccess | kClassDenial | kClassError;

// A log format parsed once: literals and placeholders, as CoreDNS's
// replacer splits it (an unknown `{...}` stays literal text).
struct LogFormat {
    enum class Field : uint8_t {
        kLiteral,
        kType,
        kName,
        kClass,
        kProto,
        kSize,
        kRemote,
        kPort,
        kLocal,
        kId,
        kOpcode,
        kDo,
        kBufsize,
        kRcode,
        kRsize,
        kDuration,
        kRflags,
        kMetadata,  // {/label}: switchboard has no metadata plugin, always "-"
    };
    struct Part {
        Field field = Field::kLiteral;
        std::string text;  // kLiteral only
    };
    std::vector<Part> parts;
};

// CoreDNS's `{common}` and `{combined}` formats.
inline constexpr std::string_view kCommonLogFormat =
    "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} "
    "{>rflags} {rsize} {duration}";
inline constexpr std::string_view kCombinedLogFormat =
    "{remote}:{port} - {>id} \"{type} {class} {name} {proto} {size} {>do} {>bufsize}\" {rcode} "
    "{>rflags} {rsize} {duration} \"{>opcode}\"";

// `{common}` and `{combined}` as the whole text stand for the formats above
// (as CoreDNS's log setup replaces them).
LogFormat parse_log_format(std::string_view text);

struct DescribedQuery;

// One `log [NAMES...] [FORMAT] { class ... minDuration ... }` rule.
struct QueryLogRule {
    std::vector<std::string> names;  // wire form, lower-case; a query at or under one matches
    LogFormat format;
    uint8_t classes = kClassAll;
    // `minDuration`: a query slower than this is logged whatever its class.
    double min_duration_seconds = 0;

    bool selects(const DescribedQuery& query) const;
};

// The `log` and `errors` of one server block: a query is logged by the
// block that serves it (the longest zone it is at or under), by that block's
// first rule whose names match it, as CoreDNS's log plugin does.
struct QueryLogBlock {
    std::vector<std::string> zones;  // wire form, lower-case
    std::vector<QueryLogRule> rules;
    bool errors = false;  // the block has `errors`
};

struct QueryLogConfig {
    std::vector<QueryLogBlock> blocks;

    // The block serving `lower_name` (wire form), null when none matches.
    const QueryLogBlock* block_for(std::string_view lower_name) const;
    // The rule that logs `lower_name`, null when none does.
    const QueryLogRule* rule_for(std::string_view lower_name) const;
    bool logs_queries() const;
    bool logs_errors() const;
};

// What the placeholders read from one exchange.
struct DescribedQuery {
    HostPort remote;
    std::optional<HostPort> local;  // unknown: "-"
    uint16_t id = 0;
    uint8_t opcode = 0;
    std::string name;        // presentation form, lower-case, fully qualified
    std::string lower_name;  // the same in wire form, for the rules' names
    uint16_t qtype = 0;
    uint16_t qclass = kClassIN;
    bool tcp = false;
    size_t size = 0;  // request bytes
    bool dnssec_ok = false;
    uint16_t bufsize = kClassicUdpSize;  // CoreDNS's state.Size(): 65535 on TCP, at least 512
    // The reply; `answered` false when there is none (a dropped query).
    bool answered = false;
    uint8_t rcode = 0;
    Header reply_header;
    size_t reply_size = 0;
    uint8_t response_class = kClassError;
    double duration_seconds = 0;
};

// Reads the query and reply packets into a DescribedQuery; nullopt when the
// query has no question to name (CoreDNS logs only parsed queries).
std::optional<DescribedQuery> describe_exchange(std::span<const uint8_t> query,
                                                std::span<const uint8_t> reply, bool tcp,
                                                const HostPort& remote,
                                                const std::optional<HostPort>& local,
                                                double duration_seconds);

// CoreDNS's classification of a reply message (response.Typify, then Classify).
uint8_t classify_response(const Message& reply);

// The line for `query` in `format`, without the "[INFO] " prefix.
std::string format_log_line(const LogFormat& format, const DescribedQuery& query);

// The errors plugin's line, without "[ERROR] ": "plugin/errors: 2 name. A: why".
std::string format_error_line(uint8_t rcode, std::string_view lower_name_wire, uint16_t qtype,
                              std::string_view why);

// miekg/dns's names: "A", "TYPE65"; "IN", "CLASS7"; "NOERROR", else the number.
std::string type_text(uint16_t qtype);
std::string class_text(uint16_t qclass);
std::string rcode_text(uint8_t rcode);

// Writes `line` and a newline to stdout in one write(2).
void write_stdout_line(std::string line);

}  // namespace sb::dns
