#include "dns/zone/hosts_reloader.h"

#include <fmt/format.h>

#include "base/log.h"

namespace sb::dns {

HostsReloader::HostsReloader(HostsOptions options, HostsHolder& holder)
    : options_(std::move(options)), holder_(holder) {}

HostsReloader::~HostsReloader() {
    stop();
}

void HostsReloader::start() {
    if (!poll()) {
        holder_.publish(HostsTable::build(options_, {}));  // the inline lines only
    }
    if (options_.file.empty() || options_.reload.count() == 0) return;
    // An exception (an allocation failure) is a failed read, counted in
    // coredns_panics_total by the background thread; the last good table
    // stays and the next poll retries.
    reload_ = Background::shared().every("dns hosts reload", options_.reload, [this] { poll(); });
}

void HostsReloader::stop() {
    reload_.cancel();
}

bool HostsReloader::poll() {
    if (options_.file.empty()) return false;
    const std::string& path = options_.file;
    auto fail = [&](const Error& error) {
        if (!failing_) {
            log::warn("dns: hosts: {}; serving the last good table until it can be read",
                      error.describe());
        }
        failing_ = true;
        watch_.forget();  // read again once it is back, even unchanged
        return false;
    };
    auto look = watch_.look(path, kMaxHostsFileBytes);
    if (!look) return fail(look.error());
    if (!look->changed) return false;
    const std::string& text = look->content;
    auto mappings = parse_hosts(text, options_.zones);
    if (!mappings) {
        return fail(make_error(ErrorCode::kInvalidArgument,
                               fmt::format("{}: {}", path, mappings.error().message)));
    }
    auto table = HostsTable::build(options_, *mappings, look->identity.mtime_ns);
    log::info("dns: hosts: {} read: {} names and addresses", path, table->mapping_count());
    holder_.publish(std::move(table));
    failing_ = false;
    return true;
}

}  // namespace sb::dns
