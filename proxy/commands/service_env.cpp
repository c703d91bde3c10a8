#include "proxy/commands/service_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace sb::proxy {

namespace {

// kubelet's makeEnvVariableName: upper case, '-' as '_'.
std::string variable_name(const std::string& text) {
    std::string name = text;
    for (char& c : name) {
        c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
}

std::string lower(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

}  // namespace

std::vector<EnvVar> service_variables(const watch::Service& service) {
    std::vector<EnvVar> variables;
    if (service.cluster_ips.empty() || service.ports.empty()) return variables;
    const std::string prefix = variable_name(service.meta.name);
    const std::string cluster_ip = service.cluster_ips.front().to_string();
    variables.push_back({prefix + "_SERVICE_HOST", cluster_ip});
    variables.push_back({prefix + "_SERVICE_PORT", std::to_string(service.ports.front().port)});
    for (const auto& port : service.ports) {
        if (port.name.empty()) continue;
        variables.push_back(
            {prefix + "_SERVICE_PORT_" + variable_name(port.name), std::to_string(port.port)});
    }
    for (size_t i = 0; i < service.ports.size(); ++i) {
        const auto& port = service.ports[i];
        const std::string protocol = watch::to_string(port.protocol);
        // HostPort's text is Go's net.JoinHostPort.
        const std::string url = fmt::format("{}://{}", lower(protocol),
                                            HostPort{service.cluster_ips.front(), port.port});
        // Docker special-cases the first port.
        if (i == 0) variables.push_back({prefix + "_PORT", url});
        const std::string port_prefix =
            prefix + "_PORT_" + std::to_string(port.port) + "_" + protocol;
        variables.push_back({port_prefix, url});
        variables.push_back({port_prefix + "_PROTO", lower(protocol)});
        variables.push_back({port_prefix + "_PORT", std::to_string(port.port)});
        variables.push_back({port_prefix + "_ADDR", cluster_ip});
    }
    return variables;
}

std::vector<EnvVar> pod_service_environment(const watch::Snapshot& snapshot, const std::string& ns,
                                            bool enable_service_links) {
    // By Service name, as kubelet's serviceMap.
    std::map<std::string, const watch::Service*> services;
    if (const auto* master = snapshot.find_service({"default", "kubernetes"})) {
        if (!master->cluster_ips.empty()) services[master->meta.name] = master;
    }
    if (enable_service_links) {
        for (const auto& [key, entry] : snapshot.services()) {
            if (key.ns != ns || !entry->service || entry->service->cluster_ips.empty()) continue;
            services[key.name] = entry->service.get();
        }
    }
    std::map<std::string, std::string> variables;
    for (const auto& [name, service] : services) {
        for (auto& variable : service_variables(*service)) {
            variables[variable.name] = std::move(variable.value);
        }
    }
    std::vector<EnvVar> sorted;
    sorted.reserve(variables.size());
    for (auto& [name, value] : variables) sorted.push_back({name, std::move(value)});
    return sorted;
}

}  // namespace sb::proxy
