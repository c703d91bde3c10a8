// Zone's warm-state codec (zone.h: state_bytes, from_state_bytes). The
// bytes outlive the process in the node state folder (docs/dns.md, "Warm
// start"), so the reader treats them as outside bytes: every length is
// checked against what is left, every name and rdata is checked for the
// shape the resolver relies on, and the whole payload is checksummed.
//
// Layout (integers little-endian):
//   "SBZONE" u16 version u32 payload-length u32 crc32(payload) payload
//   payload: identity(u16 len) domain(u8 len) u32 ttl u8 pods u8 endpoints
//            u8 endpoint_pod_names u32 serial
//            u32 names, each: name(u8 len) u16 rrsets, each: u16 type
//                u32 rdatas, each: rdata(u16 len)
//            u32 namespaces, each: ns(u8 len)
//            u32 pods, each: key(u16 len)
#include <fmt/format.h>
#include <boost/crc.hpp>

#include <cstring>
#include <functional>

#include "dns/zone/zone.h"

namespace sb::dns {

namespace {

constexpr std::string_view kMagic = "SBZONE";
constexpr uint16_t kFormatVersion = 1;
constexpr size_t kStateHeaderSize = kMagic.size() + 2 + 4 + 4;

uint32_t checksum(std::string_view bytes) {
    boost::crc_32_type crc;
    crc.process_bytes(bytes.data(), bytes.size());
    return crc.checksum();
}

// Writes the format's integers and strings to `sink` in pieces of about
// kPiece bytes, counting them and taking their CRC-32 on the way.
class StateWriter {
  public:
    static constexpr size_t kPiece = 64 * 1024;
    // The last piece is handed over by flush(), not by the destructor: a
    // sink may throw, and the destructor runs while that exception unwinds.
    explicit StateWriter(const std::function<void(std::string_view)>& sink) : sink_(sink) {}
    StateWriter(const StateWriter&) = delete;
    StateWriter& operator=(const StateWriter&) = delete;

    void u8(uint8_t value) { little_endian(value, 1); }
    void u16(uint16_t value) { little_endian(value, 2); }
    void u32(uint32_t value) { little_endian(value, 4); }
    // Precondition: `bytes` fits the length field (the zone's own names and
    // rdatas always do).
    void text8(std::string_view bytes) {
        u8(static_cast<uint8_t>(bytes.size()));
        put(bytes);
    }
    void text16(std::string_view bytes) {
        u16(static_cast<uint16_t>(bytes.size()));
        put(bytes);
    }
    void put(std::string_view bytes) {
        crc_.process_bytes(bytes.data(), bytes.size());
        written_ += bytes.size();
        buffer_ += bytes;
        if (buffer_.size() >= kPiece) flush();
    }
    void flush() {
        if (buffer_.empty()) return;
        sink_(buffer_);
        buffer_.clear();
    }
    size_t written() const { return written_; }
    uint32_t checksum() const { return crc_.checksum(); }

  private:
    void little_endian(uint32_t value, int width) {
        char bytes[4];
        for (int i = 0; i < width; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
        put(std::string_view(bytes, static_cast<size_t>(width)));
    }
    const std::function<void(std::string_view)>& sink_;
    std::string buffer_;
    boost::crc_32_type crc_;
    size_t written_ = 0;
};

// Reads what StateWriter wrote; the first short read sets failed() and
// every later read returns zeros, so a caller checks once per item.
class StateReader {
  public:
    explicit StateReader(std::string_view in) : in_(in) {}
    bool failed() const { return failed_; }
    size_t left() const { return in_.size(); }
    uint8_t u8() { return static_cast<uint8_t>(little_endian(1)); }
    uint16_t u16() { return static_cast<uint16_t>(little_endian(2)); }
    uint32_t u32() { return little_endian(4); }
    std::string_view text8() { return take(u8()); }
    std::string_view text16() { return take(u16()); }

  private:
    uint32_t little_endian(size_t width) {
        auto bytes = take(width);
        uint32_t value = 0;
        for (size_t i = 0; i < bytes.size(); ++i) {
            value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
        }
        return value;
    }
    std::string_view take(size_t n) {
        if (failed_ || n > in_.size()) {
            failed_ = true;
            return {};
        }
        auto taken = in_.substr(0, n);
        in_.remove_prefix(n);
        return taken;
    }
    std::string_view in_;
    bool failed_ = false;
};

// The length of the uncompressed wire name at the start of `bytes` (labels
// of 1-63 bytes, at most 255 in all, ending with the root), or 0 when there
// is none. `lower`: no ASCII capital in a label either.
size_t wire_name_length(std::string_view bytes, bool lower) {
    size_t at = 0;
    while (at < bytes.size() && at < kMaxNameLength) {
        auto length = static_cast<uint8_t>(bytes[at]);
        if (length == 0) return at + 1;
        if (length > kMaxLabelLength || at + 1 + length > bytes.size()) return 0;
        if (lower) {
            for (size_t i = at + 1; i <= at + length; ++i) {
                if (bytes[i] >= 'A' && bytes[i] <= 'Z') return 0;
            }
        }
        at += 1 + length;
    }
    return 0;
}

bool is_wire_name(std::string_view bytes) {
    return !bytes.empty() && wire_name_length(bytes, false) == bytes.size();
}

// Whether `rdata` has the shape the resolver writes for `rtype`: the types
// a zone holds, nothing else.
bool valid_rdata(uint16_t rtype, std::string_view rdata) {
    switch (rtype) {
        case type::kA:
            return rdata.size() == 4;
        case type::kAAAA:
            return rdata.size() == 16;
        case type::kNS:
        case type::kCNAME:
        case type::kPTR:
            return is_wire_name(rdata);
        case type::kSRV:
            return rdata.size() > 6 && is_wire_name(rdata.substr(6));
        case type::kSOA: {
            size_t mname = wire_name_length(rdata, false);
            if (mname == 0) return false;
            size_t rname = wire_name_length(rdata.substr(mname), false);
            return rname != 0 && rdata.size() == mname + rname + 20;
        }
        case type::kTXT: {
            size_t at = 0;
            while (at < rdata.size()) at += 1 + static_cast<uint8_t>(rdata[at]);
            return !rdata.empty() && at == rdata.size();
        }
        default:
            return false;
    }
}

Error state_error(std::string message) {
    return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// A name the zone may hold: under its origin, or a reverse name.
bool zone_may_hold(std::string_view name, std::string_view origin) {
    static const std::string v4 = *name_from_text("in-addr.arpa");
    static const std::string v6 = *name_from_text("ip6.arpa");
    return name_is_under(name, origin) || name_is_under(name, v4) || name_is_under(name, v6);
}

// One name's RRsets, each type once and in order, each rdata valid.
Result<Zone::Node> read_node(StateReader& in) {
    uint16_t rrset_count = in.u16();
    std::vector<Zone::RRset> rrsets;
    for (uint16_t i = 0; i < rrset_count && !in.failed(); ++i) {
        uint16_t rtype = in.u16();
        if (!rrsets.empty() && rtype <= rrsets.back().rtype) {
            return state_error("RRsets out of order");
        }
        uint32_t rdata_count = in.u32();
        if (rdata_count == 0 || rdata_count > in.left() / 2) return state_error("bad rdata count");
        std::vector<Zone::Rdata> rdatas;
        rdatas.reserve(rdata_count);
        for (uint32_t j = 0; j < rdata_count && !in.failed(); ++j) {
            std::string_view rdata = in.text16();
            if (in.failed()) break;
            if (!valid_rdata(rtype, rdata)) {
                return state_error(fmt::format("a record of type {} is malformed", rtype));
            }
            rdatas.push_back(Zone::Rdata{std::string(rdata), 1});
        }
        rrsets.push_back(Zone::RRset{rtype, Zone::Rdatas{OneOrMany(std::move(rdatas))}});
    }
    if (in.failed()) return state_error("truncated");
    return Zone::Node{OneOrMany(std::move(rrsets))};
}

}  // namespace

void Zone::write_state(std::string_view identity,
                       const std::function<void(std::string_view)>& sink) const {
    // Two passes over the zone: the first for the header's length and
    // checksum, which precede the payload; so the bytes are never held
    // whole (11 MB at 10k Services).
    auto payload = [this, identity](StateWriter& out) {
        out.text16(identity.substr(0, 0xffff));
        out.text8(config_.domain.substr(0, 0xff));
        out.u32(config_.ttl);
        out.u8(static_cast<uint8_t>(config_.pods));
        out.u8(config_.endpoints ? 1 : 0);
        out.u8(config_.endpoint_pod_names ? 1 : 0);
        out.u32(serial_);
        out.u32(static_cast<uint32_t>(name_count()));
        for_each_name([&out](const std::string& name, const Node& node) {
            out.text8(name);
            out.u16(static_cast<uint16_t>(node.rrsets.size()));
            for (const auto& rrset : node.rrsets) {
                out.u16(rrset.rtype);
                out.u32(static_cast<uint32_t>(rrset.rdatas.size()));
                for (const auto& rdata : rrset.rdatas) out.text16(rdata);
            }
        });
        out.u32(static_cast<uint32_t>(namespaces_.size()));
        namespaces_.for_each([&out](const std::string& ns, uint32_t) { out.text8(ns); });
        out.u32(static_cast<uint32_t>(pods_.size()));
        pods_.for_each([&out](const std::string& key, uint32_t) { out.text16(key); });
    };
    const std::function<void(std::string_view)> discard = [](std::string_view) {};
    size_t length = 0;
    uint32_t sum = 0;
    {
        StateWriter measure(discard);
        payload(measure);
        length = measure.written();
        sum = measure.checksum();
    }
    StateWriter out(sink);
    out.put(kMagic);
    out.u16(kFormatVersion);
    out.u32(static_cast<uint32_t>(length));
    out.u32(sum);
    payload(out);
    out.flush();
}

std::string Zone::state_bytes(std::string_view identity) const {
    std::string bytes;
    write_state(identity, [&bytes](std::string_view piece) { bytes += piece; });
    return bytes;
}

Result<std::shared_ptr<const Zone>> Zone::from_state_bytes(std::string_view bytes,
                                                           const ZoneConfig& config,
                                                           std::string_view identity) {
    if (bytes.size() > kMaxStateBytes) {
        return state_error(fmt::format("{} bytes, more than {}", bytes.size(), kMaxStateBytes));
    }
    if (bytes.size() < kStateHeaderSize || bytes.substr(0, kMagic.size()) != kMagic) {
        return state_error("not a zone state");
    }
    StateReader header(bytes.substr(kMagic.size(), kStateHeaderSize - kMagic.size()));
    const uint16_t version = header.u16();
    const uint32_t length = header.u32();
    const uint32_t sum = header.u32();
    if (version != kFormatVersion) {
        return state_error(
            fmt::format("format version {}, this binary reads {}", version, kFormatVersion));
    }
    std::string_view payload = bytes.substr(kStateHeaderSize);
    if (payload.size() != length) return state_error("truncated");
    if (checksum(payload) != sum) return state_error("checksum mismatch");

    StateReader in(payload);
    if (in.text16() != identity) {
        return state_error("written in another boot or network namespace");
    }
    const std::string_view domain = in.text8();
    const uint32_t ttl = in.u32();
    const uint8_t pods = in.u8();
    const bool endpoints = in.u8() != 0;
    const bool endpoint_pod_names = in.u8() != 0;
    const uint32_t serial = in.u32();
    if (in.failed()) return state_error("truncated");
    if (domain != config.domain || ttl != config.ttl || pods != static_cast<uint8_t>(config.pods) ||
        endpoints != config.endpoints || endpoint_pod_names != config.endpoint_pod_names) {
        return state_error("made with another cluster domain, ttl or record options");
    }
    auto origin = name_from_text(config.domain);
    if (!origin) return origin.error();

    const uint32_t name_count = in.u32();
    if (name_count > in.left() / 4) return state_error("bad name count");
    // Shards as for the cluster the names come from (about 14 a Service).
    std::shared_ptr<Zone> zone(new Zone(name_count / 14));
    zone->config_ = config;
    zone->origin_ = name_lower(*origin);
    zone->svc_zone_ = name_lower(*name_from_text("svc." + config.domain));
    zone->synced_ = true;
    zone->serial_ = serial;
    zone->soa_ = zone->soa_for(zone->origin_);

    for (uint32_t i = 0; i < name_count; ++i) {
        std::string_view name = in.text8();
        if (in.failed()) return state_error("truncated");
        if (wire_name_length(name, true) != name.size() || !zone_may_hold(name, zone->origin_)) {
            return state_error("a name is malformed or outside the zone");
        }
        auto node = read_node(in);
        if (!node) return node.error();
        const std::optional<std::string> reverse = reverse_key(name);
        bool added = false;
        Name& stored = zone->names_.writable(reverse ? *reverse : std::string(name), added);
        if (!added) return state_error("a name is listed twice");
        stored.node = std::move(*node);
        stored.owners = 1;
    }
    const uint32_t namespace_count = in.u32();
    if (namespace_count > in.left()) return state_error("bad namespace count");
    for (uint32_t i = 0; i < namespace_count && !in.failed(); ++i) {
        zone->namespaces_.set(std::string(in.text8()), 1);
    }
    const uint32_t pod_count = in.u32();
    if (pod_count > in.left() / 2) return state_error("bad pod count");
    for (uint32_t i = 0; i < pod_count && !in.failed(); ++i) {
        zone->pods_.set(std::string(in.text16()), 1);
    }
    if (in.failed()) return state_error("truncated");
    if (in.left() != 0) return state_error("trailing bytes");
    if (!zone->find(zone->origin_)) return state_error("no apex");
    return std::shared_ptr<const Zone>(std::move(zone));
}

}  // namespace sb::dns
