#include "proxy/commands/pod_object.h"

#include <fmt/format.h>

#include <iostream>
#include <iterator>

#include "base/file_text.h"
#include "watch/decode.h"

namespace sb::proxy {

namespace {

Error bad_file(const std::string& path, const std::string& message) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: {}", path, message));
}

}  // namespace

Result<watch::Pod> read_pod_file(const std::string& path) {
    std::string text;
    if (path == "-") {
        text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
        auto read = read_file_text(path);
        if (!read) return make_error(ErrorCode::kInvalidArgument, read.error().describe());
        text = std::move(*read);
    }
    auto document = watch::decode_document(text);
    if (!document) return bad_file(path, document.error().message);
    if (!document->errors.empty()) return bad_file(path, document->errors.front().describe());
    const auto& objects = document->objects;
    const size_t others =
        objects.services.size() + objects.endpoint_slices.size() + objects.nodes.size();
    if (objects.pods.size() != 1 || others != 0) {
        return bad_file(path,
                        "not a Pod: want one Pod object, as `kubectl get pod NAME -o json` "
                        "prints it");
    }
    return objects.pods.front();
}

}  // namespace sb::proxy
