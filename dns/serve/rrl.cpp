#include "dns/serve/rrl.h"

#include <netinet/in.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>

#include "base/socket_address.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

constexpr int64_t kUnit = 1'000'000'000;  // a token, in the buckets' fixed point
constexpr int64_t kSecond = 1'000'000'000;
// Knot's threshold for the "large" class.
constexpr size_t kLargeReply = 1024;
constexpr uint8_t kIpv4PrefixBytes = 3;  // /24
constexpr uint8_t kIpv6PrefixBytes = 7;  // /56

uint16_t get16(std::string_view bytes, size_t at) {
    return static_cast<uint16_t>((static_cast<uint8_t>(bytes[at]) << 8) |
                                 static_cast<uint8_t>(bytes[at + 1]));
}

// The offset just past the question's name, or 0 when the question is
// missing or not plain labels (our writer never compresses it).
size_t question_name_end(std::string_view reply) {
    if (reply.size() < kHeaderSize || get16(reply, 4) != 1) return 0;
    size_t pos = kHeaderSize;
    while (pos < reply.size()) {
        auto length = static_cast<uint8_t>(reply[pos]);
        if (length == 0) return pos + 1;
        if (length > kMaxLabelLength) return 0;
        pos += 1 + length;
    }
    return 0;
}

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

ResponseRateLimiter::ResponseRateLimiter(RrlSettings settings)
    : settings_(settings),
      capacity_(static_cast<int64_t>(settings.rate) * kUnit),
      buckets_(std::make_unique<Bucket[]>(settings.table_size)) {
    if (::getrandom(key_, sizeof(key_), 0) != sizeof(key_)) {
        key_[0] = reinterpret_cast<uintptr_t>(this);
        key_[1] = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
    }
}

ResponseRateLimiter::Class ResponseRateLimiter::classify(std::string_view reply) {
    if (reply.size() < kHeaderSize) return Class::kError;
    auto rcode = static_cast<Rcode>(reply[3] & 0x0f);
    if (rcode == Rcode::kNXDomain) return Class::kNxdomain;
    if (rcode != Rcode::kNoError) return Class::kError;
    size_t name_end = question_name_end(reply);
    if (name_end != 0 && name_end + 2 <= reply.size() && get16(reply, name_end) == type::kANY) {
        return Class::kAny;
    }
    if (reply.size() > kLargeReply) return Class::kLarge;
    return get16(reply, 6) == 0 ? Class::kEmpty : Class::kNormal;
}

uint64_t ResponseRateLimiter::flow_of(const sockaddr_storage& client,
                                      std::string_view reply) const {
    // FNV-1a from a random offset over (family, prefix, class, name), then
    // mixed with the second key half: flows cannot be aimed at one bucket.
    uint64_t hash = key_[0];
    auto add = [&hash](uint8_t byte) { hash = (hash ^ byte) * 0x100000001b3ull; };
    if (client.ss_family == AF_INET6) {
        const auto& v6 = reinterpret_cast<const sockaddr_in6&>(client);
        add(6);
        for (uint8_t i = 0; i < kIpv6PrefixBytes; ++i) add(v6.sin6_addr.s6_addr[i]);
    } else {
        const auto& v4 = reinterpret_cast<const sockaddr_in&>(client);
        uint8_t address[4];
        std::memcpy(address, &v4.sin_addr.s_addr, sizeof(address));  // network order
        add(4);
        for (uint8_t i = 0; i < kIpv4PrefixBytes; ++i) add(address[i]);
    }
    Class cls = classify(reply);
    add(static_cast<uint8_t>(cls));
    // Knot keys nxdomain and error replies by zone, not name, so that
    // random names count as one flow; switchboard by the client alone.
    if (cls != Class::kNxdomain && cls != Class::kError) {
        size_t end = question_name_end(reply);
        for (size_t i = kHeaderSize; i < end; ++i) {
            char c = reply[i];
            add(static_cast<uint8_t>(c >= 'A' && c <= 'Z' ? c + 32 : c));
        }
    }
    return mix(hash ^ key_[1]) | 1;
}

ResponseRateLimiter::Verdict ResponseRateLimiter::admit(const sockaddr_storage& client,
                                                        std::string& reply, Clock::time_point now) {
    if (!settings_.whitelist.empty()) {
        IpAddress address = from_socket_address(client).address;
        for (const Prefix& prefix : settings_.whitelist) {
            if (prefix.contains(address)) return Verdict::kSend;
        }
    }
    uint64_t flow = flow_of(client, reply);
    size_t index = flow % settings_.table_size;
    int64_t at =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    bool limited = false;
    uint32_t limited_count = 0;
    {
        std::lock_guard lock(stripes_[index % kStripes]);
        Bucket& bucket = buckets_[index];
        if (bucket.flow == 0) {
            bucket = Bucket{flow, at, capacity_, 0};
        } else {
            // One second fills a bucket: a longer gap counts as one second.
            int64_t elapsed = std::clamp<int64_t>(at - bucket.stamp, 0, kSecond);
            bucket.tokens =
                std::min(capacity_, bucket.tokens + elapsed * static_cast<int64_t>(settings_.rate));
            bucket.stamp = std::max(bucket.stamp, at);
            if (bucket.flow != flow && bucket.tokens == capacity_) {
                bucket.flow = flow;  // the other flow is idle: take the bucket over
                bucket.limited = 0;
            }
        }
        if (bucket.tokens >= kUnit) {
            bucket.tokens -= kUnit;
        } else {
            limited = true;
            limited_count = ++bucket.limited;
        }
    }
    if (!limited) return Verdict::kSend;
    if (settings_.slip != 0 && limited_count % settings_.slip == 0 && truncate_to_question(reply)) {
        slipped_.fetch_add(1, std::memory_order_relaxed);
        return Verdict::kSlip;
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return Verdict::kDrop;
}

void ResponseRateLimiter::append_metrics(metrics::TextWriter& out) const {
    using metrics::Type;
    out.family({"switchboard_dns_rrl_slipped_total",
                "UDP replies over the response rate limit sent truncated (--dns-rrl-slip).",
                Type::kCounter,
                {}});
    out.sample({}, slipped());
    out.family({"switchboard_dns_rrl_dropped_total",
                "UDP replies over the response rate limit not sent.",
                Type::kCounter,
                {}});
    out.sample({}, dropped());
}

bool truncate_to_question(std::string& reply) {
    size_t name_end = question_name_end(reply);
    if (name_end == 0 || name_end + 4 > reply.size()) return false;
    reply.resize(name_end + 4);
    reply[2] = static_cast<char>(reply[2] | 0x02);  // TC
    std::fill(reply.begin() + 6, reply.begin() + kHeaderSize, '\0');
    return true;
}

}  // namespace sb::dns
