#include "rules/nftables/nftables_backend.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "base/log.h"
#include "rules/nftables/conntrack.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/netlink.h"
#include "rules/nftables/render.h"

namespace sb::rules::nftables {

namespace {

auto order_key(const ServicePortPlan& p) {
    return std::tie(p.ns, p.service, p.port_name, p.protocol);
}

bool sorted(const Plan& plan) {
    return std::is_sorted(plan.services.begin(), plan.services.end(),
                          [](const auto& a, const auto& b) { return order_key(a) < order_key(b); });
}

class NftablesBackend final : public Backend {
public:
    explicit NftablesBackend(BackendOptions options) : options_(std::move(options)) {}

    const char* name() const override { return "nftables"; }

    Result<SyncStats> sync(const Plan& plan, const Plan* previous) override {
        if (Status s = validate_options(options_); !s) return s.error();
        if (Status s = ensure_socket(); !s) return s.error();
        Result<SyncStats> result = SyncStats{};
        bool done = false;
        if (previous && applied_valid_ && sorted(plan) && sorted(*previous)) {
            result = sync_incremental(plan, *previous);
            if (result.ok()) {
                done = true;
            } else {
                log::warn("nftables: incremental sync failed ({}); doing a full resync",
                          result.error().describe());
            }
        }
        if (!done) result = sync_full(plan);
        if (result.ok() && previous) clean_conntrack(*previous, plan);
        return result;
    }

    Status cleanup() override {
        applied_valid_ = false;
        if (Status s = ensure_socket(); !s) return s;
        return socket_->delete_table();
    }

    Result<std::string> render_text(const Plan& plan) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_);
        report(r.errors);
        return to_nft_text(r.model);
    }

private:
    Status ensure_socket() {
        if (socket_) return {};
        auto s = NetlinkSocket::open();
        if (!s) return s.error();
        socket_ = std::move(s.value());
        return {};
    }

    static void report(const std::vector<std::string>& errors) {
        for (const std::string& e : errors) log::warn("nftables: skipped {}", e);
    }

    // Reads the kernel's table back and reconciles it with the plan in one
    // transaction: an existing table is adopted, never flushed or deleted, so
    // running traffic sees no gap; missing pieces are recreated (drift repair).
    Result<SyncStats> sync_full(const Plan& plan) {
        applied_valid_ = false;
        RenderResult desired = render(plan, options_);
        report(desired.errors);
        auto kernel = socket_->read_table();
        if (!kernel) return kernel.error();
        const Delta delta = kernel.value() ? diff(**kernel, desired.model, false)
                                           : diff(Model{}, desired.model, true);
        if (Status s = socket_->apply(delta, desired.model); !s) return s.error();
        SyncStats stats;
        stats.full = true;
        stats.objects_sent = delta.objects(desired.model);
        stats.services = plan.services.size();
        applied_ = std::move(desired.model);
        applied_valid_ = true;
        return stats;
    }

    // Renders only the service ports that differ between the plans and sends
    // their chains and map elements.
    Result<SyncStats> sync_incremental(const Plan& plan, const Plan& previous) {
        std::vector<Fragment> fragments;
        std::vector<std::pair<int, int>> pairs;  // indexes into fragments, -1: none
        auto render_checked = [&](const ServicePortPlan& p) -> int {
            if (Status s = validate_service(p); !s) {
                log::warn("nftables: skipped {}", s.error().message);
                return -1;
            }
            fragments.push_back(render_service(p, options_));
            return static_cast<int>(fragments.size()) - 1;
        };
        const auto& a = previous.services;
        const auto& b = plan.services;
        size_t i = 0, j = 0;
        while (i < a.size() || j < b.size()) {
            if (j == b.size() || (i < a.size() && order_key(a[i]) < order_key(b[j]))) {
                pairs.emplace_back(validate_service(a[i]) ? render_checked(a[i]) : -1, -1);
                ++i;
            } else if (i == a.size() || order_key(b[j]) < order_key(a[i])) {
                pairs.emplace_back(-1, render_checked(b[j]));
                ++j;
            } else {
                if (!(a[i] == b[j])) {
                    const int old_index = validate_service(a[i]) ? render_checked(a[i]) : -1;
                    pairs.emplace_back(old_index, render_checked(b[j]));
                }
                ++i;
                ++j;
            }
        }
        std::vector<FragmentChange> changes;
        for (const auto& [o, n] : pairs) {
            changes.emplace_back(o < 0 ? nullptr : &fragments[static_cast<size_t>(o)],
                                 n < 0 ? nullptr : &fragments[static_cast<size_t>(n)]);
        }
        const Delta delta = update_model(applied_, changes);
        SyncStats stats;
        stats.services = plan.services.size();
        if (delta.empty()) return stats;
        if (Status s = socket_->apply(delta, applied_); !s) {
            applied_valid_ = false;
            return s.error();
        }
        stats.objects_sent = delta.objects(applied_);
        return stats;
    }

    void clean_conntrack(const Plan& previous, const Plan& plan) {
        const std::vector<ConntrackFilter> filters = stale_udp_conntrack(previous, plan);
        if (filters.empty()) return;
        auto deleted = delete_udp_conntrack(filters);
        if (!deleted) {
            log::warn("nftables: UDP conntrack cleanup failed: {}", deleted.error().describe());
        } else if (*deleted > 0) {
            log::debug("nftables: deleted {} stale UDP conntrack entries", *deleted);
        }
    }

    BackendOptions options_;
    std::unique_ptr<NetlinkSocket> socket_;
    Model applied_;  // what the kernel holds after the last successful sync
    bool applied_valid_ = false;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    return std::make_unique<NftablesBackend>(options);
}

}  // namespace sb::rules::nftables
