#include "dns/wire/wire.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace sb::dns {

const char* to_string(Rcode rcode) {
    switch (rcode) {
        case Rcode::kNoError:
            return "NOERROR";
        case Rcode::kFormErr:
            return "FORMERR";
        case Rcode::kServFail:
            return "SERVFAIL";
        case Rcode::kNXDomain:
            return "NXDOMAIN";
        case Rcode::kNotImp:
            return "NOTIMP";
        case Rcode::kRefused:
            return "REFUSED";
    }
    return "other";
}

const char* type_name(uint16_t qtype) {
    switch (qtype) {
        case type::kA:
            return "A";
        case type::kNS:
            return "NS";
        case type::kCNAME:
            return "CNAME";
        case type::kSOA:
            return "SOA";
        case type::kPTR:
            return "PTR";
        case type::kHINFO:
            return "HINFO";
        case type::kMX:
            return "MX";
        case type::kTXT:
            return "TXT";
        case type::kAAAA:
            return "AAAA";
        case type::kSRV:
            return "SRV";
        case type::kOPT:
            return "OPT";
        case type::kIXFR:
            return "IXFR";
        case type::kAXFR:
            return "AXFR";
        case type::kANY:
            return "ANY";
    }
    return "other";
}

namespace {

char lower_char(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

void put16(std::string& out, uint16_t value) {
    out.push_back(static_cast<char>(value >> 8));
    out.push_back(static_cast<char>(value & 0xff));
}

void put32(std::string& out, uint32_t value) {
    put16(out, static_cast<uint16_t>(value >> 16));
    put16(out, static_cast<uint16_t>(value & 0xffff));
}

void set16(std::string& out, size_t at, uint16_t value) {
    out[at] = static_cast<char>(value >> 8);
    out[at + 1] = static_cast<char>(value & 0xff);
}

}  // namespace

Result<std::string> name_from_text(std::string_view text) {
    if (!text.empty() && text.back() == '.') text.remove_suffix(1);
    std::string wire;
    if (text.empty()) return std::string(1, '\0');
    size_t start = 0;
    while (start <= text.size()) {
        size_t dot = text.find('.', start);
        if (dot == std::string_view::npos) dot = text.size();
        size_t length = dot - start;
        if (length == 0) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("empty label in DNS name \"{}\"", text));
        }
        if (length > kMaxLabelLength) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("label longer than 63 bytes in \"{}\"", text));
        }
        wire.push_back(static_cast<char>(length));
        wire.append(text.substr(start, length));
        start = dot + 1;
    }
    wire.push_back('\0');
    if (wire.size() > kMaxNameLength) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("DNS name longer than 255 bytes: \"{}\"", text));
    }
    return wire;
}

std::string name_to_text(std::string_view wire) {
    std::string text;
    size_t pos = 0;
    while (pos < wire.size() && wire[pos] != 0) {
        size_t length = static_cast<uint8_t>(wire[pos]);
        for (size_t i = 1; i <= length && pos + i < wire.size(); ++i) {
            unsigned char c = static_cast<unsigned char>(wire[pos + i]);
            if (std::isalnum(c) || c == '-' || c == '_') {
                text.push_back(static_cast<char>(c));
            } else {
                char escaped[8];
                std::snprintf(escaped, sizeof(escaped), "\\%03u", c);
                text += escaped;
            }
        }
        text.push_back('.');
        pos += length + 1;
    }
    return text.empty() ? "." : text;
}

std::string name_lower(std::string_view wire) {
    std::string out(wire);
    size_t pos = 0;
    while (pos < out.size() && out[pos] != 0) {
        size_t length = static_cast<uint8_t>(out[pos]);
        for (size_t i = 1; i <= length && pos + i < out.size(); ++i) {
            out[pos + i] = lower_char(out[pos + i]);
        }
        pos += length + 1;
    }
    return out;
}

bool name_is_under(std::string_view name, std::string_view suffix) {
    if (suffix.size() > name.size()) return false;
    size_t pos = 0;
    while (pos < name.size()) {
        if (name.size() - pos == suffix.size()) return name.substr(pos) == suffix;
        if (name[pos] == 0) return false;
        pos += static_cast<uint8_t>(name[pos]) + 1;
    }
    return false;
}

size_t name_label_count(std::string_view wire) {
    size_t count = 0;
    size_t pos = 0;
    while (pos < wire.size() && wire[pos] != 0) {
        ++count;
        pos += static_cast<uint8_t>(wire[pos]) + 1;
    }
    return count;
}

std::string_view name_first_label(std::string_view wire) {
    if (wire.empty() || wire[0] == 0) return {};
    size_t length = static_cast<uint8_t>(wire[0]);
    return wire.substr(1, std::min(length, wire.size() - 1));
}

std::string_view name_parent(std::string_view wire) {
    if (wire.empty() || wire[0] == 0) return wire;
    size_t skip = static_cast<uint8_t>(wire[0]) + 1;
    return skip >= wire.size() ? std::string_view() : wire.substr(skip);
}

// ---- parsing ----

namespace {

class Reader {
  public:
    explicit Reader(std::span<const uint8_t> packet) : p_(packet) {}

    bool u8(uint8_t& out) {
        if (pos_ + 1 > p_.size()) return fail("truncated packet");
        out = p_[pos_++];
        return true;
    }
    bool u16(uint16_t& out) {
        if (pos_ + 2 > p_.size()) return fail("truncated packet");
        out = static_cast<uint16_t>((p_[pos_] << 8) | p_[pos_ + 1]);
        pos_ += 2;
        return true;
    }
    bool u32(uint32_t& out) {
        uint16_t high = 0;
        uint16_t low = 0;
        if (!u16(high) || !u16(low)) return false;
        out = (static_cast<uint32_t>(high) << 16) | low;
        return true;
    }
    bool bytes(size_t count, std::string& out) {
        if (count > p_.size() - pos_) return fail("truncated packet");
        out.append(reinterpret_cast<const char*>(p_.data() + pos_), count);
        pos_ += count;
        return true;
    }

    // A possibly compressed name at the current position, appended
    // uncompressed to `out`. Every pointer must point strictly before the
    // previous jump's target (or the name's start), which rejects forward
    // pointers and makes loops impossible.
    bool name(std::string& out) {
        size_t start_size = out.size();
        size_t cursor = pos_;
        size_t bound = pos_;  // pointers must go strictly below this
        bool jumped = false;
        while (true) {
            if (cursor >= p_.size()) return fail("truncated name");
            uint8_t length = p_[cursor];
            if ((length & 0xc0) == 0xc0) {
                if (cursor + 1 >= p_.size()) return fail("truncated compression pointer");
                size_t target = (static_cast<size_t>(length & 0x3f) << 8) | p_[cursor + 1];
                if (target >= bound) return fail("forward or looping compression pointer");
                if (!jumped) pos_ = cursor + 2;
                jumped = true;
                bound = target;
                cursor = target;
                continue;
            }
            if ((length & 0xc0) != 0) return fail("unsupported label type");
            if (length == 0) {
                out.push_back('\0');
                if (!jumped) pos_ = cursor + 1;
                if (out.size() - start_size > kMaxNameLength) return fail("name over 255 bytes");
                return true;
            }
            if (cursor + 1 + length > p_.size()) return fail("truncated label");
            out.append(reinterpret_cast<const char*>(p_.data() + cursor), length + 1);
            if (out.size() - start_size > kMaxNameLength) return fail("name over 255 bytes");
            cursor += length + 1;
        }
    }

    size_t pos() const { return pos_; }
    size_t remaining() const { return p_.size() - pos_; }
    const std::string& error() const { return error_; }
    bool fail(const char* message) {
        if (error_.empty()) error_ = message;
        return false;
    }

  private:
    std::span<const uint8_t> p_;
    size_t pos_ = 0;
    std::string error_;
};

// Types whose rdata may carry compressed names (RFC 3597 section 4 and
// SRV, which some servers compress despite RFC 2782): layout per type.
enum class RdataLayout { kOpaque, kName, kTwoNames, kPrefName, kSoa, kSrv };

RdataLayout layout_of(uint16_t rtype) {
    switch (rtype) {
        case type::kNS:
        case 3:  // MD
        case 4:  // MF
        case type::kCNAME:
        case 7:  // MB
        case 8:  // MG
        case 9:  // MR
        case type::kPTR:
            return RdataLayout::kName;
        case 14:  // MINFO
        case 17:  // RP
            return RdataLayout::kTwoNames;
        case type::kMX:
        case 18:  // AFSDB
            return RdataLayout::kPrefName;
        case type::kSOA:
            return RdataLayout::kSoa;
        case type::kSRV:
            return RdataLayout::kSrv;
        default:
            return RdataLayout::kOpaque;
    }
}

bool read_rdata(Reader& r, uint16_t rtype, uint16_t length, std::string& out) {
    if (length > r.remaining()) return r.fail("truncated rdata");
    size_t end = r.pos() + length;
    RdataLayout layout = layout_of(rtype);
    bool ok = true;
    switch (layout) {
        case RdataLayout::kOpaque:
            return r.bytes(length, out);
        case RdataLayout::kName:
            ok = r.name(out);
            break;
        case RdataLayout::kTwoNames:
            ok = r.name(out) && r.name(out);
            break;
        case RdataLayout::kPrefName:
            ok = r.bytes(2, out) && r.name(out);
            break;
        case RdataLayout::kSoa:
            ok = r.name(out) && r.name(out) && r.bytes(20, out);
            break;
        case RdataLayout::kSrv:
            ok = r.bytes(6, out) && r.name(out);
            break;
    }
    if (!ok) return false;
    if (r.pos() != end) return r.fail("rdata length does not match its content");
    return true;
}

bool read_record(Reader& r, Record& record) {
    uint16_t length = 0;
    return r.name(record.name) && r.u16(record.rtype) && r.u16(record.rclass) &&
           r.u32(record.ttl) && r.u16(length) && read_rdata(r, record.rtype, length, record.rdata);
}

Header decode_header(const uint8_t* p) {
    Header h;
    h.id = static_cast<uint16_t>((p[0] << 8) | p[1]);
    h.qr = p[2] & 0x80;
    h.opcode = (p[2] >> 3) & 0x0f;
    h.aa = p[2] & 0x04;
    h.tc = p[2] & 0x02;
    h.rd = p[2] & 0x01;
    h.ra = p[3] & 0x80;
    h.ad = p[3] & 0x20;
    h.cd = p[3] & 0x10;
    h.rcode = p[3] & 0x0f;
    return h;
}

}  // namespace

QueryHeaderPeek peek_header(std::span<const uint8_t> packet) {
    QueryHeaderPeek peek;
    if (packet.size() < kHeaderSize) return peek;
    peek.has_header = true;
    peek.header = decode_header(packet.data());
    return peek;
}

Result<Message> parse_message(std::span<const uint8_t> packet) {
    if (packet.size() < kHeaderSize) {
        return make_error(ErrorCode::kInvalidArgument, "DNS message shorter than its header");
    }
    Message message;
    message.header = decode_header(packet.data());
    Reader r(packet);
    uint16_t skip = 0;
    uint16_t qdcount = 0;
    uint16_t ancount = 0;
    uint16_t nscount = 0;
    uint16_t arcount = 0;
    (void)(r.u16(skip) && r.u16(skip));
    if (!r.u16(qdcount) || !r.u16(ancount) || !r.u16(nscount) || !r.u16(arcount)) {
        return make_error(ErrorCode::kInvalidArgument, r.error());
    }
    auto invalid = [](std::string message) {
        return make_error(ErrorCode::kInvalidArgument, std::move(message));
    };
    // Each record takes at least 11 bytes and each question 5: a count that
    // cannot fit is rejected before anything is reserved.
    size_t minimum = size_t{qdcount} * 5 + (size_t{ancount} + nscount + arcount) * 11;
    if (minimum > r.remaining()) return invalid("section counts exceed the packet");
    message.questions.resize(qdcount);
    for (auto& q : message.questions) {
        if (!r.name(q.name) || !r.u16(q.qtype) || !r.u16(q.qclass)) return invalid(r.error());
    }
    auto read_section = [&](uint16_t count, std::vector<Record>& section, bool additional) {
        section.reserve(count);
        for (uint16_t i = 0; i < count; ++i) {
            Record record;
            if (!read_record(r, record)) return false;
            if (record.rtype == type::kOPT) {
                if (!additional) return r.fail("OPT record outside the additional section");
                if (message.edns) return r.fail("more than one OPT record");
                if (record.name != std::string(1, '\0')) return r.fail("OPT owner is not the root");
                Edns edns;
                edns.udp_size = record.rclass;
                edns.extended_rcode = static_cast<uint8_t>(record.ttl >> 24);
                edns.version = static_cast<uint8_t>((record.ttl >> 16) & 0xff);
                edns.dnssec_ok = record.ttl & 0x8000;
                edns.options = std::move(record.rdata);
                message.edns = std::move(edns);
                continue;
            }
            section.push_back(std::move(record));
        }
        return true;
    };
    if (!read_section(ancount, message.answers, false) ||
        !read_section(nscount, message.authority, false) ||
        !read_section(arcount, message.additional, true)) {
        return invalid(r.error());
    }
    if (r.remaining() != 0) return invalid("trailing bytes after the last record");
    return message;
}

// ---- writing ----

namespace {

class Writer {
  public:
    explicit Writer(std::string& out) : out_(out) {}

    // Writes a wire-form name, reusing any suffix already written (pointers
    // only reach the first 16 KiB, the 14-bit limit).
    void name(std::string_view wire, bool compress) {
        std::string_view rest = wire;
        while (!rest.empty() && rest[0] != 0) {
            if (compress) {
                std::string key = name_lower(rest);
                auto it = offsets_.find(key);
                if (it != offsets_.end()) {
                    put16(out_, static_cast<uint16_t>(0xc000 | it->second));
                    return;
                }
                if (out_.size() < 0x4000) offsets_.emplace(std::move(key), out_.size());
            }
            size_t length = static_cast<uint8_t>(rest[0]);
            out_.append(rest.substr(0, length + 1));
            rest = rest.substr(length + 1);
        }
        out_.push_back('\0');
    }

    void record(const Record& record) {
        name(record.name, true);
        put16(out_, record.rtype);
        put16(out_, record.rclass);
        put32(out_, record.ttl);
        size_t length_at = out_.size();
        put16(out_, 0);
        size_t start = out_.size();
        rdata(record.rtype, record.rdata);
        set16(out_, length_at, static_cast<uint16_t>(out_.size() - start));
    }

    void rdata(uint16_t rtype, std::string_view data) {
        // Only RFC 1035's well-known types are compressed on output
        // (RFC 3597 section 4); SRV targets stay uncompressed (RFC 2782).
        auto name_at = [&data](size_t pos) -> size_t {
            while (pos < data.size() && data[pos] != 0) pos += static_cast<uint8_t>(data[pos]) + 1;
            return pos + 1;
        };
        switch (rtype) {
            case type::kNS:
            case type::kCNAME:
            case type::kPTR: {
                name(data, true);
                return;
            }
            case type::kMX: {
                if (data.size() < 3) break;
                out_.append(data.substr(0, 2));
                name(data.substr(2), true);
                return;
            }
            case type::kSOA: {
                size_t first = name_at(0);
                size_t second = name_at(first);
                if (second + 20 != data.size()) break;
                name(data.substr(0, first), true);
                name(data.substr(first, second - first), true);
                out_.append(data.substr(second));
                return;
            }
            default:
                break;
        }
        out_.append(data);
    }

  private:
    std::string& out_;
    std::unordered_map<std::string, size_t> offsets_;
};

void write_header(std::string& out, const Header& h, uint16_t qd, uint16_t an, uint16_t ns,
                  uint16_t ar) {
    put16(out, h.id);
    uint8_t flags1 =
        static_cast<uint8_t>((h.qr ? 0x80 : 0) | ((h.opcode & 0x0f) << 3) | (h.aa ? 0x04 : 0) |
                             (h.tc ? 0x02 : 0) | (h.rd ? 0x01 : 0));
    uint8_t flags2 = static_cast<uint8_t>((h.ra ? 0x80 : 0) | (h.ad ? 0x20 : 0) |
                                          (h.cd ? 0x10 : 0) | (h.rcode & 0x0f));
    out.push_back(static_cast<char>(flags1));
    out.push_back(static_cast<char>(flags2));
    put16(out, qd);
    put16(out, an);
    put16(out, ns);
    put16(out, ar);
}

void write_opt(std::string& out, const Edns& edns) {
    out.push_back('\0');
    put16(out, type::kOPT);
    put16(out, edns.udp_size);
    uint32_t ttl = (static_cast<uint32_t>(edns.extended_rcode) << 24) |
                   (static_cast<uint32_t>(edns.version) << 16) | (edns.dnssec_ok ? 0x8000u : 0u);
    put32(out, ttl);
    put16(out, static_cast<uint16_t>(edns.options.size()));
    out.append(edns.options);
}

WriteResult write_sections(const Message& m, bool with_records, bool with_additional) {
    WriteResult result;
    std::string& out = result.bytes;
    out.reserve(512);
    Header header = m.header;
    uint16_t an = with_records ? static_cast<uint16_t>(m.answers.size()) : 0;
    uint16_t ns = with_records ? static_cast<uint16_t>(m.authority.size()) : 0;
    uint16_t ar = with_additional ? static_cast<uint16_t>(m.additional.size()) : 0;
    if (m.edns) ++ar;
    write_header(out, header, static_cast<uint16_t>(m.questions.size()), an, ns, ar);
    Writer w(out);
    for (const auto& q : m.questions) {
        w.name(q.name, true);
        put16(out, q.qtype);
        put16(out, q.qclass);
    }
    if (with_records) {
        // Detects an answer that is a single A or AAAA RRset whose records
        // encode to equal sizes (a shared owner pointer), for shuffling.
        bool uniform = !m.answers.empty();
        size_t first_offset = out.size();
        size_t size = 0;
        for (size_t i = 0; i < m.answers.size(); ++i) {
            size_t before = out.size();
            w.record(m.answers[i]);
            size_t this_size = out.size() - before;
            const Record& record = m.answers[i];
            if (record.rtype != type::kA && record.rtype != type::kAAAA) uniform = false;
            if (i == 0) {
                size = this_size;
            } else if (this_size != size || record.rtype != m.answers[0].rtype ||
                       record.name != m.answers[0].name) {
                uniform = false;
            }
        }
        if (uniform && m.answers.size() > 1) {
            // The first record writes its owner in full unless the question
            // already holds it; only pointer-owned records are equal-sized.
            result.shuffle_offset = first_offset;
            result.shuffle_size = size;
            result.shuffle_count = m.answers.size();
            if (out.size() - first_offset != size * m.answers.size()) result.shuffle_count = 0;
        }
        for (const auto& record : m.authority) w.record(record);
    }
    if (with_additional) {
        for (const auto& record : m.additional) w.record(record);
    }
    if (m.edns) write_opt(out, *m.edns);
    return result;
}

}  // namespace

WriteResult write_message(const Message& message, size_t max_size) {
    WriteResult full = write_sections(message, true, true);
    if (full.bytes.size() <= max_size) return full;
    if (!message.additional.empty()) {
        WriteResult reduced = write_sections(message, true, false);
        if (reduced.bytes.size() <= max_size) return reduced;
    }
    Message truncated_header = message;
    truncated_header.header.tc = true;
    WriteResult truncated = write_sections(truncated_header, false, false);
    truncated.truncated = true;
    return truncated;
}

std::string rdata_address(const IpAddress& address) {
    return std::string(reinterpret_cast<const char*>(address.bytes()), address.size());
}

std::string rdata_srv(uint16_t priority, uint16_t weight, uint16_t port, std::string_view target) {
    std::string out;
    put16(out, priority);
    put16(out, weight);
    put16(out, port);
    out.append(target);
    return out;
}

std::string rdata_soa(std::string_view mname, std::string_view rname, uint32_t serial,
                      uint32_t refresh, uint32_t retry, uint32_t expire, uint32_t minimum) {
    std::string out(mname);
    out.append(rname);
    put32(out, serial);
    put32(out, refresh);
    put32(out, retry);
    put32(out, expire);
    put32(out, minimum);
    return out;
}

std::string rdata_txt(const std::vector<std::string>& strings) {
    std::string out;
    for (const auto& s : strings) {
        size_t length = std::min<size_t>(s.size(), 255);
        out.push_back(static_cast<char>(length));
        out.append(s.substr(0, length));
    }
    return out;
}

std::optional<uint32_t> soa_minimum(std::string_view rdata) {
    if (rdata.size() < 4) return std::nullopt;
    const auto* p = reinterpret_cast<const uint8_t*>(rdata.data() + rdata.size() - 4);
    return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | p[3];
}

}  // namespace sb::dns
