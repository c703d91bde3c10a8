#include "rules/nftables/netlink.h"

#include <errno.h>

#include "rules/nftables/netlink_batch.h"
#include "rules/nftables/netlink_reader.h"
#include "rules/nftables/netlink_socket.h"

namespace sb::rules::nftables {

NetlinkSocket::NetlinkSocket(std::unique_ptr<NetlinkConnection> connection)
    : connection_(std::move(connection)) {}

NetlinkSocket::~NetlinkSocket() = default;

Result<std::unique_ptr<NetlinkSocket>> NetlinkSocket::open() {
    auto connection = NetlinkConnection::open();
    if (!connection) return connection.error();
    return std::unique_ptr<NetlinkSocket>(new NetlinkSocket(std::move(connection.value())));
}

size_t NetlinkSocket::stale_answers() const {
    return connection_->stale_answers();
}

Result<std::optional<Model>> NetlinkSocket::read_table() {
    return nftables::read_table(*connection_);
}

Result<std::map<ElementKey, Verdict>> NetlinkSocket::dump_elements(const Set& set) {
    return nftables::dump_elements(*connection_, set);
}

Status NetlinkSocket::apply(const Delta& delta, const Model& desired) {
    Batch b(connection_->next_seq());
    write_delta(b, delta, desired);
    return connection_->send(b);
}

Status NetlinkSocket::delete_table() {
    return delete_table(kTableName);
}

Status NetlinkSocket::delete_table(const std::string& table) {
    Batch b(connection_->next_seq());
    write_table_deletion(b, table);
    Status s = connection_->send(b);
    if (!s && s.error().errno_value == ENOENT) return {};  // already gone
    return s;
}

Status NetlinkSocket::replace_table(const std::string& table, const Model& model) {
    Batch b(connection_->next_seq());
    write_replacement(b, table, model);
    return connection_->send(b);
}

}  // namespace sb::rules::nftables
