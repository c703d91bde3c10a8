#include "rules/nftables/nftables_backend.h"

#include <netinet/in.h>

#include <optional>

#include "base/log.h"
#include "rules/conntrack.h"
#include "rules/kernel/conntrack_kernel.h"
#include "rules/nftables/affinity_cleanup.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/netlink.h"
#include "rules/nftables/render.h"

namespace sb::rules::nftables {

namespace {

const std::vector<PortChange> kNoChanges;

class NftablesBackend final : public Backend {
  public:
    NftablesBackend(BackendOptions options, BackendEdges edges)
        : options_(std::move(options)),
          open_(std::move(edges.open_channel)),
          conntrack_(std::move(edges.conntrack)) {}

    const char* name() const override { return "nftables"; }

    Result<SyncStats> sync(const Plan& plan, const Plan* previous) override {
        if (Status s = validate_options(options_); !s) return s.error();
        if (Status s = ensure_channel(); !s) return s.error();
        Result<SyncStats> result = SyncStats{};
        bool done = false;
        // What changed since `previous`, computed once: it drives the
        // incremental sync, the conntrack reconcile and the affinity cleanup.
        const std::optional<std::vector<PortChange>> found =
            previous ? changed_ports(*previous, plan) : std::nullopt;
        const bool comparable = found.has_value();
        const std::vector<PortChange>& changed = comparable ? *found : kNoChanges;
        if (comparable && applied_valid_) {
            result = sync_incremental(plan, changed, previous->service_cidrs);
            if (result.ok()) {
                done = true;
            } else {
                log::warn("nftables: incremental sync failed ({}); doing a full resync",
                          result.error().describe());
            }
        }
        // What the kernel's table DNATed before the first sync: the one
        // record of the Services deleted while no daemon ran.
        std::optional<UdpFrontends> dnated_before;
        if (!done) {
            result = sync_full(plan, conntrack_.wants_dnated_before() ? &dnated_before : nullptr);
        }
        if (!result.ok()) return result;
        // Against the whole plan, full syncs included (rules/conntrack.h).
        result->conntrack = conntrack_.reconcile(plan, previous, comparable ? &changed : nullptr,
                                                 dnated_before ? &*dnated_before : nullptr);
        // Against the whole applied model too: a full sync may follow any
        // change (a restart, a failed sync), an incremental one only needs it
        // when a service port with affinity changed (affinity_cleanup.h).
        if (result->full || affinity_changed(changed)) clean_affinity(*channel_, applied_);
        // Since the last report: those skipped during failed syncs count too.
        result->stale_netlink_messages = channel_->stale_answers() - stale_reported_;
        stale_reported_ = channel_->stale_answers();
        return result;
    }

    // The table's handle (deleted, or replaced from a dump), then the rule
    // count of each base chain (a flushed table or chain): a few small
    // requests at any cluster size. Per-element drift waits for the full sync.
    Result<bool> kernel_intact() override {
        if (!applied_valid_ || !channel_) return false;
        auto handle = channel_->table_handle();
        if (!handle) return handle.error();
        if (handle.value() != applied_table_handle_) return false;
        for (const auto& [name, chain] : applied_.chains) {
            if (!chain.hook) continue;
            auto rules = channel_->rule_count(name);
            if (!rules && rules.error().code == ErrorCode::kNotFound) return false;
            if (!rules) return rules.error();
            if (rules.value() != chain.rules.size()) return false;
        }
        return true;
    }

    Status cleanup() override {
        applied_valid_ = false;
        if (Status s = ensure_channel(); !s) return s;
        return channel_->delete_table();
    }

    Result<std::string> render_text(const Plan& plan) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_);
        report(r.errors);
        return to_nft_text(r.model);
    }

  private:
    Status ensure_channel() {
        if (channel_) return {};
        auto c = open_();
        if (!c) return c.error();
        channel_ = std::move(c.value());
        return {};
    }

    static void report(const std::vector<std::string>& errors) {
        for (const std::string& e : errors) log::warn("nftables: skipped {}", e);
    }

    // Reads the kernel's table back and reconciles it with the plan in one
    // transaction: an existing table is adopted, never flushed or deleted, so
    // running traffic sees no gap; missing pieces are recreated (drift repair).
    // `dnated_before`: when not null, set to the UDP frontends the table
    // DNATed before (none without a table).
    Result<SyncStats> sync_full(const Plan& plan, std::optional<UdpFrontends>* dnated_before) {
        applied_valid_ = false;
        // Stale from here on: freed before the new model is rendered, so a
        // resync never holds two models of the whole table at once.
        applied_ = Model{};
        RenderResult desired = render(plan, options_);
        report(desired.errors);
        auto kernel = channel_->read_table();
        if (!kernel) return kernel.error();
        if (dnated_before) {
            auto read = kernel.value() ? dnated_udp_frontends(**kernel) : UdpFrontends{};
            if (!read) return read.error();
            *dnated_before = std::move(read.value());
        }
        const Delta delta = kernel.value() ? diff(**kernel, desired.model, false)
                                           : diff(Model{}, desired.model, true);
        if (Status s = channel_->apply(delta, desired.model); !s) return s.error();
        auto handle = channel_->table_handle();
        if (!handle) return handle.error();
        applied_table_handle_ = handle.value();
        SyncStats stats;
        stats.full = true;
        stats.objects_sent = delta.objects(desired.model);
        stats.services = plan.services.size();
        applied_ = std::move(desired.model);
        applied_valid_ = true;
        return stats;
    }

    // The UDP frontends `table`'s dispatch maps send to a DNAT (services4/6:
    // address . protocol . port, nodeports4/6: protocol . port; a frontend
    // without endpoints is in the no-endpoints maps, and nothing DNATs it).
    // read_table() reads no elements: these maps are dumped, once per start.
    Result<UdpFrontends> dnated_udp_frontends(const Model& table) {
        UdpFrontends out;
        for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
            for (const bool by_port : {false, true}) {
                auto it = table.sets.find(by_port ? nodeports_map(family) : services_map(family));
                const SetLayout layout =
                    by_port ? SetLayout::kProtoPortVerdict : SetLayout::kAddrProtoPortVerdict;
                if (it == table.sets.end() || it->second.unknown || it->second.layout != layout) {
                    continue;
                }
                auto elements = channel_->dump_elements(it->second);
                if (!elements) return elements.error();
                for (const auto& [key, verdict] : elements.value()) {
                    if (key.proto != IPPROTO_UDP) continue;
                    if (by_port) {
                        out.node_ports.push_back(key.port);
                    } else {
                        out.addresses.emplace_back(key.a, key.port);
                    }
                }
            }
        }
        return out;
    }

    // Renders only the service ports that differ between the plans and sends
    // their chains and map elements; when the service CIDRs differ from
    // `cidrs_before`, their one chain too.
    Result<SyncStats> sync_incremental(const Plan& plan, const std::vector<PortChange>& changed,
                                       const std::vector<Prefix>& cidrs_before) {
        std::vector<Fragment> fragments;
        std::vector<std::pair<int, int>> pairs;  // indexes into fragments, -1: none
        fragments.reserve(2 * changed.size());
        auto render_checked = [&](const ServicePortPlan* p, bool quiet) -> int {
            if (!p) return -1;
            if (Status s = validate_service(*p); !s) {
                // The old side was reported when it was new.
                if (!quiet) log::warn("nftables: skipped {}", s.error().message);
                return -1;
            }
            fragments.push_back(render_service(*p, options_));
            return static_cast<int>(fragments.size()) - 1;
        };
        for (const auto& [old, now] : changed) {
            const int o = render_checked(old, true);
            pairs.emplace_back(o, render_checked(now, false));
        }
        std::vector<FragmentChange> changes;
        for (const auto& [o, n] : pairs) {
            changes.emplace_back(o < 0 ? nullptr : &fragments[static_cast<size_t>(o)],
                                 n < 0 ? nullptr : &fragments[static_cast<size_t>(n)]);
        }
        Fragment old_cidrs, new_cidrs;
        if (cidrs_before != plan.service_cidrs) {
            old_cidrs = render_service_cidrs(cidrs_before, nullptr);  // reported when new
            std::vector<std::string> errors;
            new_cidrs = render_service_cidrs(plan.service_cidrs, &errors);
            report(errors);
            changes.emplace_back(&old_cidrs, &new_cidrs);
        }
        const Delta delta = update_model(applied_, changes);
        SyncStats stats;
        stats.services = plan.services.size();
        if (delta.empty()) return stats;
        if (Status s = channel_->apply(delta, applied_); !s) {
            applied_valid_ = false;
            return s.error();
        }
        stats.objects_sent = delta.objects(applied_);
        return stats;
    }

    BackendOptions options_;
    ChannelOpener open_;
    std::unique_ptr<Channel> channel_;
    UdpConntrackReconciler conntrack_;
    Model applied_;  // what the kernel holds after the last successful sync
    bool applied_valid_ = false;
    // The table's kernel handle right after the last full sync: an
    // incremental sync never replaces the table, so another handle (or none)
    // means someone else did (kernel_intact()).
    std::optional<uint64_t> applied_table_handle_;
    size_t stale_reported_ = 0;  // channel_->stale_answers() at the last report
};

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges) {
    return std::make_unique<NftablesBackend>(options, std::move(edges));
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    ChannelOpener open_socket = []() -> Result<std::unique_ptr<Channel>> {
        auto socket = NetlinkSocket::open();
        if (!socket) return socket.error();
        return std::unique_ptr<Channel>(std::move(socket.value()));
    };
    return make_backend(options, {std::move(open_socket), make_kernel_conntrack_table()});
}

}  // namespace sb::rules::nftables
