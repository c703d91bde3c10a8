// A scripted conntrack table for unit tests of the UDP reconcile
// (rules/conntrack.h ConntrackTable), in the spirit of kube-proxy's fake
// conntrack: the flows per family are data the test writes, deletions are
// recorded in order, and dumps and deletions can be told to fail. A deletion
// removes the flow from the table; one that is not there fails with ENOENT,
// as the kernel's does. Header-only; not thread-safe; the state must outlive
// every table made from it.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "rules/conntrack.h"

namespace sb::rules::testing {

// A flow from the pod 10.244.1.5:`sport` to `dst`:`dport`, answered by
// `reply_src`:`reply_sport`; its conntrack id is `sport`, so flows with
// distinct source ports are distinct entries.
inline UdpFlow udp_entry(const char* dst, uint16_t dport, const char* reply_src,
                         uint16_t reply_sport, uint16_t sport) {
    UdpFlow f;
    f.orig_src = *IpAddress::parse("10.244.1.5");
    f.orig_sport = sport;
    f.orig_dst = *IpAddress::parse(dst);
    f.orig_dport = dport;
    f.reply_src = *IpAddress::parse(reply_src);
    f.reply_sport = reply_sport;
    f.id = sport;
    return f;
}

class FakeConntrack {
  public:
    std::map<IpFamily, std::vector<UdpFlow>> flows;  // the table, per family
    std::vector<UdpFlow> deleted;                    // every successful deletion, in order
    std::map<IpFamily, size_t> dumps;                // dumps made, per family

    // The next dump of `family` gives its first `before` flows, then fails with `err`.
    void fail_dump(IpFamily family, int err, size_t before = 0) {
        dump_failures_[family] = {err, before};
    }
    // The next `count` deletions fail with `err`; their flows stay.
    void fail_deletions(int err, size_t count = 1) {
        deletion_errno_ = err;
        deletion_failures_ = count;
    }
    // The next `count` deletions find their flow expired (gone, ENOENT).
    void expire_before_deletion(size_t count = 1) { expirations_ = count; }

    std::unique_ptr<ConntrackTable> table() { return std::make_unique<Table>(*this); }

  private:
    class Table final : public ConntrackTable {
      public:
        explicit Table(FakeConntrack& fake) : fake_(fake) {}

        Status dump_udp(IpFamily family, std::vector<UdpFlow>& out) override {
            ++fake_.dumps[family];
            const std::vector<UdpFlow>& table = fake_.flows[family];
            auto failure = fake_.dump_failures_.find(family);
            if (failure == fake_.dump_failures_.end()) {
                out.insert(out.end(), table.begin(), table.end());
                return {};
            }
            const auto [err, before] = failure->second;
            fake_.dump_failures_.erase(failure);
            out.insert(out.end(), table.begin(),
                       table.begin() + static_cast<std::ptrdiff_t>(std::min(before, table.size())));
            return make_error(ErrorCode::kKernel, "dump", err);
        }

        std::vector<Status> remove(IpFamily family, const std::vector<UdpFlow>& doomed) override {
            std::vector<Status> out;
            std::vector<UdpFlow>& table = fake_.flows[family];
            for (const UdpFlow& flow : doomed) {
                auto it = std::find(table.begin(), table.end(), flow);
                if (it != table.end() && fake_.expirations_ > 0) {
                    --fake_.expirations_;
                    table.erase(it);
                    it = table.end();
                }
                if (it != table.end() && fake_.deletion_failures_ > 0) {
                    --fake_.deletion_failures_;
                    out.emplace_back(
                        make_error(ErrorCode::kKernel, "delete", fake_.deletion_errno_));
                } else if (it == table.end()) {
                    out.emplace_back(make_error(ErrorCode::kKernel, "delete", ENOENT));
                } else {
                    fake_.deleted.push_back(flow);
                    table.erase(it);
                    out.emplace_back();
                }
            }
            return out;
        }

      private:
        FakeConntrack& fake_;
    };

    std::map<IpFamily, std::pair<int, size_t>> dump_failures_;
    int deletion_errno_ = 0;
    size_t deletion_failures_ = 0;
    size_t expirations_ = 0;
};

}  // namespace sb::rules::testing
