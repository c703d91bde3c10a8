// Reading a whole (small) file into memory: configuration files, token
// files, /proc and /sys entries.
#pragma once

#include <string>

#include "base/result.h"

namespace sb {

// The file's bytes. kIo with errno and "cannot read PATH" when it cannot be
// opened or read. Not for files that may be large or unbounded.
Result<std::string> read_file_text(const std::string& path);

}  // namespace sb
