// libFuzzer target: the Kubernetes JSON decoder (watch/decode.h), as a whole
// document (a LIST response or a file source) and as one watch event line.
// Invariants checked: nothing crashes, hangs or reads out of bounds
// (ASan/UBSan); every error is one line; a single Service, EndpointSlice,
// Node or Pod decodes to the same object whether it comes as a document or inside
// an ADDED watch event; one the document refuses is, inside an event, an
// error or an event marked rejected.
#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "tests/fuzz/fuzz_check.h"
#include "watch/decode.h"

namespace {

using namespace sb;

// The "kind" of a JSON object, "" when there is none.
std::string kind_of(std::string_view text) {
    rapidjson::Document document;
    document.Parse(text.data(), text.size());
    if (document.HasParseError() || !document.IsObject()) return {};
    if (!document.HasMember("kind") || !document["kind"].IsString()) return {};
    const rapidjson::Value& kind = document["kind"];
    return {kind.GetString(), kind.GetStringLength()};
}

// The one object of `objects`, which holds exactly one.
watch::AnyObject only_object(const watch::Store::Objects& objects) {
    if (!objects.services.empty()) return objects.services.front();
    if (!objects.endpoint_slices.empty()) return objects.endpoint_slices.front();
    if (!objects.nodes.empty()) return objects.nodes.front();
    if (!objects.pods.empty()) return objects.pods.front();
    return objects.service_cidrs.front();
}

void check_same_as_event(std::string_view text, const watch::DecodedDocument& document) {
    const std::string kind = kind_of(text);
    if (kind != "Service" && kind != "EndpointSlice" && kind != "Node" && kind != "Pod" &&
        kind != "ServiceCIDR") {
        return;
    }
    const size_t objects = document.objects.services.size() +
                           document.objects.endpoint_slices.size() + document.objects.nodes.size() +
                           document.objects.pods.size() + document.objects.service_cidrs.size();
    FUZZ_REQUIRE(objects + document.errors.size() == 1);
    auto event =
        watch::decode_watch_event("{\"type\":\"ADDED\",\"object\":" + std::string(text) + "}");
    if (objects == 0) {
        // Invalid as a document: inside an event it is an error, or (when its
        // kind and name can be read) an ADDED event marked rejected, which
        // the watch removes as a relist would (watch/kube/apply_event.h).
        if (!event) return;
        FUZZ_REQUIRE(event->type == watch::WatchEvent::Type::kAdded);
        FUZZ_REQUIRE(!event->rejected.empty());
        FUZZ_REQUIRE_ONE_LINE(event->rejected);
        return;
    }
    FUZZ_REQUIRE(event.ok());
    FUZZ_REQUIRE(event->type == watch::WatchEvent::Type::kAdded);
    FUZZ_REQUIRE(event->rejected.empty());
    FUZZ_REQUIRE(event->object == only_object(document.objects));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    auto document = watch::decode_document(text);
    if (!document) {
        FUZZ_REQUIRE_ONE_LINE(document.error().message);
    } else {
        for (const auto& error : document->errors) FUZZ_REQUIRE_ONE_LINE(error.describe());
        check_same_as_event(text, *document);
    }
    auto event = watch::decode_watch_event(text);
    if (!event) FUZZ_REQUIRE_ONE_LINE(event.error().message);
    return 0;
}
