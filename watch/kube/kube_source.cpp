// The API client: one io_context thread running one coroutine per resource
// (Services, EndpointSlices, this Node). Each coroutine owns its connection
// and runs the reflector loop: LIST (paginated) -> Store::replace(kind) ->
// WATCH from the list's resourceVersion -> apply events -> on timeout watch
// again, on 410 relist, on failure back off and resume from the last
// resourceVersion. Every Asio/Beast call uses the error_code form
// (redirect_error), so no exception leaves a handler; the coroutine body is
// additionally guarded so that an unexpected exception restarts it.
#include "watch/kube/kube_source.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "base/log.h"
#include "watch/decode.h"
#include "watch/kube/apply_event.h"
#include "watch/kube/backoff.h"
#include "watch/kube/credentials.h"
#include "watch/kube/line_splitter.h"

namespace sb::watch::kube {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;

Result<KubeTuning> parse_tuning(std::string_view text) {
    KubeTuning tuning;
    const std::map<std::string, int KubeTuning::*> fields = {
        {"watch_timeout_min_s", &KubeTuning::watch_timeout_min_s},
        {"watch_timeout_max_s", &KubeTuning::watch_timeout_max_s},
        {"watch_grace_s", &KubeTuning::watch_grace_s},
        {"request_timeout_s", &KubeTuning::request_timeout_s},
        {"backoff_initial_ms", &KubeTuning::backoff_initial_ms},
        {"backoff_cap_ms", &KubeTuning::backoff_cap_ms},
        {"list_limit", &KubeTuning::list_limit},
    };
    while (!text.empty()) {
        size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) continue;
        size_t equals = item.find('=');
        std::string key(item.substr(0, equals));
        auto field = fields.find(key);
        if (field == fields.end() || equals == std::string_view::npos) {
            return make_error(ErrorCode::kInvalidArgument, "tuning: unknown key \"" + key + "\"");
        }
        std::string value(item.substr(equals + 1));
        char* end = nullptr;
        long number = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || number < 1 || number > 1000000) {
            return make_error(ErrorCode::kInvalidArgument,
                              "tuning: " + key + ": not a number in 1-1000000");
        }
        tuning.*(field->second) = static_cast<int>(number);
    }
    if (tuning.watch_timeout_min_s > tuning.watch_timeout_max_s) {
        return make_error(ErrorCode::kInvalidArgument,
                          "tuning: watch_timeout_min_s is above watch_timeout_max_s");
    }
    return tuning;
}

namespace {

template <typename T>
using awaitable = asio::awaitable<T>;
using Stream = beast::ssl_stream<beast::tcp_stream>;

std::string url_encode(std::string_view text) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

// The message of a Kubernetes Status body, or the body's start.
std::string status_message(std::string_view body) {
    auto decoded = decode_watch_event(std::string("{\"type\":\"ERROR\",\"object\":") +
                                      std::string(body) + "}");
    if (decoded && !decoded->status_message.empty()) return decoded->status_message;
    std::string text(body.substr(0, 200));
    for (char& c : text) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    return text;
}

const char* event_type_name(WatchEvent::Type type) {
    switch (type) {
        case WatchEvent::Type::kAdded:
            return "ADDED";
        case WatchEvent::Type::kModified:
            return "MODIFIED";
        case WatchEvent::Type::kDeleted:
            return "DELETED";
        case WatchEvent::Type::kBookmark:
            return "BOOKMARK";
        case WatchEvent::Type::kError:
            return "ERROR";
    }
    return "UNKNOWN";
}

struct Resource {
    std::string name;  // metrics label and log name: services, endpointslices, nodes
    Kind kind;
    std::string path;            // /api/v1/services
    std::string field_selector;  // "" or metadata.name=NODE
    // Loop-thread state.
    std::string resource_version;  // "" until listed, and after 410
    bool listed = false;
    std::string failure;  // why the last attempt failed; "" when it did not
    // Read by ready() from other threads.
    std::atomic<bool> connected{false};
};

struct Connection {
    explicit Connection(asio::io_context& io, ssl::context& context) : stream(io, context) {}
    Stream stream;
    beast::flat_buffer buffer;
};

// What one request/stream ended with.
struct Outcome {
    enum class Kind { kOk, kGone, kError };
    Kind kind = Kind::kOk;
    std::string reason;  // kError: why, for the log line
    std::optional<Millis> retry_after;
    bool keep_connection = false;  // kOk: the connection may be reused
    static Outcome ok(bool keep) { return {Kind::kOk, {}, std::nullopt, keep}; }
    static Outcome gone() { return {Kind::kGone, {}, std::nullopt, false}; }
    static Outcome error(std::string reason, std::optional<Millis> retry = std::nullopt) {
        return {Kind::kError, std::move(reason), retry, false};
    }
};

bool holds_kind(const AnyObject& object, Kind kind) {
    switch (kind) {
        case Kind::kService:
            return std::holds_alternative<Service>(object);
        case Kind::kEndpointSlice:
            return std::holds_alternative<EndpointSlice>(object);
        case Kind::kNode:
            return std::holds_alternative<Node>(object);
    }
    return false;
}

}  // namespace

class KubeSource::Impl {
  public:
    Impl(Credentials credentials, std::shared_ptr<ssl::context> tls, KubeTuning tuning,
         const KubeSourceOptions& options, Store& store)
        : store_(store),
          credentials_(std::move(credentials)),
          tls_(std::move(tls)),
          tuning_(tuning),
          seed_(std::random_device{}()) {
        add_resource("services", Kind::kService, "/api/v1/services", "");
        add_resource("endpointslices", Kind::kEndpointSlice,
                     "/apis/discovery.k8s.io/v1/endpointslices", "");
        if (!options.node_name.empty()) {
            add_resource("nodes", Kind::kNode, "/api/v1/nodes",
                         "metadata.name=" + options.node_name);
        }
    }

    ~Impl() { stop(); }

    void start() {
        if (started_.exchange(true)) return;
        log::info("kubernetes source: {} at {}", credentials_.origin, credentials_.server);
        for (auto& resource : resources_) {
            asio::co_spawn(io_, guarded(*resource), asio::detached);
        }
        thread_ = std::thread([this] { io_.run(); });
    }

    // The coroutine frames still pending are destroyed with io_ (declared
    // last, so destroyed first, while everything they point to is alive).
    void stop() {
        stopping_ = true;
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    bool ready() const {
        if (!synced_) return false;
        for (const auto& resource : resources_) {
            if (!resource->connected) return false;
        }
        return true;
    }

    void append_metrics(metrics::TextWriter& out) const;

  private:
    void add_resource(std::string name, Kind kind, std::string path, std::string selector) {
        auto resource = std::make_unique<Resource>();
        resource->name = std::move(name);
        resource->kind = kind;
        resource->path = std::move(path);
        resource->field_selector = std::move(selector);
        resources_.push_back(std::move(resource));
    }

    awaitable<void> guarded(Resource& resource);
    awaitable<void> reflect(Resource& resource);
    awaitable<Outcome> connect(std::unique_ptr<Connection>& connection);
    awaitable<Outcome> list(Resource& resource, std::unique_ptr<Connection>& connection);
    awaitable<Outcome> watch(Resource& resource, Connection& connection);
    awaitable<void> sleep(Millis delay);
    // Sends a GET; an error Outcome when the request could not be sent.
    awaitable<std::optional<Outcome>> send(Connection& connection, const std::string& target);
    Outcome status_outcome(Resource& resource, unsigned status, const std::string& retry_after,
                           std::string_view body);
    void handle_line(Resource& resource, std::string_view line, std::optional<Outcome>& end);
    void report_failure(Resource& resource, const std::string& reason);
    void mark_listed(Resource& resource);

    void count(std::map<std::pair<std::string, std::string>, uint64_t>& counter,
               const std::string& a, const std::string& b) {
        std::lock_guard lock(metrics_mutex_);
        ++counter[{a, b}];
    }
    void count(std::map<std::string, uint64_t>& counter, const std::string& a) {
        std::lock_guard lock(metrics_mutex_);
        ++counter[a];
    }

    Store& store_;
    Credentials credentials_;
    std::shared_ptr<ssl::context> tls_;
    KubeTuning tuning_;
    uint64_t seed_;
    std::vector<std::unique_ptr<Resource>> resources_;
    std::atomic<bool> synced_{false};
    std::atomic<bool> started_{false};
    std::atomic<bool> stopping_{false};

    mutable std::mutex metrics_mutex_;
    std::map<std::pair<std::string, std::string>, uint64_t> requests_;  // resource, code
    std::map<std::pair<std::string, std::string>, uint64_t> events_;    // resource, type
    std::map<std::string, uint64_t> decode_errors_;
    std::map<std::string, uint64_t> oversized_lines_;
    std::map<std::string, uint64_t> relists_;
    std::map<std::string, uint64_t> reconnects_;

    std::thread thread_;
    asio::io_context io_{1};  // last: see stop()
};

awaitable<void> KubeSource::Impl::sleep(Millis delay) {
    asio::steady_timer timer(io_);
    timer.expires_after(delay);
    error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

awaitable<void> KubeSource::Impl::guarded(Resource& resource) {
    while (!stopping_) {
        bool failed = false;
        try {
            co_await reflect(resource);
        } catch (const std::exception& e) {
            log::error("kubernetes source: {} watcher failed unexpectedly: {}", resource.name,
                       e.what());
            failed = true;
        }
        if (failed) co_await sleep(Millis(1000));
    }
}

void KubeSource::Impl::report_failure(Resource& resource, const std::string& reason) {
    resource.connected = false;
    // A broken certificate or token fails every resource the same way, again
    // and again: a reason is logged when no resource is already failing for
    // it, so one line per outage, not one per retry or per resource.
    bool known = false;
    for (const auto& other : resources_) known |= other->failure == reason;
    resource.failure = reason;
    if (!known) {
        log::warn("apiserver {}: {}; retrying with backoff", credentials_.server, reason);
    } else {
        log::debug("apiserver {}: {} ({}); retrying", credentials_.server, reason, resource.name);
    }
}

void KubeSource::Impl::mark_listed(Resource& resource) {
    resource.listed = true;
    if (synced_) return;
    for (const auto& other : resources_) {
        if (!other->listed) return;
    }
    synced_ = true;
    store_.set_synced(true);
    auto snapshot = store_.snapshot();
    log::info("kubernetes source: initial lists complete ({} services, {} endpointslices)",
              snapshot->services.size(), snapshot->endpoint_slices.size());
}

awaitable<void> KubeSource::Impl::reflect(Resource& resource) {
    Backoff backoff(
        BackoffParams{Millis(tuning_.backoff_initial_ms), Millis(tuning_.backoff_cap_ms)},
        seed_ + static_cast<uint64_t>(resource.kind));
    std::unique_ptr<Connection> connection;
    while (!stopping_) {
        Outcome outcome;
        if (!connection) outcome = co_await connect(connection);
        if (outcome.kind == Outcome::Kind::kOk && resource.resource_version.empty()) {
            outcome = co_await list(resource, connection);
        }
        if (outcome.kind == Outcome::Kind::kOk && connection) {
            outcome = co_await watch(resource, *connection);
        }
        switch (outcome.kind) {
            case Outcome::Kind::kOk:
                // The server ended the watch at its timeout: watch again. (One
                // that ended at once came back as an error: see
                // watch_counts_as_failure.)
                backoff.reset();
                if (!outcome.keep_connection) connection.reset();
                break;
            case Outcome::Kind::kGone:
                // Our resourceVersion left the server's history window: only a
                // fresh LIST (diffed into the Store) can catch up.
                count(relists_, resource.name);
                log::info("apiserver {}: {} resourceVersion {} expired (410 Gone); relisting",
                          credentials_.server, resource.name, resource.resource_version);
                resource.resource_version.clear();
                connection.reset();
                break;
            case Outcome::Kind::kError: {
                connection.reset();
                report_failure(resource, outcome.reason);
                Millis delay = outcome.retry_after ? *outcome.retry_after : backoff.next();
                co_await sleep(delay);
                count(reconnects_, resource.name);
                break;
            }
        }
    }
}

awaitable<Outcome> KubeSource::Impl::connect(std::unique_ptr<Connection>& connection) {
    auto fresh = std::make_unique<Connection>(io_, *tls_);
    error_code ec;
    tcp::resolver resolver(io_);
    auto endpoints =
        co_await resolver.async_resolve(credentials_.address.host, credentials_.address.port,
                                        asio::redirect_error(asio::use_awaitable, ec));
    if (ec)
        co_return Outcome::error("cannot resolve " + credentials_.address.host + ": " +
                                 ec.message());
    auto& tcp_stream = beast::get_lowest_layer(fresh->stream);
    tcp_stream.expires_after(std::chrono::seconds(tuning_.request_timeout_s));
    co_await tcp_stream.async_connect(endpoints, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Outcome::error("cannot connect: " + ec.message());

    SSL* ssl_handle = fresh->stream.native_handle();
    const std::string& name = credentials_.tls_server_name.empty() ? credentials_.address.host
                                                                   : credentials_.tls_server_name;
    error_code not_ip;
    asio::ip::make_address(name, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl_handle, name.c_str());
    if (!credentials_.insecure_skip_tls_verify) {
        // The certificate must name the server (DNS or IP SAN), as kubectl checks.
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
        if (not_ip) {
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
        } else {
            X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
        }
    }
    co_await fresh->stream.async_handshake(ssl::stream_base::client,
                                           asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        long verify = SSL_get_verify_result(ssl_handle);
        if (verify != X509_V_OK) {
            co_return Outcome::error(std::string("TLS certificate of the server rejected: ") +
                                     X509_verify_cert_error_string(verify));
        }
        co_return Outcome::error("TLS handshake failed: " + ec.message());
    }
    connection = std::move(fresh);
    co_return Outcome::ok(true);
}

awaitable<std::optional<Outcome>> KubeSource::Impl::send(Connection& connection,
                                                         const std::string& target) {
    http::request<http::empty_body> request{http::verb::get,
                                            credentials_.address.base_path + target, 11};
    request.set(http::field::host, credentials_.address.host_header());
    request.set(http::field::user_agent, "switchboard/0.1");
    request.set(http::field::accept, "application/json");
    // Re-read for every request: a projected service account token rotates.
    auto token = credentials_.bearer_token();
    if (!token) co_return Outcome::error("cannot read the token: " + token.error().describe());
    if (!token->empty()) request.set(http::field::authorization, "Bearer " + *token);
    beast::get_lowest_layer(connection.stream)
        .expires_after(std::chrono::seconds(tuning_.request_timeout_s));
    error_code ec;
    co_await http::async_write(connection.stream, request,
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return Outcome::error("cannot send the request: " + ec.message());
    co_return std::nullopt;
}

Outcome KubeSource::Impl::status_outcome(Resource& resource, unsigned status,
                                         const std::string& retry_after, std::string_view body) {
    std::string message = status_message(body);
    std::string prefix = resource.name + ": HTTP " + std::to_string(status);
    if (status == 410) return Outcome::gone();
    if (status == 401) {
        return Outcome::error("authentication failed (HTTP 401 Unauthorized): " + message);
    }
    if (status == 403) {
        return Outcome::error("forbidden (HTTP 403, check the RBAC rules for " + resource.name +
                              "): " + message);
    }
    return Outcome::error(prefix + ": " + message, parse_retry_after(retry_after));
}

awaitable<Outcome> KubeSource::Impl::list(Resource& resource,
                                          std::unique_ptr<Connection>& connection) {
    Store::Objects objects;
    std::string continue_token;
    std::string resource_version;
    do {
        if (!connection) {
            Outcome connected = co_await connect(connection);
            if (connected.kind != Outcome::Kind::kOk) co_return connected;
        }
        std::string target = resource.path + "?limit=" + std::to_string(tuning_.list_limit);
        if (!resource.field_selector.empty()) {
            target += "&fieldSelector=" + url_encode(resource.field_selector);
        }
        if (!continue_token.empty()) target += "&continue=" + url_encode(continue_token);
        if (auto failed = co_await send(*connection, target)) co_return *failed;

        http::response_parser<http::string_body> parser;
        parser.body_limit(uint64_t{1} << 31);
        error_code ec;
        co_await http::async_read(connection->stream, connection->buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            count(requests_, resource.name, "error");
            co_return Outcome::error(resource.name + ": LIST failed: " + ec.message());
        }
        auto& response = parser.get();
        unsigned status = response.result_int();
        count(requests_, resource.name, std::to_string(status));
        if (status != 200) {
            co_return status_outcome(
                resource, status, std::string(response[http::field::retry_after]), response.body());
        }
        auto document = decode_document(response.body());
        if (!document) {
            count(decode_errors_, resource.name);
            co_return Outcome::error(resource.name +
                                     ": LIST answer is not a list: " + document.error().message);
        }
        for (const auto& error : document->errors) {
            count(decode_errors_, resource.name);
            log::warn("apiserver {}: {}: skipped an object: {}", credentials_.server, resource.name,
                      error.describe());
        }
        auto take = [](auto& into, auto& from) {
            for (auto& object : from) into.push_back(std::move(object));
        };
        take(objects.services, document->objects.services);
        take(objects.endpoint_slices, document->objects.endpoint_slices);
        take(objects.nodes, document->objects.nodes);
        continue_token = document->continue_token;
        resource_version = document->resource_version;
        if (!parser.keep_alive()) connection.reset();
    } while (!continue_token.empty());
    store_.replace(resource.kind, std::move(objects));
    resource.resource_version = resource_version;
    mark_listed(resource);
    co_return Outcome::ok(connection != nullptr);
}

void KubeSource::Impl::handle_line(Resource& resource, std::string_view line,
                                   std::optional<Outcome>& end) {
    auto event = decode_watch_event(line);
    if (!event) {
        count(decode_errors_, resource.name);
        log::warn("apiserver {}: {}: skipped a watch event: {}", credentials_.server, resource.name,
                  event.error().message);
        return;
    }
    count(events_, resource.name, event_type_name(event->type));
    switch (event->type) {
        case WatchEvent::Type::kAdded:
        case WatchEvent::Type::kModified:
        case WatchEvent::Type::kDeleted:
            if (!holds_kind(event->object, resource.kind)) {
                count(decode_errors_, resource.name);
                log::warn("apiserver {}: {}: skipped a watch event of another kind",
                          credentials_.server, resource.name);
                return;
            }
            if (apply_watch_event(store_, resource.kind, *event) == Applied::kRejected) {
                count(decode_errors_, resource.name);
                log::warn(
                    "apiserver {}: {}: {} object failed validation and is dropped, as a "
                    "relist drops it: {}",
                    credentials_.server, resource.name, event_type_name(event->type),
                    event->rejected);
            }
            break;
        case WatchEvent::Type::kBookmark:
            break;
        case WatchEvent::Type::kError:
            if (event->status_code == 410) {
                end = Outcome::gone();
            } else {
                end = Outcome::error(resource.name + ": watch ERROR event " +
                                     std::to_string(event->status_code) + ": " +
                                     event->status_message);
            }
            return;
    }
    if (!event->resource_version.empty()) resource.resource_version = event->resource_version;
}

awaitable<Outcome> KubeSource::Impl::watch(Resource& resource, Connection& connection) {
    Backoff random(BackoffParams{}, seed_ ^ std::hash<std::string>{}(resource.resource_version));
    int timeout = random.uniform(tuning_.watch_timeout_min_s, tuning_.watch_timeout_max_s);
    std::string target = resource.path + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=" +
                         std::to_string(timeout);
    if (!resource.resource_version.empty()) {
        target += "&resourceVersion=" + url_encode(resource.resource_version);
    }
    if (!resource.field_selector.empty()) {
        target += "&fieldSelector=" + url_encode(resource.field_selector);
    }
    auto started = std::chrono::steady_clock::now();
    if (auto failed = co_await send(connection, target)) co_return *failed;
    // The server ends the stream at timeoutSeconds; a server that stalls
    // instead is cut off a grace period later.
    beast::get_lowest_layer(connection.stream)
        .expires_after(std::chrono::seconds(timeout + tuning_.watch_grace_s));

    error_code ec;
    http::response_parser<http::empty_body> header;
    co_await http::async_read_header(connection.stream, connection.buffer, header,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        count(requests_, resource.name, "error");
        co_return Outcome::error(resource.name + ": WATCH failed: " + ec.message());
    }
    unsigned status = header.get().result_int();
    count(requests_, resource.name, std::to_string(status));
    if (status != 200) {
        http::response_parser<http::string_body> body(std::move(header));
        body.body_limit(1 << 20);
        co_await http::async_read(connection.stream, connection.buffer, body,
                                  asio::redirect_error(asio::use_awaitable, ec));
        auto& response = body.get();
        co_return status_outcome(resource, status, std::string(response[http::field::retry_after]),
                                 ec ? std::string_view() : std::string_view(response.body()));
    }
    if (!resource.failure.empty()) {
        log::info("apiserver {}: {} watch established", credentials_.server, resource.name);
        resource.failure.clear();
    }
    resource.connected = true;

    http::response_parser<http::buffer_body> stream(std::move(header));
    stream.body_limit(std::numeric_limits<uint64_t>::max());
    LineSplitter splitter;
    std::optional<Outcome> end;
    size_t lines = 0;
    std::vector<char> chunk(64 * 1024);
    while (!stream.is_done() && !end && !stopping_) {
        stream.get().body().data = chunk.data();
        stream.get().body().size = chunk.size();
        co_await http::async_read_some(connection.stream, connection.buffer, stream,
                                       asio::redirect_error(asio::use_awaitable, ec));
        if (ec == http::error::need_buffer) ec = {};
        size_t received = chunk.size() - stream.get().body().size;
        size_t oversized = splitter.oversized();
        splitter.feed(std::string_view(chunk.data(), received), [&](std::string_view line) {
            ++lines;
            if (!end) handle_line(resource, line, end);
        });
        if (splitter.oversized() > oversized) {
            std::lock_guard lock(metrics_mutex_);
            oversized_lines_[resource.name] += splitter.oversized() - oversized;
        }
        if (ec == beast::error::timeout) {
            co_return Outcome::error(resource.name + ": watch stalled (no end after " +
                                     std::to_string(timeout + tuning_.watch_grace_s) + " s)");
        }
        if (ec) co_return Outcome::error(resource.name + ": watch stream lost: " + ec.message());
    }
    if (end) co_return *end;
    if (splitter.buffered() > 0) {
        // The stream ended inside an event: it was cut, not finished.
        count(decode_errors_, resource.name);
    }
    auto lasted = std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - started);
    if (watch_counts_as_failure(lasted, lines)) {
        co_return Outcome::error(resource.name +
                                 ": watch ended within a second of its start, with no event");
    }
    co_return Outcome::ok(stream.keep_alive());
}

void KubeSource::Impl::append_metrics(metrics::TextWriter& out) const {
    using metrics::Type;
    std::lock_guard lock(metrics_mutex_);
    auto pairs = [&out](const metrics::Family& family,
                        const std::map<std::pair<std::string, std::string>, uint64_t>& values) {
        out.family(family);
        for (const auto& [labels, value] : values) out.sample({labels.first, labels.second}, value);
    };
    auto singles = [&out](const metrics::Family& family,
                          const std::map<std::string, uint64_t>& values) {
        out.family(family);
        for (const auto& [label, value] : values) out.sample({label}, value);
    };
    pairs({"switchboard_apiserver_requests_total",
           "API server requests by resource and HTTP status (error: no answer).",
           Type::kCounter,
           {"resource", "code"}},
          requests_);
    pairs({"switchboard_watch_events_total",
           "Watch events received by resource and type.",
           Type::kCounter,
           {"resource", "type"}},
          events_);
    singles({"switchboard_watch_decode_errors_total",
             "Watch lines and listed objects skipped because they did not decode.",
             Type::kCounter,
             {"resource"}},
            decode_errors_);
    singles({"switchboard_watch_oversized_lines_total",
             "Watch lines dropped for exceeding the line size limit.",
             Type::kCounter,
             {"resource"}},
            oversized_lines_);
    singles({"switchboard_watch_relists_total",
             "Relists after 410 Gone.",
             Type::kCounter,
             {"resource"}},
            relists_);
    singles({"switchboard_apiserver_reconnects_total",
             "Reconnects after a failure.",
             Type::kCounter,
             {"resource"}},
            reconnects_);
    out.family({"switchboard_apiserver_ready",
                "Initial lists done and every watch connected.",
                Type::kGauge,
                {}});
    out.sample({}, uint64_t{ready() ? 1u : 0u});
}

namespace {

Result<std::shared_ptr<ssl::context>> make_tls_context(const Credentials& credentials) {
    auto fail = [&](const std::string& what, const error_code& ec) {
        return make_error(ErrorCode::kInvalidArgument,
                          credentials.origin + ": " + what + ": " + ec.message());
    };
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    error_code ec;
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                             ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                             ssl::context::no_tlsv1_1,
                         ec);
    if (credentials.insecure_skip_tls_verify) {
        context->set_verify_mode(ssl::verify_none, ec);
    } else {
        context->set_verify_mode(ssl::verify_peer, ec);
        if (credentials.ca_pem.empty()) {
            context->set_default_verify_paths(ec);
        } else {
            context->add_certificate_authority(asio::buffer(credentials.ca_pem), ec);
            if (ec) return fail("bad certificate authority", ec);
        }
    }
    if (!credentials.client_cert_pem.empty()) {
        context->use_certificate_chain(asio::buffer(credentials.client_cert_pem), ec);
        if (ec) return fail("bad client certificate", ec);
        context->use_private_key(asio::buffer(credentials.client_key_pem), ssl::context::pem, ec);
        if (ec) return fail("bad client key", ec);
    }
    return context;
}

}  // namespace

Result<std::unique_ptr<KubeSource>> KubeSource::create(const KubeSourceOptions& options,
                                                       Store& store) {
    KubeTuning tuning;
    if (options.tuning) {
        tuning = *options.tuning;
    } else if (const char* text = std::getenv(kTuningEnv)) {
        auto parsed = parse_tuning(text);
        if (!parsed) {
            return make_error(ErrorCode::kInvalidArgument,
                              std::string(kTuningEnv) + ": " + parsed.error().message);
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
            return make_error(ErrorCode::kInvalidArgument, "--master: " + address.error().message);
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
