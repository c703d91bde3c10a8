#include "dns/serve/query_dispatcher.h"

#include <sys/random.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/socket_address.h"
#include "base/threads/panic_guard.h"
#include "dns/search_path/autopath.h"
#include "dns/wire/quick_query.h"
#include "dns/zone/loadbalance.h"

namespace sb::dns {

namespace {

// The `log` line of one exchange, when a rule of `config` selects it.
void log_exchange(const QueryLogConfig& config, std::span<const uint8_t> query,
                  std::span<const uint8_t> reply, Proto proto, const ClientRef& client,
                  std::chrono::steady_clock::time_point start) {
    HostPort remote = from_socket_address(client.address);
    auto described = describe_exchange(
        query, reply, proto == kTcp, remote, client.local,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!described) return;
    const QueryLogRule* rule = config.rule_for(described->lower_name);
    if (!rule || !rule->selects(*described)) return;
    write_stdout_line("[INFO] " + format_log_line(rule->format, *described));
}

// A forward that failed: the errors plugin's line when the query's server
// block has `errors` (CoreDNS logs nothing else then), else at debug.
void report_forward_error(const QueryLogConfig& config, const Message& query, const Error& error) {
    if (query.questions.empty()) return;
    const std::string lower = name_lower(query.questions[0].name);
    const QueryLogBlock* block = config.block_for(lower);
    if (block && block->errors) {
        write_stdout_line(fmt::format(
            "[ERROR] {}", format_error_line(static_cast<uint8_t>(Rcode::kServFail), lower,
                                            query.questions[0].qtype, error.describe())));
        return;
    }
    log::debug("dns: forward failed: {}", error.describe());
}

std::span<const uint8_t> bytes_of(const std::string& text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// The flags path's kubernetes options, for an engine holder still empty.
const ClusterPolicy kFlagsCluster{};

// CoreDNS's `family` label: the client's address family (a TCP client's
// is its connection's).
size_t family_index(const ClientRef& client) {
    return client.address.ss_family == AF_INET6 ? 1 : 0;
}

// A reply with no records: `query`'s header and question, `rcode`.
std::string rcode_reply(const Message& query, Rcode rcode) {
    Message reply;
    reply.header = query.header;
    reply.header.qr = true;
    reply.header.rcode = static_cast<uint8_t>(rcode);
    reply.questions = query.questions;
    return write_message(reply).bytes;
}

// The resolver's partial reply completed with the upstream's answer
// (SERVFAIL when the forward failed).
void merge_answer(Message& reply, const Result<CachedAnswer>& upstream) {
    if (!upstream) {
        reply.answers.clear();
        reply.header.rcode = static_cast<uint8_t>(Rcode::kServFail);
    } else {
        reply.header.rcode = upstream->rcode;
        reply.answers.insert(reply.answers.end(), upstream->answers.begin(),
                             upstream->answers.end());
        reply.authority = upstream->authority;
        reply.additional = upstream->additional;
    }
    reply.header.ra = true;
}

// `reply` to `query` on the wire, within the size `proto` allows.
WriteResult write_reply(const Message& query, Message& reply, Proto proto) {
    size_t limit = finish_reply(query, reply);
    if (proto == kTcp) limit = 65535;
    return write_message(reply, limit);
}

// The reply to `query` given the resolver's partial reply and the
// upstream's; `shuffle_seed` set: its records load-balanced.
std::string merge_upstream(const Message& query, Message reply, Proto proto,
                           const Result<CachedAnswer>& upstream,
                           std::optional<uint64_t> shuffle_seed, bool& truncated) {
    merge_answer(reply, upstream);
    if (shuffle_seed) load_balance(reply, *shuffle_seed);
    WriteResult written = write_reply(query, reply, proto);
    truncated = written.truncated;
    return std::move(written.bytes);
}

// The cache a forwarded question goes through (null: none) and what it
// holds for the question now: the plain forward's and the search walk's
// first step.
struct ForwardLookup {
    Cache* cache = nullptr;
    CacheLookup found;
};

ForwardLookup look_up_forward(const QueryEngine& engine, const Question& question,
                              Cache::Clock::time_point now) {
    ForwardLookup lookup;
    if (engine.caches) lookup.cache = engine.caches->for_name(name_lower(question.name));
    if (lookup.cache) lookup.found = lookup.cache->lookup(question, now);
    return lookup;
}

// A hit the cache wants refreshed (prefetch, serve_stale): the question is
// asked again in the background and its answer stored; nobody waits for it.
void refresh_in_background(const QueryEngine& engine, Cache* cache, const Question& question) {
    engine.in_flight.fetch_add(1, std::memory_order_relaxed);
    engine.forwarder->submit(
        question, [engine = &engine, cache, question](Result<Message> upstream) {
            run_guarded("dns cache refresh", [&] {
                cache->refreshed(question, std::move(upstream), Cache::Clock::now());
            });
            // Last use of the engine: once 0, its owner may stop and free it.
            engine->in_flight.fetch_sub(1, std::memory_order_release);
        });
}

// A search walk under way (autopath). Its steps run one after another: on
// the serving thread, then, once one is forwarded, on the forwarder's
// thread, each forward's callback starting the next step; never two at
// once, so it needs no lock. The zone, hosts table and engine it holds stay
// alive until it ends (the engine through `in_flight`, as for a forward).
struct AutopathWalk {
    Message query;  // reply_basis of the client's query
    Message plain;  // the zone's reply to the asked name: the reply when the walk fails
    std::vector<SearchStep> steps;
    size_t next = 0;  // in steps
    Proto proto = kUdp;
    ClientRef client;
    std::shared_ptr<const Zone> zone;
    std::shared_ptr<const HostsTable> hosts;
    ResolverOptions resolver_options;
    const QueryEngine* engine = nullptr;
    std::shared_ptr<ServerStats> stats;
    ReplySink* sink = nullptr;
    std::optional<uint64_t> shuffle_seed;  // `loadbalance`: the reply's order
    std::string logged_query;              // the query's bytes for its log line; empty: none
    Cache::Clock::time_point start;
};

// Where a walk stopped.
struct WalkEnd {
    WriteResult written;  // the reply, and its A/AAAA records for the zone's shuffle
    ServerStats::Answerer answerer = ServerStats::kKubernetes;
    bool autopathed = false;  // a step answered (not the plain reply)
    size_t saved = 0;         // that step's index
};

// What one step's reply means for the walk: CoreDNS's autopath goes on
// after NXDOMAIN only and answers with any other reply it wrote; a step
// that failed (SERVFAIL, REFUSED, a timeout) ends the walk with the plain
// reply here, so that the client walks its list itself.
enum class StepVerdict { kNext, kAnswer, kFail };

StepVerdict verdict_of(uint8_t rcode) {
    if (rcode == static_cast<uint8_t>(Rcode::kNXDomain)) return StepVerdict::kNext;
    if (rcode == static_cast<uint8_t>(Rcode::kNoError)) return StepVerdict::kAnswer;
    return StepVerdict::kFail;
}

WalkEnd plain_end(AutopathWalk& walk, ServerStats::Answerer answerer) {
    WalkEnd end;
    Message reply = walk.plain;
    end.written = write_reply(walk.query, reply, walk.proto);
    end.answerer = answerer;
    return end;
}

// The step's reply as the reply to the asked name (CoreDNS's cnamer): a
// CNAME from the asked name to the step's first, the question as asked.
// Unlike cnamer, a NODATA step gets the CNAME too (with the negative TTL of
// its SOA), so that every type of the asked name tells the same alias.
WalkEnd answer_end(AutopathWalk& walk, const SearchStep& step, Message reply,
                   ServerStats::Answerer answerer) {
    const std::string& asked = walk.query.questions[0].name;
    uint32_t ttl = walk.zone ? walk.zone->config().ttl : 0;
    if (!reply.answers.empty()) {
        ttl = reply.answers[0].ttl;
    } else {
        for (const auto& record : reply.authority) {
            if (record.rtype == type::kSOA) ttl = record.ttl;
        }
    }
    reply.answers.insert(reply.answers.begin(),
                         Record{asked, type::kCNAME, kClassIN, ttl, name_lower(step.name)});
    reply.questions = walk.query.questions;
    if (walk.shuffle_seed) load_balance(reply, *walk.shuffle_seed);
    WalkEnd end;
    end.written = write_reply(walk.query, reply, walk.proto);
    end.answerer = answerer;
    end.autopathed = true;
    end.saved = step.index;
    return end;
}

void count_autopath(ServerStats& stats, const WalkEnd& end) {
    if (!end.autopathed) return;
    stats.autopath_answers.fetch_add(1, std::memory_order_relaxed);
    stats.autopath_round_trips_saved.fetch_add(end.saved, std::memory_order_relaxed);
}

// A walk that ended on the forwarder's thread: counted as a forwarded
// reply and posted to the client.
void post_end(AutopathWalk& walk, WalkEnd end) {
    ServerStats& stats = *walk.stats;
    count_autopath(stats, end);
    std::string& bytes = end.written.bytes;
    if (!walk.logged_query.empty()) {
        log_exchange(walk.engine->query_log, bytes_of(walk.logged_query), bytes_of(bytes),
                     walk.proto, walk.client, walk.start);
    }
    if (end.written.truncated) stats.forwarded_truncated.fetch_add(1);
    stats.forwarded_responses[std::min<size_t>(bytes[3] & 0x0f, ServerStats::kRcodes - 1)]
        .fetch_add(1);
    stats.forwarded_duration.record(
        std::chrono::duration<double>(Cache::Clock::now() - walk.start).count(), 1, true);
    stats.forwarded_response_size[walk.proto].record(bytes.size(), true);
    walk.sink->post(walk.client, std::move(bytes));
}

// Runs the walk's steps from walk->next: true with `end` set when it ended
// on this thread; false when a step was forwarded (its callback goes on and
// posts the reply).
bool walk_on(const std::shared_ptr<AutopathWalk>& walk, WalkEnd& end);

// Forwards `step`'s question; the callback judges the upstream's reply and
// goes on with the walk or posts its end.
void forward_step(const std::shared_ptr<AutopathWalk>& walk, Resolution resolution, Cache* cache,
                  std::optional<CachedAnswer> stale) {
    const QueryEngine* engine = walk->engine;
    Question question = resolution.forward;
    auto on_reply = [walk, cache, question, stale = std::move(stale),
                     partial = std::move(resolution.response)](Result<Message> upstream) mutable {
        if (!upstream) report_forward_error(walk->engine->query_log, walk->query, upstream.error());
        Result<CachedAnswer> answer = cache ? cache->complete(question, std::move(upstream),
                                                              std::move(stale), Cache::Clock::now())
                                            : upstream_answer(std::move(upstream));
        merge_answer(partial, answer);
        const SearchStep& step = walk->steps[walk->next];
        switch (verdict_of(partial.header.rcode)) {
            case StepVerdict::kAnswer:
                post_end(*walk, answer_end(*walk, step, std::move(partial), ServerStats::kCache));
                return;
            case StepVerdict::kFail:
                post_end(*walk, plain_end(*walk, ServerStats::kKubernetes));
                return;
            case StepVerdict::kNext:
                break;
        }
        ++walk->next;
        WalkEnd end;
        if (walk_on(walk, end)) post_end(*walk, std::move(end));
    };
    engine->in_flight.fetch_add(1, std::memory_order_relaxed);
    engine->forwarder->submit(
        question,
        [walk, on_reply = std::move(on_reply), engine](Result<Message> upstream) mutable {
            if (!run_guarded("dns search walk", [&] { on_reply(std::move(upstream)); })) {
                run_guarded("dns search walk", [&] {
                    walk->sink->post(walk->client, rcode_reply(walk->query, Rcode::kServFail));
                });
            }
            // Last use of the engine: once 0, its owner may stop and free it.
            engine->in_flight.fetch_sub(1, std::memory_order_release);
        },
        walk->proto == kTcp ? ClientProtocol::kTcp : ClientProtocol::kUdp,
        from_socket_address(walk->client.address).address);
}

bool walk_on(const std::shared_ptr<AutopathWalk>& walk, WalkEnd& end) {
    for (; walk->next < walk->steps.size(); ++walk->next) {
        const SearchStep& step = walk->steps[walk->next];
        Message asked = walk->query;
        asked.questions[0].name = step.name;
        Resolution resolution = resolve(walk->zone.get(), asked, walk->resolver_options);
        ServerStats::Answerer answerer = ServerStats::kKubernetes;
        if (resolution.kind == Resolution::Kind::kDrop) break;
        if (resolution.kind == Resolution::Kind::kForward) {
            // As a plain forward: the cache first, else the upstreams.
            const QueryEngine* engine = walk->engine;
            if (!engine->forwarder) break;
            ForwardLookup lookup =
                look_up_forward(*engine, resolution.forward, Cache::Clock::now());
            Cache* cache = lookup.cache;
            CacheLookup& found = lookup.found;
            if (found.kind == CacheLookup::Kind::kMiss || found.verify) {
                std::optional<CachedAnswer> stale;
                if (found.verify) stale = std::move(found.answer);
                forward_step(walk, std::move(resolution), cache, std::move(stale));
                return false;
            }
            if (found.refresh) refresh_in_background(*engine, cache, resolution.forward);
            merge_answer(resolution.response, found.answer);
            answerer = ServerStats::kCache;
        }
        switch (verdict_of(resolution.response.header.rcode)) {
            case StepVerdict::kAnswer:
                end = answer_end(*walk, step, std::move(resolution.response), answerer);
                return true;
            case StepVerdict::kFail:
                end = plain_end(*walk, ServerStats::kKubernetes);
                return true;
            case StepVerdict::kNext:
                break;
        }
    }
    // Every name NXDOMAIN (or a step that cannot be asked): the client walks on.
    end = plain_end(*walk, ServerStats::kKubernetes);
    return true;
}

}  // namespace

QueryDispatcher::QueryDispatcher(const ServerOptions& options, const ZoneHolder& zones,
                                 const EngineHolder& engines, ReplySink& sink)
    : options_(options), zones_(zones), engines_(engines), sink_(sink), cluster_(&kFlagsCluster) {
    uint64_t seed = 0;
    if (::getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
        seed = reinterpret_cast<uintptr_t>(this);
    }
    random_ = seed | 1;
}

void QueryDispatcher::refresh_zone() {
    if (uint64_t version = engines_.version(); version != engine_version_) {
        engine_ = engines_.get();
        engine_version_ = version;
        forwarder_ = engine_ ? engine_->forwarder.get() : nullptr;
        cluster_ = engine_ ? &engine_->cluster : &kFlagsCluster;
        shuffle_ = engine_ ? engine_->shuffle : AnswerShuffle::kZoneAnswers;
        logging_ = engine_ && engine_->query_log.logs_queries();
        zone_.reset();  // the rendered replies were made with the old engine
    }
    uint64_t version = zones_.version();
    bool forwarding = forwarder_ && forwarder_->enabled();
    // The hosts table's replies are rendered too: a new table flushes.
    uint64_t hosts_version = options_.hosts ? options_.hosts->version() : 0;
    if (version != zone_version_ || !zone_ || forwarding != forwarding_ ||
        hosts_version != hosts_version_) {
        zone_ = zones_.get();
        zone_version_ = version;
        forwarding_ = forwarding;
        if (options_.hosts) hosts_ = options_.hosts->get();
        hosts_version_ = hosts_version;
        rendered_.clear();
        stats_->render_bytes.store(0, std::memory_order_relaxed);
    }
    // No rendered reply depends on the client, so a new directory flushes nothing.
    if (options_.pods) {
        if (uint64_t pods_version = options_.pods->version(); pods_version != pods_version_) {
            pods_ = options_.pods->get();
            pods_version_ = pods_version;
        }
    }
}

QueryDispatcher::Outcome QueryDispatcher::handle(const uint8_t* p, size_t n, Proto proto,
                                                 const ClientRef& client, std::string& out) {
    stats_->request_size[proto].record(n, false);
    Outcome outcome = Outcome::kNone;
    if (!run_guarded("dns query", [&] { outcome = answer(p, n, proto, client, out); })) {
        out = error_reply(std::span<const uint8_t>(p, n), Rcode::kServFail);
        outcome = out.empty() ? Outcome::kNone : Outcome::kReply;
    }
    if (outcome == Outcome::kReply) stats_->response_size[proto].record(out.size(), false);
    return outcome;
}

void QueryDispatcher::log_reply(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                                const std::string& reply,
                                std::chrono::steady_clock::time_point start) const {
    log_exchange(engine_->query_log, {p, n}, bytes_of(reply), proto, client, start);
}

QueryDispatcher::Outcome QueryDispatcher::answer(const uint8_t* p, size_t n, Proto proto,
                                                 const ClientRef& client, std::string& out) {
    QuickQuery quick;
    if (quick_parse(p, n, quick, key_)) {
        const size_t family = family_index(client);
        bump_single_writer(stats_->requests[proto][family][ServerStats::type_index(quick.qtype)]);
        if (quick.dnssec_ok) bump_single_writer(stats_->do_requests);
        size_t limit = proto == kTcp ? 65535
                       : quick.edns
                           ? std::clamp<size_t>(quick.udp_size, kClassicUdpSize, kEdnsUdpSize)
                           : kClassicUdpSize;
        key_.push_back(static_cast<char>((quick.edns ? 1 : 0) | (quick.dnssec_ok ? 2 : 0)));
        key_.push_back(static_cast<char>(limit >> 8));
        key_.push_back(static_cast<char>(limit & 0xff));
        uint64_t key_hash = RenderCache::hash(key_);
        const RenderCache::Entry* r = rendered_.find(key_, key_hash);
        // A rendered NXDOMAIN for a first expansion from a Pod the search
        // path walks for is not its reply: the walk's depends on the client
        // (and is never stored). Any other rendered reply is every client's.
        if (r && (r->reply()[3] & 0x0f) == static_cast<char>(Rcode::kNXDomain)) {
            if (const PodClient* pod = autopath_client(client); pod && zone_) {
                std::string_view lower_name(key_.data(), key_.size() - 5);
                if (is_first_expansion(lower_name, pod->ns, zone_->origin())) r = nullptr;
            }
        }
        if (r) {
            RenderCache::reply_to(*r, {p, n}, quick.name_end, out);
            shuffle(out, r->shuffle_offset, r->shuffle_size, r->shuffle_count);
            bump_single_writer(stats_->render_hits);
            count_response(ServerStats::kKubernetes, static_cast<uint8_t>(out[3] & 0x0f));
            return Outcome::kReply;
        }
        return handle_full(p, n, proto, client, out, &key_, key_hash, limit);
    }
    return handle_full(p, n, proto, client, out, nullptr, 0, 0);
}

void QueryDispatcher::shuffle(std::string& bytes, size_t offset, size_t size, size_t count) {
    if (shuffle_ == AnswerShuffle::kNone || count < 2 || offset + size * count > bytes.size())
        return;
    char temp[64];
    if (size > sizeof(temp)) return;
    for (size_t i = count - 1; i > 0; --i) {
        size_t j = next_random() % (i + 1);
        if (i == j) continue;
        char* a = bytes.data() + offset + i * size;
        char* b = bytes.data() + offset + j * size;
        std::memcpy(temp, a, size);
        std::memcpy(a, b, size);
        std::memcpy(b, temp, size);
    }
}

uint64_t QueryDispatcher::next_random() {
    random_ ^= random_ >> 12;
    random_ ^= random_ << 25;
    random_ ^= random_ >> 27;
    return random_ * 0x2545F4914F6CDD1Dull;
}

void QueryDispatcher::count_response(ServerStats::Answerer answerer, uint8_t rcode) {
    bump_single_writer(
        stats_->responses[answerer][std::min<size_t>(rcode, ServerStats::kRcodes - 1)]);
}

QueryDispatcher::Outcome QueryDispatcher::handle_full(const uint8_t* p, size_t n, Proto proto,
                                                      const ClientRef& client, std::string& out,
                                                      const std::string* render_key,
                                                      uint64_t key_hash, size_t quick_limit) {
    auto packet = std::span<const uint8_t>(p, n);
    auto parsed = parse_message(packet);
    if (!parsed) {
        if (!render_key) {
            bump_single_writer(
                stats_->requests[proto][family_index(client)][ServerStats::kTypes - 1]);
        }
        out = error_reply(packet, Rcode::kFormErr);
        if (out.empty()) {
            bump_single_writer(stats_->dropped);
            return Outcome::kNone;
        }
        count_response(ServerStats::kServerItself, static_cast<uint8_t>(Rcode::kFormErr));
        return Outcome::kReply;
    }
    Message& query = *parsed;
    if (!render_key) {
        uint16_t qtype = query.questions.size() == 1 ? query.questions[0].qtype : 0;
        bump_single_writer(
            stats_->requests[proto][family_index(client)][ServerStats::type_index(qtype)]);
        if (query.edns && query.edns->dnssec_ok) bump_single_writer(stats_->do_requests);
    }
    if (forwarder_ && query.questions.size() == 1 &&
        forwarder_->loop_detected(name_lower(query.questions[0].name))) {
        out = rcode_reply(query, Rcode::kRefused);
        count_response(ServerStats::kServerItself, static_cast<uint8_t>(Rcode::kRefused));
        return Outcome::kReply;
    }
    ResolverOptions resolver_options;
    resolver_options.forwarding = forwarding_;
    resolver_options.cluster = cluster_;
    resolver_options.hosts = hosts_.get();
    Resolution resolution = resolve(zone_.get(), query, resolver_options);
    if (resolution.kind == Resolution::Kind::kDrop) {
        bump_single_writer(stats_->dropped);
        return Outcome::kNone;
    }
    if (resolution.kind == Resolution::Kind::kForward) {
        return forward(packet, std::move(query), std::move(resolution), proto, client, out);
    }
    if (resolution.response.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain)) {
        if (const PodClient* pod = autopath_client(client)) {
            Outcome walked = autopath(packet, query, resolution.response, *pod, proto, client, out);
            if (walked != Outcome::kNone) return walked;
        }
    }
    size_t limit = finish_reply(query, resolution.response);
    if (proto == kTcp) limit = 65535;
    WriteResult written = write_message(resolution.response, limit);
    if (written.truncated) bump_single_writer(stats_->truncated);
    if (render_key && limit == quick_limit) {
        rendered_.insert(*render_key, key_hash, written);
        stats_->render_bytes.store(rendered_.bytes(), std::memory_order_relaxed);
        stats_->render_flushes.store(rendered_.flushes(), std::memory_order_relaxed);
    }
    out = std::move(written.bytes);
    shuffle(out, written.shuffle_offset, written.shuffle_size, written.shuffle_count);
    count_response(ServerStats::kKubernetes, resolution.response.header.rcode);
    return Outcome::kReply;
}

const PodClient* QueryDispatcher::autopath_client(const ClientRef& client) const {
    if (!engine_ || !engine_->autopath.enabled || !pods_ || pods_->size() == 0) return nullptr;
    const PodClient* pod = pods_->find(from_socket_address(client.address).address);
    return pod && pod->default_search ? pod : nullptr;
}

QueryDispatcher::Outcome QueryDispatcher::autopath(std::span<const uint8_t> packet,
                                                   const Message& query, const Message& plain,
                                                   const PodClient& pod, Proto proto,
                                                   const ClientRef& client, std::string& out) {
    if (!zone_ || query.questions.size() != 1) return Outcome::kNone;
    auto steps = search_steps(query.questions[0].name, pod.ns, zone_->origin(),
                              engine_->autopath.node_searches);
    if (!steps) return Outcome::kNone;
    auto walk = std::make_shared<AutopathWalk>();
    walk->query = reply_basis(query);
    walk->plain = plain;
    walk->steps = std::move(*steps);
    walk->proto = proto;
    walk->client = client;
    walk->zone = zone_;
    walk->hosts = hosts_;
    walk->resolver_options.forwarding = forwarding_;
    walk->resolver_options.cluster = cluster_;
    walk->resolver_options.hosts = hosts_.get();
    walk->engine = engine_.get();
    walk->stats = stats_;
    walk->sink = &sink_;
    if (shuffle_ == AnswerShuffle::kAll) walk->shuffle_seed = next_random();
    if (logging_) {
        walk->logged_query.assign(reinterpret_cast<const char*>(packet.data()), packet.size());
    }
    walk->start = Cache::Clock::now();
    WalkEnd end;
    if (!walk_on(walk, end)) return Outcome::kForwarded;
    count_autopath(*stats_, end);
    if (end.written.truncated) bump_single_writer(stats_->truncated);
    out = std::move(end.written.bytes);
    // The zone's A/AAAA order per reply, as for its plain replies (shuffle()
    // leaves it alone unless the engine shuffles zone answers).
    if (end.answerer == ServerStats::kKubernetes) {
        shuffle(out, end.written.shuffle_offset, end.written.shuffle_size,
                end.written.shuffle_count);
    }
    count_response(end.answerer, static_cast<uint8_t>(out[3] & 0x0f));
    return Outcome::kReply;
}

QueryDispatcher::Outcome QueryDispatcher::forward(std::span<const uint8_t> packet, Message query,
                                                  Resolution resolution, Proto proto,
                                                  const ClientRef& client, std::string& out) {
    auto now = Cache::Clock::now();
    std::optional<uint64_t> shuffle_seed;
    if (shuffle_ == AnswerShuffle::kAll) shuffle_seed = next_random();
    const QueryEngine* engine = engine_.get();
    ForwardLookup lookup = look_up_forward(*engine, resolution.forward, now);
    // Named apart (not a structured binding): the callback below captures it.
    Cache* cache = lookup.cache;
    CacheLookup& found = lookup.found;
    if (found.kind != CacheLookup::Kind::kMiss && !found.verify) {
        if (found.refresh) refresh_in_background(*engine, cache, resolution.forward);
        bool truncated = false;
        out = merge_upstream(query, std::move(resolution.response), proto, found.answer,
                             shuffle_seed, truncated);
        if (truncated) bump_single_writer(stats_->truncated);
        count_response(ServerStats::kCache, static_cast<uint8_t>(out[3] & 0x0f));
        return Outcome::kReply;
    }
    std::optional<CachedAnswer> stale;
    if (found.verify) stale = std::move(found.answer);
    // The callback runs on the forwarder's thread: it touches only the
    // sink (thread-safe), the cache (thread-safe), atomics shared with the
    // exporter, and the engine, which its owner keeps until `in_flight` is
    // back to 0.
    std::shared_ptr<ServerStats> stats = stats_;
    ReplySink* sink = &sink_;
    Question question = resolution.forward;
    // The query's bytes for its log line; none when nothing logs.
    std::string logged_query =
        logging_ ? std::string(reinterpret_cast<const char*>(packet.data()), packet.size())
                 : std::string();
    // For the SERVFAIL should on_reply throw: the client (and a TCP
    // connection's count of pending replies) still gets its answer.
    Message asked;
    asked.header = query.header;
    asked.questions = query.questions;
    // Only what the reply is built from waits with the callback (issue 10).
    auto on_reply = [sink, stats, engine, cache, query = reply_basis(query), proto, client,
                     question, now, shuffle_seed, stale = std::move(stale),
                     reply = std::move(resolution.response),
                     logged_query = std::move(logged_query)](Result<Message> upstream) mutable {
        if (!upstream) report_forward_error(engine->query_log, query, upstream.error());
        Result<CachedAnswer> answer = cache ? cache->complete(question, std::move(upstream),
                                                              std::move(stale), Cache::Clock::now())
                                            : upstream_answer(std::move(upstream));
        bool truncated = false;
        std::string bytes =
            merge_upstream(query, std::move(reply), proto, answer, shuffle_seed, truncated);
        if (!logged_query.empty()) {
            log_exchange(engine->query_log, bytes_of(logged_query), bytes_of(bytes), proto, client,
                         now);
        }
        if (truncated) stats->forwarded_truncated.fetch_add(1);
        stats->forwarded_responses[std::min<size_t>(bytes[3] & 0x0f, ServerStats::kRcodes - 1)]
            .fetch_add(1);
        stats->forwarded_duration.record(
            std::chrono::duration<double>(Cache::Clock::now() - now).count(), 1, true);
        stats->forwarded_response_size[proto].record(bytes.size(), true);
        sink->post(client, std::move(bytes));
    };
    engine->in_flight.fetch_add(1, std::memory_order_relaxed);
    forwarder_->submit(
        question,
        [on_reply = std::move(on_reply), asked = std::move(asked), sink, client,
         engine](Result<Message> upstream) mutable {
            if (!run_guarded("dns forwarded reply", [&] { on_reply(std::move(upstream)); })) {
                run_guarded("dns forwarded reply",
                            [&] { sink->post(client, rcode_reply(asked, Rcode::kServFail)); });
            }
            // Last use of the engine: once 0, its owner may stop and free it.
            engine->in_flight.fetch_sub(1, std::memory_order_release);
        },
        proto == kTcp ? ClientProtocol::kTcp : ClientProtocol::kUdp,
        from_socket_address(client.address).address);
    return Outcome::kForwarded;
}

}  // namespace sb::dns
