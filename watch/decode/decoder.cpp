// The metadata every kind shares, read with the kind's name rules.
#include "watch/decode/decoder.h"

#include <fmt/format.h>

namespace sb::watch::decoding {

namespace {

// kubectl's bookkeeping copy of the whole object (see decode_meta).
constexpr const char* kLastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";

}  // namespace

bool Decoder::check_kind(const Value& value) {
    std::string_view kind;
    if (!get_string(value, Path{}, "kind", kind)) return false;
    if (!kind.empty() && kind != kind_.name) {
        return fail(Path{}.child("kind"),
                    fmt::format("expected kind {}, got {}", kind_.name, quoted(kind)));
    }
    return true;
}

bool Decoder::decode_meta(const Value& value, ObjectMeta& out) {
    const bool namespaced = kind_.namespaced;
    const Path root;
    if (!value.IsObject()) return type_error(root, "an object", value);
    const Value* metadata = nullptr;
    if (!get_object(value, root, "metadata", metadata)) return false;
    const Path path = root.child("metadata");
    if (!metadata) return fail(path, "required field is missing");

    // Name the object for error messages before validating the name, so that
    // even a bad name is reported with the text the user wrote.
    const Value* name = member(*metadata, "name");
    const Value* ns = member(*metadata, "namespace");
    // Kubernetes defaults an absent namespace to "default".
    const std::string_view ns_text = ns && ns->IsString() ? view(*ns) : std::string_view();
    const std::string_view ns_used = ns_text.empty() ? "default" : ns_text;
    if (name && name->IsString() && name->GetStringLength() > 0) {
        object_ = namespaced ? printable(ns_used, 64) + "/" + printable(view(*name), 256)
                             : printable(view(*name), 256);
    }

    if (!name) return fail(path.child("name"), "required field is missing");
    if (!name->IsString()) return type_error(path.child("name"), "a string", *name);
    const std::string_view name_text = view(*name);
    if (kind_.name_rule == NameRule::kDns1035Label && !is_dns1035_label(name_text)) {
        return fail(path.child("name"),
                    fmt::format("invalid name {}: must be an RFC 1035 label (at most 63 lowercase "
                                "alphanumerics or '-', starting with a letter, ending with an "
                                "alphanumeric)",
                                quoted(name_text)));
    }
    if (kind_.name_rule == NameRule::kDnsSubdomain && !is_dns_subdomain(name_text)) {
        return fail(path.child("name"),
                    fmt::format("invalid name {}: must be an RFC 1123 subdomain (at most 253 "
                                "characters, dot-separated lowercase labels)",
                                quoted(name_text)));
    }
    out.name = std::string(name_text);
    if (namespaced) {
        if (ns && !ns->IsString()) return type_error(path.child("namespace"), "a string", *ns);
        if (!is_dns_label(ns_used)) {
            return fail(
                path.child("namespace"),
                fmt::format("invalid namespace {}: must be an RFC 1123 label", quoted(ns_used)));
        }
        out.ns = std::string(ns_used);
    }
    std::string_view text;
    if (!get_string(*metadata, path, "uid", text)) return false;  // validated, not kept
    text = {};
    if (!get_string(*metadata, path, "resourceVersion", text)) return false;
    out.resource_version = std::string(text);
    if (!kind_.keeps_labels) return true;
    if (!get_string_map(*metadata, path, "labels", out.labels)) return false;
    if (!get_string_map(*metadata, path, "annotations", out.annotations)) return false;
    // kubectl's bookkeeping copy of the whole object: often the largest
    // field by far, and nothing downstream reads it.
    out.annotations.erase(kLastAppliedAnnotation);
    return true;
}

}  // namespace sb::watch::decoding
