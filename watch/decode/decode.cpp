// The public API (watch/decode.h), on top of watch/decode/: single objects,
// whole documents (an object or a List) and watch event lines, all decoded
// through the kind table (kinds.h).
#include "watch/decode.h"

#include <fmt/format.h>

#include "watch/decode/json.h"
#include "watch/decode/kinds.h"

namespace sb::watch {

using namespace decoding;

namespace {

// Decodes one item of a document into `out`; a kind switchboard does not
// decode (nullptr) is ignored.
void decode_into(const Value& value, const KindInfo* kind, DecodedDocument& out) {
    if (kind) kind->append_to(value, out);
}

}  // namespace

Result<Service> decode_service(const Value& value) {
    return decode_one<Service>(value);
}

Result<EndpointSlice> decode_endpoint_slice(const Value& value) {
    return decode_one<EndpointSlice>(value);
}

Result<Node> decode_node(const Value& value) {
    return decode_one<Node>(value);
}

Result<Pod> decode_pod(const Value& value) {
    return decode_one<Pod>(value);
}

Result<ServiceCIDR> decode_service_cidr(const Value& value) {
    return decode_one<ServiceCIDR>(value);
}

Result<AnyObject> decode_object(const Value& value) {
    const Value* kind = value.IsObject() ? member(value, "kind") : nullptr;
    auto failure = [&](const std::string& message) {
        DecodeError error{raw_object_name(value), "", "kind", message};
        return make_error(ErrorCode::kInvalidArgument, error.describe());
    };
    if (!value.IsObject()) {
        DecodeError error{kUnknownObject, "", "",
                          fmt::format("expected an object, got {}", type_name(value))};
        return make_error(ErrorCode::kInvalidArgument, error.describe());
    }
    if (!kind) return failure("required field is missing");
    if (!kind->IsString())
        return failure(fmt::format("expected a string, got {}", type_name(*kind)));
    if (const KindInfo* info = find_kind(view(*kind))) return info->decode(value);
    return failure(fmt::format("unsupported kind {} (want {})", quoted(view(*kind)), kind_names()));
}

Result<DecodedDocument> decode_document(std::string_view json) {
    std::string buffer;
    rapidjson::Document document;
    if (auto parsed = parse(json, buffer, document, "document"); !parsed) return parsed.error();
    auto bad = [](const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("not a Kubernetes object or list: {}", why));
    };
    if (!document.IsObject()) {
        return bad(fmt::format("expected a JSON object, got {}", type_name(document)));
    }
    const Value* kind = member(document, "kind");
    if (!kind || !kind->IsString()) return bad("no \"kind\" string");
    const std::string_view kind_text = view(*kind);

    DecodedDocument out;
    const bool is_list = kind_text.size() >= 4 && kind_text.substr(kind_text.size() - 4) == "List";
    if (!is_list) {
        decode_into(document, find_kind(kind_text), out);
        return out;
    }

    if (const Value* metadata = member(document, "metadata"); metadata && metadata->IsObject()) {
        const Value* version = member(*metadata, "resourceVersion");
        if (version && version->IsString()) out.resource_version = std::string(view(*version));
        const Value* token = member(*metadata, "continue");
        if (token && token->IsString()) out.continue_token = std::string(view(*token));
    }
    const Value* items = member(document, "items");
    if (!items) return out;
    if (!items->IsArray()) {
        return bad(fmt::format("items: expected an array, got {}", type_name(*items)));
    }
    // A typed list (ServiceList, as the API server sends it) omits the kind
    // of its items; a generic List (kubectl's) names each item's kind.
    const bool generic = kind_text == "List";
    const KindInfo* list_kind = find_kind(kind_text.substr(0, kind_text.size() - 4));
    if (!generic && !list_kind) return out;

    for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        const Value& item = (*items)[i];
        const std::string where = fmt::format("items[{}]", i);
        if (!item.IsObject()) {
            out.errors.push_back(
                DecodeError{kUnknownObject, "", where,
                            fmt::format("expected an object, got {}", type_name(item))});
            continue;
        }
        const KindInfo* item_kind = list_kind;
        const Value* item_kind_value = member(item, "kind");
        if (generic) {
            if (!item_kind_value || !item_kind_value->IsString()) {
                out.errors.push_back(DecodeError{
                    raw_object_name(item), "", where + ".kind",
                    item_kind_value ? "expected a string" : "required field is missing"});
                continue;
            }
            item_kind = find_kind(view(*item_kind_value));
        }
        const size_t errors_before = out.errors.size();
        decode_into(item, item_kind, out);
        // Unnamed objects are located by their position in the list.
        if (out.errors.size() > errors_before && out.errors.back().object == kUnknownObject) {
            std::string& path = out.errors.back().path;
            path = path.empty() ? where : where + "." + path;
        }
    }
    return out;
}

Result<WatchEvent> decode_watch_event(std::string_view line) {
    std::string buffer;
    rapidjson::Document document;
    if (auto parsed = parse(line, buffer, document, "watch event"); !parsed) {
        return parsed.error();
    }
    auto bad = [](const std::string& path, const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("watch event: {}: {}", path, why));
    };
    if (!document.IsObject()) {
        return make_error(
            ErrorCode::kInvalidArgument,
            fmt::format("watch event: expected a JSON object, got {}", type_name(document)));
    }
    const Value* type = member(document, "type");
    if (!type) return bad("type", "required field is missing");
    if (!type->IsString())
        return bad("type", fmt::format("expected a string, got {}", type_name(*type)));
    const Value* object = member(document, "object");
    if (!object) return bad("object", "required field is missing");
    if (!object->IsObject()) {
        return bad("object", fmt::format("expected an object, got {}", type_name(*object)));
    }

    WatchEvent event;
    const std::string_view type_text = view(*type);
    if (type_text == "ERROR") {
        event.type = WatchEvent::Type::kError;
        const Value* code = member(*object, "code");
        if (code && code->IsInt()) event.status_code = code->GetInt();
        const Value* message = member(*object, "message");
        if (message && message->IsString()) event.status_message = std::string(view(*message));
        const Value* reason = member(*object, "reason");
        // client-go treats reason Expired/Gone like code 410 (relist).
        if (event.status_code == 0 && reason && reason->IsString() &&
            (view(*reason) == "Expired" || view(*reason) == "Gone")) {
            event.status_code = 410;
        }
        return event;
    }
    if (type_text == "BOOKMARK") {
        event.type = WatchEvent::Type::kBookmark;
        const Value* metadata = member(*object, "metadata");
        const Value* version =
            metadata && metadata->IsObject() ? member(*metadata, "resourceVersion") : nullptr;
        if (!version || !version->IsString()) {
            return bad("object.metadata.resourceVersion", "a bookmark needs a resourceVersion");
        }
        event.resource_version = std::string(view(*version));
        return event;
    }
    if (type_text == "ADDED") {
        event.type = WatchEvent::Type::kAdded;
    } else if (type_text == "MODIFIED") {
        event.type = WatchEvent::Type::kModified;
    } else if (type_text == "DELETED") {
        event.type = WatchEvent::Type::kDeleted;
    } else {
        return bad("type", fmt::format("unknown event type {} (want ADDED, MODIFIED, DELETED, "
                                       "BOOKMARK or ERROR)",
                                       quoted(type_text)));
    }

    auto decoded = decode_object(*object);
    if (!decoded) {
        // Deleting needs only the key, and so does dropping an object whose
        // new version fails validation: both remove what the store holds.
        const std::string why = decoded.error().message;
        const Value* kind = member(*object, "kind");
        const KindInfo* which = kind && kind->IsString() ? find_kind(view(*kind)) : nullptr;
        std::optional<AnyObject> partial;
        if (which) partial = which->metadata_only(*object);
        if (partial) {
            decoded = std::move(*partial);
            if (event.type != WatchEvent::Type::kDeleted) event.rejected = why;
        }
    }
    if (!decoded) return decoded.error();
    event.object = std::move(*decoded);
    event.resource_version =
        std::visit([](const auto& o) { return o.meta.resource_version; }, event.object);
    return event;
}

}  // namespace sb::watch
