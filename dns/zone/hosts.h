// HostsTable: the Corefile's `hosts` plugin: names and addresses from a
// hosts(5) file and the plugin's inline lines, answered as CoreDNS's hosts
// plugin answers them (docs/dns.md, "The hosts plugin").
//
// A table is immutable once built: HostsReloader builds a new one when the
// file changes and the server swaps it whole, so readers on any thread need
// no lock. Names are keys in lower-cased wire form.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/containers/published.h"
#include "base/ip.h"
#include "base/result.h"
#include "dns/wire/wire.h"
#include "dns/zone/resolver_policy.h"

namespace sb::dns {

// The bounds on a hosts file, which is input from outside switchboard: a
// file over either is refused whole (the last good table stays).
inline constexpr size_t kMaxHostsFileBytes = 4 * 1024 * 1024;
inline constexpr size_t kMaxHostsMappings = 100000;  // (name, address) pairs

// One name of one address: a hosts line `ADDRESS NAME...` holds one per name.
struct HostsMapping {
    IpAddress address;
    std::string name;  // lower-cased wire form
    bool operator==(const HostsMapping&) const = default;
};

// The plugin's settings (from the Corefile, see corefile_options.cpp).
struct HostsOptions {
    std::string file = "/etc/hosts";  // empty: inline lines only
    ZoneSet zones;                    // names outside them are not read
    std::vector<HostsMapping> inline_mappings;
    uint32_t ttl = 3600;
    bool reverse = true;                     // false: `no_reverse`, no PTR records
    std::chrono::milliseconds reload{5000};  // 0: the file is read once
    // `fallthrough`: names of the zones not in the table go on to the
    // cluster zone and forwarding; nullopt: they get SERVFAIL.
    std::optional<ZoneSet> fallthrough;
    // `fallthrough_unsupported`: a question of a type the plugin does not
    // answer (not A, AAAA, PTR) under `fallthrough` goes on too, even for a
    // name in the table (else NODATA).
    bool fallthrough_unsupported = false;
};

// Parses hosts(5) text: `#` starts a comment, a line is an address (an IPv6
// zone `%eth0` is dropped) and names; lines without an address or a name,
// and names that are not DNS names or lie outside `zones`, are skipped.
// Error when the text holds more than kMaxHostsMappings mappings.
Result<std::vector<HostsMapping>> parse_hosts(std::string_view text, const ZoneSet& zones);

class HostsTable {
  public:
    // The file's mappings, then the inline ones (CoreDNS's order), each
    // (name, address) once.
    // `file_mtime_ns`: the modification time of the file read, 0 for none.
    static std::shared_ptr<const HostsTable> build(const HostsOptions& options,
                                                   const std::vector<HostsMapping>& file_mappings,
                                                   int64_t file_mtime_ns = 0);

    enum class Verdict {
        kNext,      // not the plugin's: the cluster zone and forwarding decide
        kReply,     // `answers` is the authoritative answer (empty: NODATA)
        kServFail,  // a name of its zones it does not have, without fallthrough
    };
    // CoreDNS's hosts ServeDNS for question `question` (`lower_name`: its
    // name lower-cased): A and AAAA of names in its zones, PTR of its
    // addresses wherever asked; a name with no record of the type asked but
    // one of the other address type is NODATA. Appends to `answers`, owned
    // by the question's name as asked.
    Verdict answer(const Question& question, std::string_view lower_name,
                   std::vector<Record>& answers) const;

    size_t mapping_count() const { return mapping_count_; }
    // What CoreDNS exports as coredns_hosts_reload_timestamp_seconds: the
    // modification time of the file this table was read from (0: none).
    int64_t file_mtime_ns() const { return file_mtime_ns_; }

  private:
    struct Addresses {
        std::vector<std::string> v4;  // rdata, in file order
        std::vector<std::string> v6;
    };
    ZoneSet zones_;
    std::optional<ZoneSet> fallthrough_;
    bool fallthrough_unsupported_ = false;
    uint32_t ttl_ = 3600;
    size_t mapping_count_ = 0;
    int64_t file_mtime_ns_ = 0;
    std::unordered_map<std::string, Addresses> by_name_;
    std::unordered_map<std::string, std::vector<std::string>> by_reverse_;  // -> names
};

// The table the server reads; HostsReloader publishes into it.
using HostsHolder = Published<HostsTable>;

}  // namespace sb::dns
