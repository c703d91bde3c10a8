#include "proxy/options/kube_proxy_config.h"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/go_duration.h"
#include "base/quote.h"
#include "proxy/options/config_fields.h"

namespace sb::proxy {

namespace {

constexpr std::string_view kV1alpha1 = "kubeproxy.config.k8s.io/v1alpha1";
constexpr std::string_view kV1alpha2 = "kubeproxy.config.k8s.io/v1alpha2";
constexpr std::string_view kKind = "KubeProxyConfiguration";

// Every config field path of a version, and every map that holds one
// ("iptables", "logging.options" is itself a field).
struct FieldIndex {
    std::multimap<std::string, const VersionField*, std::less<>> fields;
    std::map<std::string, bool, std::less<>> containers;
};

FieldIndex build_index(ConfigVersion version) {
    FieldIndex built;
    auto add_containers = [&built](const std::string& path) {
        for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
            built.containers[path.substr(0, dot)] = true;
        }
    };
    for (const auto& field : config_fields(version)) {
        std::string path(field.field.path);
        built.fields.emplace(path, &field);
        add_containers(path);
    }
    return built;
}

const FieldIndex& field_index(ConfigVersion version) {
    static const FieldIndex v1alpha1 = build_index(ConfigVersion::kV1alpha1);
    static const FieldIndex v1alpha2 = build_index(ConfigVersion::kV1alpha2);
    return version == ConfigVersion::kV1alpha1 ? v1alpha1 : v1alpha2;
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
        if (version_ == ConfigVersion::kV1alpha2) {
            if (auto status = take_v1alpha2_binds(); !status) return status.error();
        }
        add_absent_defaults();

        KubeProxyConfig config;
        config.version = version_;
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

    Status check_type(const YAML::Node& root) {
        for (auto [key, want] : {std::pair{"apiVersion", std::string(kV1alpha1) + " or v1alpha2"},
                                 std::pair{"kind", std::string(kKind)}}) {
            YAML::Node node = root[key];
            if (!node) return error(1, fmt::format("{} is missing (want {})", key, want));
            const bool known =
                node.IsScalar() && (key == std::string_view("kind")
                                        ? node.Scalar() == kKind
                                        : node.Scalar() == kV1alpha1 || node.Scalar() == kV1alpha2);
            if (!known) {
                std::string got =
                    node.IsScalar() ? quote_for_message(node.Scalar()) : "a non-string value";
                return error(line_of(node), fmt::format("{}: {} is not {}", key, got, want));
            }
        }
        if (root["apiVersion"].Scalar() == kV1alpha2) version_ = ConfigVersion::kV1alpha2;
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
        const FieldIndex& index = field_index(version_);
        std::set<std::string> keys;
        for (auto it = map.begin(); it != map.end(); ++it) {
            // Copies (Nodes are handles): yaml-cpp's operator-> returns a
            // temporary, so a reference to it->first dangles.
            YAML::Node key = it->first;
            YAML::Node value = it->second;
            std::string name = key.IsScalar() ? key.Scalar() : "?";
            std::string path = prefix.empty() ? name : prefix + "." + name;
            int line = line_of(key);
            // kube-proxy decodes v1alpha2 strictly: no lenient retry.
            if (version_ == ConfigVersion::kV1alpha2 && !keys.insert(name).second) {
                return error(line, fmt::format("{}: repeated (kube-proxy decodes v1alpha2 "
                                               "strictly)",
                                               path));
            }
            if (prefix.empty() && (name == "apiVersion" || name == "kind")) continue;
            if (version_ == ConfigVersion::kV1alpha2 && is_v1alpha2_bind_field(path)) {
                binds_[path] = BindField{value, line};
                continue;
            }
            auto [first, last] = index.fields.equal_range(path);
            if (first != last) {
                if (auto status = take(path, line, value, first, last); !status) return status;
                continue;
            }
            if (index.containers.count(path) != 0) {
                if (value.IsNull()) continue;
                if (!value.IsMap()) return error(line, fmt::format("{}: is not an object", path));
                if (auto status = walk(value, path); !status) return status;
                continue;
            }
            if (version_ == ConfigVersion::kV1alpha2) {
                return error(line, fmt::format("{}: unknown field (kube-proxy decodes v1alpha2 "
                                               "strictly)",
                                               path));
            }
            unknown_.push_back(fmt::format("{} (line {})", path, line));
        }
        return {};
    }

    // v1alpha2's bind fields, as the v1alpha1 rows take them: nodeIPOverride
    // (at most one address: switchboard keeps one primary IP) is
    // bindAddress; an address list and its port make ADDRESS:PORT.
    Status take_v1alpha2_binds() {
        auto list_of = [this](std::string_view path) -> Result<std::vector<std::string>> {
            std::vector<std::string> items;
            auto it = binds_.find(path);
            if (it == binds_.end() || it->second.value.IsNull()) return items;
            const auto& [value, line] = it->second;
            if (!value.IsSequence()) {
                return error(line, fmt::format("{}: is not a list", path));
            }
            for (const auto& item : value) {
                if (!item.IsScalar()) {
                    return error(line_of(item), fmt::format("{}: items must be strings", path));
                }
                items.push_back(item.Scalar());
            }
            return items;
        };
        auto origin_of = [this](std::string_view path) {
            auto it = binds_.find(path);
            int line = it == binds_.end() ? 0 : it->second.line;
            return Origin{line == 0 ? fmt::format("{}: {}", path_, path)
                                    : fmt::format("{}:{}: {}", path_, line, path),
                          std::string(path)};
        };
        auto node_ips = list_of("nodeIPOverride");
        if (!node_ips) return node_ips.error();
        if (node_ips->size() > 1) {
            return error(binds_.at("nodeIPOverride").line,
                         "nodeIPOverride: switchboard takes one node IP (its primary)");
        }
        if (!node_ips->empty()) {
            found_[find_flag("--bind-address")] =
                Found{OptionValue{find_flag("--bind-address"), node_ips->front(),
                                  origin_of("nodeIPOverride")},
                      0};
        }
        IpFamily primary = IpFamily::kV4;
        if (!node_ips->empty()) {
            auto address = IpAddress::parse(node_ips->front());
            if (address && address->is_v6()) primary = IpFamily::kV6;
        }
        for (auto [name, port_flag, any, default_port] :
             {std::tuple{"healthz", "--healthz-bind-address", true, "10256"},
              std::tuple{"metrics", "--metrics-bind-address", false, "10249"}}) {
            const std::string addresses_path = fmt::format("{}BindAddresses", name);
            const std::string port_path = fmt::format("{}BindPort", name);
            auto addresses = list_of(addresses_path);
            if (!addresses) return addresses.error();
            auto address = v1alpha2_bind_address(*addresses, any, primary);
            if (!address) {
                return error(binds_.at(addresses_path).line,
                             fmt::format("{}: {}", addresses_path, address.error().message));
            }
            std::string port = default_port;
            if (auto it = binds_.find(port_path); it != binds_.end()) {
                auto text = text_of(it->second.value, ValueKind::kInt, port_path, it->second.line);
                if (!text) return text.error();
                if (text->has_value() && !is_zero_text(ValueKind::kInt, **text)) port = **text;
            }
            const bool v6 = address->find(':') != std::string::npos;
            std::string text =
                v6 ? fmt::format("[{}]:{}", *address, port) : fmt::format("{}:{}", *address, port);
            const OptionSpec* spec = find_flag(port_flag);
            const std::string origin_path =
                binds_.count(addresses_path) != 0 ? addresses_path : port_path;
            found_[spec] = Found{OptionValue{spec, std::move(text), origin_of(origin_path)}, 0};
        }
        return {};
    }

    template <typename Iterator>
    Status take(const std::string& path, int line, const YAML::Node& value, Iterator first,
                Iterator last) {
        const OptionSpec& spec = *first->second->spec;
        if (spec.role == OptionRole::kIgnored) {
            if (!is_silent(value, spec)) {
                unused_.push_back(fmt::format("{} (line {})", path, line));
            }
            return {};
        }
        const VersionField* chosen = nullptr;
        for (auto it = first; it != last; ++it) {
            if ((it->second->field.sections & section_) != 0) chosen = it->second;
        }
        if (chosen == nullptr) {
            if (!is_silent(value, spec)) {
                other_section_.push_back(fmt::format("{} (line {})", path, line));
            }
            return {};
        }
        const OptionSpec& row = *chosen->spec;
        const ConfigField& field = chosen->field;
        auto text = text_of(value, chosen->kind.value_or(row.kind), path, line);
        if (!text) return text.error();
        if (!text->has_value()) return {};
        if (field.zero_is_absent && is_zero_text(row.kind, **text)) return {};
        auto existing = found_.find(&row);
        if (existing != found_.end() && existing->second.field_index < chosen->order) return {};
        Origin origin{fmt::format("{}:{}: {}", path_, line, path), path};
        found_[&row] =
            Found{OptionValue{&row, std::move(**text), std::move(origin)}, chosen->order};
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
        std::set<const OptionSpec*> decided;
        for (const auto& entry : config_fields(version_)) {
            const OptionSpec& spec = *entry.spec;
            const ConfigField& field = entry.field;
            if (spec.role == OptionRole::kIgnored || found_.count(&spec) != 0) continue;
            if ((field.sections & section_) == 0 || !decided.insert(&spec).second) continue;
            std::optional<std::string_view> text = field.absent_value;
            if (bind_v6 && field.path == "metricsBindAddress") text = "[::1]:10249";
            if (bind_v6 && field.path == "healthzBindAddress") text = "[::]:10256";
            if (text) {
                Origin origin{fmt::format("{}: {}", path_, field.path), std::string(field.path)};
                found_[&spec] = Found{OptionValue{&spec, std::string(*text), origin}, 0};
            }
        }
    }

    void add_warning(KubeProxyConfig& config, const std::string& what,
                     const std::vector<std::string>& fields) const {
        if (fields.empty()) return;
        config.warnings.push_back(
            one_line(fmt::format("{}: {}{}", path_, what, fmt::join(fields, ", "))));
    }

    struct BindField {
        YAML::Node value;
        int line;
    };

    const std::string path_;
    ConfigVersion version_ = ConfigVersion::kV1alpha1;
    std::map<std::string, BindField, std::less<>> binds_;
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
