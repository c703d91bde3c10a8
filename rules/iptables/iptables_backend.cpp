#include "rules/iptables/iptables_backend.h"

#include <algorithm>

#include "base/log.h"
#include "rules/iptables/iptc.h"
#include "rules/iptables/render.h"
#include "rules/iptables/table_apply.h"
#include "rules/kernel/conntrack_kernel.h"

namespace sb::rules::iptables {

namespace {

// The rules switchboard owns in `table`, and those of them an apply
// rewrites: the chains that changed since `applied` (all of them, and the
// hook rules, without it).
SyncStats::TableRules table_rules(IpFamily family, const Table& table, const Table* applied) {
    SyncStats::TableRules counted{family, table.name, table.hooks.size(),
                                  applied ? 0 : table.hooks.size()};
    for (const auto& [name, chain] : table.chains) {
        counted.total += chain.rules.size();
        auto it = applied ? applied->chains.find(name) : table.chains.end();
        if (!applied || it == applied->chains.end() || !(it->second == chain)) {
            counted.written += chain.rules.size();
        }
    }
    return counted;
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
    IptablesBackend(BackendOptions options, BackendEdges edges)
        : options_(std::move(options)),
          xtables_(std::move(edges.xtables)),
          chain_hash_(edges.chain_hash),
          conntrack_(std::move(edges.conntrack)),
          route_localnet_(std::move(edges.route_localnet)) {}

    const char* name() const override { return "iptables"; }

    // x_tables replaces a whole table per commit, so every sync commits
    // each table; with `previous` (and a known last apply) only the chains
    // whose rules changed are rewritten, without it every own chain is
    // (drift repair).
    Result<SyncStats> sync(const Plan& plan, const Plan* previous) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_, chain_hash_);
        report(r.errors);
        const bool partial = previous != nullptr && applied_valid_;
        applied_valid_ = false;
        SyncStats stats;
        stats.full = !partial;
        stats.services = plan.services.size();
        stats.chain_name_collisions = r.chain_name_collisions;
        stats.route_localnet_failures = enable_route_localnet();
        // What the tables DNATed before the first sync: the one record of the
        // Services deleted while no daemon ran.
        UdpFrontends dnated_before;
        const bool read_dnated = conntrack_.wants_dnated_before();
        bool v6_skipped = false;
        for (auto [m, before] :
             {std::pair{&r.model.v4, &applied_.v4}, std::pair{&r.model.v6, &applied_.v6}}) {
            const FamilyModel* known = partial ? before : nullptr;
            if (Status s =
                    apply_family(*xtables_, *m, known, read_dnated ? &dnated_before : nullptr);
                !s) {
                // A node without IPv6 x_tables can still proxy IPv4.
                if (m->family == IpFamily::kV6 && !has_services(plan, IpFamily::kV6)) {
                    log::warn("iptables: skipping IPv6: {}", s.error().describe());
                    v6_skipped = true;
                    continue;
                }
                return s.error();
            }
            for (const auto& [table, before_table] :
                 {std::pair{&m->nat, known ? &known->nat : nullptr},
                  std::pair{&m->filter, known ? &known->filter : nullptr}}) {
                stats.iptables_rules.push_back(table_rules(m->family, *table, before_table));
                stats.objects_sent += stats.iptables_rules.back().written;
            }
        }
        applied_ = std::move(r.model);
        applied_valid_ = true;
        v6_skipped_ = v6_skipped;
        // Against the whole plan, full syncs included (rules/conntrack.h).
        stats.conntrack =
            conntrack_.reconcile(plan, previous, nullptr, read_dnated ? &dnated_before : nullptr);
        return stats;
    }

    // Every hook rule still in its built-in chain, and the chains they jump
    // to still holding as many rules as written (a flushed table or chain,
    // a firewall reload). Reads each table once: what every sync's
    // libiptc read costs already, never a render or a commit.
    Result<bool> kernel_intact() override {
        if (!applied_valid_) return false;
        for (const FamilyModel* family : {&applied_.v4, &applied_.v6}) {
            if (family == &applied_.v6 && v6_skipped_) continue;
            for (const Table* table : {&family->nat, &family->filter}) {
                if (table->hooks.empty()) continue;
                auto copy = xtables_->open(family->family, table->name);
                if (!copy) return copy.error();
                if (!hooks_intact(**copy, *table)) return false;
            }
        }
        return true;
    }

    Status cleanup() override {
        Status v4 = cleanup_family(*xtables_, IpFamily::kV4);
        Status v6 = cleanup_family(*xtables_, IpFamily::kV6);
        if (!v4) return v4;
        return v6;
    }

    Result<std::string> render_text(const Plan& plan) override {
        if (Status s = validate_options(options_); !s) return s.error();
        RenderResult r = render(plan, options_, chain_hash_);
        report(r.errors);
        return "# IPv4 (iptables-restore --noflush)\n" + to_restore_text(r.model.v4) +
               "# IPv6 (ip6tables-restore --noflush)\n" + to_restore_text(r.model.v6);
    }

  private:
    // Localhost NodePorts need route_localnet=1 (render.h). kube-proxy sets it
    // once at start and exits when it cannot; here a failure is logged once,
    // counted, and retried by every sync until it succeeds, and the rules are
    // written either way (every other NodePort address works). The setting
    // is never turned back off (docs/iptables.md, "Localhost NodePorts").
    size_t enable_route_localnet() {
        if (route_localnet_set_ || !localhost_node_ports_effective(options_)) return 0;
        auto changed = route_localnet_->enable();
        if (!changed) {
            if (!route_localnet_warned_) {
                log::warn(
                    "iptables: localhost NodePorts: cannot set net.ipv4.conf.all.route_localnet "
                    "to 1 ({}); 127.0.0.1:NODEPORT fails until it is set (retried at every sync)",
                    changed.error().describe());
                route_localnet_warned_ = true;
            }
            return 1;
        }
        log::info(
            "iptables: NodePorts answer on 127.0.0.1: net.ipv4.conf.all.route_localnet is 1{}; "
            "to change this set --iptables-localhost-nodeports=false "
            "(iptables.localhostNodePorts) or --nodeport-addresses without loopback",
            *changed ? " (set now)" : " (already)");
        route_localnet_set_ = true;
        return 0;
    }

    static void report(const std::vector<std::string>& errors) {
        for (const std::string& e : errors) log::warn("iptables: skipped {}", e);
    }

    static bool hooks_intact(const TableCopy& copy, const Table& table) {
        for (const HookRule& hook : table.hooks) {
            const std::string& target = hook.rule.target.chain;
            if (hook.rule.target.kind != TargetKind::kJump) continue;
            const auto builtin = copy.rule_targets(hook.builtin);
            if (std::find(builtin.begin(), builtin.end(), target) == builtin.end()) return false;
            auto own = table.chains.find(target);
            if (own != table.chains.end() &&
                copy.rule_targets(target).size() != own->second.rules.size()) {
                return false;
            }
        }
        return true;
    }

    BackendOptions options_;
    std::unique_ptr<Xtables> xtables_;
    ChainHash chain_hash_;
    UdpConntrackReconciler conntrack_;
    std::unique_ptr<RouteLocalnet> route_localnet_;
    bool route_localnet_set_ = false;     // this backend saw it at 1
    bool route_localnet_warned_ = false;  // its first failure was logged
    Model applied_;                       // what the last successful sync wrote
    bool applied_valid_ = false;
    bool v6_skipped_ = false;  // the last sync wrote no IPv6 tables (none on the node)
};

}  // namespace

std::unique_ptr<Backend> make_backend(const BackendOptions& options) {
    return make_backend(options, {make_libiptc_xtables(), make_kernel_conntrack_table(),
                                  default_chain_hash, make_kernel_route_localnet()});
}

std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges) {
    return std::make_unique<IptablesBackend>(options, std::move(edges));
}

}  // namespace sb::rules::iptables
