// `switchboard lookup`: each step of the name lookup a Pod's resolver makes
// (docs/pod-commands.md, "lookup"). The Pod and the cluster come from the
// source (a file, or the API server with this node's Pods); the Pod's
// resolv.conf is kubelet's (dns/search_path/pod_resolv_conf.h); names the cluster DNS
// server answers come from a zone built as the daemon builds it, and the
// rest from the upstreams it would forward to.
#include <fmt/format.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>

#include <algorithm>
#include <iostream>

#include "base/quote.h"
#include "dns/dns_service.h"
#include "dns/forward/upstream_exchange.h"
#include "dns/search_path/lookup_walk.h"
#include "dns/wire/record_text.h"
#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"
#include "proxy/app/daemon.h"
#include "proxy/app/source_state.h"
#include "proxy/commands/kubelet_dns_flags.h"
#include "proxy/commands/pod_command_line.h"
#include "proxy/commands/pod_commands.h"

namespace sb::proxy {

namespace {

constexpr const char* kCommand = "lookup";

struct LookupFlags {
    std::string pod;  // NS/NAME
    std::string qname;
    std::string type = "A";
    bool json = false;
    bool live = false;     // ask the Pod's nameservers, not a zone built from the source
    std::string upstream;  // --dns-upstream; else the node resolv.conf's nameservers
    int timeout_ms = 2000;
};

Result<uint16_t> query_type(const std::string& text) {
    if (text == "A") return dns::type::kA;
    if (text == "AAAA") return dns::type::kAAAA;
    if (text == "SRV") return dns::type::kSRV;
    if (text == "PTR") return dns::type::kPTR;
    return make_error(
        ErrorCode::kInvalidArgument,
        fmt::format("--type: {} is not one of A, AAAA, SRV, PTR", quote_for_message(text)));
}

Result<watch::ObjectKey> pod_key(const std::string& text) {
    const size_t slash = text.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() ||
        text.find('/', slash + 1) != std::string::npos) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--pod: {} is not NAMESPACE/NAME", quote_for_message(text)));
    }
    return watch::ObjectKey{text.substr(0, slash), text.substr(slash + 1)};
}

// Asks `servers` in turn, as a resolver moves to its next nameserver when
// one does not answer.
dns::LookupAnswer ask_servers(const std::vector<HostPort>& servers, const dns::Question& question,
                              std::chrono::milliseconds timeout, const std::string& role) {
    dns::LookupAnswer answer;
    if (servers.empty()) {
        answer.detail = fmt::format("no {} to ask", role);
        return answer;
    }
    for (const auto& server : servers) {
        auto reply = dns::ask_question(server, question, timeout);
        if (!reply) {
            answer.detail +=
                fmt::format("{}{}", answer.detail.empty() ? "" : "; ", reply.error().describe());
            continue;
        }
        answer.source = fmt::format("{} {}", role, server);
        answer.outcome = dns::outcome_of(*reply, question.qtype);
        answer.answers = std::move(reply->answers);
        return answer;
    }
    return answer;
}

// The cluster DNS server's answer: the zone's, or its upstreams' for names
// outside it (after an ExternalName's CNAME, when there is one).
dns::LookupAnswer ask_cluster_dns(const dns::Zone& zone, const std::vector<HostPort>& upstreams,
                                  const std::string& wire_name, uint16_t qtype,
                                  std::chrono::milliseconds timeout) {
    dns::Message query;
    query.header.rd = true;
    query.questions.push_back(dns::Question{wire_name, qtype});
    auto resolution = dns::resolve(&zone, query, dns::ResolverOptions{.forwarding = true});
    if (resolution.kind == dns::Resolution::Kind::kReply) {
        dns::LookupAnswer answer;
        answer.source = "zone";
        answer.outcome = dns::outcome_of(resolution.response, qtype);
        answer.answers = std::move(resolution.response.answers);
        return answer;
    }
    if (resolution.kind == dns::Resolution::Kind::kDrop) return {};
    dns::LookupAnswer answer = ask_servers(upstreams, resolution.forward, timeout, "upstream");
    auto& chain = resolution.response.answers;
    if (!chain.empty()) {
        answer.answers.insert(answer.answers.begin(), chain.begin(), chain.end());
        answer.source = fmt::format("zone (CNAME), then {}", answer.source);
    }
    return answer;
}

std::string ordinal(size_t n) {
    const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                         : n % 10 == 1                    ? "st"
                         : n % 10 == 2                    ? "nd"
                         : n % 10 == 3                    ? "rd"
                                                          : "th";
    return fmt::format("{}{}", n, suffix);
}

std::string joined(const std::vector<std::string>& items, const char* separator = " ") {
    std::string text;
    for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
    return text;
}

// Who the Pod's resolver sends its queries to.
struct Asked {
    const dns::PodResolvConf* conf = nullptr;
    bool cluster_dns = false;  // its first nameserver is kubelet's clusterDNS
};

void print_text(const watch::Pod& pod, const Asked& asked, const dns::LookupWalk& walk) {
    std::cout << "Pod " << pod.meta.ns << "/" << pod.meta.name << " (dnsPolicy "
              << watch::to_string(pod.dns_policy) << (pod.host_network ? ", hostNetwork" : "")
              << "): nameserver " << joined(asked.conf->nameservers)
              << (asked.cluster_dns ? " (the cluster DNS server)" : " (not the cluster DNS server)")
              << "\n";
    std::cout << "search "
              << (asked.conf->searches.empty() ? "(none)" : joined(asked.conf->searches))
              << "; ndots " << walk.ndots << "\n";
    std::cout << "\"" << walk.qname << "\" ";
    switch (walk.order) {
        case dns::SearchOrder::kAbsolute:
            std::cout << "ends with a dot: it is asked as it is, and only so\n";
            break;
        case dns::SearchOrder::kAsGivenFirst:
            std::cout << "has " << walk.dots << " dot(s), at least ndots " << walk.ndots
                      << ": the name as given first, then the search list\n";
            break;
        case dns::SearchOrder::kSearchFirst:
            std::cout << "has " << walk.dots << " dot(s), fewer than ndots " << walk.ndots
                      << ": the search list first, then the name as given\n";
            break;
    }
    for (size_t i = 0; i < walk.steps.size(); ++i) {
        const auto& step = walk.steps[i];
        std::cout << "  " << i + 1 << ". " << step.name << " " << dns::type_name(walk.qtype) << ": "
                  << dns::to_string(step.answer.outcome);
        if (!step.answer.source.empty()) std::cout << " from the " << step.answer.source;
        if (!step.answer.detail.empty()) std::cout << " (" << step.answer.detail << ")";
        std::cout << "\n";
        for (const auto& record : step.answer.answers) {
            std::cout << "       " << dns::record_text(record) << "\n";
        }
    }
    for (size_t i = walk.steps.size(); i < walk.candidates.size(); ++i) {
        std::cout << "  -  " << walk.candidates[i] << " not asked\n";
    }
    if (walk.answered) {
        const auto& step = walk.steps[*walk.answered];
        std::cout << "Answer: " << step.name << " (the " << ordinal(*walk.answered + 1) << " of "
                  << walk.candidates.size() << " names)\n";
        return;
    }
    const auto& last = walk.steps.back();
    if (last.answer.outcome == dns::LookupAnswer::Outcome::kNoReply ||
        last.answer.outcome == dns::LookupAnswer::Outcome::kRefused) {
        std::cout << "No answer: the resolver stops at " << last.name << " ("
                  << dns::to_string(last.answer.outcome) << ")\n";
        return;
    }
    std::cout << "No answer: none of the " << walk.candidates.size() << " names has a "
              << dns::type_name(walk.qtype) << " record\n";
}

using JsonWriter = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void write_strings(JsonWriter& json, const char* key, const std::vector<std::string>& items) {
    json.Key(key);
    json.StartArray();
    for (const auto& item : items) json.String(item.c_str());
    json.EndArray();
}

void print_json(const watch::Pod& pod, const Asked& asked, const dns::LookupWalk& walk) {
    rapidjson::StringBuffer buffer;
    JsonWriter json(buffer);
    json.StartObject();
    json.Key("pod");
    json.String((pod.meta.ns + "/" + pod.meta.name).c_str());
    json.Key("dnsPolicy");
    json.String(watch::to_string(pod.dns_policy));
    write_strings(json, "nameservers", asked.conf->nameservers);
    json.Key("clusterDNS");
    json.Bool(asked.cluster_dns);
    write_strings(json, "searches", asked.conf->searches);
    json.Key("ndots");
    json.Int(walk.ndots);
    json.Key("name");
    json.String(walk.qname.c_str());
    json.Key("type");
    json.String(dns::type_name(walk.qtype));
    json.Key("dots");
    json.Uint64(walk.dots);
    json.Key("order");
    json.String(dns::to_string(walk.order));
    write_strings(json, "candidates", walk.candidates);
    json.Key("steps");
    json.StartArray();
    for (const auto& step : walk.steps) {
        json.StartObject();
        json.Key("name");
        json.String(step.name.c_str());
        json.Key("outcome");
        json.String(dns::to_string(step.answer.outcome));
        json.Key("source");
        json.String(step.answer.source.c_str());
        if (!step.answer.detail.empty()) {
            json.Key("detail");
            json.String(step.answer.detail.c_str());
        }
        json.Key("records");
        json.StartArray();
        for (const auto& record : step.answer.answers) {
            json.StartObject();
            json.Key("name");
            json.String(dns::name_to_text(record.name).c_str());
            json.Key("type");
            json.String(dns::type_name(record.rtype));
            json.Key("ttl");
            json.Uint(record.ttl);
            json.Key("data");
            json.String(dns::rdata_text(record).c_str());
            json.EndObject();
        }
        json.EndArray();
        json.EndObject();
    }
    json.EndArray();
    json.Key("answered");
    if (walk.answered) {
        json.String(walk.steps[*walk.answered].name.c_str());
    } else {
        json.Null();
    }
    json.Key("answers");
    json.StartArray();
    if (walk.answered) {
        for (const auto& record : walk.steps[*walk.answered].answer.answers) {
            if (record.rtype == walk.qtype) json.String(dns::rdata_text(record).c_str());
        }
    }
    json.EndArray();
    json.EndObject();
    std::cout << buffer.GetString() << "\n" << std::flush;
}

}  // namespace

int run_lookup(const std::vector<std::string>& args) {
    LookupFlags flags;
    SourceFlags source;
    KubeletDnsFlags kubelet;
    CommandLine line{
        kCommand,
        "Walks the lookup a Pod's resolver makes for QNAME (glibc's rules): each name "
        "of its search list in order, who answers it and what, and where the walk "
        "stops. The Pod and the Services come from the source; names in the cluster "
        "domain are answered from a zone built as the daemon builds it, the rest by "
        "the upstreams the cluster DNS server forwards to.",
        {text_option({"--pod"}, "the Pod whose resolver to follow, NAMESPACE/NAME", flags.pod)
             .as_required(),
         text_option({"QNAME"}, "the name the Pod looks up", flags.qname).as_required(),
         text_option({"--type"}, "A, AAAA, SRV or PTR", flags.type).with_default("A"),
         bool_option({"--json"}, "print the walk as JSON", flags.json),
         bool_option({"--live"},
                     "ask the Pod's nameservers themselves (the running cluster DNS server, "
                     "reached from here) instead of a zone built from the source",
                     flags.live),
         text_option({"--dns-upstream"},
                     "the cluster DNS server's upstreams, ADDR[:PORT],... (default: the node "
                     "resolv.conf's nameservers)",
                     flags.upstream),
         int_option({"--timeout-ms"}, "how long to wait for each reply", flags.timeout_ms, 1, 30000)
             .with_default("2000")},
        "Example:\n"
        "  switchboard lookup --pod shop/web-0 --source file:cluster.json \\\n"
        "      --cluster-dns 10.96.0.10 api.example.com\n"
        "  Pod shop/web-0 (dnsPolicy ClusterFirst): nameserver 10.96.0.10 (the cluster DNS "
        "server)\n"
        "  search shop.svc.cluster.local svc.cluster.local cluster.local; ndots 5\n"
        "  \"api.example.com\" has 2 dot(s), fewer than ndots 5: the search list first, ...\n"
        "    1. api.example.com.shop.svc.cluster.local. A: NXDOMAIN from the zone\n"
        "    ...\n"
        "    4. api.example.com. A: answer from the upstream 192.0.2.53:53\n"
        "  Answer: api.example.com. (the 4th of 4 names)\n"
        "Exit codes: 0 the walk was made (answered or not); 1 the source failed; 2 bad flags, "
        "an unknown namespace or Pod.\n"};
    add_source_flags(line.options, source);
    add_kubelet_dns_flags(line.options, kubelet);
    if (auto code = parse_pod_command_line(line, args)) return *code;

    auto qtype = query_type(flags.type);
    if (!qtype) return report_command_error(kCommand, qtype.error());
    auto key = pod_key(flags.pod);
    if (!key) return report_command_error(kCommand, key.error());
    auto kubelet_settings = finish_kubelet_dns_flags(kubelet);
    if (!kubelet_settings) return report_command_error(kCommand, kubelet_settings.error());
    std::vector<HostPort> upstreams;
    if (!flags.upstream.empty()) {
        auto parsed = dns::parse_upstreams(flags.upstream);
        if (!parsed) {
            return report_command_error(
                kCommand, make_error(ErrorCode::kInvalidArgument,
                                     fmt::format("--dns-upstream: {}", parsed.error().message)));
        }
        upstreams = std::move(*parsed);
    } else {
        for (const auto& text : kubelet_settings->node.nameservers) {
            if (auto address = IpAddress::parse(text)) upstreams.push_back(HostPort{*address, 53});
        }
    }
    if (auto valid = dns::lookup_candidates(flags.qname, {}, dns::kDefaultNdots); !valid) {
        return report_command_error(kCommand, valid.error());
    }
    auto settings = finish_source_flags(source, /*watch_pods=*/true);
    if (!settings) return report_command_error(kCommand, settings.error());
    auto state = load_state(*settings);
    if (!state) return report_command_error(kCommand, state.error());
    auto snapshot = state->store->snapshot();

    const auto* found = snapshot->pods().find(*key);
    if (found == nullptr) {
        if (!watch::namespace_in_use(*snapshot, key->ns)) {
            return report_command_error(
                kCommand, make_error(ErrorCode::kInvalidArgument,
                                     fmt::format("--pod: namespace {} is unknown: no Service, "
                                                 "EndpointSlice or Pod of the source is in it",
                                                 quote_for_message(key->ns))));
        }
        return report_command_error(
            kCommand,
            make_error(ErrorCode::kInvalidArgument,
                       fmt::format("--pod: no Pod {} in the source{}", one_line(key->to_string()),
                                   settings->source_file.empty()
                                       ? fmt::format(" (the API source lists the Pods of "
                                                     "node {} only: --hostname-override)",
                                                     settings->node_name)
                                       : std::string())));
    }
    const watch::Pod& pod = **found;
    auto conf = dns::compose_pod_resolv_conf(pod, *kubelet_settings);
    if (!conf) return report_command_error(kCommand, conf.error());
    for (const auto& warning : conf->warnings) {
        std::cerr << "switchboard lookup: warning: " << warning << "\n";
    }

    dns::ZoneConfig zone_config;
    zone_config.domain = kubelet_settings->cluster_domain;
    auto zone = dns::Zone::build(*snapshot, zone_config);
    if (!zone) {
        return report_command_error(
            kCommand, make_error(ErrorCode::kInvalidArgument,
                                 fmt::format("--cluster-domain: {}", zone.error().message)));
    }
    Asked asked{&*conf, false};
    const auto& cluster_dns = kubelet_settings->cluster_dns;
    asked.cluster_dns = !conf->nameservers.empty() &&
                        std::find(cluster_dns.begin(), cluster_dns.end(), conf->nameservers[0]) !=
                            cluster_dns.end();
    std::vector<HostPort> pod_nameservers;
    for (const auto& text : conf->nameservers) {
        if (auto address = IpAddress::parse(text))
            pod_nameservers.push_back(HostPort{*address, 53});
    }
    const std::chrono::milliseconds timeout(flags.timeout_ms);
    dns::LookupAsk ask = [&](const std::string& wire_name, uint16_t type) {
        if (asked.cluster_dns && !flags.live)
            return ask_cluster_dns(**zone, upstreams, wire_name, type, timeout);
        return ask_servers(pod_nameservers, dns::Question{wire_name, type}, timeout, "nameserver");
    };
    auto walk = dns::walk_lookup(flags.qname, *qtype, conf->searches,
                                 dns::ndots_from_options(conf->options), ask);
    if (!walk) return report_command_error(kCommand, walk.error());
    if (flags.json) {
        print_json(pod, asked, *walk);
    } else {
        print_text(pod, asked, *walk);
    }
    return kExitOk;
}

}  // namespace sb::proxy
