#include "watch/kube/tuning.h"

#include <cstdlib>
#include <map>
#include <string>

#include <fmt/format.h>

namespace sb::watch::kube {

Result<KubeTuning> parse_tuning(std::string_view text) {
    KubeTuning tuning;
    const std::map<std::string, int KubeTuning::*> fields = {
        {"watch_timeout_min_s", &KubeTuning::watch_timeout_min_s},
        {"watch_timeout_max_s", &KubeTuning::watch_timeout_max_s},
        {"watch_grace_s", &KubeTuning::watch_grace_s},
        {"request_timeout_s", &KubeTuning::request_timeout_s},
        {"backoff_initial_ms", &KubeTuning::backoff_initial_ms},
        {"backoff_cap_ms", &KubeTuning::backoff_cap_ms},
        {"list_limit", &KubeTuning::list_limit},
    };
    while (!text.empty()) {
        size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        if (item.empty()) continue;
        size_t equals = item.find('=');
        std::string key(item.substr(0, equals));
        auto field = fields.find(key);
        if (field == fields.end() || equals == std::string_view::npos) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("tuning: unknown key \"{}\"", key));
        }
        std::string value(item.substr(equals + 1));
        char* end = nullptr;
        long number = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || number < 1 || number > 1000000) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("tuning: {}: not a number in 1-1000000", key));
        }
        tuning.*(field->second) = static_cast<int>(number);
    }
    if (tuning.watch_timeout_min_s > tuning.watch_timeout_max_s) {
        return make_error(ErrorCode::kInvalidArgument,
                          "tuning: watch_timeout_min_s is above watch_timeout_max_s");
    }
    return tuning;
}

}  // namespace sb::watch::kube
