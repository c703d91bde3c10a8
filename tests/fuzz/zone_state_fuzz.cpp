// libFuzzer target: the warm DNS state's bytes as a new process reads them
// from the node state folder (Zone::from_state_bytes, dns/zone/zone_state.cpp),
// with the identity "fuzz" and the default configuration (the seed corpus
// holds states written for them). An input whose first byte is even is read
// as it is (the header and checksum checks); one whose first byte is odd is
// the payload after it, given a header with its true length and checksum,
// so that mutations reach the records instead of failing the checksum.
// Invariants checked: nothing crashes or reads out of bounds (ASan/UBSan);
// a zone read back is synced and holds its apex; every name it holds is
// found again by find(); its own state bytes read back to a zone of as many
// names.
#include <boost/crc.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "dns/zone/zone.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void little_endian(std::string& out, uint32_t value, int width) {
    for (int i = 0; i < width; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// "SBZONE", version 1, the payload's length and CRC-32, the payload.
std::string with_header(std::string_view payload) {
    boost::crc_32_type crc;
    crc.process_bytes(payload.data(), payload.size());
    std::string out = "SBZONE";
    little_endian(out, 1, 2);
    little_endian(out, static_cast<uint32_t>(payload.size()), 4);
    little_endian(out, crc.checksum(), 4);
    out += payload;
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const bool payload_only = size > 0 && (data[0] & 1) != 0;
    const std::string bytes = payload_only ? with_header(input.substr(1)) : std::string(input);
    const sb::dns::ZoneConfig config;
    auto zone = sb::dns::Zone::from_state_bytes(bytes, config, "fuzz");
    if (!zone) {
        FUZZ_REQUIRE(!zone.error().message.empty());
        return 0;
    }
    const sb::dns::Zone& restored = **zone;
    FUZZ_REQUIRE(restored.synced());
    FUZZ_REQUIRE(restored.find(restored.origin()) != nullptr);
    restored.for_each_name([&restored](const std::string& name, const sb::dns::Zone::Node&) {
        FUZZ_REQUIRE(restored.find(name) != nullptr);
    });
    auto again = sb::dns::Zone::from_state_bytes(restored.state_bytes("fuzz"), config, "fuzz");
    FUZZ_REQUIRE(again.ok());
    FUZZ_REQUIRE((*again)->name_count() == restored.name_count());
    return 0;
}
