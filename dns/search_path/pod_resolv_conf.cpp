#include "dns/search_path/pod_resolv_conf.h"

#include <fmt/format.h>

#include <algorithm>

#include "dns/search_path/search_limits.h"

namespace sb::dns {

namespace {

// Kubelet's default options for ClusterFirst Pods (defaultDNSOptions).
const std::vector<std::string> kClusterFirstOptions = {"ndots:5"};

enum class BaseConfig { kNone, kCluster, kHost };

// getPodDNSType: a hostNetwork Pod under ClusterFirst falls back to Default.
BaseConfig base_config(const watch::Pod& pod) {
    switch (pod.dns_policy) {
        case watch::DnsPolicy::kNone:
            return BaseConfig::kNone;
        case watch::DnsPolicy::kClusterFirstWithHostNet:
            return BaseConfig::kCluster;
        case watch::DnsPolicy::kClusterFirst:
            return pod.host_network ? BaseConfig::kHost : BaseConfig::kCluster;
        case watch::DnsPolicy::kDefault:
            return BaseConfig::kHost;
    }
    return BaseConfig::kCluster;
}

// Appends `more` to `list`, leaving out what `list` already has (omitDuplicates).
void append_new(std::vector<std::string>& list, const std::vector<std::string>& more) {
    for (const auto& item : more) {
        if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
    }
}

// mergeDNSOptions: the Pod's options replace the base's of the same name.
// Kubelet rebuilds the list from a Go map, in no fixed order; this keeps the
// base's order and appends new names in the Pod's order.
void merge_options(std::vector<std::string>& options,
                   const std::vector<watch::PodDnsOption>& pod_options) {
    for (const auto& option : pod_options) {
        std::string text = option.name;
        if (option.value && !option.value->empty()) text += ":" + *option.value;
        auto same = std::find_if(options.begin(), options.end(), [&](const std::string& existing) {
            return resolv_conf_option_name(existing) == option.name;
        });
        if (same == options.end()) {
            options.push_back(std::move(text));
        } else {
            *same = std::move(text);
        }
    }
}

std::string joined(const std::vector<std::string>& list) {
    std::string line;
    for (const auto& item : list) line += (line.empty() ? "" : " ") + item;
    return line;
}

}  // namespace

Result<PodResolvConf> compose_pod_resolv_conf(const watch::Pod& pod,
                                              const KubeletDnsSettings& settings) {
    if (pod.dns_policy == watch::DnsPolicy::kNone &&
        (!pod.dns_config || pod.dns_config->nameservers.empty())) {
        return make_error(ErrorCode::kInvalidArgument,
                          "spec.dnsConfig.nameservers: Required value: must provide at least one "
                          "DNS nameserver when `dnsPolicy` is `None`");
    }
    PodResolvConf conf;
    BaseConfig base = base_config(pod);
    if (base == BaseConfig::kCluster && settings.cluster_dns.empty()) {
        conf.warnings.push_back(
            fmt::format("MissingClusterDNS: kubelet does not have ClusterDNS IP configured and "
                        "cannot create Pod using \"{}\" policy. Falling back to \"Default\" "
                        "policy.",
                        watch::to_string(pod.dns_policy)));
        base = BaseConfig::kHost;
    }
    if (base == BaseConfig::kCluster) {
        // The cluster DNS server is the only nameserver: it forwards the rest.
        conf.nameservers = settings.cluster_dns;
        if (!settings.cluster_domain.empty()) {
            const std::string& domain = settings.cluster_domain;
            conf.searches = {pod.meta.ns + ".svc." + domain, "svc." + domain, domain};
        }
        append_new(conf.searches, settings.node.searches);
        conf.options = kClusterFirstOptions;
    } else if (base == BaseConfig::kHost) {
        if (settings.resolv_conf_set) {
            conf.nameservers = settings.node.nameservers;
            conf.searches = settings.node.searches;
            conf.options = settings.node.options;
        } else {
            // "the nameserver on the local machine", as the bind
            // documentation puts an empty list.
            conf.nameservers = {"127.0.0.1"};
            conf.searches = {"."};
        }
    }
    if (pod.dns_config) {
        std::vector<std::string> nameservers;
        append_new(nameservers, conf.nameservers);
        append_new(nameservers, pod.dns_config->nameservers);
        conf.nameservers = std::move(nameservers);
        std::vector<std::string> searches;
        append_new(searches, conf.searches);
        append_new(searches, pod.dns_config->searches);
        conf.searches = std::move(searches);
        merge_options(conf.options, pod.dns_config->options);
    }
    if (conf.nameservers.size() > kMaxPodNameservers) {
        conf.nameservers.resize(kMaxPodNameservers);
        conf.warnings.push_back(
            fmt::format("DNSConfigForming: Nameserver limits were exceeded, some nameservers "
                        "have been omitted, the applied nameserver line is: {}",
                        joined(conf.nameservers)));
    }
    if (fit_search_limits(conf.searches, [](const std::string& search) { return search.size(); })) {
        conf.warnings.push_back(
            fmt::format("DNSConfigForming: Search Line limits were exceeded, some search paths "
                        "have been omitted, the applied search line is: {}",
                        joined(conf.searches)));
    }
    return conf;
}

std::string format_resolv_conf(const PodResolvConf& conf) {
    std::string text;
    if (!conf.searches.empty()) text += "search " + joined(conf.searches) + "\n";
    for (const auto& nameserver : conf.nameservers) text += "nameserver " + nameserver + "\n";
    if (!conf.options.empty()) text += "options " + joined(conf.options) + "\n";
    return text;
}

}  // namespace sb::dns
