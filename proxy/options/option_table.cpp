#include "proxy/options/option_table.h"

#include <string>

#include "proxy/options/command_line.h"
#include "proxy/options/rows_dns.h"
#include "proxy/options/rows_ignored.h"
#include "proxy/options/rows_kube_proxy.h"

namespace sb::proxy {

namespace {

// The groups in --help's order; kube_proxy_rows() starts with --proxy-mode,
// which the rows after it read.
std::vector<OptionSpec> build_table() {
    std::vector<OptionSpec> table;
    for (auto rows : {kube_proxy_rows, dns_rows, run_rows, ignored_rows}) {
        for (auto& spec : rows()) table.push_back(std::move(spec));
    }
    return table;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
    static const std::vector<OptionSpec> table = build_table();
    return table;
}

const OptionSpec* find_flag(std::string_view name) {
    const std::string normalized = normalised_flag_name(name);
    for (const auto& spec : option_table()) {
        for (auto candidate : spec.names) {
            if (candidate == normalized) return &spec;
        }
    }
    return nullptr;
}

}  // namespace sb::proxy
