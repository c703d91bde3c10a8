// dns_serve: the DNS service alone, fed by a file source, for the DNS
// benchmark (bench-dns), so that the measured CPU time is the DNS server's
// only (the daemon also runs the proxy).
//
// Usage: dns_serve --source PATH --listen ADDR:PORT [--workers N]
//                  [--upstream LIST] [--pods MODE] [--domain D] [--ttl S]
// Prints "listening ADDR:PORT" once serving; stops on SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>

#include "base/log.h"
#include "dns/dns_service.h"
#include "watch/file_source.h"

int main(int argc, char** argv) {
    using namespace sb;
    std::string source;
    dns::DnsOptions options;
    options.workers = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        std::string value = argv[i + 1];
        if (flag == "--source") {
            source = value;
        } else if (flag == "--listen") {
            // ADDR:0 asks the kernel for a free port (parse_host_port rejects 0).
            bool any_port = value.size() > 2 && value.compare(value.size() - 2, 2, ":0") == 0;
            auto address = any_port ? parse_host_port(value.substr(0, value.size() - 2), 53)
                                    : parse_host_port(value);
            if (address && any_port) address->port = 0;
            if (!address) {
                std::fprintf(stderr, "--listen: %s\n", address.error().describe().c_str());
                return 2;
            }
            options.listen.push_back(*address);
        } else if (flag == "--workers") {
            options.workers = static_cast<unsigned>(std::stoul(value));
        } else if (flag == "--upstream") {
            auto upstreams = dns::parse_upstreams(value);
            if (!upstreams) {
                std::fprintf(stderr, "%s\n", upstreams.error().describe().c_str());
                return 2;
            }
            options.upstreams = *upstreams;
        } else if (flag == "--pods") {
            auto pods = dns::parse_pod_records(value);
            if (!pods) {
                std::fprintf(stderr, "%s\n", pods.error().describe().c_str());
                return 2;
            }
            options.pods = *pods;
        } else if (flag == "--domain") {
            options.cluster_domain = value;
        } else if (flag == "--ttl") {
            options.ttl = static_cast<uint32_t>(std::stoul(value));
        } else {
            std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    if (source.empty() || options.listen.empty()) {
        std::fprintf(stderr, "usage: dns_serve --source PATH --listen ADDR:PORT [...]\n");
        return 2;
    }
    // stdout carries the "listening" lines only: logs go to stderr.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("dns_serve"));
    log::set_level("warn");
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts

    watch::Store store;
    watch::FileSource files(source, store);
    if (auto status = files.load(); !status) {
        std::fprintf(stderr, "%s\n", status.error().describe().c_str());
        return 1;
    }
    auto service = dns::DnsService::start(options, store);
    if (!service) {
        std::fprintf(stderr, "%s\n", service.error().describe().c_str());
        return 1;
    }
    (void)files.start();
    for (const auto& address : (*service)->bound()) {
        std::printf("listening %s\n", address.to_string().c_str());
    }
    std::fflush(stdout);
    int received = 0;
    sigwait(&signals, &received);
    (*service)->stop();
    files.stop();
    return 0;
}
