#include "base/file_text.h"

#include <cerrno>
#include <fstream>
#include <sstream>

namespace sb {

Result<std::string> read_file_text(const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    if (!file) return make_error(ErrorCode::kIo, "cannot read " + path, errno);
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) return make_error(ErrorCode::kIo, "cannot read " + path, errno);
    return text.str();
}

}  // namespace sb
