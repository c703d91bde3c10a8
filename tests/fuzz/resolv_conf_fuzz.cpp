// libFuzzer target: the node's resolv.conf as the forwarder reads it
// (dns/search_path/resolv_conf.h). Invariants checked: nothing crashes or reads out of
// bounds (ASan/UBSan); there are never more nameservers than lines; every
// nameserver is on port 53; the nameservers written back as a resolv.conf
// parse to the same list. Search domains: at most kMaxResolvConfSearches,
// each a DNS name of at most 253 characters without a trailing dot, and a
// search line written from them parses to the same list. The whole file as
// kubelet reads it: options unique by name, and a Pod's resolv.conf composed
// from it within kubelet's limits (3 nameservers, 32 domains, 2048 characters).
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "dns/search_path/pod_resolv_conf.h"
#include "dns/search_path/resolv_conf.h"
#include "dns/search_path/search_limits.h"
#include "dns/wire/wire.h"
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

    const auto kubelet = sb::dns::parse_resolv_conf_as_kubelet(text);
    for (size_t i = 0; i < kubelet.options.size(); ++i) {
        const std::string name = kubelet.options[i].substr(0, kubelet.options[i].find(':'));
        for (size_t j = i + 1; j < kubelet.options.size(); ++j) {
            FUZZ_REQUIRE(kubelet.options[j].substr(0, kubelet.options[j].find(':')) != name);
        }
    }
    sb::dns::KubeletDnsSettings settings;
    settings.cluster_dns = {"10.96.0.10"};
    settings.cluster_domain = "cluster.local";
    settings.node = kubelet;
    for (auto policy : {sb::watch::DnsPolicy::kClusterFirst, sb::watch::DnsPolicy::kDefault}) {
        sb::watch::Pod pod;
        pod.meta.ns = "default";
        pod.dns_policy = policy;
        auto conf = sb::dns::compose_pod_resolv_conf(pod, settings);
        FUZZ_REQUIRE(conf.ok());
        FUZZ_REQUIRE(conf->nameservers.size() <= sb::dns::kMaxPodNameservers);
        FUZZ_REQUIRE(conf->searches.size() <= sb::dns::kMaxSearchPaths);
        size_t joined = 0;
        for (const auto& search : conf->searches) {
            FUZZ_REQUIRE(search.size() <= sb::dns::kMaxSearchDomainChars);
            joined += search.size() + 1;
        }
        FUZZ_REQUIRE(joined <= sb::dns::kMaxSearchListChars + 1);
    }
    return 0;
}
