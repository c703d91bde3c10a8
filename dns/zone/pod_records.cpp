#include "dns/zone/pod_records.h"

#include <fmt/format.h>

namespace sb::dns {

Result<PodRecords> parse_pod_records(std::string_view text) {
    if (text == "disabled") return PodRecords::kDisabled;
    if (text == "insecure") return PodRecords::kInsecure;
    if (text == "verified") return PodRecords::kVerified;
    return make_error(
        ErrorCode::kInvalidArgument,
        fmt::format("--dns-pods: \"{}\" is not one of disabled, insecure, verified", text));
}

}  // namespace sb::dns
