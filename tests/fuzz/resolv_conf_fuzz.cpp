// libFuzzer target: the node's resolv.conf as the forwarder reads it
// (dns/resolv_conf.h). Invariants checked: nothing crashes or reads out of
// bounds (ASan/UBSan); there are never more nameservers than lines; every
// nameserver is on port 53; the nameservers written back as a resolv.conf
// parse to the same list. Search domains: at most kMaxResolvConfSearches,
// each a DNS name of at most 253 characters without a trailing dot, and a
// search line written from them parses to the same list.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "dns/resolv_conf.h"
#include "dns/wire.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto nameservers = sb::dns::parse_resolv_conf_nameservers(text);
    FUZZ_REQUIRE(nameservers.size() <=
                 static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
    std::string written;
    for (const auto& nameserver : nameservers) {
        FUZZ_REQUIRE(nameserver.port == 53);
        written += "nameserver " + nameserver.address.to_string() + "\n";
    }
    FUZZ_REQUIRE(sb::dns::parse_resolv_conf_nameservers(written) == nameservers);

    auto searches = sb::dns::parse_resolv_conf_searches(text);
    FUZZ_REQUIRE(searches.size() <= sb::dns::kMaxResolvConfSearches);
    std::string line = "search";
    for (const auto& search : searches) {
        FUZZ_REQUIRE(!search.empty() && search.size() <= 253 && search.back() != '.');
        FUZZ_REQUIRE(sb::dns::name_from_text(search).ok());
        line += " " + search;
    }
    FUZZ_REQUIRE(sb::dns::parse_resolv_conf_searches(line + "\n") == searches);
    return 0;
}
