#include "dns/serve/query_log.h"

#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "base/file_text.h"

namespace sb::dns {

namespace {

using Field = LogFormat::Field;

struct Placeholder {
    std::string_view text;
    Field field;
};

constexpr std::array<Placeholder, 16> kPlaceholders = {{
    {"{type}", Field::kType},
    {"{name}", Field::kName},
    {"{class}", Field::kClass},
    {"{proto}", Field::kProto},
    {"{size}", Field::kSize},
    {"{remote}", Field::kRemote},
    {"{port}", Field::kPort},
    {"{local}", Field::kLocal},
    {"{>id}", Field::kId},
    {"{>opcode}", Field::kOpcode},
    {"{>do}", Field::kDo},
    {"{>bufsize}", Field::kBufsize},
    {"{rcode}", Field::kRcode},
    {"{rsize}", Field::kRsize},
    {"{duration}", Field::kDuration},
    {"{>rflags}", Field::kRflags},
}};

void add_literal(LogFormat& format, std::string_view text) {
    if (text.empty()) return;
    if (!format.parts.empty() && format.parts.back().field == Field::kLiteral) {
        format.parts.back().text += text;
        return;
    }
    format.parts.push_back({Field::kLiteral, std::string(text)});
}

std::string_view expand_shortcuts(std::string_view text) {
    if (text == "{common}") return kCommonLogFormat;
    if (text == "{combined}") return kCombinedLogFormat;
    return text;
}

void append_address(std::string& out, const IpAddress& address) {
    // RFC 3986: an IPv6 address in brackets, as CoreDNS's replacer writes it.
    if (address.is_v6()) {
        out += '[';
        out += address.to_string();
        out += ']';
    } else {
        out += address.to_string();
    }
}

void append_flags(std::string& out, const Header& h) {
    const size_t start = out.size();
    for (auto [set, name] : {std::pair{h.qr, "qr"}, std::pair{h.aa, "aa"}, std::pair{h.tc, "tc"},
                             std::pair{h.rd, "rd"}, std::pair{h.ra, "ra"}, std::pair{h.ad, "ad"},
                             std::pair{h.cd, "cd"}}) {
        if (!set) continue;
        if (out.size() > start) out += ',';
        out += name;
    }
}

void append_seconds(std::string& out, double seconds) {
    // Go's strconv.FormatFloat(s, 'f', -1, 64): the shortest digits that
    // read back the same, never an exponent.
    std::array<char, 64> buffer;
    auto [end, error] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), seconds,
                                      std::chars_format::fixed);
    if (error == std::errc()) out.append(buffer.data(), end);
    out += 's';
}

bool is_under_any(std::string_view lower_name, const std::vector<std::string>& zones) {
    for (const auto& zone : zones) {
        if (name_is_under(lower_name, zone)) return true;
    }
    return false;
}

}  // namespace

LogFormat parse_log_format(std::string_view input) {
    std::string_view s = expand_shortcuts(input);
    LogFormat format;
    // CoreDNS's parseFormat: find a `}`, then the last `{` before it, so
    // that "{ {type} }" keeps the outer braces as literal text.
    while (true) {
        size_t close = s.find('}');
        if (close == std::string_view::npos) break;
        size_t open = s.substr(0, close).rfind('{');
        if (open == std::string_view::npos) {
            add_literal(format, s.substr(0, close + 1));
            s.remove_prefix(close + 1);
            continue;
        }
        std::string_view label = s.substr(open, close - open + 1);
        std::optional<Field> field;
        for (const auto& placeholder : kPlaceholders) {
            if (placeholder.text == label) field = placeholder.field;
        }
        if (!field && label.starts_with("{/")) field = Field::kMetadata;
        if (!field) {
            add_literal(format, s.substr(0, close + 1));
        } else {
            add_literal(format, s.substr(0, open));
            format.parts.push_back({*field, {}});
        }
        s.remove_prefix(close + 1);
    }
    add_literal(format, s);
    return format;
}

bool QueryLogRule::selects(const DescribedQuery& query) const {
    if (classes & query.response_class) return true;
    return min_duration_seconds > 0 && query.duration_seconds > min_duration_seconds;
}

const QueryLogBlock* QueryLogConfig::block_for(std::string_view lower_name) const {
    const QueryLogBlock* best = nullptr;
    size_t best_length = 0;
    for (const auto& block : blocks) {
        for (const auto& zone : block.zones) {
            if (name_is_under(lower_name, zone) && (!best || zone.size() > best_length)) {
                best = &block;
                best_length = zone.size();
            }
        }
    }
    return best;
}

const QueryLogRule* QueryLogConfig::rule_for(std::string_view lower_name) const {
    const QueryLogBlock* block = block_for(lower_name);
    if (!block) return nullptr;
    for (const auto& rule : block->rules) {
        if (is_under_any(lower_name, rule.names)) return &rule;
    }
    return nullptr;
}

bool QueryLogConfig::logs_queries() const {
    for (const auto& block : blocks) {
        if (!block.rules.empty()) return true;
    }
    return false;
}

bool QueryLogConfig::logs_errors() const {
    for (const auto& block : blocks) {
        if (block.errors) return true;
    }
    return false;
}

uint8_t classify_response(const Message& m) {
    constexpr uint8_t kOpcodeNotify = 4;
    constexpr uint8_t kOpcodeUpdate = 5;
    // Update and Meta (NOTIFY, zone transfers) classify as errors.
    if (m.header.opcode == kOpcodeUpdate || m.header.opcode == kOpcodeNotify) return kClassError;
    if (!m.questions.empty() &&
        (m.questions[0].qtype == type::kAXFR || m.questions[0].qtype == type::kIXFR)) {
        return kClassError;
    }
    const bool noerror = m.header.rcode == static_cast<uint8_t>(Rcode::kNoError);
    if (!m.answers.empty() && noerror) return kClassSuccess;
    bool soa = false;
    size_t ns = 0;
    for (const auto& record : m.authority) {
        if (record.rtype == type::kSOA) soa = true;
        if (record.rtype == type::kNS) ++ns;
    }
    if (soa && noerror) return kClassDenial;  // NODATA
    if (soa && m.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain)) return kClassDenial;
    if (ns > 0 && ns == m.authority.size() && noerror) return kClassSuccess;  // delegation
    if (noerror) return kClassSuccess;
    return kClassError;
}

std::optional<DescribedQuery> describe_exchange(std::span<const uint8_t> query_bytes,
                                                std::span<const uint8_t> reply_bytes, bool tcp,
                                                const HostPort& remote,
                                                const std::optional<HostPort>& local,
                                                double duration_seconds) {
    auto query = parse_message(query_bytes);
    if (!query || query->questions.empty()) return std::nullopt;
    DescribedQuery d;
    d.remote = remote;
    d.local = local;
    d.id = query->header.id;
    d.opcode = query->header.opcode;
    d.lower_name = name_lower(query->questions[0].name);
    d.name = name_to_text(d.lower_name);
    d.qtype = query->questions[0].qtype;
    d.qclass = query->questions[0].qclass;
    d.tcp = tcp;
    d.size = query_bytes.size();
    d.dnssec_ok = query->edns && query->edns->dnssec_ok;
    d.bufsize =
        tcp ? 65535 : std::max<uint16_t>(kClassicUdpSize, query->edns ? query->edns->udp_size : 0);
    d.duration_seconds = duration_seconds;
    if (!reply_bytes.empty()) {
        d.answered = true;
        d.reply_size = reply_bytes.size();
        if (auto reply = parse_message(reply_bytes)) {
            d.reply_header = reply->header;
            d.rcode = reply->header.rcode;
            d.response_class = classify_response(*reply);
        } else if (reply_bytes.size() >= kHeaderSize) {
            QueryHeaderPeek peek = peek_header(reply_bytes);
            d.reply_header = peek.header;
            d.rcode = peek.header.rcode;
        }
    }
    return d;
}

std::string format_log_line(const LogFormat& format, const DescribedQuery& q) {
    std::string out;
    out.reserve(160);
    for (const auto& part : format.parts) {
        switch (part.field) {
            case Field::kLiteral:
                out += part.text;
                break;
            case Field::kType:
                out += type_text(q.qtype);
                break;
            case Field::kName:
                out += q.name;
                break;
            case Field::kClass:
                out += class_text(q.qclass);
                break;
            case Field::kProto:
                out += q.tcp ? "tcp" : "udp";
                break;
            case Field::kSize:
                out += std::to_string(q.size);
                break;
            case Field::kRemote:
                append_address(out, q.remote.address);
                break;
            case Field::kPort:
                out += std::to_string(q.remote.port);
                break;
            case Field::kLocal:
                if (q.local) {
                    append_address(out, q.local->address);
                } else {
                    out += '-';
                }
                break;
            case Field::kId:
                out += std::to_string(q.id);
                break;
            case Field::kOpcode:
                out += std::to_string(q.opcode);
                break;
            case Field::kDo:
                out += q.dnssec_ok ? "true" : "false";
                break;
            case Field::kBufsize:
                out += std::to_string(q.bufsize);
                break;
            case Field::kRcode:
                out += q.answered ? rcode_text(q.rcode) : "-";
                break;
            case Field::kRsize:
                out += q.answered ? std::to_string(q.reply_size) : "-";
                break;
            case Field::kDuration:
                append_seconds(out, q.duration_seconds);
                break;
            case Field::kRflags:
                if (q.answered) {
                    append_flags(out, q.reply_header);
                } else {
                    out += '-';
                }
                break;
            case Field::kMetadata:
                out += '-';
                break;
        }
    }
    return out;
}

std::string format_error_line(uint8_t rcode, std::string_view lower_name_wire, uint16_t qtype,
                              std::string_view why) {
    // CoreDNS: log.Errorf("%d %s %s: %s", rcode, state.Name(), state.Type(), err).
    return fmt::format("plugin/errors: {} {} {}: {}", static_cast<unsigned>(rcode),
                       name_to_text(lower_name_wire), type_text(qtype), why);
}

std::string type_text(uint16_t qtype) {
    std::string_view known = type_name(qtype);
    if (known != "other") return std::string(known);
    switch (qtype) {
        case 35:
            return "NAPTR";
        case 43:
            return "DS";
        case 46:
            return "RRSIG";
        case 47:
            return "NSEC";
        case 48:
            return "DNSKEY";
        case 50:
            return "NSEC3";
        case 52:
            return "TLSA";
        case 64:
            return "SVCB";
        case 65:
            return "HTTPS";
        case 99:
            return "SPF";
        case 257:
            return "CAA";
        default:
            return "TYPE" + std::to_string(qtype);
    }
}

std::string class_text(uint16_t qclass) {
    switch (qclass) {
        case kClassIN:
            return "IN";
        case 3:
            return "CH";
        case 4:
            return "HS";
        case 254:
            return "NONE";
        case kClassANY:
            return "ANY";
        default:
            return "CLASS" + std::to_string(qclass);
    }
}

std::string rcode_text(uint8_t rcode) {
    static constexpr std::array<const char*, 11> kNames = {
        "NOERROR",  "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
        "YXDOMAIN", "YXRRSET", "NXRRSET",  "NOTAUTH",  "NOTZONE"};
    if (rcode < kNames.size()) return kNames[rcode];
    return std::to_string(rcode);
}

void write_stdout_line(std::string line) {
    line += '\n';
    // stdout closed: the line is lost, the query is not.
    (void)write_whole(STDOUT_FILENO, line);
}

}  // namespace sb::dns
