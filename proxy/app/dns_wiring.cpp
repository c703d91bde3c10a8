#include "proxy/app/dns_wiring.h"

#include <fmt/format.h>

#include "base/log.h"
#include "dns/corefile/options.h"
#include "proxy/app/source_state.h"
#include "proxy/http/process_metrics.h"
#include "proxy/options/flags.h"
#include "rules/dns_local/dns_local.h"

namespace sb::proxy {

DnsWiring::DnsWiring(const Options& options, watch::Store& store, HttpServer& http,
                     const BuildInfo& build_info)
    : options_(options), store_(store), http_(http), build_info_(build_info) {}

Status DnsWiring::start(const NodeState* node_state) {
    if (node_state) node_state_ = *node_state;
    // Before the DNS listeners, which bind the node-local addresses too.
    ensure_local_addresses();
    dns::DnsOptions dns = with_node_parts(options_.dns);
    if (!dns.listen.empty()) {
        // A DNS listener that cannot bind is retried on DNS's own thread
        // (docs/dns.md): it never stops the proxy. Only set-up errors end here.
        auto service = dns::DnsService::start(dns, store_);
        if (!service) {
            return make_error(ErrorCode::kIo,
                              fmt::format("--dns-listen: {}", service.error().describe()));
        }
        service_ = std::move(*service);
    }
    replace_coredns_endpoints(coredns_endpoints_config(options_.dns_corefile_config));
    if (auto reload = reload_config(options_.dns_corefile_config)) {
        const Environment environment = current_environment();
        reloader_ = std::make_unique<CorefileReloader>(
            options_.dns_corefile, options_.dns_corefile_text, *reload, environment.lookup_env,
            environment.read_file,
            [this](const std::string& text) { return apply_reloaded_corefile(text); });
        reloader_->start();
    }
    return {};
}

void DnsWiring::stop() {
    // Before DNS: a reload under way reconfigures it.
    if (reloader_) reloader_->stop();
    if (service_) service_->stop();
}

void DnsWiring::drop_coredns_endpoints() {
    std::lock_guard lock(replace_mutex_);
    coredns_.publish(nullptr);
    opened_.clear();
}

void DnsWiring::lameduck(const std::function<bool()>& cut_short) const {
    if (auto endpoints = coredns_.get()) endpoints->lameduck(cut_short);
}

void DnsWiring::ensure_local_addresses() const {
    if (options_.dns_local_addresses.empty()) return;
    if (auto status = rules::dns_local::apply(options_.dns_local_addresses); !status) {
        log::warn("--dns-local-address: {}", status.error().describe());
    }
}

dns::DnsOptions DnsWiring::with_node_parts(dns::DnsOptions dns) const {
    for (const IpAddress& address : options_.dns_local_addresses) {
        dns.listen.push_back(HostPort{address, rules::dns_local::kDnsPort});
    }
    // This process programs the node's Services: their names wait for the
    // rules (docs/dns.md, "Publish after programming").
    dns.publish_after_programming = true;
    dns.local_dns_addresses = options_.dns_local_addresses;
    dns.node_name = options_.node_name;  // the search path's Pods are this node's
    if (node_state_) {
        dns.state_file = node_state_->folder + "/" + kDnsStateFile;
        dns.state_identity = node_state_->identity;
    }
    return dns;
}

Result<std::optional<dns::ReloadConfig>> DnsWiring::apply_reloaded_corefile(
    const std::string& text) {
    dns::DnsOptions next = options_.dns_flags;
    dns::CorefileConfig typed;
    auto warnings =
        dns::apply_corefile(text, options_.dns_corefile, current_environment().lookup_env, next,
                            !options_.dns_local_addresses.empty(), &typed);
    if (!warnings) return warnings.error();
    for (const auto& warning : *warnings) log::warn("{}", warning);
    next = with_node_parts(std::move(next));
    if (next.autopath && options_.source_file.empty() && !source_settings(options_).watch_pods) {
        log::warn(
            "{}: autopath @kubernetes needs this node's Pods, which are watched from the "
            "next restart; until then every client gets plain answers",
            options_.dns_corefile);
    }
    if (service_) {
        if (auto status = service_->reconfigure(std::move(next)); !status) {
            return make_error(status.error().code, fmt::format("{}: {}", options_.dns_corefile,
                                                               status.error().describe()));
        }
    } else if (!next.listen.empty()) {
        log::warn("{}: DNS was off at start; it starts serving at the next restart",
                  options_.dns_corefile);
    }
    replace_coredns_endpoints(coredns_endpoints_config(typed));
    return reload_config(typed);
}

void DnsWiring::replace_coredns_endpoints(CorednsEndpointsConfig config) {
    std::lock_guard lock(replace_mutex_);
    auto current = coredns_.get();
    if (current ? current->config() == config : config.empty()) return;
    // Closed first: the new listeners may take the same ports.
    if (current) opened_.back()->close();
    if (config.empty()) {
        coredns_.publish(nullptr);
        return;
    }
    opened_.push_back(std::make_shared<CorednsEndpoints>(
        http_, std::move(config),
        CorednsEndpoints::Probes{[this] { return store_.snapshot()->synced(); },
                                 [this] { return service_ && service_->serving(); },
                                 [this] { return coredns_metrics_text(); }}));
    coredns_.publish(opened_.back());
}

std::string DnsWiring::coredns_metrics_text() const {
    metrics::TextWriter out;
    write_coredns_build_info(out, build_info_);
    if (service_) service_->append_metrics(out);
    if (reloader_) reloader_->append_metrics(out);
    write_process_metrics(out, read_process_stats());
    return out.text();
}

}  // namespace sb::proxy
