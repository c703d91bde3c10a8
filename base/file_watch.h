// FileWatch: the one way to notice that a file changed since the last look.
//
// A look fingerprints the file by its identity (device, inode, size,
// modification time: what CoreDNS's hosts plugin compares), by the hash of
// its content (what a reader that reads anyway compares: the Corefile's
// `reload` and the file source), or by both, and says whether the
// fingerprint differs from the last one seen. What a change then means
// stays the caller's: the Corefile reloader compares the SHA-512 of the
// parsed form, the hosts reloader parses the new text.
//
// Thread safety: none; one owner uses it from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb {

struct FileIdentity {
    uint64_t device = 0;
    uint64_t inode = 0;
    int64_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileIdentity&) const = default;
};

class FileWatch {
  public:
    struct Look {
        bool changed = false;
        FileIdentity identity;
        std::string content;  // read only when the identity changed
    };

    // Opens and fstats `path` (a regular file only) and, when its identity
    // differs from the last look's, reads it (at most `max_bytes`). An error
    // ("cannot open PATH", "cannot stat PATH", "PATH is not a regular file",
    // "cannot read PATH", "PATH is over N bytes") forgets the last look, so
    // the file is read again once it is back, even unchanged.
    Result<Look> look(const std::string& path, size_t max_bytes);

    // The content of the file, read by the caller: true when it differs
    // from the content last seen (the first call: true).
    bool changed(std::string_view content);

    // The next look or content is a change.
    void forget();

  private:
    struct Fingerprint {
        std::optional<FileIdentity> identity;
        std::optional<uint64_t> content_hash;
        bool operator==(const Fingerprint&) const = default;
    };

    // Records `now`; true when it differs from the last one recorded.
    bool see(const Fingerprint& now);

    std::optional<Fingerprint> last_;
};

}  // namespace sb
