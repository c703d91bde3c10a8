#include "dns/corefile/grammar.h"

#include <fmt/format.h>

#include <charconv>

#include "base/ip.h"
#include "dns/wire/names.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

// Sub-blocks in real Corefiles are one level deep; the bound keeps hostile
// input from exhausting the stack.
constexpr int kMaxNesting = 16;

struct Token {
    std::string text;
    int line = 0;      // where it starts
    int end_line = 0;  // where it ends (a quoted token may span lines)
    bool quoted = false;
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

Error error_at(std::string_view path, int line, const std::string& why) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("{}:{}: {}", path, line, why));
}

// Caddy's lexer; the one difference is that an unterminated quoted string is
// an error here rather than a token that silently runs to the end.
Result<std::vector<Token>> lex(std::string_view text, std::string_view path) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    std::vector<Token> tokens;
    int line = 1;
    size_t i = 0;
    while (i < text.size()) {
        char c = text[i];
        if (c == '\n') {
            ++line;
            ++i;
            continue;
        }
        if (is_space(c)) {
            ++i;
            continue;
        }
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
            continue;
        }
        Token token;
        token.line = line;
        if (c == '"') {
            token.quoted = true;
            ++i;
            bool closed = false;
            while (i < text.size()) {
                char q = text[i++];
                if (q == '\\' && i < text.size()) {
                    char next = text[i++];
                    if (next != '"') token.text.push_back('\\');
                    if (next == '\n') ++line;
                    token.text.push_back(next);
                    continue;
                }
                if (q == '"') {
                    closed = true;
                    break;
                }
                if (q == '\n') ++line;
                token.text.push_back(q);
            }
            if (!closed) return error_at(path, token.line, "unterminated quoted string");
        } else {
            while (i < text.size() && !is_space(text[i]) && text[i] != '#') {
                token.text.push_back(text[i++]);
            }
            // A '#' inside a token ends it and starts a comment (Caddy).
            if (i < text.size() && text[i] == '#') {
                while (i < text.size() && text[i] != '\n') ++i;
            }
        }
        token.end_line = line;
        tokens.push_back(std::move(token));
    }
    return tokens;
}

// {$NAME} and {%NAME%}: replaced once, left to right; a value is not
// expanded again (Caddy would loop forever on a value naming itself).
std::string expand(std::string_view text, const EnvironmentLookup& lookup) {
    std::string out;
    size_t i = 0;
    while (i < text.size()) {
        bool dollar = text.substr(i, 2) == "{$";
        bool percent = text.substr(i, 2) == "{%";
        if (!dollar && !percent) {
            out.push_back(text[i++]);
            continue;
        }
        std::string_view end = dollar ? "}" : "%}";
        size_t close = text.find(end, i + 2);
        if (close == std::string_view::npos || close == i + 2) {
            out.push_back(text[i++]);
            continue;
        }
        std::string name(text.substr(i + 2, close - i - 2));
        if (lookup) {
            if (auto value = lookup(name)) out += *value;
        }
        i = close + end.size();
    }
    return out;
}

class Parser {
  public:
    Parser(std::vector<Token> tokens, std::string_view path, const EnvironmentLookup& lookup)
        : tokens_(std::move(tokens)), path_(path), lookup_(lookup) {}

    Result<Corefile> parse() {
        Corefile corefile;
        while (pos_ < tokens_.size()) {
            auto block = server_block();
            if (!block) return block.error();
            corefile.blocks.push_back(std::move(*block));
        }
        return corefile;
    }

  private:
    bool is(const Token& token, std::string_view text) const {
        return !token.quoted && token.text == text;
    }
    // Whether tokens_[index] starts a line (the token before it ends earlier).
    bool starts_line(size_t index) const {
        return index == 0 || tokens_[index].line > tokens_[index - 1].end_line;
    }
    Error import_refused(const Token& token) const {
        return error_at(path_, token.line,
                        "import is not supported: paste the imported file's content into the "
                        "Corefile");
    }

    Result<CorefileServerBlock> server_block() {
        CorefileServerBlock block;
        block.line = tokens_[pos_].line;
        bool expecting_another = false;
        while (true) {
            const Token& token = tokens_[pos_];
            if (is(token, "{")) break;
            if (is(token, "}")) return error_at(path_, token.line, "unexpected '}'");
            if (is(token, "import")) return import_refused(token);
            std::string keys = expand(token.text, lookup_);
            expecting_another = !keys.empty() && keys.back() == ',';
            size_t start = 0;
            while (start < keys.size()) {
                size_t comma = std::min(keys.find(',', start), keys.size());
                std::string key = keys.substr(start, comma - start);
                start = comma + 1;
                if (key.empty()) continue;
                if (key.front() == '(' && key.back() == ')') {
                    return error_at(path_, token.line,
                                    fmt::format("snippet {} is not supported: snippets are used "
                                                "through import, which is not supported",
                                                escaped_for_message(key)));
                }
                auto zone = normalize_zone(key);
                if (!zone) return error_at(path_, token.line, zone.error().message);
                block.zones.push_back({zone->zone, zone->port.value_or(53), token.line});
            }
            ++pos_;
            if (pos_ == tokens_.size()) {
                if (expecting_another) {
                    return error_at(path_, token.end_line, "expected another zone after ','");
                }
                break;
            }
            if (!expecting_another && starts_line(pos_)) break;
        }
        if (block.zones.empty()) return error_at(path_, block.line, "a server block needs a zone");
        if (pos_ < tokens_.size() && is(tokens_[pos_], "{")) {
            if (expecting_another) {
                return error_at(path_, tokens_[pos_].line, "expected another zone after ','");
            }
            int open_line = tokens_[pos_].line;
            ++pos_;
            auto closed = directives(block.directives, 0);
            if (!closed) return closed.error();
            if (!*closed) {
                return error_at(path_, open_line,
                                "unexpected end of file: this '{' is never closed");
            }
            return block;
        }
        // Caddy: a Corefile of one server block may leave out the braces;
        // its directives then run to the end of the file.
        auto closed = directives(block.directives, 0);
        if (!closed) return closed.error();
        return block;
    }

    // Reads directives into `out` until a `}` that begins its line (consumed;
    // returns true) or the end of input (returns false).
    Result<bool> directives(std::vector<CorefileDirective>& out, int depth) {
        while (pos_ < tokens_.size()) {
            const Token& token = tokens_[pos_];
            if (is(token, "}")) {
                ++pos_;
                return true;
            }
            if (is(token, "{")) return error_at(path_, token.line, "unexpected '{'");
            if (depth == 0 && is(token, "import")) return import_refused(token);
            CorefileDirective directive;
            directive.name = token.text;
            directive.line = token.line;
            ++pos_;
            while (pos_ < tokens_.size() && !starts_line(pos_)) {
                const Token& arg = tokens_[pos_];
                if (is(arg, "}")) {
                    return error_at(path_, arg.line,
                                    "unexpected '}': a closing brace must begin its line");
                }
                if (is(arg, "{")) {
                    if (depth + 1 >= kMaxNesting) {
                        return error_at(path_, arg.line, "blocks are nested too deeply");
                    }
                    ++pos_;
                    directive.has_block = true;
                    auto closed = directives(directive.block, depth + 1);
                    if (!closed) return closed.error();
                    if (!*closed) {
                        return error_at(path_, arg.line,
                                        "unexpected end of file: this '{' is never closed");
                    }
                    break;
                }
                directive.args.push_back(expand(arg.text, lookup_));
                ++pos_;
            }
            out.push_back(std::move(directive));
        }
        return false;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    std::string_view path_;
    const EnvironmentLookup& lookup_;
};

}  // namespace

std::string escaped_for_message(std::string_view text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (char c : text.substr(0, 100)) {
        auto byte = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20 || byte == 0x7f) {
            out += "\\x";
            out += kHex[byte >> 4];
            out += kHex[byte & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

std::optional<std::string_view> transport_other_than_dns(std::string_view text) {
    const size_t scheme = text.find("://");
    if (scheme == std::string_view::npos || text.starts_with("dns://")) return std::nullopt;
    return text.substr(0, scheme);
}

Result<NormalizedZone> normalize_zone(std::string_view text) {
    std::string_view rest = text;
    if (auto transport = transport_other_than_dns(text)) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{}: transport {} is not supported; switchboard serves "
                                      "plain DNS (dns://)",
                                      escaped_for_message(text), escaped_for_message(*transport)));
    }
    if (rest.starts_with("dns://")) rest.remove_prefix(6);
    NormalizedZone result;
    std::string_view host = rest;
    size_t colon = rest.rfind(':');
    if (colon != std::string_view::npos && colon + 1 == rest.size()) {
        return make_error(
            ErrorCode::kInvalidArgument,
            fmt::format("{}: expecting a port after the last colon", escaped_for_message(text)));
    }
    if (colon != std::string_view::npos) {
        std::string_view digits = rest.substr(colon + 1);
        int64_t port = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
        if (ec == std::errc() && end == digits.data() + digits.size()) {
            if (port < 1 || port > 65535) {
                return make_error(ErrorCode::kInvalidArgument,
                                  fmt::format("{}: port {} is out of range 1-65535",
                                              escaped_for_message(text), port));
            }
            result.port = static_cast<uint16_t>(port);
            host = rest.substr(0, colon);
        }
    }
    auto invalid_name = [&] {
        return make_error(
            ErrorCode::kInvalidArgument,
            fmt::format("{}: zone is not a valid domain name", escaped_for_message(text)));
    };
    if (host.empty()) return invalid_name();
    auto wire = name_from_text(host);
    if (!wire) return invalid_name();
    result.zone = name_to_text(name_lower(*wire));
    if (host.find('/') != std::string_view::npos) {
        auto prefix = Prefix::parse(host, true);
        if (prefix) {
            // CoreDNS (plugin.SplitHostPort): the reverse zone of the prefix,
            // rounded to whole labels (8 bits for IPv4, 4 for IPv6).
            std::string reverse = name_to_text(reverse_name(prefix->address()));
            int bits = prefix->family() == IpFamily::kV4 ? 32 : 128;
            int digit = prefix->family() == IpFamily::kV4 ? 8 : 4;
            int host_bits = bits - prefix->length();
            int drop = (host_bits + host_bits % digit) / digit;
            size_t offset = 0;
            for (int k = 0; k < drop && offset < reverse.size(); ++k) {
                offset = reverse.find('.', offset) + 1;
            }
            result.zone = reverse.substr(offset);
        }
    }
    return result;
}

Result<Corefile> parse_corefile(std::string_view text, std::string_view path,
                                const EnvironmentLookup& lookup) {
    auto tokens = lex(text, path);
    if (!tokens) return tokens.error();
    return Parser(std::move(*tokens), path, lookup).parse();
}

}  // namespace sb::dns
