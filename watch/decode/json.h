// Reading RapidJSON values for the decoders (private to watch/decode/):
// parsing a text, typed member access, the JSON path of a field, and the
// quoting of untrusted text in error messages. Pure and thread-safe.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::watch::decoding {

using rapidjson::Value;

// How an object is named in an error before its name could be read.
inline constexpr const char* kUnknownObject = "<unknown>";

// Untrusted text quoted in messages: printable ASCII only, bounded length.
std::string printable(std::string_view text, size_t limit = 80);
// `text` printable and in double quotes.
std::string quoted(std::string_view text);

// A JSON path built on the stack while descending, rendered only when an
// error is reported (decoding 100k endpoints must not build 100k strings).
// A Path points at its parent: it must not outlive it.
struct Path {
    const Path* parent = nullptr;
    std::string_view key;  // a field name, or a map key when quoted
    int64_t index = -1;    // >= 0: an array element
    bool quoted = false;

    Path child(std::string_view name) const { return Path{this, name, -1, false}; }
    Path at(size_t i) const { return Path{this, {}, static_cast<int64_t>(i), false}; }
    Path map_key(std::string_view name) const { return Path{this, name, -1, true}; }

    std::string str() const;
};

// The text of a string value (which may hold NULs).
inline std::string_view view(const Value& value) {
    return {value.GetString(), value.GetStringLength()};
}
// "null", "boolean", "object", "array", "string" or "number", for messages.
const char* type_name(const Value& value);
// The member `name` of `object`; nullptr when absent or null (Go's
// encoding/json treats null like an absent field, and so do we).
const Value* member(const Value& object, const char* name);
// A number as written, for "expected an integer, got 80.5".
std::string number_text(const Value& value);

// "namespace/name" or "name" as the object's metadata gives it, for an
// object that failed before a Decoder could name it; kUnknownObject when
// there is no name.
std::string raw_object_name(const Value& value);

// Parses `json` in situ in `buffer` (which it fills with a NUL-terminated
// copy; `document` points into it and must not outlive it). The error names
// `what` ("document", "watch event"), the line and the offset.
Result<void> parse(std::string_view json, std::string& buffer, rapidjson::Document& document,
                   const char* what);

}  // namespace sb::watch::decoding
