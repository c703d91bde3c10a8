// libFuzzer target: the hosts(5) parser of the Corefile's `hosts` plugin (a
// file outside switchboard's control, e.g. k3s's NodeHosts) and the table
// built from it. Invariants checked: nothing crashes, hangs or reads out of
// bounds (ASan/UBSan); every mapped name is lower-case wire form under the
// plugin's zone; each mapped name answers its address type from the table.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dns/zone/hosts.h"

namespace {

using namespace sb;

bool lower_case(const std::string& wire) {
    for (char c : wire) {
        if (c >= 'A' && c <= 'Z') return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    dns::ZoneSet zones{{*dns::name_from_text(".")}};
    auto mappings = dns::parse_hosts(text, zones);
    if (!mappings) {
        if (mappings.error().message.find('\n') != std::string::npos) std::abort();
        return 0;
    }
    for (const auto& mapping : *mappings) {
        if (mapping.name.empty() || mapping.name.size() > 255 || !lower_case(mapping.name)) {
            std::abort();
        }
    }
    dns::HostsOptions options;
    options.file.clear();
    options.zones = zones;
    auto table = dns::HostsTable::build(options, *mappings);
    for (const auto& mapping : *mappings) {
        dns::Question question{mapping.name,
                               mapping.address.is_v4() ? dns::type::kA : dns::type::kAAAA,
                               dns::kClassIN};
        std::vector<dns::Record> answers;
        if (table->answer(question, mapping.name, answers) != dns::HostsTable::Verdict::kReply ||
            answers.empty()) {
            std::abort();
        }
    }
    return 0;
}
