#include "rules/nftables/netlink.h"

#include <errno.h>
#include <linux/netlink.h>

#include "rules/nftables/netlink_batch.h"
#include "rules/nftables/netlink_reader.h"
#include "rules/nftables/netlink_transaction.h"

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

Result<ElementMap> NetlinkSocket::dump_elements(const Set& set) {
    return nftables::dump_elements(socket_, table_, set);
}

Status NetlinkSocket::apply(const Delta& delta, const Model& desired) {
    Batch b(socket_);
    write_delta(b, delta, desired);
    return send(b);
}

Status NetlinkSocket::delete_table() {
    return delete_table(table_);
}

Status NetlinkSocket::delete_table(const std::string& table) {
    Batch b(socket_);
    write_table_deletion(b, table);
    Status s = send(b);
    if (!s && s.error().errno_value == ENOENT) return {};  // already gone
    return s;
}

Status NetlinkSocket::replace_table(const std::string& table, const Model& model) {
    Batch b(socket_);
    write_replacement(b, table, model);
    return send(b);
}

}  // namespace sb::rules::nftables
