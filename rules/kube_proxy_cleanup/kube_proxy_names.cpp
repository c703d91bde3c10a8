#include "rules/kube_proxy_cleanup/kube_proxy_names.h"

#include <algorithm>
#include <initializer_list>

namespace sb::rules::kube_proxy_cleanup {

namespace {

bool one_of(std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// Per-service and per-endpoint chains (iptables mode's isServiceChainName;
// KUBE-XLB- is the deprecated name of KUBE-SVL-). Only ever in nat.
bool is_service_chain(std::string_view chain) {
    for (std::string_view prefix :
         {"KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-", "KUBE-XLB-"}) {
        if (chain.substr(0, prefix.size()) == prefix) return true;
    }
    return false;
}

}  // namespace

bool is_kube_proxy_chain(std::string_view table, std::string_view chain) {
    if (table == "nat") {
        // iptables mode: KUBE-SERVICES .. KUBE-PROXY-CANARY; ipvs mode adds
        // KUBE-NODE-PORT, KUBE-LOAD-BALANCER and, before 1.23, a nat
        // KUBE-FIREWALL (kubelet's KUBE-FIREWALL is in filter).
        return is_service_chain(chain) ||
               one_of(chain, {"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING",
                              "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY", "KUBE-NODE-PORT",
                              "KUBE-LOAD-BALANCER", "KUBE-FIREWALL"});
    }
    if (table == "filter") {
        return one_of(chain,
                      {"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-FORWARD", "KUBE-NODEPORTS",
                       "KUBE-PROXY-FIREWALL", "KUBE-PROXY-CANARY", "KUBE-NODE-PORT",
                       "KUBE-SOURCE-RANGES-FIREWALL", "KUBE-IPVS-FILTER", "KUBE-IPVS-OUT-FILTER"});
    }
    if (table == "mangle") return chain == "KUBE-PROXY-CANARY";
    return false;
}

}  // namespace sb::rules::kube_proxy_cleanup
