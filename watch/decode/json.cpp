#include "watch/decode/json.h"

#include <rapidjson/error/en.h>

#include <algorithm>

#include <fmt/format.h>

namespace sb::watch::decoding {

namespace {

// Iterative parsing bounds the parser's stack whatever the nesting depth;
// encoding validation keeps invalid UTF-8 out of names and messages.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseValidateEncodingFlag |
                                 rapidjson::kParseInsituFlag;

}  // namespace

std::string printable(std::string_view text, size_t limit) {
    std::string out;
    for (char c : text.substr(0, limit)) {
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    if (text.size() > limit) out += "...";
    return out;
}

std::string Path::str() const {
    std::string out = parent ? parent->str() : std::string();
    if (index >= 0) {
        out += fmt::format("[{}]", index);
    } else if (quoted) {
        out += fmt::format("[\"{}\"]", printable(key));  // a map key is outside text
    } else if (!key.empty()) {
        if (!out.empty()) out += '.';
        out += key;
    }
    return out;
}

std::string quoted(std::string_view text) {
    return fmt::format("\"{}\"", printable(text));
}

const char* type_name(const Value& value) {
    switch (value.GetType()) {
        case rapidjson::kNullType:
            return "null";
        case rapidjson::kFalseType:
        case rapidjson::kTrueType:
            return "boolean";
        case rapidjson::kObjectType:
            return "object";
        case rapidjson::kArrayType:
            return "array";
        case rapidjson::kStringType:
            return "string";
        case rapidjson::kNumberType:
            return "number";
    }
    return "value";
}

const Value* member(const Value& object, const char* name) {
    auto it = object.FindMember(name);
    if (it == object.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
}

std::string number_text(const Value& value) {
    if (value.IsInt64()) return fmt::format("{}", value.GetInt64());
    if (value.IsUint64()) return fmt::format("{}", value.GetUint64());
    return fmt::format("{:.17g}", value.GetDouble());
}

std::string raw_object_name(const Value& value) {
    if (!value.IsObject()) return kUnknownObject;
    const Value* metadata = member(value, "metadata");
    if (!metadata || !metadata->IsObject()) return kUnknownObject;
    const Value* name = member(*metadata, "name");
    if (!name || !name->IsString() || name->GetStringLength() == 0) return kUnknownObject;
    const Value* ns = member(*metadata, "namespace");
    if (ns && ns->IsString() && ns->GetStringLength() > 0) {
        return printable(view(*ns), 64) + "/" + printable(view(*name), 256);
    }
    return printable(view(*name), 256);
}

Result<void> parse(std::string_view json, std::string& buffer, rapidjson::Document& document,
                   const char* what) {
    // A raw NUL is never valid JSON, and the in-situ parser would stop at it.
    if (const auto nul = json.find('\0'); nul != std::string_view::npos) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{}: invalid JSON: NUL byte at offset {}", what, nul));
    }
    buffer.assign(json.data(), json.size());
    // RapidJSON's UTF-8 check reads a lead byte's continuation bytes (up to
    // three) before it looks at them: a sequence cut short by the end of the
    // input reads the terminator and two bytes past it. Two more NULs keep
    // those reads inside the buffer (found by tests/fuzz/decode_fuzz.cpp).
    buffer.append(2, '\0');
    document.ParseInsitu<kParseFlags>(buffer.data());
    if (!document.HasParseError()) return {};
    const size_t offset = document.GetErrorOffset();
    const size_t line =
        1 + std::count(json.begin(), json.begin() + std::min(offset, json.size()), '\n');
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("{}: invalid JSON at line {} (offset {}): {}", what, line, offset,
                                  rapidjson::GetParseError_En(document.GetParseError())));
}

}  // namespace sb::watch::decoding
