// CorefileReloader: the Corefile's `reload` plugin (CoreDNS plugin/reload).
//
// Every INTERVAL plus a jitter picked once per configuration (uniform in
// [-JITTER/2, JITTER/2), as CoreDNS picks it) the --dns-corefile path is
// opened again (a ConfigMap update swaps the `..data` symlink under it) and
// read, on the process's background thread (base/threads/background.h). A content
// seen before (base/file_watch.h) is no change; otherwise the SHA-512 of its
// parsed form (blocks, keys, directives: comments
// and spacing do not count, as CoreDNS hashes its parsed server blocks) is
// compared with the last one seen; a change is handed to `apply`. A Corefile
// that does not parse or apply is logged once (`PATH:LINE: why`) and counted
// in coredns_reload_failed_total, and the running configuration stays. A
// Corefile applied without `reload` ends the checks, as in CoreDNS.
// docs/corefile.md, "reload".
//
// Thread safety: start() and stop() for one controlling thread; the checks
// run on the background thread; append_metrics() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "base/file_watch.h"
#include "base/metrics.h"
#include "base/result.h"
#include "base/threads/background.h"
#include "dns/corefile/config.h"
#include "dns/corefile/grammar.h"

namespace sb::proxy {

// The SHA-512, in lower-case hex, that identifies a Corefile's content: of
// its parsed form, or of the text itself when it does not parse.
std::string corefile_digest(std::string_view text, std::string_view path,
                            const dns::EnvironmentLookup& lookup);

// The `reload` of a typed configuration (the first server block's that
// has one); nullopt: no block has `reload`.
std::optional<dns::ReloadConfig> reload_config(const dns::CorefileConfig& config);

class CorefileReloader {
  public:
    // Applies a changed Corefile text: the `reload` of the new configuration
    // (nullopt: none, checks end), or an error, one line `PATH:LINE: why`,
    // when it is invalid or cannot be applied (then nothing changed). Called
    // on the background thread.
    using Apply = std::function<Result<std::optional<dns::ReloadConfig>>(const std::string& text)>;
    // Reads the file anew at each call (errors name the path).
    using Read = std::function<Result<std::string>(const std::string& path)>;

    // `running` is the text serving now, `reload` its reload plugin.
    CorefileReloader(std::string path, const std::string& running, dns::ReloadConfig reload,
                     dns::EnvironmentLookup lookup, Read read, Apply apply);
    ~CorefileReloader();  // stop()s
    CorefileReloader(const CorefileReloader&) = delete;
    CorefileReloader& operator=(const CorefileReloader&) = delete;

    void start();
    void stop();  // idempotent; waits for a check under way

    // coredns_reload_failed_total and coredns_reload_version_info.
    void append_metrics(metrics::TextWriter& out) const;

    // One check now, on the calling thread (for tests; not with start()).
    void check();

  private:
    const std::string path_;
    const dns::EnvironmentLookup lookup_;
    const Read read_;
    const Apply apply_;
    FileWatch watch_;     // check() only: the last text read
    std::string digest_;  // check() only: the last content seen, applied or not
    std::optional<std::chrono::milliseconds> period_;  // check() only; nullopt: no more checks
    mutable std::mutex mutex_;                         // guards version_
    std::string version_;                              // digest_ as exported
    std::atomic<uint64_t> failures_{0};
    Background::Task checks_;
};

}  // namespace sb::proxy
