#include "rules/nftables/netlink.h"

#include <errno.h>
#include <linux/netlink.h>

#include "rules/kernel/nft_batch.h"
#include "rules/nftables/netlink_batch.h"
#include "rules/nftables/netlink_reader.h"

namespace sb::rules::nftables {

NetlinkSocket::NetlinkSocket(rules::NetlinkSocket socket, std::string table)
    : socket_(std::move(socket)), table_(std::move(table)) {}

NetlinkSocket::~NetlinkSocket() = default;

Result<std::unique_ptr<NetlinkSocket>> NetlinkSocket::open(std::string table) {
    auto socket = rules::NetlinkSocket::open(NETLINK_NETFILTER, "nftables");
    if (!socket) return socket.error();
    return std::unique_ptr<NetlinkSocket>(
        new NetlinkSocket(std::move(socket.value()), std::move(table)));
}

size_t NetlinkSocket::stale_answers() const {
    return socket_.stale_answers();
}

Result<std::optional<Model>> NetlinkSocket::read_table() {
    return nftables::read_table(socket_, table_);
}

Result<std::optional<uint64_t>> NetlinkSocket::table_handle() {
    return nftables::table_handle(socket_, table_);
}

Result<size_t> NetlinkSocket::rule_count(const std::string& chain) {
    return nftables::rule_count(socket_, table_, chain);
}

Result<ElementMap> NetlinkSocket::dump_elements(const Set& set) {
    return nftables::dump_elements(socket_, table_, set);
}

Status NetlinkSocket::apply(const Delta& delta, const Model& desired) {
    NftBatch b;
    write_delta(b, delta, desired);
    return rules::send(socket_, b);
}

Status NetlinkSocket::delete_table() {
    return delete_table(table_);
}

Status NetlinkSocket::delete_table(const std::string& table) {
    NftBatch b;
    write_table_deletion(b, table);
    Status s = rules::send(socket_, b);
    if (!s && s.error().errno_value == ENOENT) return {};  // already gone
    return s;
}

Status NetlinkSocket::replace_table(const std::string& table, const Model& model) {
    NftBatch b;
    write_replacement(b, table, model);
    return rules::send(socket_, b);
}

}  // namespace sb::rules::nftables
