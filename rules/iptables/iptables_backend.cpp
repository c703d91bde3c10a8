#include "rules/iptables/iptables_backend.h"

#include "base/log.h"
#include "rules/iptables/iptc.h"
#include "rules/iptables/render.h"
#include "rules/nftables/conntrack.h"

namespace sb::rules::iptables {

namespace {

size_t rule_count(const FamilyModel& m) {
    size_t n = m.nat.hooks.size() + m.filter.hooks.size();
    for (const Table* t : {&m.nat, &m.filter}) {
        for (const auto& [name, chain] : t->chains) n += chain.rules.size();
    }
    return n;
}

bool has_services(const Plan& plan, IpFamily family) {
    for (const ServicePortPlan& p : plan.services) {
        for (const IpAddress& ip : p.cluster_ips) {
            if (ip.family() == family) return true;
        }
    }
    return false;
}

class IptablesBackend final : public Backend {
  public:
    explicit IptablesBackend(BackendOptions options) : options_(std::move(options)) {}

    const char* name() const override { return "iptables"; }

    // Every sync rewrites switchboard's chains in full: x_tables replaces a
    // whole table per commit anyway. `previous` only scopes the UDP
    // conntrack cleanup.
    Result<SyncStats> sync(const Plan& plan, const Plan* previous) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_);
        report(r.errors);
        SyncStats stats;
        stats.full = true;
        stats.services = plan.services.size();
        for (const FamilyModel* m : {&r.model.v4, &r.model.v6}) {
            if (Status s = apply_family(*m); !s) {
                // A node without IPv6 x_tables can still proxy IPv4.
                if (m->family == IpFamily::kV6 && !has_services(plan, IpFamily::kV6)) {
                    log::warn("iptables: skipping IPv6: {}", s.error().describe());
                    continue;
                }
                return s.error();
            }
            stats.objects_sent += rule_count(*m);
        }
        if (previous) clean_conntrack(*previous, plan);
        return stats;
    }

    Status cleanup() override {
        Status v4 = cleanup_family(IpFamily::kV4);
        Status v6 = cleanup_family(IpFamily::kV6);
        if (!v4) return v4;
        return v6;
    }

    Result<std::string> render_text(const Plan& plan) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_);
        report(r.errors);
        return "# IPv4 (iptables-restore --noflush)\n" + to_restore_text(r.model.v4) +
               "# IPv6 (ip6tables-restore --noflush)\n" + to_restore_text(r.model.v6);
    }

  private:
    // UDP flows pinned to removed endpoints (or to a recorded reject) are
    // deleted, as kube-proxy does; the same rule as the nftables backend.
    static void clean_conntrack(const Plan& previous, const Plan& plan) {
        const auto filters = nftables::stale_udp_conntrack(previous, plan);
        if (filters.empty()) return;
        auto deleted = nftables::delete_udp_conntrack(filters);
        if (!deleted) {
            log::warn("iptables: UDP conntrack cleanup failed: {}", deleted.error().describe());
        }
    }

    static void report(const std::vector<std::string>& errors) {
        for (const std::string& e : errors) log::warn("iptables: skipped {}", e);
    }

    BackendOptions options_;
};

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    return std::make_unique<IptablesBackend>(options);
}

}  // namespace sb::rules::iptables
