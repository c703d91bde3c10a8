// Reading a whole (small) file into memory: configuration files, token
// files, /proc and /sys entries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb {

// The file's bytes, read through read_open_file without a bound. kIo with
// errno and "cannot read PATH" when it cannot be opened or read. Not for
// files that may be large or unbounded.
Result<std::string> read_file_text(const std::string& path);

// The rest of the open file `fd` (which stays the caller's), at most
// `max_bytes`: kIo with errno and "cannot read PATH" when a read fails,
// kInvalidArgument "PATH is over N bytes" past the bound. `path` only names
// the file in messages. The one reader of a descriptor's whole content for
// the file watchers and the file source.
Result<std::string> read_open_file(int fd, const std::string& path, size_t max_bytes);

// Writes all of `bytes` to `fd` (which stays the caller's), retrying short
// and interrupted writes: 0, or the errno of the write that failed (EIO for
// one that wrote nothing). The one writer of a whole buffer to a descriptor.
int write_whole(int fd, std::string_view bytes);

}  // namespace sb
