#include "rules/iptables/table_snapshot.h"

// glibc's definitions first: the kernel headers then leave theirs out.
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter/x_tables.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>

#include <cstring>

#include <fmt/format.h>

namespace sb::rules::iptables {

namespace {

static_assert(NF_INET_NUMHOOKS == 5);

// The two families' spellings of the same interface.
struct V4 {
    using Info = ipt_getinfo;
    using Entries = ipt_get_entries;
    using Replace = ipt_replace;
    static constexpr int kDomain = AF_INET;
    static constexpr int kLevel = IPPROTO_IP;
    static constexpr int kGetInfo = IPT_SO_GET_INFO;
    static constexpr int kGetEntries = IPT_SO_GET_ENTRIES;
    static constexpr int kSetReplace = IPT_SO_SET_REPLACE;
};
struct V6 {
    using Info = ip6t_getinfo;
    using Entries = ip6t_get_entries;
    using Replace = ip6t_replace;
    static constexpr int kDomain = AF_INET6;
    static constexpr int kLevel = IPPROTO_IPV6;
    static constexpr int kGetInfo = IP6T_SO_GET_INFO;
    static constexpr int kGetEntries = IP6T_SO_GET_ENTRIES;
    static constexpr int kSetReplace = IP6T_SO_SET_REPLACE;
};

// A raw socket closed on scope exit.
class RawSocket {
  public:
    explicit RawSocket(int domain) : fd_(::socket(domain, SOCK_RAW, IPPROTO_RAW)) {}
    ~RawSocket() {
        if (fd_ >= 0) ::close(fd_);
    }
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;
    int fd() const { return fd_; }

  private:
    int fd_;
};

Error failure(const std::string& table, const char* what, int err) {
    return make_error(ErrorCode::kKernel, fmt::format("{} table snapshot: {}", table, what), err);
}

template <class Ops>
Result<typename Ops::Info> read_info(int fd, const std::string& table) {
    typename Ops::Info info{};
    std::strncpy(info.name, table.c_str(), sizeof(info.name) - 1);
    socklen_t len = sizeof(info);
    if (getsockopt(fd, Ops::kLevel, Ops::kGetInfo, &info, &len) < 0) {
        return failure(table, "read table info", errno);
    }
    return info;
}

}  // namespace

Result<TableSnapshot> TableSnapshot::take(IpFamily family, const std::string& table) {
    auto take_with = [&](auto ops) -> Result<TableSnapshot> {
        using Ops = decltype(ops);
        RawSocket socket(Ops::kDomain);
        if (socket.fd() < 0) return failure(table, "open a raw socket", errno);
        auto info = read_info<Ops>(socket.fd(), table);
        if (!info) return info.error();
        std::vector<char> buf(sizeof(typename Ops::Entries) + info->size);
        auto* entries = reinterpret_cast<typename Ops::Entries*>(buf.data());
        std::strncpy(entries->name, table.c_str(), sizeof(entries->name) - 1);
        entries->size = info->size;
        socklen_t len = static_cast<socklen_t>(buf.size());
        if (getsockopt(socket.fd(), Ops::kLevel, Ops::kGetEntries, entries, &len) < 0) {
            return failure(table, "read entries", errno);
        }
        TableSnapshot out;
        out.family_ = family;
        out.table_ = table;
        out.valid_hooks_ = info->valid_hooks;
        std::memcpy(out.hook_entry_.data(), info->hook_entry, sizeof(info->hook_entry));
        std::memcpy(out.underflow_.data(), info->underflow, sizeof(info->underflow));
        out.num_entries_ = info->num_entries;
        const char* blob = buf.data() + sizeof(typename Ops::Entries);
        out.entries_.assign(blob, blob + info->size);
        return out;
    };
    return family == IpFamily::kV4 ? take_with(V4{}) : take_with(V6{});
}

Status TableSnapshot::restore() const {
    auto restore_with = [&](auto ops) -> Status {
        using Ops = decltype(ops);
        RawSocket socket(Ops::kDomain);
        if (socket.fd() < 0) return failure(table_, "open a raw socket", errno);
        // The kernel wants the current entry count, to hand back their counters.
        auto now = read_info<Ops>(socket.fd(), table_);
        if (!now) return now.error();
        std::vector<xt_counters> old_counters(now->num_entries);
        std::vector<char> buf(sizeof(typename Ops::Replace) + entries_.size());
        auto* replace = reinterpret_cast<typename Ops::Replace*>(buf.data());
        std::strncpy(replace->name, table_.c_str(), sizeof(replace->name) - 1);
        replace->valid_hooks = valid_hooks_;
        replace->num_entries = num_entries_;
        replace->size = static_cast<unsigned>(entries_.size());
        std::memcpy(replace->hook_entry, hook_entry_.data(), sizeof(replace->hook_entry));
        std::memcpy(replace->underflow, underflow_.data(), sizeof(replace->underflow));
        replace->num_counters = now->num_entries;
        replace->counters = old_counters.data();
        std::memcpy(buf.data() + sizeof(typename Ops::Replace), entries_.data(), entries_.size());
        if (setsockopt(socket.fd(), Ops::kLevel, Ops::kSetReplace, replace,
                       static_cast<socklen_t>(buf.size())) < 0) {
            return failure(table_, "replace the table", errno);
        }
        return {};
    };
    return family_ == IpFamily::kV4 ? restore_with(V4{}) : restore_with(V6{});
}

}  // namespace sb::rules::iptables
