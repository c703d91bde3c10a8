// Netlink answers are matched to their request by sequence number, on both
// netlink sockets of rules/ (the nftables backend's and kube_proxy_cleanup's):
// a refusal an earlier request left unread in the socket is skipped, not
// charged to the next batch. Root, in a fresh network namespace; run by
// tests/integration/test_nftables_kernel.py.
#include <dirent.h>
#include <libmnl/libmnl.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch.hpp>

#include <array>
#include <set>
#include <string>

#include "rules/kernel/nft_batch.h"
#include "rules/kube_proxy_cleanup/nft_listing.h"
#include "rules/nftables/netlink.h"
#include "tests/unit/kernel_fixtures.h"

using namespace sb;
using namespace sb::rules;
using sb::rules::testing::fresh_netns;
using sb::rules::testing::run;

namespace {

// The socket descriptors of this process.
std::set<int> socket_fds() {
    std::set<int> out;
    DIR* dir = opendir("/proc/self/fd");
    REQUIRE(dir != nullptr);
    while (dirent* entry = readdir(dir)) {
        const std::string name = entry->d_name;
        if (name == "." || name == "..") continue;
        std::array<char, 64> target{};
        const std::string path = "/proc/self/fd/" + name;
        const ssize_t n = readlink(path.c_str(), target.data(), target.size() - 1);
        if (n > 0 && std::string(target.data(), static_cast<size_t>(n)).rfind("socket:", 0) == 0) {
            out.insert(std::stoi(name));
        }
    }
    closedir(dir);
    return out;
}

// The one socket descriptor opened since `before`.
int opened_since(const std::set<int>& before) {
    std::set<int> added;
    for (int fd : socket_fds()) {
        if (!before.count(fd)) added.insert(fd);
    }
    REQUIRE(added.size() == 1);
    return *added.begin();
}

// Sends, on `fd`, a request the kernel refuses (the table does not exist)
// and leaves its answer unread, as a request given up on a timeout would.
void leave_unread_refusal(int fd) {
    std::array<char, 512> buf{};
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = 1;  // no later request of the sockets under test uses it
    auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
    nfg->nfgen_family = NFPROTO_INET;
    nfg->version = NFNETLINK_V0;
    mnl_attr_put_strz(nlh, NFTA_TABLE_NAME, "no-such-table");
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    REQUIRE(sendto(fd, nlh, nlh->nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
                   sizeof kernel) == static_cast<ssize_t>(nlh->nlmsg_len));
    // The kernel answers inside sendto(): the refusal is queued now.
    std::array<char, 256> peek{};
    REQUIRE(recv(fd, peek.data(), peek.size(), MSG_PEEK | MSG_DONTWAIT) > 0);
}

nftables::Model one_chain() {
    nftables::Model model;
    nftables::Chain chain;
    chain.name = "c";
    model.chains["c"] = chain;
    return model;
}

}  // namespace

TEST_CASE("kernel: a stale netlink refusal is skipped, not charged to the next batch") {
    fresh_netns();
    const std::set<int> before = socket_fds();
    auto socket = nftables::NetlinkSocket::open();
    REQUIRE(socket);
    const int fd = opened_since(before);

    leave_unread_refusal(fd);
    Status applied = (*socket)->replace_table("sbstale", one_chain());
    INFO((applied ? "" : applied.error().describe()));
    CHECK(applied);
    CHECK((*socket)->stale_answers() == 1);
    CHECK(run("nft list table inet sbstale").status == 0);

    // A request (not a batch) skips one too: the table is reported missing,
    // not the earlier request's refusal taken for an error.
    leave_unread_refusal(fd);
    auto table = (*socket)->read_table();
    INFO((table ? "" : table.error().describe()));
    REQUIRE(table);
    CHECK_FALSE(table->has_value());
    CHECK((*socket)->stale_answers() == 2);
}

TEST_CASE("kernel: kube-proxy cleanup's socket skips a stale refusal in dumps and batches") {
    fresh_netns();
    const std::set<int> before = socket_fds();
    auto socket = kube_proxy_cleanup::open_nftables_socket("test");
    REQUIRE(socket);
    const int fd = opened_since(before);

    leave_unread_refusal(fd);
    NftBatch batch;
    batch.add(NFT_MSG_NEWTABLE, NFPROTO_INET, "add table inet sbstale", [](nlmsghdr* nlh) {
        nftnl_table* t = nftnl_table_alloc();
        nftnl_table_set_str(t, NFTNL_TABLE_NAME, "sbstale");
        nftnl_table_nlmsg_build_payload(nlh, t);
        nftnl_table_free(t);
    });
    Status committed = rules::send(*socket, batch);
    INFO((committed ? "" : committed.error().describe()));
    CHECK(committed);

    leave_unread_refusal(fd);
    auto tables = kube_proxy_cleanup::nft_tables(*socket);
    INFO((tables ? "" : tables.error().describe()));
    REQUIRE(tables);
    REQUIRE(tables->size() == 1);
    CHECK(tables->front().name == "sbstale");
}
