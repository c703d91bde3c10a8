#include "proxy/app/corefile_reload.h"

#include <openssl/evp.h>

#include "base/log.h"

namespace sb::proxy {

namespace {

// Each field is length-prefixed, so that no two parses serialise alike.
void put(std::string& out, std::string_view field) {
    out += std::to_string(field.size());
    out += ':';
    out += field;
}

void put_directives(std::string& out, const std::vector<dns::CorefileDirective>& directives) {
    put(out, std::to_string(directives.size()));
    for (const auto& d : directives) {
        put(out, d.name);
        put(out, std::to_string(d.args.size()));
        for (const auto& arg : d.args) put(out, arg);
        put(out, d.has_block ? "{" : "");
        put_directives(out, d.block);
    }
}

std::string sha512_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha512(), nullptr) != 1) {
        return {};
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string hex;
    for (unsigned int i = 0; i < length; ++i) {
        hex += kHex[digest[i] >> 4];
        hex += kHex[digest[i] & 0xf];
    }
    return hex;
}

}  // namespace

std::string corefile_digest(std::string_view text, std::string_view path,
                            const dns::EnvironmentLookup& lookup) {
    auto parsed = dns::parse_corefile(text, path, lookup);
    if (!parsed) return sha512_hex(text);
    std::string canonical;
    for (const auto& block : parsed->blocks) {
        put(canonical, std::to_string(block.zones.size()));
        for (const auto& zone : block.zones) {
            put(canonical, zone.zone);
            put(canonical, std::to_string(zone.port));
        }
        put_directives(canonical, block.directives);
    }
    return sha512_hex(canonical);
}

std::optional<dns::ReloadConfig> reload_config(const dns::CorefileConfig& config) {
    for (const auto& server : config.servers) {
        if (server.reload) return server.reload;
    }
    return std::nullopt;
}

CorefileReloader::CorefileReloader(std::string path, const std::string& running,
                                   dns::ReloadConfig reload, dns::EnvironmentLookup lookup,
                                   Read read, Apply apply)
    : path_(std::move(path)),
      lookup_(std::move(lookup)),
      read_(std::move(read)),
      apply_(std::move(apply)),
      digest_(corefile_digest(running, path_, lookup_)),
      version_(digest_) {
    watch_.changed(running);  // the text serving is the last one seen
    // CoreDNS: interval + rand(jitter) - jitter/2, fixed until the next reload.
    period_ = jittered(reload.interval, reload.jitter);
    log::info("plugin/reload: Running configuration SHA512 = {}", digest_);
}

CorefileReloader::~CorefileReloader() {
    stop();
}

void CorefileReloader::start() {
    // An exception while applying (an allocation failure) is counted in
    // coredns_panics_total by the background thread; the running
    // configuration stays and the checks go on.
    checks_ = Background::shared().repeat("corefile reload", *period_, [this] {
        check();
        return period_;
    });
}

void CorefileReloader::stop() {
    checks_.cancel();
}

void CorefileReloader::check() {
    auto text = read_(path_);
    if (!text) {
        // A ConfigMap update swaps a symlink: a read may miss it for a moment.
        log::debug("plugin/reload: {}", text.error().describe());
        return;
    }
    // The same text parses the same: only a changed text is parsed again.
    if (!watch_.changed(*text)) return;
    std::string digest = corefile_digest(*text, path_, lookup_);
    if (digest == digest_) return;
    // As CoreDNS: a content is tried once, even when it fails, and the
    // version info shows what was tried last.
    digest_ = digest;
    {
        std::lock_guard lock(mutex_);
        version_ = digest;
    }
    auto applied = apply_(*text);
    if (!applied) {
        failures_.fetch_add(1, std::memory_order_relaxed);
        log::error("plugin/reload: Corefile changed but reload failed: {}",
                   applied.error().message);
        return;
    }
    log::info("plugin/reload: Running configuration SHA512 = {}", digest);
    if (!*applied) {
        log::info("plugin/reload: the new Corefile has no reload: no more checks of {}", path_);
        period_.reset();
        return;
    }
    period_ = jittered((*applied)->interval, (*applied)->jitter);
}

void CorefileReloader::append_metrics(metrics::TextWriter& out) const {
    out.family({"coredns_reload_failed_total",
                "Counter of the number of failed reload attempts.",
                metrics::Type::kCounter,
                {}});
    out.sample({}, failures_.load(std::memory_order_relaxed));
    out.family({"coredns_reload_version_info",
                "A metric with a constant '1' value labeled by hash, and value which type of hash "
                "generated.",
                metrics::Type::kGauge,
                {"hash", "value"}});
    std::lock_guard lock(mutex_);
    out.sample({"sha512", version_}, uint64_t{1});
}

}  // namespace sb::proxy
