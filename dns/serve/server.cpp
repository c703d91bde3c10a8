#include "dns/serve/server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "base/socket_address.h"
#include "base/threads/panic_guard.h"
#include "dns/serve/worker.h"

namespace sb::dns {

Server::Server(ServerOptions options, const ZoneHolder& zones, const EngineHolder& engines)
    : options_(std::move(options)), zones_(zones), engines_(engines) {
    options_.workers = std::max(1u, options_.workers);
}

Server::~Server() {
    stop();
}

namespace {

// A port 0 listen address: the kernel picks a port free for both UDP and
// TCP (the UDP socket picks it, TCP must bind the same one).
Result<uint16_t> pick_port(const HostPort& address) {
    for (int attempt = 0; attempt < 20; ++attempt) {
        auto probe = bind_socket(address, SOCK_DGRAM);
        if (!probe) return probe.error();
        SocketAddress bound;
        socklen_t length = sizeof(sockaddr_storage);
        ::getsockname(*probe, reinterpret_cast<sockaddr*>(&bound.storage()), &length);
        HostPort picked = from_socket_address(bound.storage());
        auto tcp = bind_socket(picked, SOCK_STREAM);
        ::close(*probe);
        if (tcp) {
            ::close(*tcp);
            return picked.port;
        }
    }
    return make_error(ErrorCode::kIo, fmt::format("no free port for {}", address));
}

}  // namespace

Status Server::start() {
    for (unsigned i = 0; i < options_.workers; ++i) {
        auto worker = std::make_unique<Worker>(options_, zones_, engines_);
        if (auto status = worker->open(); !status) return status;
        workers_.push_back(std::move(worker));
    }
    {
        std::lock_guard lock(mutex_);
        addresses_ = options_.listen;
        for (size_t i = 0; i < options_.listen.size(); ++i) {
            for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
                listeners_.push_back(Listener{i, type, false, 0, {}});
            }
        }
    }
    if (!bind_pending(false)) {
        retries_ = Background::shared().repeat("dns bind retry", options_.bind_retry_interval,
                                               [this]() -> Background::Next {
                                                   if (bind_pending(true)) return std::nullopt;
                                                   return options_.bind_retry_interval;
                                               });
    }
    return {};
}

Status Server::bind_listener(size_t index) {
    HostPort address;
    int type = 0;
    {
        std::lock_guard lock(mutex_);
        address = addresses_[listeners_[index].address_index];
        type = listeners_[index].type;
    }
    if (address.port == 0) {
        auto port = pick_port(address);
        if (!port) return port.error();
        address.port = *port;
        std::lock_guard lock(mutex_);
        addresses_[listeners_[index].address_index].port = *port;
    }
    // Every worker's socket or none: a listener is served by all workers.
    // Each is adopted when the process was given one (one per worker, as
    // the process that gave them bound them).
    auto& pool = listeners::SocketPool::process();
    std::vector<int> fds;
    for (size_t i = 0; i < workers_.size(); ++i) {
        auto fd = listeners::listen_on(pool, address, type, "dns");
        if (!fd) {
            for (int open : fds) {
                pool.release(open);
                ::close(open);
            }
            return fd.error();
        }
        fds.push_back(*fd);
    }
    {
        std::lock_guard lock(mutex_);
        pooled_.insert(pooled_.end(), fds.begin(), fds.end());
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
        if (type == SOCK_STREAM) {
            workers_[i]->add_tcp(fds[i]);
        } else {
            workers_[i]->add_udp(fds[i]);
        }
    }
    return {};
}

bool Server::bind_pending(bool late) {
    bool all = true;
    bool bound_late = false;
    // listeners_'s size is fixed once start() made it: only entries change.
    for (size_t i = 0; i < listeners_.size(); ++i) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return true;
            if (listeners_[i].serving) continue;
        }
        Status status = bind_listener(i);
        std::lock_guard lock(mutex_);
        Listener& listener = listeners_[i];
        const std::string name = state_of(listener).name();
        if (status) {
            listener.serving = true;
            listener.last_error.clear();
            if (listener.failures > 0) {
                log::info("dns: {} serving after {} failed binds", name, listener.failures);
            }
            bound_late = bound_late || late;
            continue;
        }
        all = false;
        ++listener.failures;
        listener.last_error = status.error().describe();
        if (listener.failures == 1) {
            // Once at warn: an address missing for hours must not flood the log.
            log::warn("dns: {}; retrying every {}s while the proxy runs", listener.last_error,
                      std::chrono::duration<double>(options_.bind_retry_interval).count());
        } else {
            log::debug("dns: {}: attempt {}: {}", name, listener.failures, listener.last_error);
        }
    }
    if (bound_late && options_.on_late_bind) run_guarded("dns late bind", options_.on_late_bind);
    return all;
}

void Server::stop() {
    if (stopped_) return;
    stopped_ = true;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    // No socket is added to a worker once the retry task is cancelled.
    retries_.cancel();
    // Before the workers close them: the pool forgets them (and the
    // supervisor lets its copies go: a stopped server frees its addresses).
    {
        std::lock_guard lock(mutex_);
        for (int fd : pooled_) listeners::SocketPool::process().release(fd);
        pooled_.clear();
    }
    for (auto& worker : workers_) worker->stop();
}

bool Server::serving() const {
    std::lock_guard lock(mutex_);
    return !listeners_.empty() && std::all_of(listeners_.begin(), listeners_.end(),
                                              [](const Listener& l) { return l.serving; });
}

std::vector<ListenerState> Server::listeners() const {
    std::lock_guard lock(mutex_);
    std::vector<ListenerState> out;
    for (const auto& listener : listeners_) out.push_back(state_of(listener));
    return out;
}

ListenerState Server::state_of(const Listener& listener) const {
    return ListenerState{addresses_[listener.address_index], listener.type == SOCK_STREAM,
                         listener.serving, listener.failures, listener.last_error};
}

std::vector<HostPort> Server::bound() const {
    std::lock_guard lock(mutex_);
    return addresses_;
}

}  // namespace sb::dns
