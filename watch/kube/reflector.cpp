#include "watch/kube/reflector.h"

#include <cctype>
#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "base/log.h"
#include "watch/decode.h"
#include "watch/kube/apply_event.h"

namespace sb::watch::kube {

namespace {

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

// AnyObject's alternatives are in the order of Kind.
template <Kind kind, typename T>
constexpr bool kind_is =
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(kind), AnyObject>, T>;
static_assert(kind_is<Kind::kService, Service> && kind_is<Kind::kEndpointSlice, EndpointSlice> &&
              kind_is<Kind::kNode, Node> && kind_is<Kind::kPod, Pod> &&
              kind_is<Kind::kServiceCIDR, ServiceCIDR>);

bool holds_kind(const AnyObject& object, Kind kind) {
    return object.index() == static_cast<size_t>(kind);
}

}  // namespace

struct Reflector::Resource {
    ResourceSpec spec;
    // Loop-thread state.
    std::string resource_version;  // "" until listed, and after 410
    bool listed = false;
    std::string failure;  // why the last attempt failed; "" when it did not
    bool absent = false;  // may_be_absent and the last LIST was a 404
    // Read by ready() from other threads.
    std::atomic<bool> connected{false};
};

// What one request or stream ended with.
struct Reflector::Outcome {
    enum class Kind { kOk, kGone, kAbsent, kError };
    Kind kind = Kind::kOk;
    std::string reason;  // kError: why, for the log line
    std::optional<Millis> retry_after;
    // A watch that ran healthy (watch_was_healthy) ended with this outcome.
    bool after_healthy_watch = false;
    static Outcome ok() { return {Kind::kOk, {}, std::nullopt}; }
    static Outcome gone() { return {Kind::kGone, {}, std::nullopt}; }
    static Outcome absent() { return {Kind::kAbsent, {}, std::nullopt}; }
    static Outcome error(std::string reason, std::optional<Millis> retry = std::nullopt) {
        return {Kind::kError, std::move(reason), retry};
    }
};

Reflector::Reflector(Store& store, std::string server, const KubeTuning& tuning, uint64_t seed,
                     Clock& clock, TransportFactory make_transport)
    : store_(store),
      server_(std::move(server)),
      tuning_(tuning),
      seed_(seed),
      clock_(clock),
      make_transport_(std::move(make_transport)) {}

Reflector::~Reflector() = default;

void Reflector::add_resource(ResourceSpec spec) {
    auto resource = std::make_unique<Resource>();
    resource->spec = std::move(spec);
    resources_.push_back(std::move(resource));
}

bool Reflector::ready() const {
    if (!synced_) return false;
    for (const auto& resource : resources_) {
        if (resource->spec.gates_sync && !resource->connected) return false;
    }
    return true;
}

void Reflector::count(PairCounter& counter, const std::string& a, const std::string& b) {
    std::lock_guard lock(metrics_mutex_);
    ++counter[{a, b}];
}

void Reflector::count(Counter& counter, const std::string& a, uint64_t n) {
    std::lock_guard lock(metrics_mutex_);
    counter[a] += n;
}

awaitable<void> Reflector::run(size_t index) {
    Resource& resource = *resources_.at(index);
    while (!stopping_) {
        bool failed = false;
        try {
            co_await reflect(resource);
        } catch (const std::exception& e) {
            log::error("kubernetes source: {} watcher failed unexpectedly: {}", resource.spec.name,
                       e.what());
            failed = true;
        }
        if (failed) co_await clock_.sleep(Millis(1000));
    }
}

void Reflector::report_failure(Resource& resource, const std::string& reason) {
    resource.connected = false;
    // A broken certificate or token fails every resource the same way, again
    // and again: a reason is logged when no resource is already failing for
    // it, so one line per outage, not one per retry or per resource.
    bool known = false;
    for (const auto& other : resources_) known |= other->failure == reason;
    resource.failure = reason;
    if (!known) {
        log::warn("apiserver {}: {}; retrying with backoff", server_, reason);
    } else {
        log::debug("apiserver {}: {} ({}); retrying", server_, reason, resource.spec.name);
    }
}

void Reflector::note_absent(Resource& resource) {
    resource.connected = false;
    resource.resource_version.clear();  // a 404 on a WATCH: LIST again next
    // Objects listed before the server stopped serving the resource are
    // gone with it (a replace that finds the Store empty notifies nothing).
    store_.replace(resource.spec.kind, Store::SharedObjects{});
    if (std::exchange(resource.absent, true)) return;
    log::info(
        "apiserver {}: {} not served (HTTP 404 on {}); none assumed, checking again every {} ms",
        server_, resource.spec.name, resource.spec.path, tuning_.backoff_cap_ms);
}

void Reflector::mark_listed(Resource& resource) {
    resource.listed = true;
    if (synced_) return;
    for (const auto& other : resources_) {
        if (other->spec.gates_sync && !other->listed) return;
    }
    synced_ = true;
    store_.set_synced(true);
    auto snapshot = store_.snapshot();
    log::info("kubernetes source: initial lists complete ({} services, {} endpointslices)",
              snapshot->service_count(), snapshot->endpoint_slices().size());
}

awaitable<void> Reflector::reflect(Resource& resource) {
    const std::string& name = resource.spec.name;
    Backoff backoff(
        BackoffParams{Millis(tuning_.backoff_initial_ms), Millis(tuning_.backoff_cap_ms)},
        seed_ + static_cast<uint64_t>(resource.spec.kind));
    std::unique_ptr<ApiTransport> transport = make_transport_(resource.spec);
    while (!stopping_) {
        Outcome outcome;
        if (resource.resource_version.empty()) outcome = co_await list(resource, *transport);
        if (outcome.kind == Outcome::Kind::kOk) outcome = co_await watch(resource, *transport);
        // After stop() nothing the transport said is acted on.
        if (stopping_) break;
        switch (outcome.kind) {
            case Outcome::Kind::kOk:
                // The server ended the watch at its timeout: watch again. (One
                // that ended at once came back as an error: see
                // watch_counts_as_failure.)
                backoff.reset();
                break;
            case Outcome::Kind::kGone:
                // Our resourceVersion left the server's history window: only a
                // fresh LIST (diffed into the Store) can catch up.
                count(relists_, name);
                log::info("apiserver {}: {} resourceVersion {} expired (410 Gone); relisting",
                          server_, name, resource.resource_version);
                resource.resource_version.clear();
                transport->disconnect();
                break;
            case Outcome::Kind::kAbsent:
                transport->disconnect();
                note_absent(resource);
                co_await clock_.sleep(Millis(tuning_.backoff_cap_ms));
                break;
            case Outcome::Kind::kError: {
                transport->disconnect();
                report_failure(resource, outcome.reason);
                // A routine cut of a long-running watch (the API server, a
                // proxy or a load balancer closing it) must not wait what the
                // failures of hours ago added up to: new Services would stay
                // unknown for that long. Fast failures keep growing it.
                if (outcome.after_healthy_watch) backoff.reset();
                Millis delay =
                    outcome.retry_after ? *outcome.retry_after : backoff.next(clock_.now());
                co_await clock_.sleep(delay);
                count(reconnects_, name);
                break;
            }
        }
    }
}

Reflector::Outcome Reflector::no_answer(Resource& resource, const Reply& reply,
                                        const char* request) {
    // A request that never reached the server is no request to count.
    if (!reply.sent) return Outcome::error(reply.failure);
    count(requests_, resource.spec.name, "error");
    return Outcome::error(
        fmt::format("{}: {} failed: {}", resource.spec.name, request, reply.failure));
}

Reflector::Outcome Reflector::status_outcome(Resource& resource, const Reply& reply) {
    const std::string& name = resource.spec.name;
    std::string message = status_message(reply.body);
    if (reply.status == 410) return Outcome::gone();
    if (reply.status == 404 && resource.spec.may_be_absent) return Outcome::absent();
    if (reply.status == 401) {
        return Outcome::error(
            fmt::format("authentication failed (HTTP 401 Unauthorized): {}", message));
    }
    if (reply.status == 403) {
        return Outcome::error(
            fmt::format("forbidden (HTTP 403, check the RBAC rules for {}): {}", name, message));
    }
    return Outcome::error(fmt::format("{}: HTTP {}: {}", name, reply.status, message),
                          parse_retry_after(reply.retry_after));
}

awaitable<Reflector::Outcome> Reflector::list(Resource& resource, ApiTransport& transport) {
    const ResourceSpec& spec = resource.spec;
    Store::SharedObjects objects;
    std::string continue_token;
    std::string resource_version;
    do {
        std::string target = spec.path + "?limit=" + std::to_string(tuning_.list_limit);
        if (!spec.field_selector.empty()) {
            target += "&fieldSelector=" + url_encode(spec.field_selector);
        }
        if (!continue_token.empty()) target += "&continue=" + url_encode(continue_token);
        Reply reply = co_await transport.get(target);
        if (reply.status == 0) co_return no_answer(resource, reply, "LIST");
        count(requests_, spec.name, std::to_string(reply.status));
        // 410 on a `continue` page: the token expired, the pages so far are
        // dropped and the relist starts over (as client-go's pager does).
        if (reply.status != 200) co_return status_outcome(resource, reply);
        auto document = decode_document(reply.body);
        if (!document) {
            count(decode_errors_, spec.name);
            co_return Outcome::error(fmt::format("{}: LIST answer is not a list: {}", spec.name,
                                                 document.error().message));
        }
        for (const auto& error : document->errors) {
            count(decode_errors_, spec.name);
            log::warn("apiserver {}: {}: skipped an object: {}", server_, spec.name,
                      error.describe());
        }
        auto take = [](auto& into, auto& from) {
            using T = std::remove_reference_t<decltype(from.front())>;
            for (auto& object : from) into.push_back(std::make_shared<const T>(std::move(object)));
        };
        take(objects.services, document->objects.services);
        take(objects.endpoint_slices, document->objects.endpoint_slices);
        take(objects.nodes, document->objects.nodes);
        take(objects.pods, document->objects.pods);
        take(objects.service_cidrs, document->objects.service_cidrs);
        continue_token = document->continue_token;
        resource_version = document->resource_version;
    } while (!continue_token.empty());
    store_.replace(spec.kind, std::move(objects));
    resource.resource_version = resource_version;
    if (std::exchange(resource.absent, false)) {
        log::info("apiserver {}: {} now served", server_, spec.name);
    }
    mark_listed(resource);
    co_return Outcome::ok();
}

void Reflector::handle_line(Resource& resource, std::string_view line,
                            std::optional<Outcome>& end) {
    const std::string& name = resource.spec.name;
    auto event = decode_watch_event(line);
    if (!event) {
        count(decode_errors_, name);
        log::warn("apiserver {}: {}: skipped a watch event: {}", server_, name,
                  event.error().message);
        return;
    }
    count(events_, name, event_type_name(event->type));
    switch (event->type) {
        case WatchEvent::Type::kAdded:
        case WatchEvent::Type::kModified:
        case WatchEvent::Type::kDeleted:
            if (!holds_kind(event->object, resource.spec.kind)) {
                count(decode_errors_, name);
                log::warn("apiserver {}: {}: skipped a watch event of another kind", server_, name);
                return;
            }
            if (apply_watch_event(store_, resource.spec.kind, *event) == Applied::kRejected) {
                count(decode_errors_, name);
                log::warn(
                    "apiserver {}: {}: {} object failed validation and is dropped, as a "
                    "relist drops it: {}",
                    server_, name, event_type_name(event->type), event->rejected);
            }
            break;
        case WatchEvent::Type::kBookmark:
            break;
        case WatchEvent::Type::kError:
            if (event->status_code == 410) {
                end = Outcome::gone();
            } else {
                end = Outcome::error(fmt::format("{}: watch ERROR event {}: {}", name,
                                                 event->status_code, event->status_message));
            }
            return;
    }
    if (!event->resource_version.empty()) resource.resource_version = event->resource_version;
}

WatchLineHandlers Reflector::line_handlers(Resource& resource, std::optional<Outcome>& end,
                                           size_t& lines) {
    return WatchLineHandlers{
        [this, &resource, &end, &lines](std::string_view line) {
            ++lines;
            handle_line(resource, line, end);
            return !end && !stopping_;
        },
        [this, &resource](size_t oversized) {
            count(oversized_lines_, resource.spec.name, oversized);
        },
    };
}

awaitable<Reflector::Outcome> Reflector::watch(Resource& resource, ApiTransport& transport) {
    const ResourceSpec& spec = resource.spec;
    Backoff random(BackoffParams{}, seed_ ^ std::hash<std::string>{}(resource.resource_version));
    int timeout = random.uniform(tuning_.watch_timeout_min_s, tuning_.watch_timeout_max_s);
    std::string target = spec.path + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=" +
                         std::to_string(timeout);
    if (!resource.resource_version.empty()) {
        target += "&resourceVersion=" + url_encode(resource.resource_version);
    }
    if (!spec.field_selector.empty()) {
        target += "&fieldSelector=" + url_encode(spec.field_selector);
    }
    const auto started = clock_.now();
    // The server ends the stream at timeoutSeconds; a server that stalls
    // instead is cut off a grace period later.
    const int deadline = timeout + tuning_.watch_grace_s;
    Reply reply = co_await transport.open_watch(target, std::chrono::seconds(deadline));
    if (reply.status == 0) co_return no_answer(resource, reply, "WATCH");
    count(requests_, spec.name, std::to_string(reply.status));
    if (reply.status != 200) co_return status_outcome(resource, reply);
    if (!resource.failure.empty()) {
        log::info("apiserver {}: {} watch established", server_, spec.name);
        resource.failure.clear();
    }
    resource.connected = true;

    std::optional<Outcome> end;
    size_t lines = 0;
    const WatchLineHandlers handlers = line_handlers(resource, end, lines);
    StreamEnd stream = co_await transport.read_watch(handlers);
    const auto lasted = std::chrono::duration_cast<Millis>(clock_.now() - started);
    Outcome outcome = Outcome::ok();
    switch (stream.how) {
        case StreamEnd::How::kStalled:
            outcome = Outcome::error(
                fmt::format("{}: watch stalled (no end after {} s)", spec.name, deadline));
            break;
        case StreamEnd::How::kLost:
            outcome =
                Outcome::error(fmt::format("{}: watch stream lost: {}", spec.name, stream.failure));
            break;
        case StreamEnd::How::kStopped:
        case StreamEnd::How::kEnded:
            if (end) {
                outcome = *end;
                break;
            }
            // The stream ended inside an event: it was cut, not finished.
            if (stream.cut) count(decode_errors_, spec.name);
            if (watch_counts_as_failure(lasted, lines)) {
                outcome = Outcome::error(fmt::format(
                    "{}: watch ended within a second of its start, with no event", spec.name));
            }
            break;
    }
    outcome.after_healthy_watch = watch_was_healthy(lasted, lines);
    co_return outcome;
}

void Reflector::append_metrics(metrics::TextWriter& out) const {
    using metrics::Type;
    std::lock_guard lock(metrics_mutex_);
    auto pairs = [&out](const metrics::Family& family, const PairCounter& values) {
        out.family(family);
        for (const auto& [labels, value] : values) out.sample({labels.first, labels.second}, value);
    };
    auto singles = [&out](const metrics::Family& family, const Counter& values) {
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

}  // namespace sb::watch::kube
