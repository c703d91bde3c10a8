// The kernel's IPVS table through the IPVS generic-netlink family: libnl-genl-3
// connects and resolves the family and sends the messages netlink_messages
// builds; the answers are read here and matched to their request by
// sequence number (rules/kernel/netlink_answers.h), so an answer a timed-out
// request left in the socket is skipped, not charged to the next one.
#include <errno.h>
#include <linux/ip_vs.h>
#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "rules/ipvs/kernel.h"
#include "rules/ipvs/netlink_messages.h"
#include "rules/kernel/netlink_answers.h"

namespace sb::rules::ipvs {

namespace {

struct SocketFree {
    void operator()(nl_sock* socket) const { nl_socket_free(socket); }
};
using GenlSocket = std::unique_ptr<nl_sock, SocketFree>;

// A kernel's dump datagram is at most 32 KiB (netlink caps its dump
// allocations there); a larger answer is reported, never read truncated.
constexpr size_t kReceiveBufferSize = 64 << 10;

// IpvsKernel over one generic-netlink socket; see kernel.h for the contract.
class NetlinkKernel final : public IpvsKernel {
  public:
    NetlinkKernel(GenlSocket socket, int family) : socket_(std::move(socket)), family_(family) {}

    Result<IpvsState> list() override {
        auto dump = build_service_dump(family_);
        if (!dump) return dump.error();
        std::vector<VirtualServer> servers;
        Status listed = exchange(dump->get(), "list virtual servers", [&](const nlmsghdr* reply) {
            auto server = parse_service(reply);
            if (!server) return Status(server.error());
            if (*server) servers.push_back(std::move(**server));
            return Status();
        });
        if (!listed) return listed.error();
        IpvsState state;
        for (VirtualServer& server : servers) {
            auto destinations = list_destinations(server.key);
            if (!destinations) return destinations.error();
            const ServiceKey key = server.key;
            state.emplace(key, Service{std::move(server), std::move(*destinations)});
        }
        return state;
    }

    Result<std::vector<RealServer>> list_destinations(const ServiceKey& key) override {
        auto dump = build_destination_dump(family_, key);
        if (!dump) return dump.error();
        std::vector<RealServer> destinations;
        const IpFamily family = key.address.family();
        Status listed =
            exchange(dump->get(), fmt::format("list the real servers of {}", service_text(key)),
                     [&](const nlmsghdr* reply) {
                         auto destination = parse_destination(reply, family);
                         if (!destination) return Status(destination.error());
                         destinations.push_back(*destination);
                         return Status();
                     });
        if (!listed) return listed.error();
        std::sort(destinations.begin(), destinations.end(),
                  [](const RealServer& a, const RealServer& b) { return a.id() < b.id(); });
        return destinations;
    }

    Status apply(const Op& op) override {
        auto request = build_op(family_, op);
        if (!request) return request.error();
        return exchange(request->get(), describe(op), {});
    }

    Status set_timeouts(const Timeouts& timeouts) override {
        if (timeouts == Timeouts{}) return {};
        auto request = build_set_config(family_, timeouts);
        if (!request) return request.error();
        return exchange(request->get(), "set the connection timeouts", {});
    }

    size_t requests_sent() const override { return requests_sent_; }

  private:
    // Sends `request` and reads its answers until it ends (its
    // acknowledgement, a refusal, or a dump's NLMSG_DONE), each data answer
    // to `on_reply`. The first reply `on_reply` rejects is the error, after
    // the rest are read so no answer of this request is left in the socket.
    // A refusal is an error of code kKernel with the kernel's errno; no
    // answer within the socket's 5 s, one of code kUnavailable.
    Status exchange(nl_msg* request, const std::string& what,
                    const std::function<Status(const nlmsghdr*)>& on_reply) {
        const int sent = nl_send_auto(socket_.get(), request);
        if (sent < 0) {
            return make_error(ErrorCode::kKernel,
                              fmt::format("ipvs: {}: send: {}", what, nl_geterror(sent)));
        }
        ++requests_sent_;
        NetlinkAnswers answers(nlmsg_hdr(request)->nlmsg_seq);
        Status replies_parsed;
        const int fd = nl_socket_get_fd(socket_.get());
        while (!answers.finished()) {
            const ssize_t n = recv(fd, buffer_.data(), buffer_.size(), MSG_TRUNC);
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) {
                    return make_error(
                        ErrorCode::kUnavailable,
                        fmt::format("ipvs: {}: no answer from the kernel within 5 s", what));
                }
                return make_error(ErrorCode::kKernel, fmt::format("ipvs: {}: receive", what),
                                  errno);
            }
            if (static_cast<size_t>(n) > buffer_.size()) {
                return make_error(ErrorCode::kKernel,
                                  fmt::format("ipvs: {}: an answer of {} bytes, above {}", what, n,
                                              buffer_.size()));
            }
            answers.feed(buffer_.data(), static_cast<size_t>(n), [&](const nlmsghdr* reply) {
                if (replies_parsed && on_reply) replies_parsed = on_reply(reply);
            });
        }
        if (answers.stale() > 0) {
            log::warn("ipvs: skipped {} netlink answers of an earlier request", answers.stale());
        }
        if (answers.error() != 0) {
            return make_error(ErrorCode::kKernel, fmt::format("ipvs: {}", what), answers.error());
        }
        return replies_parsed;
    }

    GenlSocket socket_;
    int family_;
    size_t requests_sent_ = 0;
    std::vector<char> buffer_ = std::vector<char>(kReceiveBufferSize);
};

Error unavailable(const std::string& what, int nl_error) {
    return make_error(ErrorCode::kUnavailable,
                      fmt::format("ipvs: {}: {}", what, nl_geterror(nl_error)));
}

}  // namespace

Result<std::unique_ptr<IpvsKernel>> open_kernel() {
    GenlSocket socket(nl_socket_alloc());
    if (!socket) return make_error(ErrorCode::kUnavailable, "ipvs: out of memory");
    if (int r = genl_connect(socket.get()); r < 0) {
        return unavailable("connect a generic netlink socket", r);
    }
    // Bounds every wait on this socket, the family's resolution included.
    const timeval timeout{5, 0};
    if (setsockopt(nl_socket_get_fd(socket.get()), SOL_SOCKET, SO_RCVTIMEO, &timeout,
                   sizeof timeout) < 0) {
        return make_error(ErrorCode::kUnavailable, "ipvs: set a receive timeout", errno);
    }
    const int family = genl_ctrl_resolve(socket.get(), IPVS_GENL_NAME);
    if (family == -NLE_OBJ_NOTFOUND) {
        return make_error(ErrorCode::kNotFound, "the kernel has no IPVS (ip_vs module not loaded)");
    }
    if (family < 0) return unavailable("resolve the IPVS generic netlink family", family);
    // The messages carry their own NLM_F_ACK (requests) or not (dumps).
    nl_socket_disable_auto_ack(socket.get());
    return std::unique_ptr<IpvsKernel>(std::make_unique<NetlinkKernel>(std::move(socket), family));
}

}  // namespace sb::rules::ipvs
