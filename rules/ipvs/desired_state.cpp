#include "rules/ipvs/desired_state.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "rules/ipvs/helper_rules.h"
#include "rules/nftables/render.h"
#include "rules/validate.h"

namespace sb::rules::ipvs {

Rendered DesiredState::render_one(const ServicePortPlan& port,
                                  const BackendOptions& options) const {
    if (!validate_service(port)) return {};
    Rendered rendered = render_port(port, options, node_ports_);
    std::erase_if(rendered.services, [&](const auto& entry) {
        return std::any_of(
            options.ipvs_exclude_cidrs.begin(), options.ipvs_exclude_cidrs.end(),
            [&](const Prefix& prefix) { return prefix.contains(entry.first.address); });
    });
    return rendered;
}

void DesiredState::rebuild(const Plan& plan, const BackendOptions& options,
                           const std::vector<IpAddress>& node_ports) {
    node_ports_ = node_ports;
    services_.clear();
    owners_.clear();
    address_owners_.clear();
    for (const ServicePortPlan& port : plan.services) {
        Rendered rendered = render_one(port, options);
        for (auto& [key, service] : rendered.services) {
            ++owners_[key];
            services_.emplace(key, std::move(service));  // the first in plan order stays
        }
        for (const IpAddress& address : rendered.link_addresses) ++address_owners_[address];
    }
    built_ = true;
}

bool DesiredState::update(const std::vector<PortChange>& changes, const BackendOptions& options,
                          nftables::Model& helper_model, Update& out) {
    struct PortRender {
        Rendered before;
        Rendered after;
    };
    std::vector<PortRender> renders;
    renders.reserve(changes.size());
    // Checked before anything changes: every server taken out is this
    // port's alone, every server put in is no other port's.
    std::map<ServiceKey, int> balance;
    for (const auto& [before, after] : changes) {
        PortRender render;
        if (before) render.before = render_one(*before, options);
        if (after) render.after = render_one(*after, options);
        if (render.after.duplicate_servers > 0) return false;
        for (const auto& [key, _] : render.before.services) --balance[key];
        for (const auto& [key, _] : render.after.services) ++balance[key];
        renders.push_back(std::move(render));
    }
    for (const PortRender& render : renders) {
        for (const auto& [key, _] : render.before.services) {
            auto owners = owners_.find(key);
            if (owners == owners_.end() || owners->second != 1) return false;
        }
        for (const auto& [key, _] : render.after.services) {
            auto owners = owners_.find(key);
            const int now = owners == owners_.end() ? 0 : static_cast<int>(owners->second);
            if (now + balance[key] > 1) return false;
        }
    }

    for (PortRender& render : renders) {
        for (const auto& [key, _] : render.before.services) {
            owners_.erase(key);
            services_.erase(key);
            out.touched.insert(key);
        }
        for (const IpAddress& address : render.before.link_addresses) {
            auto it = address_owners_.find(address);
            if (it != address_owners_.end() && --it->second == 0) address_owners_.erase(it);
        }
    }
    for (PortRender& render : renders) {
        for (auto& [key, service] : render.after.services) {
            owners_[key] = 1;
            services_[key] = std::move(service);
            out.touched.insert(key);
        }
        for (const IpAddress& address : render.after.link_addresses) ++address_owners_[address];
    }

    // The helper table's part, reference counted by the nftables model.
    std::vector<std::optional<nftables::Fragment>> fragments;
    fragments.reserve(2 * changes.size());
    std::vector<nftables::FragmentChange> helper_changes;
    for (const auto& [before, after] : changes) {
        auto fragment_of = [&](const ServicePortPlan* port) -> const nftables::Fragment* {
            if (!port || !validate_service(*port)) return nullptr;
            return &fragments.emplace_back(render_helper_port(*port, options)).value();
        };
        const nftables::Fragment* old_fragment = fragment_of(before);
        const nftables::Fragment* new_fragment = fragment_of(after);
        helper_changes.emplace_back(old_fragment, new_fragment);
    }
    out.helper = nftables::update_model(helper_model, helper_changes);
    return true;
}

std::vector<IpAddress> DesiredState::service_addresses() const {
    std::vector<IpAddress> out;
    out.reserve(address_owners_.size());
    for (const auto& [address, _] : address_owners_) out.push_back(address);
    return out;
}

}  // namespace sb::rules::ipvs
