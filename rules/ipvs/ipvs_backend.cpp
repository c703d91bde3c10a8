#include "rules/ipvs/ipvs_backend.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "rules/ipvs/desired_state.h"
#include "rules/ipvs/diff.h"
#include "rules/ipvs/helper_rules.h"
#include "rules/ipvs/render.h"
#include "rules/kernel/conntrack_kernel.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/netlink.h"
#include "rules/port_changes.h"
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

// The time between successive marks, as "render 1.2 ms, link addresses ...".
class PhaseClock {
  public:
    void mark(const char* phase) {
        const auto now = std::chrono::steady_clock::now();
        if (!text_.empty()) text_ += ", ";
        text_ += fmt::format("{} {:.1f} ms", phase,
                             std::chrono::duration<double, std::milli>(now - last_).count());
        last_ = now;
    }
    const std::string& text() const { return text_; }

  private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
    std::string text_;
};

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
        // Where a sync's time goes, for -v=4 (docs/ipvs.md, "A sync").
        PhaseClock phases;
        if (Status s = validate_options(options_); !s) return s.error();
        if (Status s = ensure_open(); !s) return s.error();
        prepare_node();
        auto node = host_->node_addresses();
        if (!node) return node.error();
        const std::vector<IpAddress> node_sorted = sorted_unique(*node);
        const std::vector<IpAddress> node_ports = node_port_addresses(*node, options_);

        // A partial sync re-renders the changed ports only; anything it
        // cannot follow (no previous plan, a failure since, other NodePort
        // addresses, a shared virtual server) renders the whole plan.
        std::optional<DesiredState::Update> update;
        if (previous && wanted_.built() && helper_known_ && ipvs_known_ &&
            wanted_.node_ports() == node_ports) {
            if (auto changes = changed_ports(*previous, plan)) {
                update.emplace();
                if (!wanted_.update(*changes, options_, helper_model_, *update)) update.reset();
            }
        }
        if (!update) wanted_.rebuild(plan, options_, node_ports);
        const std::vector<IpAddress> wanted_link =
            without(wanted_.service_addresses(), node_sorted);

        SyncStats stats;
        stats.full = !update;
        stats.services = plan.services.size();
        phases.mark("render");
        if (Status s = add_link_addresses(wanted_link); !s) return fail(s.error());
        phases.mark("link addresses");
        auto helper_objects = update ? apply_helper_update(*update, wanted_link)
                                     : sync_helper_table(plan, wanted_link);
        if (!helper_objects) return fail(helper_objects.error());
        phases.mark("helper table");
        auto ipvs_requests = sync_virtual_servers(node_ports, update ? &update->touched : nullptr,
                                                  previous == nullptr);
        if (!ipvs_requests) return fail(ipvs_requests.error());
        phases.mark("virtual servers");
        if (Status s = set_link_addresses(wanted_link); !s) return fail(s.error());
        phases.mark("stale addresses");
        service_ips_ = wanted_link;
        log::debug("ipvs: {} sync, {} IPVS requests; {}", update ? "partial" : "full",
                   *ipvs_requests, phases.text());
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
                result = make_error(s.error().code, fmt::format("{}: {}", what, s.error().message),
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

    // The partial sync's helper change: the changed ports' elements (already
    // in helper_model_) and the service addresses that came or went.
    Result<size_t> apply_helper_update(DesiredState::Update& update,
                                       const std::vector<IpAddress>& service_ips) {
        nftables::Delta& delta = update.helper;
        std::vector<IpAddress> gone = without(service_ips_, service_ips);
        std::vector<IpAddress> came = without(service_ips, service_ips_);
        for (const std::vector<IpAddress>* list : {&gone, &came}) {
            for (const IpAddress& address : *list) {
                const std::string set = service_ips_set(address.family());
                const nftables::ElementKey key{address, {}, 0, 0};
                auto& elements = helper_model_.sets.at(set).elements;
                if (list == &gone) {
                    elements.erase(key);
                    delta.del_elements.emplace_back(set, key);
                } else {
                    elements.emplace(key, nftables::Verdict{});
                    delta.add_elements.emplace_back(set, key);
                }
            }
        }
        const size_t objects = delta.objects(helper_model_);
        if (!delta.empty()) {
            if (Status s = helper_->apply(delta, helper_model_); !s) {
                helper_known_ = false;
                return s.error();
            }
        }
        return objects;
    }

    // After a failed step the kernel may hold part of this sync: the next
    // one renders everything and compares with what it reads back.
    Error fail(Error error) {
        wanted_.forget();
        helper_known_ = false;  // a partial sync changed helper_model_ before the failure
        return error;
    }

    Ownership ownership(const std::vector<IpAddress>& node_ports) const {
        return Ownership{link_now_, node_ports, options_.ipvs_exclude_cidrs};
    }

    // The kernel's listing on a full sync (and after a failure), else the
    // state the last sync left; the draining real servers' connection
    // counts are read afresh either way.
    // Against the kernel's listing when `relist` (a sync without a previous
    // plan: a start, a periodic resync) or after a failure, else against the
    // state the last sync left, with the draining real servers' connection
    // counts read afresh. `touched`: on a partial sync, the virtual servers
    // its ports changed (only they, and the draining ones, are compared);
    // nullptr compares all.
    Result<size_t> sync_virtual_servers(const std::vector<IpAddress>& node_ports,
                                        const std::set<ServiceKey>* touched, bool relist) {
        if (relist || !ipvs_known_) {
            auto listing = kernel_->list();
            if (!listing) return listing.error();
            current_ = owned_part(*listing, ownership(node_ports));
            ipvs_known_ = true;
            touched = nullptr;
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
        const std::vector<Op> ops =
            touched ? diff_touched(*touched)
                    : diff(wanted_.services(), current_, drains_, now_(), kDrainBound);
        for (const Op& op : ops) {
            if (Status s = kernel_->apply(op); !s) {
                ipvs_known_ = false;
                return s.error();  // naming the op (kernel.h)
            }
            apply_to_state(current_, op);
        }
        return ops.size();
    }

    // diff() of the touched and the draining virtual servers only; the
    // drains of the others are kept as they are.
    std::vector<Op> diff_touched(const std::set<ServiceKey>& touched) {
        std::set<ServiceKey> keys = touched;
        for (const ServiceKey& key : draining(drains_)) keys.insert(key);
        IpvsState desired;
        IpvsState current;
        Drains drains;
        for (const ServiceKey& key : keys) {
            if (auto it = wanted_.services().find(key); it != wanted_.services().end()) {
                desired.emplace(key, it->second);
            }
            if (auto it = current_.find(key); it != current_.end())
                current.emplace(key, it->second);
        }
        for (auto it = drains_.started.begin(); it != drains_.started.end();) {
            if (keys.count(it->first.server)) {
                drains.started.insert(*it);
                it = drains_.started.erase(it);
            } else {
                ++it;
            }
        }
        std::vector<Op> ops = diff(desired, current, drains, now_(), kDrainBound);
        drains_.started.insert(drains.started.begin(), drains.started.end());
        return ops;
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
    DesiredState wanted_;
    std::vector<IpAddress> service_ips_;  // the helper table's service-ips, sorted
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
