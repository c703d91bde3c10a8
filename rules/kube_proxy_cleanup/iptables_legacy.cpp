// kube-proxy's chains in iptables-legacy (the x_tables kernel interface),
// through libiptc / libip6tc, as rules/iptables/iptc.cpp writes switchboard's.
#include <errno.h>
#include <fcntl.h>
#include <libiptc/libiptc.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "rules/kube_proxy_cleanup/kube_proxy_names.h"
#include "rules/kube_proxy_cleanup/steps.h"
#include "rules/xtables_lock.h"

// libip6tc.h, unlike libiptc.h, has no extern "C" block of its own.
extern "C" {
#include <libiptc/libip6tc.h>
}

namespace sb::rules::kube_proxy_cleanup {

namespace {

// The libiptc calls this step makes, for one family's entry type.
template <class Entry>
struct IptcApi {
    const char* tool;        // for messages: the iptables-legacy command of this family
    const char* names_file;  // the tables this network namespace has instantiated
    xtc_handle* (*init)(const char*);
    void (*free)(xtc_handle*);
    const char* (*first_chain)(xtc_handle*);
    const char* (*next_chain)(xtc_handle*);
    const Entry* (*first_rule)(const char*, xtc_handle*);
    const Entry* (*next_rule)(const Entry*, xtc_handle*);
    const char* (*target)(const Entry*, xtc_handle*);
    int (*delete_rule)(const char*, unsigned, xtc_handle*);
    int (*flush)(const char*, xtc_handle*);
    int (*delete_chain)(const char*, xtc_handle*);
    int (*commit)(xtc_handle*);
    const char* (*strerror)(int);
};

const IptcApi<ipt_entry> kIpv4{"iptables-legacy",  "/proc/net/ip_tables_names",
                               iptc_init,          iptc_free,
                               iptc_first_chain,   iptc_next_chain,
                               iptc_first_rule,    iptc_next_rule,
                               iptc_get_target,    iptc_delete_num_entry,
                               iptc_flush_entries, iptc_delete_chain,
                               iptc_commit,        iptc_strerror};
const IptcApi<ip6t_entry> kIpv6{"ip6tables-legacy",  "/proc/net/ip6_tables_names",
                                ip6tc_init,          ip6tc_free,
                                ip6tc_first_chain,   ip6tc_next_chain,
                                ip6tc_first_rule,    ip6tc_next_rule,
                                ip6tc_get_target,    ip6tc_delete_num_entry,
                                ip6tc_flush_entries, ip6tc_delete_chain,
                                ip6tc_commit,        ip6tc_strerror};

// Opening a table with libiptc instantiates it (with its hooks), so a table
// is read only when the kernel already has it: on a node where kube-proxy
// never ran, nothing is created.
// Without the file the kernel has no x_tables of this family at all.
template <class Entry>
Result<bool> instantiated(const IptcApi<Entry>& api, std::string_view table) {
    std::ifstream names(api.names_file);
    if (!names) {
        if (errno == ENOENT) return false;
        return make_error(ErrorCode::kIo, fmt::format("{}: read {}", api.tool, api.names_file),
                          errno);
    }
    std::string line;
    while (std::getline(names, line)) {
        if (line == table) return true;
    }
    return false;
}

template <class Entry>
Status clean_table(const IptcApi<Entry>& api, const char* table, Removed& removed) {
    auto present = instantiated(api, table);
    if (!present) return present.error();
    if (!*present) return {};
    auto failure = [&](const std::string& what) -> Status {
        const int err = errno;
        return make_error(
            ErrorCode::kKernel,
            fmt::format("{} {} table: {}: {}", api.tool, table, what, api.strerror(err)), err);
    };
    xtc_handle* handle = api.init(table);
    if (!handle) return failure("read");
    struct Release {
        const IptcApi<Entry>& api;
        xtc_handle* handle;
        ~Release() { api.free(handle); }
    } release{api, handle};

    std::vector<std::string> others;
    std::set<std::string> kube;
    for (const char* c = api.first_chain(handle); c; c = api.next_chain(handle)) {
        if (is_kube_proxy_chain(table, c)) {
            kube.insert(c);
        } else {
            others.emplace_back(c);
        }
    }
    if (kube.empty()) return {};
    // A chain that rules still jump to cannot be deleted: first the jumps
    // from others' chains (built-in or not), then kube-proxy's own rules
    // (which jump between its chains), then the chains.
    for (const std::string& chain : others) {
        std::vector<unsigned> jumps;
        unsigned index = 0;
        for (const Entry* e = api.first_rule(chain.c_str(), handle); e;
             e = api.next_rule(e, handle), ++index) {
            if (kube.count(api.target(e, handle))) jumps.push_back(index);
        }
        for (auto it = jumps.rbegin(); it != jumps.rend(); ++it) {
            if (!api.delete_rule(chain.c_str(), *it, handle)) {
                return failure("delete a jump from " + chain);
            }
        }
        removed.legacy_jump_rules += jumps.size();
    }
    for (const std::string& chain : kube) {
        if (!api.flush(chain.c_str(), handle)) return failure("flush " + chain);
    }
    for (const std::string& chain : kube) {
        if (!api.delete_chain(chain.c_str(), handle)) return failure("delete chain " + chain);
    }
    if (!api.commit(handle)) return failure("commit");
    removed.legacy_chains += kube.size();
    return {};
}

template <class Entry>
Status clean_family(const IptcApi<Entry>& api, Removed& removed) {
    XtablesLock lock;
    if (!lock.ok()) {
        return make_error(ErrorCode::kIo, std::string(api.tool) +
                                              ": the xtables lock /run/xtables.lock stayed busy");
    }
    for (std::string_view table : kKubeProxyTables) {
        // Counted only once its table is committed.
        Removed table_removed;
        if (Status s = clean_table(api, std::string(table).c_str(), table_removed); !s) return s;
        removed.legacy_jump_rules += table_removed.legacy_jump_rules;
        removed.legacy_chains += table_removed.legacy_chains;
    }
    return {};
}

}  // namespace

Status remove_legacy_chains(IpFamily family, Removed& removed) {
    return family == IpFamily::kV4 ? clean_family(kIpv4, removed) : clean_family(kIpv6, removed);
}

}  // namespace sb::rules::kube_proxy_cleanup
