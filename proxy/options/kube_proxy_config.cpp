#include "proxy/options/kube_proxy_config.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/go_duration.h"
#include "base/quote.h"

namespace sb::proxy {

namespace {

constexpr std::string_view kApiVersion = "kubeproxy.config.k8s.io/v1alpha1";
constexpr std::string_view kKind = "KubeProxyConfiguration";

struct FieldRef {
    const OptionSpec* spec;
    size_t index;  // in spec->fields: earlier fields win
};

// Every config field path of the table, and every map that holds one
// ("iptables", "logging.options" is itself a field).
struct FieldIndex {
    std::multimap<std::string, FieldRef, std::less<>> fields;
    std::map<std::string, bool, std::less<>> containers;
};

const FieldIndex& field_index() {
    static const FieldIndex index = [] {
        FieldIndex built;
        for (const auto& spec : option_table()) {
            for (size_t i = 0; i < spec.fields.size(); ++i) {
                std::string path(spec.fields[i].path);
                built.fields.emplace(path, FieldRef{&spec, i});
                for (size_t dot = path.find('.'); dot != std::string::npos;
                     dot = path.find('.', dot + 1)) {
                    built.containers[path.substr(0, dot)] = true;
                }
            }
        }
        return built;
    }();
    return index;
}

int line_of(const YAML::Node& node) {
    return node.Mark().line + 1;
}

class Reader {
  public:
    explicit Reader(std::string_view path) : path_(path) {}

    Error error(int line, const std::string& why) const {
        return make_error(ErrorCode::kInvalidArgument,
                          one_line(fmt::format("{}:{}: {}", path_, line, why)));
    }

    Result<KubeProxyConfig> read(std::string_view text) {
        YAML::Node root;
        try {
            root = YAML::Load(std::string(text));
        } catch (const YAML::Exception& exception) {
            return error(exception.mark.line + 1, exception.msg);
        }
        if (!root.IsMap()) {
            return error(root.IsNull() ? 1 : line_of(root),
                         "not a KubeProxyConfiguration (want a YAML or JSON object)");
        }
        std::set<int> seen;
        if (auto status = check_keys_have_colons(root, seen); !status) return status.error();
        if (auto status = check_type(root); !status) return status.error();
        section_ = section_of(root["mode"]);
        if (auto status = walk(root, ""); !status) return status.error();
        add_absent_defaults();

        KubeProxyConfig config;
        for (auto& [spec, found] : found_) config.values.push_back(std::move(found.value));
        add_warning(config, "fields switchboard does not use, ignored: ", unused_);
        add_warning(config,
                    fmt::format("fields kube-proxy does not read in mode {}, ignored: ",
                                quote_for_message(mode_text_)),
                    other_section_);
        add_warning(
            config,
            "unknown fields, ignored (as kube-proxy's lenient v1alpha1 decoding does): ", unknown_);
        return config;
    }

  private:
    struct Found {
        OptionValue value;
        size_t field_index;
    };

    // yaml-cpp takes a line without ':' in a block mapping ("kind
    // KubeProxyConfiguration") for a key with no value, which YAML (and
    // kube-proxy's parser) refuses; such a key's null value is marked where
    // the key is, where an empty value after ':' is marked later. Each
    // mapping and sequence is read once, by its position in the text: an
    // alias repeats a node (a map inside itself, or 2^N copies).
    Status check_keys_have_colons(const YAML::Node& node, std::set<int>& seen) const {
        if ((!node.IsSequence() && !node.IsMap()) || !seen.insert(node.Mark().pos).second) {
            return {};
        }
        if (node.IsSequence()) {
            for (const auto& item : node) {
                if (auto status = check_keys_have_colons(item, seen); !status) return status;
            }
            return {};
        }
        for (auto it = node.begin(); it != node.end(); ++it) {
            YAML::Node key = it->first;
            YAML::Node value = it->second;
            const auto key_mark = key.Mark();
            const auto value_mark = value.Mark();
            if (value.IsNull() && key.IsScalar() && key_mark.line == value_mark.line &&
                key_mark.column == value_mark.column) {
                return error(line_of(key), fmt::format("could not find expected ':' after {}",
                                                       quote_for_message(key.Scalar())));
            }
            if (auto status = check_keys_have_colons(value, seen); !status) return status;
        }
        return {};
    }

    Status check_type(const YAML::Node& root) const {
        for (auto [key, want] : {std::pair{"apiVersion", kApiVersion}, std::pair{"kind", kKind}}) {
            YAML::Node node = root[key];
            if (!node) return error(1, fmt::format("{} is missing (want {})", key, want));
            if (!node.IsScalar() || node.Scalar() != want) {
                std::string got =
                    node.IsScalar() ? quote_for_message(node.Scalar()) : "a non-string value";
                return error(line_of(node), fmt::format("{}: {} is not {}", key, got, want));
            }
        }
        return {};
    }

    // kube-proxy reads iptables.* for mode "" and iptables.
    uint8_t section_of(const YAML::Node& mode) {
        mode_text_ = mode && mode.IsScalar() ? mode.Scalar() : "";
        if (mode_text_ == "nftables") return kNftablesSection;
        if (mode_text_ == "ipvs") return kIpvsSection;
        return kIptablesSection;
    }

    Status walk(const YAML::Node& map, const std::string& prefix) {
        for (auto it = map.begin(); it != map.end(); ++it) {
            // Copies (Nodes are handles): yaml-cpp's operator-> returns a
            // temporary, so a reference to it->first dangles.
            YAML::Node key = it->first;
            YAML::Node value = it->second;
            std::string name = key.IsScalar() ? key.Scalar() : "?";
            std::string path = prefix.empty() ? name : prefix + "." + name;
            int line = line_of(key);
            if (prefix.empty() && (name == "apiVersion" || name == "kind")) continue;
            auto [first, last] = field_index().fields.equal_range(path);
            if (first != last) {
                if (auto status = take(path, line, value, first, last); !status) return status;
                continue;
            }
            if (field_index().containers.count(path) != 0) {
                if (value.IsNull()) continue;
                if (!value.IsMap()) return error(line, fmt::format("{}: is not an object", path));
                if (auto status = walk(value, path); !status) return status;
                continue;
            }
            unknown_.push_back(fmt::format("{} (line {})", path, line));
        }
        return {};
    }

    template <typename Iterator>
    Status take(const std::string& path, int line, const YAML::Node& value, Iterator first,
                Iterator last) {
        const OptionSpec& spec = *first->second.spec;
        if (spec.role == OptionRole::kIgnored) {
            if (!is_silent(value, spec)) {
                unused_.push_back(fmt::format("{} (line {})", path, line));
            }
            return {};
        }
        const FieldRef* chosen = nullptr;
        for (auto it = first; it != last; ++it) {
            const ConfigField& field = it->second.spec->fields[it->second.index];
            if ((field.sections & section_) != 0) chosen = &it->second;
        }
        if (chosen == nullptr) {
            if (!is_silent(value, spec)) {
                other_section_.push_back(fmt::format("{} (line {})", path, line));
            }
            return {};
        }
        const OptionSpec& row = *chosen->spec;
        const ConfigField& field = row.fields[chosen->index];
        auto text = text_of(value, row.kind, path, line);
        if (!text) return text.error();
        if (!text->has_value()) return {};
        if (field.zero_is_absent && is_zero_text(row.kind, **text)) return {};
        auto existing = found_.find(&row);
        if (existing != found_.end() && existing->second.field_index < chosen->index) return {};
        Origin origin{fmt::format("{}:{}: {}", path_, line, path), path};
        found_[&row] =
            Found{OptionValue{&row, std::move(**text), std::move(origin)}, chosen->index};
        return {};
    }

    // The value as the row's text; nullopt for null (absent).
    Result<std::optional<std::string>> text_of(const YAML::Node& value, ValueKind kind,
                                               const std::string& path, int line) const {
        if (value.IsNull()) return std::optional<std::string>();
        // A quoted scalar is a string to kube-proxy's JSON decoder, so it is
        // no number or boolean.
        bool quoted = value.IsScalar() && value.Tag() == "!";
        switch (kind) {
            case ValueKind::kList: {
                if (!value.IsSequence()) return error(line, fmt::format("{}: is not a list", path));
                std::string joined;
                for (const auto& item : value) {
                    if (!item.IsScalar()) {
                        return error(line_of(item), fmt::format("{}: items must be strings", path));
                    }
                    if (!joined.empty()) joined += ",";
                    joined += item.Scalar();
                }
                return std::optional<std::string>(joined);
            }
            case ValueKind::kBool: {
                bool flag = false;
                if (!value.IsScalar() || quoted || !YAML::convert<bool>::decode(value, flag)) {
                    return error(line,
                                 fmt::format("{}: {} is not a boolean", path, describe(value)));
                }
                return std::optional<std::string>(flag ? "true" : "false");
            }
            case ValueKind::kInt:
                if (!value.IsScalar() || quoted) {
                    return error(line,
                                 fmt::format("{}: {} is not a number", path, describe(value)));
                }
                return std::optional<std::string>(value.Scalar());
            case ValueKind::kString:
            case ValueKind::kDuration:
            case ValueKind::kMap:
                break;
        }
        if (!value.IsScalar()) {
            return error(line, fmt::format("{}: {} is not a string", path, describe(value)));
        }
        return std::optional<std::string>(value.Scalar());
    }

    static std::string describe(const YAML::Node& value) {
        if (value.IsScalar()) return quote_for_message(value.Scalar());
        return value.IsMap() ? "an object" : "a list";
    }

    // Whether an ignored (or not read) field holds nothing kube-proxy would
    // act on: null, a zero value, kube-proxy's default, an empty list or
    // object.
    static bool is_silent(const YAML::Node& value, const OptionSpec& spec) {
        size_t budget = kSilentNodeBudget;
        return is_silent_within(value, spec, budget);
    }

    // Aliases let a file repeat a map (2^N nodes from N lines) or put a map
    // inside itself, so the walk visits at most kSilentNodeBudget nodes; a
    // value larger than that counts as set.
    static constexpr size_t kSilentNodeBudget = 1000;

    static bool is_silent_within(const YAML::Node& value, const OptionSpec& spec, size_t& budget) {
        if (budget == 0) return false;
        --budget;
        if (value.IsNull()) return true;
        if (value.IsSequence()) return value.size() == 0;
        if (value.IsMap()) {
            for (auto it = value.begin(); it != value.end(); ++it) {
                if (!is_silent_within(it->second, spec, budget)) return false;
            }
            return true;
        }
        const std::string& text = value.Scalar();
        ValueKind kind = spec.kind == ValueKind::kMap ? ValueKind::kString : spec.kind;
        if (is_zero_text(kind, text) || text == "false" || text == "0s") return true;
        if (!spec.default_text) return false;
        if (text == *spec.default_text) return true;
        auto duration = parse_go_duration(text);
        auto default_duration = parse_go_duration(*spec.default_text);
        return duration && default_duration && *duration == *default_duration;
    }

    // kube-proxy's file defaults that are not the flag defaults: the
    // absent_value of a field, and bind addresses of IPv6 when bindAddress
    // is IPv6 (getDefaultAddresses).
    void add_absent_defaults() {
        bool bind_v6 = false;
        for (const auto& [spec, found] : found_) {
            if (spec->name() == "--bind-address") {
                auto address = IpAddress::parse(found.value.text);
                bind_v6 = address && address->is_v6();
            }
        }
        for (const auto& spec : option_table()) {
            if (spec.role == OptionRole::kIgnored || found_.count(&spec) != 0) continue;
            for (const auto& field : spec.fields) {
                if ((field.sections & section_) == 0) continue;
                std::optional<std::string_view> text = field.absent_value;
                if (bind_v6 && field.path == "metricsBindAddress") text = "[::1]:10249";
                if (bind_v6 && field.path == "healthzBindAddress") text = "[::]:10256";
                if (text) {
                    Origin origin{fmt::format("{}: {}", path_, field.path),
                                  std::string(field.path)};
                    found_[&spec] = Found{OptionValue{&spec, std::string(*text), origin}, 0};
                }
                break;
            }
        }
    }

    void add_warning(KubeProxyConfig& config, const std::string& what,
                     const std::vector<std::string>& fields) const {
        if (fields.empty()) return;
        config.warnings.push_back(
            one_line(fmt::format("{}: {}{}", path_, what, fmt::join(fields, ", "))));
    }

    const std::string path_;
    uint8_t section_ = kIptablesSection;
    std::string mode_text_;
    // Ordered by row (table order) so values come out in a stable order.
    std::map<const OptionSpec*, Found> found_;
    std::vector<std::string> unused_;
    std::vector<std::string> other_section_;
    std::vector<std::string> unknown_;
};

}  // namespace

Result<KubeProxyConfig> parse_kube_proxy_config(std::string_view text, std::string_view path) {
    return Reader(path).read(text);
}

}  // namespace sb::proxy
