// The option table's rows of the DNS server (proxy/options/rows_dns.h).
#include "proxy/options/rows_dns.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "base/quote.h"
#include "base/text.h"
#include "dns/dns_options.h"
#include "dns/zone/pod_records.h"
#include "proxy/options/value_checks.h"
#include "rules/dns_local/addresses.h"

namespace sb::proxy {

namespace {

// RFC 1123 labels separated by dots; a trailing dot is dropped.
Result<std::string> parse_domain(std::string_view text) {
    std::string domain = trim_lower(text);
    if (!domain.empty() && domain.back() == '.') domain.pop_back();
    auto bad = [&](const std::string& why) {
        return invalid_value(fmt::format("{}: {}", quote_for_message(text), why));
    };
    if (domain.empty()) return bad("empty domain");
    if (domain.size() > 253) return bad("longer than 253 characters");
    size_t start = 0;
    while (start <= domain.size()) {
        size_t dot = std::min(domain.find('.', start), domain.size());
        std::string_view label = std::string_view(domain).substr(start, dot - start);
        start = dot + 1;
        if (label.empty() || label.size() > 63) return bad("labels must be 1-63 characters");
        if (label.front() == '-' || label.back() == '-')
            return bad("a label starts or ends with -");
        for (char c : label) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
                return bad("only letters, digits, - and . are allowed");
            }
        }
    }
    return domain;
}

// The DNS server (CoreDNS's names where they exist).
void add_dns_server_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--cluster-domain"},
        .role = OptionRole::kCommandLine,
        .default_text = "cluster.local",
        .help = "the cluster's DNS domain",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto domain = parse_domain(text);
            if (!domain) return domain.error();
            context.options.dns.cluster_domain = *domain;
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-listen"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "ADDR[:PORT] list (comma-separated) the DNS server binds; empty: DNS off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns.listen.clear();
            for (const auto& item : split_list(text)) {
                auto address = parse_host_port(item, 53);
                if (!address) return address.error();
                context.options.dns.listen.push_back(*address);
            }
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-local-address"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "IP list (comma-separated, at most 8) put on switchboard's own interface and "
                "answered on port 53 without conntrack or Service DNAT",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            std::vector<IpAddress> addresses;
            for (const auto& item : split_list(text)) {
                auto address = IpAddress::parse(item);
                if (!address) {
                    return invalid_value(
                        fmt::format("{} is not an IP address", quote_for_message(item)));
                }
                addresses.push_back(*address);
            }
            if (auto status = rules::dns_local::validate_addresses(addresses); !status) {
                return status;
            }
            context.options.dns_local_addresses = std::move(addresses);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-ttl"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "30",
        .help = "TTL of cluster answers, 0-3600 seconds",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto ttl = parse_integer(text, 0, 3600);
            if (!ttl) return ttl.error();
            context.options.dns.ttl = static_cast<uint32_t>(*ttl);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-pods"},
        .role = OptionRole::kCommandLine,
        .default_text = "insecure",
        .help = "pod records: disabled, insecure or verified",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (auto status = check_one_of(text, {"disabled", "insecure", "verified"}); !status) {
                return status;
            }
            auto pods = dns::parse_pod_records(text);
            if (!pods) return pods.error();
            context.options.dns.pods = *pods;
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-upstream"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "ADDR[:PORT] list for other names; empty: /etc/resolv.conf's nameservers",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns.upstreams.clear();
            if (text.empty()) return {};
            auto upstreams = dns::parse_upstreams(text);
            if (!upstreams) return upstreams.error();
            context.options.dns.upstreams = std::move(*upstreams);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-autopath"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "answer a Pod's first search expansion with the first name of its search path "
                "that exists (CoreDNS's autopath @kubernetes)",
        .apply = store_bool_in<&Options::dns, &dns::DnsOptions::autopath>,
    });
    table.push_back({
        .names = {"--dns-corefile"},
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "CoreDNS Corefile read at start; it wins over the --dns-* flags (docs/corefile.md)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns_corefile = std::string(text);
            return {};
        },
    });
}

// DNS response-rate limiting (Knot DNS's mod-rrl: docs/dns.md).
void add_rrl_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--dns-rrl"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "0",
        .help = "UDP replies a second per client /24 or /56, reply class and name; 0: off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto rate = parse_integer(text, 0, 1000000);
            if (!rate) return rate.error();
            context.options.dns.rrl.rate = static_cast<uint32_t>(*rate);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-slip"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "1",
        .help = "every Nth rate-limited reply is sent truncated (TC), the others dropped; "
                "0: all dropped",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto slip = parse_integer(text, 0, 100);
            if (!slip) return slip.error();
            context.options.dns.rrl.slip = static_cast<uint32_t>(*slip);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-whitelist"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "CIDRs (comma-separated) whose clients are never rate-limited",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto prefixes = parse_prefix_list(text);
            if (!prefixes) return prefixes.error();
            context.options.dns.rrl.whitelist = std::move(*prefixes);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-table-size"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "393241",
        .help = "buckets of the rate limiter's table (32 bytes each), allocated at start",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto size = parse_integer(text, 1, 1 << 26);
            if (!size) return size.error();
            context.options.dns.rrl.table_size = static_cast<size_t>(*size);
            return {};
        },
    });
}

}  // namespace

std::vector<OptionSpec> dns_rows() {
    std::vector<OptionSpec> table;
    add_dns_server_rows(table);
    add_rrl_rows(table);
    return table;
}

}  // namespace sb::proxy
