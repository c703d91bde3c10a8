#include "proxy/commands/kubelet_dns_flags.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <vector>

#include "base/file_text.h"
#include "base/ip.h"
#include "base/quote.h"

namespace sb::proxy {

namespace {

Result<KubeletConfigDns> read_kubelet_config(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--kubelet-config: {}", text.error().describe()));
    }
    return parse_kubelet_config_dns(*text, path);
}

Result<std::vector<std::string>> split_addresses(const std::string& text, const char* flag) {
    std::vector<std::string> addresses;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        std::string item =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!IpAddress::parse(item)) {
            return make_error(
                ErrorCode::kInvalidArgument,
                fmt::format("{}: {} is not an IP address", flag, quote_for_message(item)));
        }
        addresses.push_back(std::move(item));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return addresses;
}

}  // namespace

Result<KubeletConfigDns> parse_kubelet_config_dns(const std::string& text,
                                                  const std::string& path) {
    KubeletConfigDns config;
    try {
        const YAML::Node root = YAML::Load(text);
        if (!root.IsMap()) {
            return make_error(
                ErrorCode::kInvalidArgument,
                fmt::format("--kubelet-config: {}: not a KubeletConfiguration", path));
        }
        if (const YAML::Node dns = root["clusterDNS"]) {
            config.cluster_dns = dns.as<std::vector<std::string>>();
        }
        if (const YAML::Node domain = root["clusterDomain"]) {
            config.cluster_domain = domain.as<std::string>();
        }
        if (const YAML::Node resolv = root["resolvConf"]) {
            config.resolv_conf = resolv.as<std::string>();
        }
    } catch (const YAML::Exception& error) {
        // yaml-cpp's message is its own text; the mark says where.
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--kubelet-config: {}:{}: {}", path, error.mark.line + 1,
                                      one_line(error.msg)));
    }
    return config;
}

void add_kubelet_dns_flags(std::vector<CommandOption>& options, KubeletDnsFlags& flags) {
    options.push_back(optional_text_option(
        {"--cluster-dns"}, "kubelet's clusterDNS: the cluster DNS server addresses, IP[,IP]",
        flags.cluster_dns));
    options.push_back(
        optional_text_option({"--cluster-domain"}, "kubelet's clusterDomain", flags.cluster_domain)
            .with_default("cluster.local"));
    options.push_back(optional_text_option({"--node-resolv-conf", "--resolv-conf"},
                                           "kubelet's resolvConf: the node resolv.conf Default "
                                           "Pods copy and ClusterFirst Pods take search domains "
                                           "from; \"\" for none",
                                           flags.resolv_conf)
                          .with_default("/etc/resolv.conf"));
    options.push_back(optional_text_option(
        {"--kubelet-config"},
        fmt::format("a KubeletConfiguration file to read the three from (default {} when it "
                    "exists); the flags win",
                    kDefaultKubeletConfig),
        flags.kubelet_config));
}

Result<dns::KubeletDnsSettings> finish_kubelet_dns_flags(const KubeletDnsFlags& flags) {
    KubeletConfigDns file;
    const std::string config_path = flags.kubelet_config.value_or(kDefaultKubeletConfig);
    std::error_code error;
    if (flags.kubelet_config || std::filesystem::exists(config_path, error)) {
        auto read = read_kubelet_config(config_path);
        if (!read) return read.error();
        file = std::move(*read);
    }
    dns::KubeletDnsSettings settings;
    if (flags.cluster_dns) {
        if (!flags.cluster_dns->empty()) {
            auto addresses = split_addresses(*flags.cluster_dns, "--cluster-dns");
            if (!addresses) return addresses.error();
            settings.cluster_dns = std::move(*addresses);
        }
    } else if (file.cluster_dns) {
        for (const auto& address : *file.cluster_dns) {
            if (!IpAddress::parse(address)) {
                return make_error(
                    ErrorCode::kInvalidArgument,
                    fmt::format("--kubelet-config: {}: clusterDNS: {} is not an IP address",
                                config_path, quote_for_message(address)));
            }
        }
        settings.cluster_dns = *file.cluster_dns;
    }
    settings.cluster_domain =
        flags.cluster_domain.value_or(file.cluster_domain.value_or("cluster.local"));
    while (!settings.cluster_domain.empty() && settings.cluster_domain.back() == '.')
        settings.cluster_domain.pop_back();
    const std::string resolv_conf =
        flags.resolv_conf.value_or(file.resolv_conf.value_or("/etc/resolv.conf"));
    settings.resolv_conf_set = !resolv_conf.empty();
    if (settings.resolv_conf_set) {
        auto text = read_file_text(resolv_conf);
        if (!text) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("--node-resolv-conf: {}", text.error().describe()));
        }
        settings.node = dns::parse_resolv_conf_as_kubelet(*text);
    }
    return settings;
}

}  // namespace sb::proxy
