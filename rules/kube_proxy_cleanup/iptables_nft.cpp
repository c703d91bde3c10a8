// kube-proxy's chains in iptables-nft: the nftables tables `ip`/`ip6` nat,
// filter and mangle that iptables-nft writes, holding chains named as in
// x_tables. One transaction: the rules of other chains that jump or go to a
// kube-proxy chain (deleted by handle), then kube-proxy's chains (flushed,
// then deleted), so the kernel never sees a chain deleted while referenced.
#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rules/kernel/nft_batch.h"
#include "rules/kube_proxy_cleanup/kube_proxy_names.h"
#include "rules/kube_proxy_cleanup/nft_listing.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

namespace {

bool iptables_nft_table(const NftTable& table) {
    return (table.family == NFPROTO_IPV4 || table.family == NFPROTO_IPV6) &&
           std::find(std::begin(kKubeProxyTables), std::end(kKubeProxyTables), table.name) !=
               std::end(kKubeProxyTables);
}

Result<std::set<std::string>> kube_proxy_chains(NetlinkSocket& socket, const NftTable& table) {
    std::set<std::string> out;
    Status listed = nft_dump(
        socket, NFT_MSG_GETCHAIN, table.family,
        fmt::format("list the chains of {} {}", nft_family_name(table.family), table.name),
        [&](nlmsghdr* nlh) {
            nftnl_chain* c = nftnl_chain_alloc();
            nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table.name.c_str());
            nftnl_chain_nlmsg_build_payload(nlh, c);
            nftnl_chain_free(c);
        },
        [&](const nlmsghdr* m) {
            nftnl_chain* c = nftnl_chain_alloc();
            if (nftnl_chain_nlmsg_parse(m, c) == 0 &&
                table.name == nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE) &&
                is_kube_proxy_chain(table.name, nftnl_chain_get_str(c, NFTNL_CHAIN_NAME))) {
                out.insert(nftnl_chain_get_str(c, NFTNL_CHAIN_NAME));
            }
            nftnl_chain_free(c);
        });
    if (!listed) return listed.error();
    return out;
}

// A rule of another chain that jumps or goes to one of kube-proxy's.
struct Jump {
    std::string chain;
    uint64_t handle = 0;
};

// Whether one of the rule's verdicts (an `immediate` expression: iptables-nft
// writes -j/-g CHAIN that way) names a chain of `targets`.
bool jumps_to(nftnl_rule* rule, const std::set<std::string>& targets) {
    struct Scan {
        const std::set<std::string>* targets;
        bool found = false;
    } scan{&targets};
    nftnl_expr_foreach(
        rule,
        [](nftnl_expr* e, void* data) -> int {
            auto& s = *static_cast<Scan*>(data);
            if (std::strcmp(nftnl_expr_get_str(e, NFTNL_EXPR_NAME), "immediate") != 0 ||
                !nftnl_expr_is_set(e, NFTNL_EXPR_IMM_CHAIN)) {
                return 0;
            }
            const auto verdict =
                static_cast<int32_t>(nftnl_expr_get_u32(e, NFTNL_EXPR_IMM_VERDICT));
            if ((verdict == NFT_JUMP || verdict == NFT_GOTO) &&
                s.targets->count(nftnl_expr_get_str(e, NFTNL_EXPR_IMM_CHAIN))) {
                s.found = true;
            }
            return 0;
        },
        &scan);
    return scan.found;
}

Result<std::vector<Jump>> jumps_into(NetlinkSocket& socket, const NftTable& table,
                                     const std::set<std::string>& kube) {
    std::vector<Jump> out;
    Status listed = nft_dump(
        socket, NFT_MSG_GETRULE, table.family,
        fmt::format("list the rules of {} {}", nft_family_name(table.family), table.name),
        [&](nlmsghdr* nlh) {
            nftnl_rule* r = nftnl_rule_alloc();
            nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table.name.c_str());
            nftnl_rule_nlmsg_build_payload(nlh, r);
            nftnl_rule_free(r);
        },
        [&](const nlmsghdr* m) {
            nftnl_rule* r = nftnl_rule_alloc();
            if (nftnl_rule_nlmsg_parse(m, r) == 0 &&
                table.name == nftnl_rule_get_str(r, NFTNL_RULE_TABLE)) {
                const std::string chain = nftnl_rule_get_str(r, NFTNL_RULE_CHAIN);
                if (!kube.count(chain) && jumps_to(r, kube)) {
                    out.push_back(Jump{chain, nftnl_rule_get_u64(r, NFTNL_RULE_HANDLE)});
                }
            }
            nftnl_rule_free(r);
        });
    if (!listed) return listed.error();
    return out;
}

void add_rule_delete(NftBatch& batch, const NftTable& table, const std::string& chain,
                     const uint64_t* handle, std::string what) {
    batch.add(NFT_MSG_DELRULE, table.family, std::move(what), [&](nlmsghdr* nlh) {
        nftnl_rule* r = nftnl_rule_alloc();
        nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table.name.c_str());
        nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
        // Without a handle, DELRULE flushes the chain.
        if (handle) nftnl_rule_set_u64(r, NFTNL_RULE_HANDLE, *handle);
        nftnl_rule_nlmsg_build_payload(nlh, r);
        nftnl_rule_free(r);
    });
}

void add_chain_delete(NftBatch& batch, const NftTable& table, const std::string& chain,
                      std::string what) {
    batch.add(NFT_MSG_DELCHAIN, table.family, std::move(what), [&](nlmsghdr* nlh) {
        nftnl_chain* c = nftnl_chain_alloc();
        nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table.name.c_str());
        nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, chain.c_str());
        nftnl_chain_nlmsg_build_payload(nlh, c);
        nftnl_chain_free(c);
    });
}

}  // namespace

Status remove_nft_compat_chains(Removed& removed) {
    auto socket = open_nftables_socket("iptables-nft");
    if (!socket) return socket.error();
    auto tables = nft_tables(*socket);
    if (!tables) return tables.error();
    NftBatch batch;
    size_t jump_rules = 0, chains = 0;
    for (const NftTable& table : *tables) {
        if (!iptables_nft_table(table)) continue;
        auto kube = kube_proxy_chains(*socket, table);
        if (!kube) return kube.error();
        if (kube->empty()) continue;
        auto jumps = jumps_into(*socket, table, *kube);
        if (!jumps) return jumps.error();
        const std::string where = fmt::format("{} {}", nft_family_name(table.family), table.name);
        for (const Jump& jump : *jumps) {
            add_rule_delete(
                batch, table, jump.chain, &jump.handle,
                fmt::format("{}: delete rule {} of {}", where, jump.handle, jump.chain));
        }
        for (const std::string& chain : *kube) {
            add_rule_delete(batch, table, chain, nullptr,
                            fmt::format("{}: flush {}", where, chain));
        }
        for (const std::string& chain : *kube) {
            add_chain_delete(batch, table, chain, fmt::format("{}: delete chain {}", where, chain));
        }
        jump_rules += jumps->size();
        chains += kube->size();
    }
    if (Status s = send(*socket, batch); !s) return s;
    removed.nft_jump_rules += jump_rules;
    removed.nft_chains += chains;
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
