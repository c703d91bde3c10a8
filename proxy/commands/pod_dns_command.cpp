// `switchboard pod-dns`: the resolv.conf kubelet writes for a Pod
// (docs/pod-commands.md, "pod-dns").
#include <iostream>

#include "dns/search_path/pod_resolv_conf.h"
#include "proxy/commands/kubelet_dns_flags.h"
#include "proxy/commands/pod_command_line.h"
#include "proxy/commands/pod_commands.h"
#include "proxy/commands/pod_object.h"

namespace sb::proxy {

int run_pod_dns(const std::vector<std::string>& args) {
    std::string pod_file;
    KubeletDnsFlags kubelet;
    CommandLine line{
        "pod-dns",
        "Prints the /etc/resolv.conf kubelet writes for a Pod: its dnsPolicy and "
        "dnsConfig over kubelet's clusterDNS, clusterDomain and resolvConf, with "
        "kubelet's limits (3 nameservers; 32 search domains, 2048 characters). "
        "Kubelet's warnings go to stderr.",
        {text_option({"POD.json"},
                     "the Pod, as `kubectl get pod NAME -o json` prints it; - for stdin", pod_file)
             .as_required()},
        "Example:\n"
        "  kubectl get pod web-0 -o json | switchboard pod-dns - --cluster-dns 10.96.0.10\n"
        "  search default.svc.cluster.local svc.cluster.local cluster.local\n"
        "  nameserver 10.96.0.10\n"
        "  options ndots:5\n"
        "Exit codes: 0 ok; 2 bad flags, or a file that is not a valid Pod.\n"};
    add_kubelet_dns_flags(line.options, kubelet);
    if (auto code = parse_pod_command_line(line, args)) return *code;

    auto pod = read_pod_file(pod_file);
    if (!pod) return report_command_error("pod-dns", pod.error());
    auto settings = finish_kubelet_dns_flags(kubelet);
    if (!settings) return report_command_error("pod-dns", settings.error());
    auto conf = dns::compose_pod_resolv_conf(*pod, *settings);
    if (!conf) return report_command_error("pod-dns", conf.error());
    for (const auto& warning : conf->warnings) {
        std::cerr << "switchboard pod-dns: warning: " << warning << "\n";
    }
    std::cout << dns::format_resolv_conf(*conf) << std::flush;
    return 0;
}

}  // namespace sb::proxy
