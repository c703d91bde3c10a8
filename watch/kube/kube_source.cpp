// The wiring of the API client: credentials and TLS, one event-loop thread
// (an io_context) running the reflector's loop for each resource
// (resources.h), each loop with its own Beast transport and connection. The
// reflector (reflector.h) decides what to request; the transport
// (beast_transport.h) carries it.
#include "watch/kube/kube_source.h"

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "base/log.h"
#include "base/threads/thread_name.h"
#include "watch/kube/beast_transport.h"
#include "watch/kube/credentials.h"
#include "watch/kube/reflector.h"
#include "watch/kube/resources.h"

namespace sb::watch::kube {

namespace asio = boost::asio;

namespace {

// The steady clock, and sleeps as timers on the event loop.
class LoopClock final : public Clock {
  public:
    explicit LoopClock(asio::io_context& io) : io_(io) {}
    std::chrono::steady_clock::time_point now() override {
        return std::chrono::steady_clock::now();
    }
    awaitable<void> sleep(Millis delay) override {
        asio::steady_timer timer(io_);
        timer.expires_after(delay);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }

  private:
    asio::io_context& io_;
};

}  // namespace

class KubeSource::Impl {
  public:
    Impl(Credentials credentials, std::shared_ptr<asio::ssl::context> tls, KubeTuning tuning,
         const KubeSourceOptions& options, Store& store)
        : credentials_(std::move(credentials)),
          tls_(std::move(tls)),
          clock_(io_),
          reflector_(store, credentials_.server, tuning, std::random_device{}(), clock_,
                     [this, timeout = std::chrono::seconds(tuning.request_timeout_s)](
                         const ResourceSpec&) {
                         return make_beast_transport(io_, credentials_, *tls_, timeout);
                     }) {
        for (auto& spec : kube_resources(options.node_name, options.watch_pods)) {
            reflector_.add_resource(std::move(spec));
        }
    }

    ~Impl() { stop(); }

    void start() {
        if (started_.exchange(true)) return;
        log::info("kubernetes source: {} at {}", credentials_.origin, credentials_.server);
        for (size_t i = 0; i < reflector_.resource_count(); ++i) {
            asio::co_spawn(io_, reflector_.run(i), asio::detached);
        }
        thread_ = start_named_thread("sb-watch", [this] { io_.run(); });
    }

    // The coroutine frames still pending, and the transports they own, are
    // destroyed with io_ (declared last, so destroyed first, while everything
    // they point to is alive).
    void stop() {
        reflector_.stop();
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    bool ready() const { return reflector_.ready(); }
    void append_metrics(metrics::TextWriter& out) const { reflector_.append_metrics(out); }

  private:
    Credentials credentials_;
    std::shared_ptr<asio::ssl::context> tls_;
    std::atomic<bool> started_{false};
    // clock_ and reflector_ keep references to io_, used only once it runs.
    LoopClock clock_;
    Reflector reflector_;
    std::thread thread_;
    asio::io_context io_{1};  // last: see stop()
};

Result<std::unique_ptr<KubeSource>> KubeSource::create(const KubeSourceOptions& options,
                                                       Store& store) {
    KubeTuning tuning;
    if (options.tuning) {
        tuning = *options.tuning;
    } else if (const char* text = std::getenv(kTuningEnv)) {
        auto parsed = parse_tuning(text);
        if (!parsed) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("{}: {}", kTuningEnv, parsed.error().message));
        }
        tuning = *parsed;
    }
    Result<Credentials> credentials = Credentials{};
    if (!options.kubeconfig.empty()) {
        credentials = load_kubeconfig(options.kubeconfig);
    } else {
        std::string dir = options.service_account_dir;
        if (dir.empty()) {
            const char* env = std::getenv(kServiceAccountDirEnv);
            dir = env && *env ? env : kDefaultServiceAccountDir;
        }
        credentials = load_in_cluster(dir, [](const char* name) { return std::getenv(name); });
        // --master alone (kube-proxy's "talk to this server") needs no
        // service account: use it anonymously with the system trust store.
        if (!credentials && !options.master.empty()) credentials = Credentials{};
    }
    if (!credentials) return credentials.error();
    if (!options.master.empty()) {
        auto address = parse_server_url(options.master);
        if (!address) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("--master: {}", address.error().message));
        }
        credentials->server = options.master;
        credentials->address = *address;
        if (credentials->origin.empty()) credentials->origin = "--master without credentials";
    }
    auto tls = make_tls_context(*credentials);
    if (!tls) return tls.error();
    auto impl =
        std::make_unique<Impl>(std::move(*credentials), std::move(*tls), tuning, options, store);
    return std::unique_ptr<KubeSource>(new KubeSource(std::move(impl)));
}

KubeSource::KubeSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KubeSource::~KubeSource() = default;
void KubeSource::start() {
    impl_->start();
}
void KubeSource::stop() {
    impl_->stop();
}
bool KubeSource::ready() const {
    return impl_->ready();
}
void KubeSource::append_metrics(metrics::TextWriter& out) const {
    impl_->append_metrics(out);
}

}  // namespace sb::watch::kube
