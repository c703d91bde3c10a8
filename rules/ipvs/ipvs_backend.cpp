#include "rules/ipvs/ipvs_backend.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "rules/conntrack_kernel.h"
#include "rules/ipvs/diff.h"
#include "rules/ipvs/helper_rules.h"
#include "rules/ipvs/render.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/netlink.h"
#include "rules/validate.h"

namespace sb::rules::ipvs {

namespace {

// The node's addresses where NodePorts answer: inside --nodeport-addresses
// (all when empty), never loopback (route_localnet is off) or IPv6
// link-local (kube-proxy's IPVS mode skips both).
std::vector<IpAddress> node_port_addresses(const std::vector<IpAddress>& node,
                                           const BackendOptions& options) {
    std::vector<IpAddress> out;
    for (const IpAddress& address : node) {
        if (address.is_loopback() || address.is_link_local() || address.is_unspecified()) {
            continue;
        }
        const bool selected =
            options.nodeport_addresses.empty() ||
            std::any_of(options.nodeport_addresses.begin(), options.nodeport_addresses.end(),
                        [&](const Prefix& prefix) { return prefix.contains(address); });
        if (selected) out.push_back(address);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<IpAddress> sorted_unique(std::vector<IpAddress> addresses) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    return addresses;
}

// `a` without the addresses in `b` (both sorted).
std::vector<IpAddress> without(const std::vector<IpAddress>& a, const std::vector<IpAddress>& b) {
    std::vector<IpAddress> out;
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

std::vector<IpAddress> joined(const std::vector<IpAddress>& a, const std::vector<IpAddress>& b) {
    std::vector<IpAddress> out;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
}

// What the kernel holds after `op` succeeded, so that the next sync diffs
// against it without listing the table again.
void apply_to_state(IpvsState& state, const Op& op) {
    auto destination_of = [&](Service& service) {
        auto& list = service.destinations;
        return std::find_if(list.begin(), list.end(),
                            [&](const RealServer& r) { return r.id() == op.destination.id(); });
    };
    switch (op.kind) {
        case OpKind::kAddService:
            state[op.server.key] = Service{op.server, {}};
            return;
        case OpKind::kEditService:
            state[op.server.key].server = op.server;
            return;
        case OpKind::kDeleteService:
            state.erase(op.server.key);
            return;
        case OpKind::kAddDestination: {
            auto& list = state[op.server.key].destinations;
            auto at = std::lower_bound(
                list.begin(), list.end(), op.destination,
                [](const RealServer& a, const RealServer& b) { return a.id() < b.id(); });
            list.insert(at, op.destination);
            return;
        }
        case OpKind::kEditDestination: {
            Service& service = state[op.server.key];
            if (auto it = destination_of(service); it != service.destinations.end()) {
                it->weight = op.destination.weight;
            }
            return;
        }
        case OpKind::kDeleteDestination: {
            Service& service = state[op.server.key];
            if (auto it = destination_of(service); it != service.destinations.end()) {
                service.destinations.erase(it);
            }
            return;
        }
    }
}

class IpvsBackend final : public Backend {
  public:
    IpvsBackend(BackendOptions options, BackendEdges edges)
        : options_(std::move(options)),
          open_kernel_(std::move(edges.open_kernel)),
          open_helper_(std::move(edges.open_helper_table)),
          host_(std::move(edges.host)),
          conntrack_(std::move(edges.conntrack)),
          now_(std::move(edges.now)) {}

    const char* name() const override { return "ipvs"; }

    // The steps, in the order that leaves no gap for traffic: the new
    // service addresses onto the link (old ones stay), the helper table
    // (one transaction), the virtual servers (one request per change), then
    // the addresses nothing uses any more off the link.
    Result<SyncStats> sync(const Plan& plan, const Plan* previous) override {
        if (Status s = validate_options(options_); !s) return s.error();
        if (Status s = ensure_open(); !s) return s.error();
        prepare_node();
        auto node = host_->node_addresses();
        if (!node) return node.error();
        const std::vector<IpAddress> node_ports = node_port_addresses(*node, options_);
        Rendered rendered = render(plan, options_, node_ports);
        // --ipvs-exclude-cidrs: never added there either.
        std::erase_if(rendered.services, [&](const auto& entry) {
            return std::any_of(
                options_.ipvs_exclude_cidrs.begin(), options_.ipvs_exclude_cidrs.end(),
                [&](const Prefix& prefix) { return prefix.contains(entry.first.address); });
        });
        const std::vector<IpAddress> wanted_link =
            without(sorted_unique(rendered.link_addresses), sorted_unique(*node));

        SyncStats stats;
        stats.full = previous == nullptr || !ipvs_known_;
        stats.services = plan.services.size();
        if (Status s = add_link_addresses(wanted_link); !s) return s.error();
        auto helper_objects = sync_helper_table(plan, wanted_link);
        if (!helper_objects) return helper_objects.error();
        auto ipvs_requests = sync_virtual_servers(rendered.services, node_ports, stats.full);
        if (!ipvs_requests) return ipvs_requests.error();
        if (Status s = set_link_addresses(wanted_link); !s) return s.error();
        stats.objects_sent = *helper_objects + *ipvs_requests;
        stats.draining_real_servers = drains_.started.size();
        stats.conntrack = conntrack_.reconcile(plan, previous);
        return stats;
    }

    Status cleanup() override {
        ipvs_known_ = false;
        link_known_ = false;
        helper_known_ = false;
        Status result;
        auto keep_first_error = [&](Status s, const char* what) {
            if (!s && result) {
                result = make_error(s.error().code, std::string(what) + ": " + s.error().message,
                                    s.error().errno_value);
            }
        };
        keep_first_error(delete_virtual_servers(), "ipvs");
        if (Status s = ensure_helper(); !s) {
            keep_first_error(s, "helper table");
        } else {
            keep_first_error(helper_->delete_table(), "helper table");
        }
        keep_first_error(host_->remove_link(), kLinkName);
        return result;
    }

    // `ipvsadm -Sn` text of the virtual servers, a blank line, then the
    // helper table in `nft -f` syntax. Reads the node's addresses (for the
    // NodePort servers); changes nothing.
    Result<std::string> render_text(const Plan& plan) override {
        if (Status s = validate_options(options_); !s) return s.error();
        auto node = host_->node_addresses();
        if (!node) return node.error();
        Rendered rendered = render(plan, options_, node_port_addresses(*node, options_));
        const std::vector<IpAddress> link =
            without(sorted_unique(rendered.link_addresses), sorted_unique(*node));
        return to_ipvsadm_text(rendered.services) + "\n" +
               nftables::to_nft_text(render_helper_rules(plan, options_, link));
    }

  private:
    Status ensure_open() {
        if (!kernel_) {
            auto kernel = open_kernel_();
            if (!kernel) return kernel.error();
            kernel_ = std::move(*kernel);
        }
        return ensure_helper();
    }

    Status ensure_helper() {
        if (helper_) return {};
        auto channel = open_helper_();
        if (!channel) return channel.error();
        helper_ = std::move(*channel);
        return {};
    }

    // kube-proxy's IPVS settings, once per process: conntrack for IPVS
    // connections (the helper table's masquerade and the UDP conntrack
    // cleanup need it: a failure fails the sync), expiry of connections to
    // deleted real servers and of persistence templates, forwarding, strict
    // ARP when asked, and the IPVS timeouts. The others log once and go on.
    void prepare_node() {
        if (prepared_) return;
        struct Setting {
            const char* path;
            const char* value;
        };
        std::vector<Setting> settings = {{"net/ipv4/vs/conntrack", "1"},
                                         {"net/ipv4/vs/expire_nodest_conn", "1"},
                                         {"net/ipv4/vs/expire_quiescent_template", "1"},
                                         {"net/ipv4/ip_forward", "1"}};
        if (options_.ipvs_strict_arp) {
            settings.push_back({"net/ipv4/conf/all/arp_ignore", "1"});
            settings.push_back({"net/ipv4/conf/all/arp_announce", "2"});
        }
        for (const Setting& setting : settings) {
            if (Status s = host_->set_sysctl(setting.path, setting.value); !s) {
                log::warn("ipvs: {}", s.error().describe());
            }
        }
        const Timeouts timeouts{options_.ipvs_tcp_timeout_seconds,
                                options_.ipvs_tcp_fin_timeout_seconds,
                                options_.ipvs_udp_timeout_seconds};
        if (Status s = kernel_->set_timeouts(timeouts); !s) {
            log::warn("ipvs: set the connection timeouts: {}", s.error().describe());
        }
        prepared_ = true;
    }

    Status add_link_addresses(const std::vector<IpAddress>& wanted) {
        if (!link_known_) {
            auto present = host_->link_addresses();
            if (!present) return present.error();
            link_now_ = sorted_unique(*present);
            link_known_ = true;
        }
        return set_link_addresses(joined(link_now_, wanted));
    }

    Status set_link_addresses(const std::vector<IpAddress>& addresses) {
        if (addresses == link_now_) return {};
        if (Status s = host_->ensure_link(addresses); !s) {
            link_known_ = false;
            return s;
        }
        link_now_ = addresses;
        return {};
    }

    // One transaction; against the table read back after a restart or a
    // failure (refilled whole, still atomic), else against the last one
    // written (only the changed elements).
    Result<size_t> sync_helper_table(const Plan& plan, const std::vector<IpAddress>& link) {
        nftables::Model desired = render_helper_rules(plan, options_, link);
        nftables::Delta delta;
        if (helper_known_) {
            delta = nftables::diff(helper_model_, desired, true);
        } else {
            auto kernel = helper_->read_table();
            if (!kernel) return kernel.error();
            nftables::Model empty;
            empty.table = kHelperTable;
            delta = *kernel ? nftables::diff(**kernel, desired, false)
                            : nftables::diff(empty, desired, true);
        }
        const size_t objects = delta.objects(desired);
        if (!delta.empty()) {
            if (Status s = helper_->apply(delta, desired); !s) {
                helper_known_ = false;
                return s.error();
            }
        }
        helper_model_ = std::move(desired);
        helper_known_ = true;
        return objects;
    }

    Ownership ownership(const std::vector<IpAddress>& node_ports) const {
        return Ownership{link_now_, node_ports, options_.ipvs_exclude_cidrs};
    }

    // The kernel's listing on a full sync (and after a failure), else the
    // state the last sync left; the draining real servers' connection
    // counts are read afresh either way.
    Result<size_t> sync_virtual_servers(const IpvsState& desired,
                                        const std::vector<IpAddress>& node_ports, bool full) {
        if (full || !ipvs_known_) {
            auto listing = kernel_->list();
            if (!listing) return listing.error();
            current_ = owned_part(*listing, ownership(node_ports));
            ipvs_known_ = true;
        } else {
            for (const ServiceKey& key : draining(drains_)) {
                auto it = current_.find(key);
                if (it == current_.end()) continue;
                auto destinations = kernel_->list_destinations(key);
                if (!destinations) {
                    ipvs_known_ = false;
                    return destinations.error();
                }
                it->second.destinations = std::move(*destinations);
            }
        }
        const std::vector<Op> ops = diff(desired, current_, drains_, now_(), kDrainBound);
        for (const Op& op : ops) {
            if (Status s = kernel_->apply(op); !s) {
                ipvs_known_ = false;
                return s.error();  // naming the op (kernel.h)
            }
            apply_to_state(current_, op);
        }
        return ops.size();
    }

    // --cleanup: every virtual server of switchboard's; none when this
    // kernel has no IPVS.
    Status delete_virtual_servers() {
        if (!kernel_) {
            auto kernel = open_kernel_();
            if (!kernel) {
                if (kernel.error().code == ErrorCode::kNotFound) return {};
                return kernel.error();
            }
            kernel_ = std::move(*kernel);
        }
        auto node = host_->node_addresses();
        if (!node) return node.error();
        auto link = host_->link_addresses();
        if (!link) return link.error();
        link_now_ = sorted_unique(*link);
        auto listing = kernel_->list();
        if (!listing) return listing.error();
        const IpvsState owned_servers =
            owned_part(*listing, ownership(node_port_addresses(*node, options_)));
        for (const auto& [key, service] : owned_servers) {
            Op op{OpKind::kDeleteService, service.server, {}};
            if (Status s = kernel_->apply(op); !s) return s;
        }
        drains_ = {};
        return {};
    }

    BackendOptions options_;
    KernelOpener open_kernel_;
    nftables::ChannelOpener open_helper_;
    std::unique_ptr<HostNetwork> host_;
    UdpConntrackReconciler conntrack_;
    std::function<std::chrono::steady_clock::time_point()> now_;

    std::unique_ptr<IpvsKernel> kernel_;
    std::unique_ptr<nftables::Channel> helper_;
    bool prepared_ = false;
    // What the kernel holds, as far as the last sync knows (false: read it).
    bool ipvs_known_ = false;
    IpvsState current_;
    Drains drains_;
    bool link_known_ = false;
    std::vector<IpAddress> link_now_;  // sorted
    bool helper_known_ = false;
    nftables::Model helper_model_;
};

}  // namespace

bool ipvs_available() {
    return open_kernel().ok();
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges) {
    return std::make_unique<IpvsBackend>(options, std::move(edges));
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    nftables::ChannelOpener open_helper = []() -> Result<std::unique_ptr<nftables::Channel>> {
        auto socket = nftables::NetlinkSocket::open(kHelperTable);
        if (!socket) return socket.error();
        return std::unique_ptr<nftables::Channel>(std::move(*socket));
    };
    return make_backend(options, BackendEdges{open_kernel, std::move(open_helper),
                                              make_host_network(), make_kernel_conntrack_table(),
                                              [] { return std::chrono::steady_clock::now(); }});
}

}  // namespace sb::rules::ipvs
