#include "rules/iptables/iptc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <libiptc/libiptc.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_recent.h>
#include <linux/netfilter/xt_statistic.h>
#include <linux/netfilter/xt_tcpudp.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "rules/iptables/commit_order.h"
#include "rules/iptables/table_snapshot.h"
#include "rules/xtables_lock.h"

// libip6tc.h, unlike libiptc.h, has no extern "C" block of its own.
extern "C" {
#include <libiptc/libip6tc.h>
}

// xt_sctp.h declares C99 inline helpers returning _Bool (C++ spells it
// bool) and a function-like macro named `bytes`.
#define _Bool bool
#include <linux/netfilter/xt_sctp.h>
#undef _Bool
#undef bytes

namespace sb::rules::iptables {

namespace {

// Bytes of one entry's matches or target, appended in kernel layout.
class Blob {
  public:
    void append(const void* data, size_t size, size_t aligned) {
        const size_t at = bytes_.size();
        bytes_.resize(at + aligned, 0);
        std::memcpy(bytes_.data() + at, data, size);
    }
    const std::vector<uint8_t>& bytes() const { return bytes_; }

  private:
    std::vector<uint8_t> bytes_;
};

template <class Info>
void add_match(Blob& out, const char* name, uint8_t revision, const Info& info) {
    xt_entry_match m{};
    const size_t size = XT_ALIGN(sizeof(xt_entry_match)) + XT_ALIGN(sizeof(Info));
    m.u.user.match_size = static_cast<uint16_t>(size);
    std::strncpy(m.u.user.name, name, sizeof(m.u.user.name) - 1);
    m.u.user.revision = revision;
    out.append(&m, sizeof(m), XT_ALIGN(sizeof(xt_entry_match)));
    out.append(&info, sizeof(info), XT_ALIGN(sizeof(Info)));
}

template <class Info>
void add_target(Blob& out, const char* name, uint8_t revision, const Info& info) {
    xt_entry_target t{};
    const size_t size = XT_ALIGN(sizeof(xt_entry_target)) + XT_ALIGN(sizeof(Info));
    t.u.user.target_size = static_cast<uint16_t>(size);
    std::strncpy(t.u.user.name, name, sizeof(t.u.user.name) - 1);
    t.u.user.revision = revision;
    out.append(&t, sizeof(t), XT_ALIGN(sizeof(xt_entry_target)));
    out.append(&info, sizeof(info), XT_ALIGN(sizeof(Info)));
}

void copy_address(const IpAddress& address, void* out) {
    std::memcpy(out, address.bytes(), address.size());
}

// -i NAME / NAME+ as iptables encodes it: the kernel compares the name under
// the mask, which covers NAME and its NUL (exact) or NAME alone (prefix).
// Precondition: the name is 1-15 bytes (validate_interface_name).
void copy_interface(const std::string& spec, char (&name)[IFNAMSIZ],
                    unsigned char (&mask)[IFNAMSIZ]) {
    const bool prefix = !spec.empty() && spec.back() == '+';
    const size_t len = std::min(spec.size() - (prefix ? 1 : 0), size_t{IFNAMSIZ - 1});
    std::memcpy(name, spec.data(), len);
    std::memset(mask, 0xff, prefix ? len : len + 1);
}

Blob matches_of(const Rule& rule, IpFamily family) {
    Blob out;
    if (!rule.comment.empty()) {
        xt_comment_info info{};
        std::strncpy(info.comment, rule.comment.c_str(), sizeof(info.comment) - 1);
        add_match(out, "comment", 0, info);
    }
    if (rule.dport != 0) {
        if (rule.proto == IPPROTO_TCP) {
            xt_tcp info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            add_match(out, "tcp", 0, info);
        } else if (rule.proto == IPPROTO_UDP) {
            xt_udp info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            add_match(out, "udp", 0, info);
        } else {
            xt_sctp_info info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            info.flags = XT_SCTP_DEST_PORTS;
            add_match(out, "sctp", 0, info);
        }
    }
    if (rule.src_type_local || rule.dst_type_local) {
        xt_addrtype_info_v1 info{};
        if (rule.src_type_local) info.source = XT_ADDRTYPE_LOCAL;
        if (rule.dst_type_local) info.dest = XT_ADDRTYPE_LOCAL;
        add_match(out, "addrtype", 1, info);
    }
    if (rule.mark_match) {
        xt_mark_mtinfo1 info{};
        info.mark = rule.mark_value;
        info.mask = rule.mark_mask;
        info.invert = rule.mark_invert ? 1 : 0;
        add_match(out, "mark", 1, info);
    }
    if (rule.probability_denominator != 0) {
        xt_statistic_info info{};
        info.mode = XT_STATISTIC_MODE_RANDOM;
        info.u.random.probability = statistic_probability(rule.probability_denominator);
        add_match(out, "statistic", 0, info);
    }
    if (rule.recent != RecentKind::kNone) {
        xt_recent_mtinfo_v1 info{};
        std::strncpy(info.name, rule.recent_name.c_str(), sizeof(info.name) - 1);
        info.side = XT_RECENT_SOURCE;
        std::memset(&info.mask, 0xff, family == IpFamily::kV4 ? 4 : 16);
        if (rule.recent == RecentKind::kCheck) {
            info.check_set = XT_RECENT_CHECK | XT_RECENT_REAP;
            info.seconds = rule.recent_seconds;
        } else {
            info.check_set = XT_RECENT_SET;
        }
        add_match(out, "recent", 1, info);
    }
    return out;
}

Blob target_of(const Target& t, IpFamily family) {
    Blob out;
    auto standard = [&](const std::string& name) {
        xt_standard_target s{};
        s.target.u.user.target_size = XT_ALIGN(sizeof(xt_standard_target));
        std::strncpy(s.target.u.user.name, name.c_str(), sizeof(s.target.u.user.name) - 1);
        out.append(&s, sizeof(s), XT_ALIGN(sizeof(xt_standard_target)));
    };
    switch (t.kind) {
        case TargetKind::kJump:
            standard(t.chain);
            break;
        case TargetKind::kAccept:
            standard("ACCEPT");
            break;
        case TargetKind::kDrop:
            standard("DROP");
            break;
        case TargetKind::kReturn:
            standard("RETURN");
            break;
        case TargetKind::kDnat: {
            nf_nat_range2 info{};
            info.flags = NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED;
            copy_address(t.address, &info.min_addr);
            copy_address(t.address, &info.max_addr);
            info.min_proto.all = info.max_proto.all = htons(t.port);
            add_target(out, "DNAT", 2, info);
            break;
        }
        case TargetKind::kMarkOr:
        case TargetKind::kMarkXor: {
            xt_mark_tginfo2 info{};
            info.mark = t.mark;
            info.mask = t.kind == TargetKind::kMarkOr ? t.mark : 0;
            add_target(out, "MARK", 2, info);
            break;
        }
        case TargetKind::kMasquerade:
            if (family == IpFamily::kV4) {
                nf_nat_ipv4_multi_range_compat info{};
                info.rangesize = 1;
                info.range[0].flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
                add_target(out, "MASQUERADE", 0, info);
            } else {
                nf_nat_range info{};
                info.flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
                add_target(out, "MASQUERADE", 0, info);
            }
            break;
        case TargetKind::kRejectTcpReset:
        case TargetKind::kRejectPortUnreachable: {
            const bool reset = t.kind == TargetKind::kRejectTcpReset;
            if (family == IpFamily::kV4) {
                ipt_reject_info info{};
                info.with = reset ? IPT_TCP_RESET : IPT_ICMP_PORT_UNREACHABLE;
                add_target(out, "REJECT", 0, info);
            } else {
                ip6t_reject_info info{};
                info.with = reset ? IP6T_TCP_RESET : IP6T_ICMP6_PORT_UNREACH;
                add_target(out, "REJECT", 0, info);
            }
            break;
        }
    }
    return out;
}

void prefix_mask(const Prefix& prefix, uint8_t* mask) {
    const size_t size = prefix.family() == IpFamily::kV4 ? 4 : 16;
    std::memset(mask, 0, size);
    for (size_t bit = 0; bit < prefix.length(); ++bit) {
        mask[bit / 8] = static_cast<uint8_t>(mask[bit / 8] | (0x80 >> (bit % 8)));
    }
}

// An entry in 8-byte aligned storage, as libiptc reads it.
struct EntryBuffer {
    std::vector<uint64_t> words;
    template <class Entry>
    const Entry* as() const {
        return reinterpret_cast<const Entry*>(words.data());
    }
};

template <class Entry>
EntryBuffer assemble(Entry header, const Blob& matches, const Blob& target) {
    header.target_offset = static_cast<uint16_t>(sizeof(Entry) + matches.bytes().size());
    header.next_offset = static_cast<uint16_t>(header.target_offset + target.bytes().size());
    EntryBuffer out;
    out.words.resize((header.next_offset + 7) / 8, 0);
    auto* bytes = reinterpret_cast<uint8_t*>(out.words.data());
    std::memcpy(bytes, &header, sizeof(Entry));
    std::memcpy(bytes + sizeof(Entry), matches.bytes().data(), matches.bytes().size());
    std::memcpy(bytes + header.target_offset, target.bytes().data(), target.bytes().size());
    return out;
}

struct V4 {
    using Entry = ipt_entry;
    static constexpr IpFamily kFamily = IpFamily::kV4;
    static xtc_handle* init(const char* table) { return iptc_init(table); }
    static void free(xtc_handle* h) { iptc_free(h); }
    static const char* first_chain(xtc_handle* h) { return iptc_first_chain(h); }
    static const char* next_chain(xtc_handle* h) { return iptc_next_chain(h); }
    static bool builtin(const char* c, xtc_handle* h) { return iptc_builtin(c, h) != 0; }
    static const Entry* first_rule(const char* c, xtc_handle* h) { return iptc_first_rule(c, h); }
    static const Entry* next_rule(const Entry* e, xtc_handle* h) { return iptc_next_rule(e, h); }
    static const char* get_target(const Entry* e, xtc_handle* h) { return iptc_get_target(e, h); }
    static int create_chain(const char* c, xtc_handle* h) { return iptc_create_chain(c, h); }
    static int flush(const char* c, xtc_handle* h) { return iptc_flush_entries(c, h); }
    static int delete_chain(const char* c, xtc_handle* h) { return iptc_delete_chain(c, h); }
    static int delete_num(const char* c, unsigned n, xtc_handle* h) {
        return iptc_delete_num_entry(c, n, h);
    }
    static int append(const char* c, const Entry* e, xtc_handle* h) {
        return iptc_append_entry(c, e, h);
    }
    static int insert(const char* c, const Entry* e, unsigned n, xtc_handle* h) {
        return iptc_insert_entry(c, e, n, h);
    }
    static int commit(xtc_handle* h) { return iptc_commit(h); }
    static const char* strerror(int e) { return iptc_strerror(e); }
    static EntryBuffer entry(const Rule& rule) {
        Entry e{};
        if (rule.source) {
            copy_address(rule.source->address(), &e.ip.src);
            prefix_mask(*rule.source, reinterpret_cast<uint8_t*>(&e.ip.smsk));
            if (rule.source_negate) e.ip.invflags |= IPT_INV_SRCIP;
        }
        if (rule.destination) {
            copy_address(rule.destination->address(), &e.ip.dst);
            prefix_mask(*rule.destination, reinterpret_cast<uint8_t*>(&e.ip.dmsk));
            if (rule.destination_negate) e.ip.invflags |= IPT_INV_DSTIP;
        }
        if (!rule.in_interface.empty()) {
            copy_interface(rule.in_interface, e.ip.iniface, e.ip.iniface_mask);
        }
        e.ip.proto = rule.proto;
        return assemble(e, matches_of(rule, kFamily), target_of(rule.target, kFamily));
    }
};

struct V6 {
    using Entry = ip6t_entry;
    static constexpr IpFamily kFamily = IpFamily::kV6;
    static xtc_handle* init(const char* table) { return ip6tc_init(table); }
    static void free(xtc_handle* h) { ip6tc_free(h); }
    static const char* first_chain(xtc_handle* h) { return ip6tc_first_chain(h); }
    static const char* next_chain(xtc_handle* h) { return ip6tc_next_chain(h); }
    static bool builtin(const char* c, xtc_handle* h) { return ip6tc_builtin(c, h) != 0; }
    static const Entry* first_rule(const char* c, xtc_handle* h) { return ip6tc_first_rule(c, h); }
    static const Entry* next_rule(const Entry* e, xtc_handle* h) { return ip6tc_next_rule(e, h); }
    static const char* get_target(const Entry* e, xtc_handle* h) { return ip6tc_get_target(e, h); }
    static int create_chain(const char* c, xtc_handle* h) { return ip6tc_create_chain(c, h); }
    static int flush(const char* c, xtc_handle* h) { return ip6tc_flush_entries(c, h); }
    static int delete_chain(const char* c, xtc_handle* h) { return ip6tc_delete_chain(c, h); }
    static int delete_num(const char* c, unsigned n, xtc_handle* h) {
        return ip6tc_delete_num_entry(c, n, h);
    }
    static int append(const char* c, const Entry* e, xtc_handle* h) {
        return ip6tc_append_entry(c, e, h);
    }
    static int insert(const char* c, const Entry* e, unsigned n, xtc_handle* h) {
        return ip6tc_insert_entry(c, e, n, h);
    }
    static int commit(xtc_handle* h) { return ip6tc_commit(h); }
    static const char* strerror(int e) { return ip6tc_strerror(e); }
    static EntryBuffer entry(const Rule& rule) {
        Entry e{};
        if (rule.source) {
            copy_address(rule.source->address(), &e.ipv6.src);
            prefix_mask(*rule.source, reinterpret_cast<uint8_t*>(&e.ipv6.smsk));
            if (rule.source_negate) e.ipv6.invflags |= IP6T_INV_SRCIP;
        }
        if (rule.destination) {
            copy_address(rule.destination->address(), &e.ipv6.dst);
            prefix_mask(*rule.destination, reinterpret_cast<uint8_t*>(&e.ipv6.dmsk));
            if (rule.destination_negate) e.ipv6.invflags |= IP6T_INV_DSTIP;
        }
        if (!rule.in_interface.empty()) {
            copy_interface(rule.in_interface, e.ipv6.iniface, e.ipv6.iniface_mask);
        }
        if (rule.proto != 0) {
            e.ipv6.proto = rule.proto;
            e.ipv6.flags |= IP6T_F_PROTO;
        }
        return assemble(e, matches_of(rule, kFamily), target_of(rule.target, kFamily));
    }
};

bool own(const std::string& chain) {
    return chain.rfind(kChainPrefix, 0) == 0;
}

template <class Ops>
class Handle {
  public:
    explicit Handle(const char* table) : table_(table), h_(Ops::init(table)) {}
    ~Handle() {
        if (h_) Ops::free(h_);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    xtc_handle* get() const { return h_; }

    Error error(const std::string& what) const {
        const int e = errno;
        return make_error(ErrorCode::kIo,
                          fmt::format("{} {} table: {}: {}",
                                      Ops::kFamily == IpFamily::kV4 ? "iptables" : "ip6tables",
                                      table_, what, Ops::strerror(e)),
                          e);
    }

    std::vector<std::string> chains(bool builtin) const {
        std::vector<std::string> out;
        for (const char* c = Ops::first_chain(h_); c; c = Ops::next_chain(h_)) {
            if (Ops::builtin(c, h_) == builtin) out.emplace_back(c);
        }
        return out;
    }

    std::vector<std::string> targets(const std::string& chain) const {
        std::vector<std::string> out;
        for (auto* e = Ops::first_rule(chain.c_str(), h_); e; e = Ops::next_rule(e, h_)) {
            out.emplace_back(Ops::get_target(e, h_));
        }
        return out;
    }

    // Deletes the rules of a built-in chain that jump to own chains, except
    // the first jump to each chain in `keep`. Returns the kept targets.
    Result<std::set<std::string>> prune_hooks(const std::string& builtin,
                                              const std::set<std::string>& keep) {
        std::set<std::string> kept;
        std::vector<unsigned> doomed;
        const std::vector<std::string> t = targets(builtin);
        for (size_t i = 0; i < t.size(); ++i) {
            if (!own(t[i])) continue;
            if (keep.count(t[i]) && kept.insert(t[i]).second) continue;
            doomed.push_back(static_cast<unsigned>(i));
        }
        for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
            if (!Ops::delete_num(builtin.c_str(), *it, h_))
                return error("delete rule in " + builtin);
        }
        changed_ = changed_ || !doomed.empty();
        return kept;
    }

    Status remove_chains(const std::vector<std::string>& names) {
        for (const std::string& c : names) {
            if (!Ops::flush(c.c_str(), h_)) return error("flush " + c);
        }
        for (const std::string& c : names) {
            if (!Ops::delete_chain(c.c_str(), h_)) return error("delete chain " + c);
        }
        changed_ = changed_ || !names.empty();
        return {};
    }

    bool changed() const { return changed_; }

    Status commit() {
        if (!Ops::commit(h_)) return error("commit");
        return {};
    }

  private:
    const char* table_;
    xtc_handle* h_;
    bool changed_ = false;
};

// Makes the handle's copy of the table hold `table` (not committed).
template <class Ops>
Status prepare_table(Handle<Ops>& h, const Table& table, const Table* applied) {
    if (!h.get()) return h.error("init");
    std::map<std::string, std::vector<const HookRule*>> hooks;
    for (const HookRule& hook : table.hooks) hooks[hook.builtin].push_back(&hook);
    std::map<std::string, std::set<std::string>> present;
    for (const std::string& builtin : h.chains(true)) {
        std::set<std::string> keep;
        for (const HookRule* hook : hooks[builtin]) keep.insert(hook->rule.target.chain);
        auto kept = h.prune_hooks(builtin, keep);
        if (!kept) return kept.error();
        present[builtin] = std::move(kept.value());
    }
    // Own chains that the last apply wrote with the same rules and that the
    // kernel still has are kept as they are (partial sync).
    auto kept = [&](const std::string& name, const Chain& chain) {
        if (!applied) return false;
        auto it = applied->chains.find(name);
        return it != applied->chains.end() && it->second == chain;
    };
    std::vector<std::string> stale;
    std::set<std::string> existing;
    for (const std::string& c : h.chains(false)) {
        existing.insert(c);
        if (!own(c)) continue;
        auto wanted = table.chains.find(c);
        if (wanted == table.chains.end()) {
            stale.push_back(c);
        } else if (!kept(c, wanted->second) && !Ops::flush(c.c_str(), h.get())) {
            return h.error("flush " + c);
        }
    }
    for (const auto& [name, chain] : table.chains) {
        if (existing.count(name)) continue;
        if (!Ops::create_chain(name.c_str(), h.get())) return h.error("create chain " + name);
    }
    for (const auto& [name, chain] : table.chains) {
        if (existing.count(name) && kept(name, chain)) continue;
        for (const Rule& rule : chain.rules) {
            const EntryBuffer e = Ops::entry(rule);
            if (!Ops::append(name.c_str(), e.template as<typename Ops::Entry>(), h.get())) {
                return h.error("append to " + name + ": " + rule_text(rule));
            }
        }
    }
    if (Status s = h.remove_chains(stale); !s) return s;
    for (auto& [builtin, list] : hooks) {
        for (auto it = list.rbegin(); it != list.rend(); ++it) {
            const Rule& rule = (*it)->rule;
            if (present[builtin].count(rule.target.chain)) continue;
            const EntryBuffer e = Ops::entry(rule);
            if (!Ops::insert(builtin.c_str(), e.template as<typename Ops::Entry>(), 0, h.get())) {
                return h.error("insert into " + builtin);
            }
        }
    }
    return {};
}

// Whether the kernel has instantiated `table` in this network namespace.
// Opening a table with libiptc instantiates it (and its hooks), so cleanup
// looks first: a table that does not exist holds nothing of ours.
bool table_exists(IpFamily family, const char* table) {
    std::ifstream names(family == IpFamily::kV4 ? "/proc/net/ip_tables_names"
                                                : "/proc/net/ip6_tables_names");
    std::string line;
    while (std::getline(names, line)) {
        if (line == table) return true;
    }
    return false;
}

template <class Ops>
Status cleanup_table(const char* table) {
    if (!table_exists(Ops::kFamily, table)) return {};
    Handle<Ops> h(table);
    if (!h.get()) return h.error("init");
    for (const std::string& builtin : h.chains(true)) {
        if (auto kept = h.prune_hooks(builtin, {}); !kept) return kept.error();
    }
    std::vector<std::string> mine;
    for (const std::string& c : h.chains(false)) {
        if (own(c)) mine.push_back(c);
    }
    if (Status s = h.remove_chains(mine); !s) return s;
    if (!h.changed()) return {};
    return h.commit();
}

template <class Ops>
Status apply_tables(const FamilyModel& model, const FamilyModel* applied) {
    XtablesLock lock;
    if (!lock.ok()) return make_error(ErrorCode::kIo, "xtables lock /run/xtables.lock is busy");
    // Both tables are prepared before either is committed, and filter's
    // contents are kept for the undo: commit_order.h.
    Handle<Ops> nat(model.nat.name.c_str());
    if (Status s = prepare_table(nat, model.nat, applied ? &applied->nat : nullptr); !s) return s;
    Handle<Ops> filter(model.filter.name.c_str());
    if (Status s = prepare_table(filter, model.filter, applied ? &applied->filter : nullptr); !s) {
        return s;
    }
    auto before = TableSnapshot::take(Ops::kFamily, model.filter.name);
    if (!before) return before.error();
    return commit_filter_then_nat({[&] { return filter.commit(); }, [&] { return nat.commit(); },
                                   [&] { return before->restore(); }});
}

template <class Ops>
Status cleanup_tables() {
    XtablesLock lock;
    if (!lock.ok()) return make_error(ErrorCode::kIo, "xtables lock /run/xtables.lock is busy");
    if (Status s = cleanup_table<Ops>("nat"); !s) return s;
    return cleanup_table<Ops>("filter");
}

}  // namespace

Status apply_family(const FamilyModel& model, const FamilyModel* applied) {
    return model.family == IpFamily::kV4 ? apply_tables<V4>(model, applied)
                                         : apply_tables<V6>(model, applied);
}

Status cleanup_family(IpFamily family) {
    return family == IpFamily::kV4 ? cleanup_tables<V4>() : cleanup_tables<V6>();
}

Result<std::vector<std::string>> list_own_chains(IpFamily family, const char* table) {
    auto list = [&](auto ops) -> Result<std::vector<std::string>> {
        using Ops = decltype(ops);
        Handle<Ops> h(table);
        if (!h.get()) return h.error("init");
        std::vector<std::string> out;
        for (const std::string& c : h.chains(false)) {
            if (own(c)) out.push_back(c);
        }
        return out;
    };
    return family == IpFamily::kV4 ? list(V4{}) : list(V6{});
}

}  // namespace sb::rules::iptables
