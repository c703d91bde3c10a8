// kube-proxy's chains in iptables-legacy (the x_tables kernel interface),
// through the XtablesTables interface (rules/kernel/xtables.h): the same libiptc
// edge that writes switchboard's own chains (rules/iptables/iptc.h), handed
// in by the caller.
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "rules/kube_proxy_cleanup/kube_proxy_names.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

namespace {

// The iptables-legacy command of `family`, which names this step in errors.
const char* tool(IpFamily family) {
    return family == IpFamily::kV4 ? "iptables-legacy" : "ip6tables-legacy";
}

// Opening a table instantiates it (with its hooks), so a table is read only
// when the kernel already has it: on a node where kube-proxy never ran,
// nothing is created.
Status clean_table(XtablesTables& xtables, IpFamily family, const std::string& table,
                   Removed& removed) {
    auto present = xtables.has_table(family, table);
    if (!present) return present.error();
    if (!*present) return {};
    auto copy = xtables.open_table(family, table);
    if (!copy) return copy.error();
    XtablesTableCopy& c = **copy;

    std::vector<std::string> others;
    std::set<std::string> kube;
    for (const bool builtin : {true, false}) {
        for (std::string& chain : c.chains(builtin)) {
            if (is_kube_proxy_chain(table, chain)) {
                kube.insert(std::move(chain));
            } else {
                others.push_back(std::move(chain));
            }
        }
    }
    if (kube.empty()) return {};
    // A chain that rules still jump to cannot be deleted: first the jumps
    // from others' chains (built-in or not), then kube-proxy's own rules
    // (which jump between its chains), then the chains.
    for (const std::string& chain : others) {
        const std::vector<std::string> targets = c.rule_targets(chain);
        for (size_t index = targets.size(); index-- > 0;) {
            if (!kube.count(targets[index])) continue;
            if (Status s = c.delete_rule(chain, index); !s) return s;
            ++removed.legacy_jump_rules;
        }
    }
    for (const std::string& chain : kube) {
        if (Status s = c.flush_chain(chain); !s) return s;
    }
    for (const std::string& chain : kube) {
        if (Status s = c.delete_chain(chain); !s) return s;
    }
    if (Status s = c.commit(); !s) return s;
    removed.legacy_chains += kube.size();
    return {};
}

Status clean_family(XtablesTables& xtables, IpFamily family, Removed& removed) {
    auto lock = xtables.lock();
    if (!lock) return lock.error();
    for (std::string_view table : kKubeProxyTables) {
        // Counted only once its table is committed.
        Removed table_removed;
        if (Status s = clean_table(xtables, family, std::string(table), table_removed); !s) {
            return s;
        }
        removed.legacy_jump_rules += table_removed.legacy_jump_rules;
        removed.legacy_chains += table_removed.legacy_chains;
    }
    return {};
}

}  // namespace

Status remove_legacy_chains(XtablesTables& xtables, IpFamily family, Removed& removed) {
    Status s = clean_family(xtables, family, removed);
    if (!s) {
        Error e = s.error();
        e.message = fmt::format("{}: {}", tool(family), e.message);
        return e;
    }
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
