#include "proxy/http/server.h"

#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "base/threads/thread_name.h"
#include "proxy/http/session.h"

namespace sb::proxy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using boost::system::error_code;

class Listener : public std::enable_shared_from_this<Listener> {
  public:
    Listener(tcp::acceptor acceptor, std::shared_ptr<const HttpRoutes> routes,
             std::shared_ptr<HttpConnections> connections)
        : acceptor_(std::move(acceptor)),
          routes_(std::move(routes)),
          connections_(std::move(connections)),
          retry_(acceptor_.get_executor()) {}

    void accept() {
        acceptor_.async_accept([self = shared_from_this()](error_code ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
            if (ec) {
                // EMFILE and friends: back off instead of spinning.
                log::warn("HTTP accept failed: {}", ec.message());
                self->retry_.expires_after(std::chrono::milliseconds(100));
                self->retry_.async_wait([self](error_code wait_ec) {
                    if (!wait_ec) self->accept();
                });
                return;
            }
            std::make_shared<HttpSession>(std::move(socket), self->routes_, self->connections_)
                ->start();
            self->accept();
        });
    }

    void close() {
        error_code ignored;
        if (acceptor_.is_open())
            listeners::SocketPool::process().release(acceptor_.native_handle());
        acceptor_.close(ignored);
        retry_.cancel();
    }

  private:
    tcp::acceptor acceptor_;
    std::shared_ptr<const HttpRoutes> routes_;
    // Outlives the listener while its connections finish.
    std::shared_ptr<HttpConnections> connections_;
    asio::steady_timer retry_;
};

// Binds and listens on `address` (SO_REUSEADDR, so a restarted daemon can
// rebind at once), or adopts the listening socket the process was given for
// it (base/listeners/socket_pool.h). Either way the socket is held in the
// process's pool until Listener::close().
Result<tcp::acceptor> bind_acceptor(asio::io_context& io, const HostPort& address, bool v6_only) {
    auto fail = [&](const char* what, const error_code& ec) {
        return make_error(ErrorCode::kIo, fmt::format("{} {}: {}", what, address, ec.message()));
    };
    error_code ec;
    auto ip = asio::ip::make_address(address.address.to_string(), ec);
    if (ec) return fail("address", ec);
    tcp::endpoint endpoint(ip, address.port);
    tcp::acceptor acceptor(io);
    auto& pool = listeners::SocketPool::process();
    if (auto adopted = pool.adopt(address, SOCK_STREAM)) {
        acceptor.assign(endpoint.protocol(), *adopted, ec);
        if (ec) {
            ::close(*adopted);
            return fail("adopting the socket of", ec);
        }
        pool.hold(*adopted, "http");
        return acceptor;
    }
    acceptor.open(endpoint.protocol(), ec);
    if (ec) return fail("socket", ec);
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (ec) return fail("setsockopt", ec);
    if (v6_only && endpoint.protocol() == tcp::v6()) {
        acceptor.set_option(asio::ip::v6_only(true), ec);
        if (ec) return fail("setsockopt", ec);
    }
    acceptor.bind(endpoint, ec);
    if (ec) return fail("bind", ec);
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return fail("listen", ec);
    pool.hold(acceptor.native_handle(), "http");
    return acceptor;
}

// A listen_retrying() whose port is not bound yet (io thread only).
struct BindRetry {
    BindRetry(asio::io_context& io, HostPort address_, std::shared_ptr<const HttpRoutes> routes_,
              std::chrono::milliseconds period_, HttpServer::BindFailureHandler on_failure_,
              HttpServer::BoundHandler on_bound_)
        : address(address_),
          routes(std::move(routes_)),
          period(period_),
          on_failure(std::move(on_failure_)),
          on_bound(std::move(on_bound_)),
          timer(io) {}
    const HostPort address;
    const std::shared_ptr<const HttpRoutes> routes;
    const std::chrono::milliseconds period;
    const HttpServer::BindFailureHandler on_failure;
    const HttpServer::BoundHandler on_bound;
    unsigned failures = 1;
    asio::steady_timer timer;
};

}  // namespace

struct HttpServer::Impl {
    explicit Impl(HttpLimits limits_) : limits(limits_) {}

    const HttpLimits limits;
    const std::shared_ptr<metrics::Labelled<metrics::Counter>> closed =
        std::make_shared<metrics::Labelled<metrics::Counter>>(
            metrics::Family{"switchboard_http_connections_closed_total",
                            "HTTP connections the server closed, by listener address and reason.",
                            metrics::Type::kCounter,
                            {"listener", "reason"}});
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread;
    std::mutex mutex;
    int next_id = 1;
    std::map<int, uint16_t> ports;  // guarded by mutex; 0 while a retry waits
    // Touched on the io thread only (or before it starts / after it stopped).
    std::map<int, std::shared_ptr<Listener>> listeners;
    std::map<int, std::shared_ptr<BindRetry>> retries;

    // Runs `task` on the io thread and waits for it, or inline when the io
    // thread is not running or is the caller.
    void run_on_io(const std::function<void()>& task) {
        if (!thread.joinable() || std::this_thread::get_id() == thread.get_id()) {
            task();
            return;
        }
        std::promise<void> done;
        asio::post(io, [&] {
            task();
            done.set_value();
        });
        done.get_future().wait();
    }

    int reserve_id(uint16_t port) {
        std::lock_guard lock(mutex);
        int id = next_id++;
        ports[id] = port;
        return id;
    }

    // Io thread (or before start): starts accepting on a bound acceptor.
    void serve(int id, const HostPort& address, tcp::acceptor acceptor,
               std::shared_ptr<const HttpRoutes> routes) {
        error_code ec;
        const HostPort bound{address.address, acceptor.local_endpoint(ec).port()};
        auto connections = std::make_shared<HttpConnections>(limits, bound.to_string(), closed);
        auto listener = std::make_shared<Listener>(std::move(acceptor), std::move(routes),
                                                   std::move(connections));
        listeners[id] = listener;
        listener->accept();
    }

    // Io thread: waits one period, then tries to bind again.
    void arm(int id, const std::shared_ptr<BindRetry>& retry) {
        retry->timer.expires_after(retry->period);
        retry->timer.async_wait([this, id, retry](error_code ec) {
            if (ec || retries.count(id) == 0) return;  // closed meanwhile
            auto acceptor = bind_acceptor(io, retry->address, /*v6_only=*/false);
            if (!acceptor) {
                retry->on_failure(acceptor.error(), ++retry->failures);
                arm(id, retry);
                return;
            }
            retries.erase(id);
            error_code port_ec;
            const uint16_t port = acceptor->local_endpoint(port_ec).port();
            {
                std::lock_guard lock(mutex);
                if (ports.count(id) == 0) {  // closed between the checks
                    listeners::SocketPool::process().release(acceptor->native_handle());
                    return;
                }
            }
            serve(id, retry->address, std::move(*acceptor), retry->routes);
            retry->on_bound(retry->failures);
            // The port is published last, so port(id) != 0 means on_bound
            // has run. A close() meanwhile erased the entry (its io task,
            // queued behind this handler, then closes the listener).
            std::lock_guard lock(mutex);
            if (ports.count(id) != 0) ports[id] = port;
        });
    }
};

HttpServer::HttpServer(HttpLimits limits) : impl_(std::make_unique<Impl>(limits)) {}

HttpServer::~HttpServer() {
    stop();
}

Result<int> HttpServer::listen(const HostPort& address, HttpRoutes routes, bool v6_only) {
    auto acceptor = bind_acceptor(impl_->io, address, v6_only);
    if (!acceptor) return acceptor.error();
    error_code ec;
    const int id = impl_->reserve_id(acceptor->local_endpoint(ec).port());
    auto shared_routes = std::make_shared<const HttpRoutes>(std::move(routes));
    impl_->run_on_io([&] { impl_->serve(id, address, std::move(*acceptor), shared_routes); });
    return id;
}

int HttpServer::listen_retrying(const HostPort& address, HttpRoutes routes,
                                std::chrono::milliseconds retry_period,
                                BindFailureHandler on_failure, BoundHandler on_bound) {
    auto shared_routes = std::make_shared<const HttpRoutes>(std::move(routes));
    auto acceptor = bind_acceptor(impl_->io, address, /*v6_only=*/false);
    if (acceptor) {
        error_code ec;
        const int id = impl_->reserve_id(acceptor->local_endpoint(ec).port());
        impl_->run_on_io([&] { impl_->serve(id, address, std::move(*acceptor), shared_routes); });
        return id;
    }
    const int id = impl_->reserve_id(0);
    on_failure(acceptor.error(), 1);
    auto retry =
        std::make_shared<BindRetry>(impl_->io, address, std::move(shared_routes), retry_period,
                                    std::move(on_failure), std::move(on_bound));
    impl_->run_on_io([&] {
        impl_->retries[id] = retry;
        impl_->arm(id, retry);
    });
    return id;
}

void HttpServer::close(int id) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->ports.erase(id);
    }
    impl_->run_on_io([this, id] {
        if (auto retry = impl_->retries.find(id); retry != impl_->retries.end()) {
            retry->second->timer.cancel();
            impl_->retries.erase(retry);
        }
        auto it = impl_->listeners.find(id);
        if (it == impl_->listeners.end()) return;
        it->second->close();
        impl_->listeners.erase(it);
    });
}

uint16_t HttpServer::port(int id) const {
    std::lock_guard lock(impl_->mutex);
    auto it = impl_->ports.find(id);
    return it == impl_->ports.end() ? 0 : it->second;
}

void HttpServer::append_metrics(metrics::TextWriter& out) const {
    impl_->closed->write(out);
}

void HttpServer::start() {
    if (impl_->thread.joinable()) return;
    impl_->thread = start_named_thread("sb-http", [this] {
        // Handlers catch their own exceptions; this guards Asio itself.
        while (true) {
            try {
                impl_->io.run();
                return;
            } catch (const std::exception& error) {
                log::error("HTTP io loop: {}", error.what());
            }
        }
    });
}

void HttpServer::stop() {
    if (!impl_->thread.joinable()) return;
    impl_->run_on_io([this] {
        for (auto& [id, listener] : impl_->listeners) listener->close();
        impl_->listeners.clear();
        for (auto& [id, retry] : impl_->retries) retry->timer.cancel();
        impl_->retries.clear();
    });
    impl_->work.reset();
    impl_->io.stop();
    impl_->thread.join();
}

}  // namespace sb::proxy
