// A Pod's program resolving one name: glibc's getaddrinfo() for one family
// (A for inet, AAAA for inet6), COUNT times in a row, each call timed on
// the steady clock. Run inside a Pod's network namespace by
// bench-search-path, so glibc reads that Pod's resolv.conf (search path,
// ndots) and sends what a Pod's resolver sends.
//
// Usage: bench_search_path_client NAME inet|inet6 COUNT
// Prints one JSON line: {"lookups", "failed", "error" (the last failure's
// gai_strerror, or ""), "address" (the last answer's first address),
// "mean_us", "p50_us", "p99_us"}. Exit 2 on bad arguments; a failed lookup
// is counted, not fatal, so a broken setup shows in the figures.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr long kMaxLookups = 100000;

// The first address of an answer, as text.
std::string first_address(const addrinfo* info) {
    char text[INET6_ADDRSTRLEN] = "";
    if (info->ai_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(info->ai_addr);
        inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    } else if (info->ai_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(info->ai_addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof text);
    }
    return text;
}

// The nearest-rank percentile p (0 < p <= 1) of sorted, non-empty values.
double percentile(const std::vector<double>& sorted, double p) {
    auto rank = static_cast<size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
    return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4 || (std::strcmp(argv[2], "inet") != 0 && std::strcmp(argv[2], "inet6") != 0)) {
        std::fprintf(stderr, "usage: %s NAME inet|inet6 COUNT\n", argv[0]);
        return 2;
    }
    const char* name = argv[1];
    const long count = std::strtol(argv[3], nullptr, 10);
    if (count < 1 || count > kMaxLookups) {
        std::fprintf(stderr, "COUNT must be 1-%ld\n", kMaxLookups);
        return 2;
    }
    addrinfo hints{};
    hints.ai_family = std::strcmp(argv[2], "inet") == 0 ? AF_INET : AF_INET6;
    hints.ai_socktype = SOCK_STREAM;  // one result per address, not one per socket type

    std::vector<double> micros;
    micros.reserve(static_cast<size_t>(count));
    long failed = 0;
    std::string error;
    std::string address;
    for (long i = 0; i < count; ++i) {
        addrinfo* result = nullptr;
        const auto start = std::chrono::steady_clock::now();
        const int status = getaddrinfo(name, "80", &hints, &result);
        const auto end = std::chrono::steady_clock::now();
        micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
        if (status != 0) {
            ++failed;
            error = gai_strerror(status);
            continue;
        }
        address = first_address(result);
        freeaddrinfo(result);
    }
    double sum = 0;
    for (double value : micros) sum += value;
    std::sort(micros.begin(), micros.end());
    std::printf(
        "{\"lookups\": %ld, \"failed\": %ld, \"error\": \"%s\", \"address\": \"%s\", "
        "\"mean_us\": %.1f, \"p50_us\": %.1f, \"p99_us\": %.1f}\n",
        count, failed, error.c_str(), address.c_str(), sum / static_cast<double>(count),
        percentile(micros, 0.5), percentile(micros, 0.99));
    return 0;
}
