#include "rules/ipvs/host_network.h"

#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "rules/dns_local/dns_local.h"
#include "rules/kernel/address_link.h"
#include "rules/kernel/links.h"

namespace sb::rules::ipvs {

namespace {

class KernelHostNetwork final : public HostNetwork {
  public:
    Result<std::vector<IpAddress>> node_addresses() override {
        auto all = rules::interface_addresses();
        if (!all) return all.error();
        // switchboard's own links carry service and DNS addresses, not the
        // node's. 0 when a link does not exist: no interface has index 0.
        const unsigned ipvs_link = if_nametoindex(kLinkName);
        const unsigned dns_link = if_nametoindex(dns_local::kLinkName);
        std::vector<IpAddress> out;
        for (const auto& entry : *all) {
            if (entry.interface_index == ipvs_link || entry.interface_index == dns_link) continue;
            out.push_back(entry.address);
        }
        return out;
    }

    Result<std::vector<IpAddress>> link_addresses() override {
        auto present = rules::link_addresses(kLinkName);
        if (!present) return present.error();
        return present->value_or(std::vector<IpAddress>());
    }

    Status ensure_link(const std::vector<IpAddress>& addresses) override {
        return rules::ensure_address_link(kLinkName, addresses);
    }

    Status remove_link() override { return rules::remove_address_link(kLinkName); }

    Status set_sysctl(const std::string& path, const std::string& value) override {
        const std::string file = "/proc/sys/" + path;
        std::ofstream out(file);
        if (out) out << value << '\n';
        out.close();
        if (!out) {
            return make_error(ErrorCode::kKernel, fmt::format("write {} to {}", value, file),
                              errno);
        }
        return {};
    }
};

}  // namespace

std::unique_ptr<HostNetwork> make_host_network() {
    return std::make_unique<KernelHostNetwork>();
}

}  // namespace sb::rules::ipvs
