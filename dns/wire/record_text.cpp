#include "dns/wire/record_text.h"

#include <fmt/format.h>

namespace sb::dns {

namespace {

std::string unknown_rdata(const std::string& rdata) {
    std::string text = "\\# " + std::to_string(rdata.size());
    if (!rdata.empty()) text += ' ';
    for (unsigned char byte : rdata) text += fmt::format("{:02X}", byte);
    return text;
}

uint16_t read16(const std::string& bytes, size_t at) {
    return static_cast<uint16_t>(static_cast<unsigned char>(bytes[at]) << 8 |
                                 static_cast<unsigned char>(bytes[at + 1]));
}

// Whether `bytes` is exactly one uncompressed wire name.
bool is_whole_name(std::string_view bytes) {
    if (bytes.empty() || bytes.size() > kMaxNameLength) return false;
    size_t at = 0;
    while (at < bytes.size()) {
        const auto length = static_cast<unsigned char>(bytes[at]);
        if (length == 0) return at + 1 == bytes.size();
        if (length > kMaxLabelLength) return false;
        at += 1 + length;
    }
    return false;
}

// `rdata` as one whole wire name; empty when it is not one.
std::string name_text(std::string_view rdata) {
    return is_whole_name(rdata) ? name_to_text(rdata) : std::string();
}

}  // namespace

std::string rdata_text(const Record& record) {
    const std::string& rdata = record.rdata;
    switch (record.rtype) {
        case type::kA:
            if (rdata.size() == 4) {
                return IpAddress::from_bytes(IpFamily::kV4,
                                             reinterpret_cast<const uint8_t*>(rdata.data()))
                    .to_string();
            }
            break;
        case type::kAAAA:
            if (rdata.size() == 16) {
                return IpAddress::from_bytes(IpFamily::kV6,
                                             reinterpret_cast<const uint8_t*>(rdata.data()))
                    .to_string();
            }
            break;
        case type::kCNAME:
        case type::kPTR:
        case type::kNS:
            if (auto text = name_text(rdata); !text.empty()) return text;
            break;
        case type::kSRV:
            if (rdata.size() > 6) {
                if (auto target = name_text(std::string_view(rdata).substr(6)); !target.empty()) {
                    return fmt::format("{} {} {} {}", read16(rdata, 0), read16(rdata, 2),
                                       read16(rdata, 4), target);
                }
            }
            break;
        default:
            break;
    }
    return unknown_rdata(rdata);
}

std::string record_text(const Record& record) {
    return fmt::format("{} {} IN {} {}", name_to_text(record.name), record.ttl,
                       type_name(record.rtype), rdata_text(record));
}

}  // namespace sb::dns
