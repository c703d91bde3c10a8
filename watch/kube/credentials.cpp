#include "watch/kube/credentials.h"

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "base/file_text.h"
#include "base/quote.h"

namespace sb::watch::kube {

std::string ServerAddress::host_header() const {
    bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + port;
}

namespace {

bool is_port_number(const std::string& text) {
    if (text.empty() || text.size() > 5) return false;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
    }
    int value = std::stoi(text);
    return value >= 1 && value <= 65535;
}

}  // namespace

Result<ServerAddress> parse_server_url(std::string_view url) {
    constexpr std::string_view kScheme = "https://";
    if (url.substr(0, kScheme.size()) != kScheme) {
        return make_error(
            ErrorCode::kInvalidArgument,
            fmt::format("server {}: only https:// URLs are supported", quote_for_message(url)));
    }
    std::string_view rest = url.substr(kScheme.size());
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);
    ServerAddress address;
    address.base_path = std::string(path);
    address.port = "443";
    if (!authority.empty() && authority.front() == '[') {
        size_t close = authority.find(']');
        if (close == std::string_view::npos) {
            return make_error(
                ErrorCode::kInvalidArgument,
                fmt::format("server {}: unterminated IPv6 literal", quote_for_message(url)));
        }
        address.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return make_error(ErrorCode::kInvalidArgument,
                                  fmt::format("server {}: bad port", quote_for_message(url)));
            }
            address.port = std::string(after.substr(1));
        }
    } else {
        size_t colon = authority.rfind(':');
        address.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos)
            address.port = std::string(authority.substr(colon + 1));
        // "https://fd00::1" would otherwise be host "fd00:", port 1 (found by
        // tests/fuzz/kubeconfig_fuzz.cpp: such a host printed back in
        // brackets parsed to another address).
        if (address.host.find(':') != std::string::npos) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("server {}: an IPv6 address needs brackets "
                                          "([ADDRESS]:PORT)",
                                          quote_for_message(url)));
        }
    }
    if (address.host.empty()) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("server {}: no host", quote_for_message(url)));
    }
    if (!is_port_number(address.port)) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("server {}: bad port {}", quote_for_message(url),
                                      quote_for_message(address.port)));
    }
    return address;
}

Result<std::string> decode_base64(std::string_view text) {
    std::string out;
    uint32_t bits = 0;
    int count = 0;
    int padding = 0;
    for (char c : text) {
        int value;
        if (c >= 'A' && c <= 'Z') {
            value = c - 'A';
        } else if (c >= 'a' && c <= 'z') {
            value = c - 'a' + 26;
        } else if (c >= '0' && c <= '9') {
            value = c - '0' + 52;
        } else if (c == '+' || c == '-') {
            value = 62;
        } else if (c == '/' || c == '_') {
            value = 63;
        } else if (c == '=') {
            ++padding;
            continue;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            continue;
        } else {
            return make_error(ErrorCode::kInvalidArgument, "not base64");
        }
        if (padding) return make_error(ErrorCode::kInvalidArgument, "not base64: data after '='");
        bits = (bits << 6) | static_cast<uint32_t>(value);
        if (++count == 4) {
            out.push_back(static_cast<char>((bits >> 16) & 0xff));
            out.push_back(static_cast<char>((bits >> 8) & 0xff));
            out.push_back(static_cast<char>(bits & 0xff));
            bits = 0;
            count = 0;
        }
    }
    if (count == 1) return make_error(ErrorCode::kInvalidArgument, "not base64: truncated");
    if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
    if (count == 3) {
        out.push_back(static_cast<char>((bits >> 10) & 0xff));
        out.push_back(static_cast<char>((bits >> 2) & 0xff));
    }
    return out;
}

Result<std::string> Credentials::bearer_token() const {
    if (token_file.empty()) return token;
    auto text = read_file_text(token_file);
    if (!text) return text.error();
    std::string value = std::move(*text);
    while (!value.empty() &&
           (value.back() == '\n' || value.back() == '\r' || value.back() == ' ')) {
        value.pop_back();
    }
    return value;
}

namespace {

// yaml-cpp reports through exceptions; they are caught here and never leave
// this file.
class KubeconfigReader {
  public:
    KubeconfigReader(std::string base_dir, std::string file)
        : base_dir_(std::move(base_dir)), file_(std::move(file)) {}

    // `what` may quote the file's own strings (context and cluster names,
    // paths): one_line keeps the error one line whatever they hold.
    Error fail(const std::string& what) const {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("kubeconfig {}: {}", file_, one_line(what)));
    }

    std::string resolve(const std::string& path) const {
        if (path.empty() || path.front() == '/' || base_dir_.empty()) return path;
        return base_dir_ + "/" + path;
    }

    // Finds the entry `name` in the list `section` and returns its `field` map.
    Result<YAML::Node> named(const YAML::Node& root, const char* section, const char* field,
                             const std::string& name) const {
        YAML::Node list = root[section];
        if (list && !list.IsSequence()) return fail(fmt::format("{}: not a list", section));
        if (list) {
            for (const auto& entry : list) {
                if (entry.IsMap() && entry["name"] && entry["name"].as<std::string>() == name) {
                    YAML::Node body = entry[field];
                    if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);
                    if (!body.IsMap()) {
                        return fail(fmt::format("{}[{}].{}: not a map", section, name, field));
                    }
                    return body;
                }
            }
        }
        return fail(fmt::format("{}: no entry named \"{}\"", section, name));
    }

    static std::string text(const YAML::Node& map, const char* key) {
        YAML::Node value = map[key];
        if (!value || value.IsNull()) return {};
        return value.as<std::string>();
    }

    // The PEM of `key` or `key-data` (file path, or base64 inline).
    Result<std::string> pem(const YAML::Node& map, const std::string& where,
                            const std::string& key) const {
        std::string data = text(map, (key + "-data").c_str());
        if (!data.empty()) {
            auto decoded = decode_base64(data);
            if (!decoded) {
                return fail(fmt::format("{}.{}-data: {}", where, key, decoded.error().message));
            }
            return std::move(*decoded);
        }
        std::string path = text(map, key.c_str());
        if (path.empty()) return std::string();
        auto content = read_file_text(resolve(path));
        if (!content) return fail(fmt::format("{}.{}: {}", where, key, content.error().describe()));
        return std::move(*content);
    }

    Result<Credentials> parse(std::string_view yaml) const {
        YAML::Node root;
        try {
            root = YAML::Load(std::string(yaml));
        } catch (const YAML::Exception& e) {
            return fail(fmt::format("not valid YAML: {}", e.what()));
        }
        try {
            return parse_root(root);
        } catch (const YAML::Exception& e) {
            return fail(fmt::format("unexpected structure: {}", e.what()));
        }
    }

  private:
    Result<Credentials> parse_root(const YAML::Node& root) const {
        if (!root.IsMap()) return fail("not a kubeconfig (expected a map)");
        std::string context_name = text(root, "current-context");
        if (context_name.empty()) {
            return fail("current-context is not set (run `kubectl config use-context NAME`)");
        }
        auto context = named(root, "contexts", "context", context_name);
        if (!context) return context.error();
        std::string cluster_name = text(*context, "cluster");
        if (cluster_name.empty()) {
            return fail(fmt::format("context \"{}\" names no cluster", context_name));
        }
        auto cluster = named(root, "clusters", "cluster", cluster_name);
        if (!cluster) return cluster.error();

        Credentials out;
        out.origin = fmt::format("kubeconfig {} (context {})", file_, context_name);
        std::string where = fmt::format("clusters[{}].cluster", cluster_name);
        out.server = text(*cluster, "server");
        if (out.server.empty()) return fail(fmt::format("{}.server is not set", where));
        auto address = parse_server_url(out.server);
        if (!address) return fail(fmt::format("{}.server: {}", where, address.error().message));
        out.address = *address;
        auto ca = pem(*cluster, where, "certificate-authority");
        if (!ca) return ca.error();
        out.ca_pem = std::move(*ca);
        YAML::Node insecure = (*cluster)["insecure-skip-tls-verify"];
        out.insecure_skip_tls_verify = insecure && !insecure.IsNull() && insecure.as<bool>();
        out.tls_server_name = text(*cluster, "tls-server-name");

        std::string user_name = text(*context, "user");
        if (user_name.empty()) return out;  // anonymous
        auto user = named(root, "users", "user", user_name);
        if (!user) return user.error();
        where = fmt::format("users[{}].user", user_name);
        if ((*user)["exec"] && !(*user)["exec"].IsNull()) {
            return fail(
                fmt::format("{}.exec: credential plugins are not supported; use a token, "
                            "tokenFile or a client certificate",
                            where));
        }
        if ((*user)["auth-provider"] && !(*user)["auth-provider"].IsNull()) {
            return fail(
                fmt::format("{}.auth-provider is not supported; use a token, tokenFile "
                            "or a client certificate",
                            where));
        }
        out.token = text(*user, "token");
        std::string token_file = text(*user, "tokenFile");
        if (out.token.empty() && !token_file.empty()) {
            out.token_file = resolve(token_file);
            auto probe = out.bearer_token();
            if (!probe) {
                return fail(fmt::format("{}.tokenFile: {}", where, probe.error().describe()));
            }
        }
        auto cert = pem(*user, where, "client-certificate");
        if (!cert) return cert.error();
        auto key = pem(*user, where, "client-key");
        if (!key) return key.error();
        if (cert->empty() != key->empty()) {
            return fail(
                fmt::format("{}: client-certificate and client-key must be given together", where));
        }
        out.client_cert_pem = std::move(*cert);
        out.client_key_pem = std::move(*key);
        return out;
    }

    std::string base_dir_;
    std::string file_;
};

}  // namespace

Result<Credentials> parse_kubeconfig(std::string_view text, const std::string& base_dir,
                                     const std::string& file_name) {
    return KubeconfigReader(base_dir, file_name).parse(text);
}

Result<Credentials> load_kubeconfig(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("kubeconfig {}: {}", path, text.error().describe()));
    }
    size_t slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
    return parse_kubeconfig(*text, dir, path);
}

Result<Credentials> load_in_cluster(const std::string& sa_dir, const EnvLookup& getenv) {
    const char* host = getenv("KUBERNETES_SERVICE_HOST");
    const char* port = getenv("KUBERNETES_SERVICE_PORT");
    if (!host || !*host || !port || !*port) {
        return make_error(ErrorCode::kInvalidArgument,
                          "not running in a cluster (KUBERNETES_SERVICE_HOST/_PORT unset): "
                          "pass --kubeconfig or --master");
    }
    Credentials out;
    out.origin = fmt::format("in-cluster service account {}", sa_dir);
    std::string host_text = host;
    bool v6 = host_text.find(':') != std::string::npos;
    out.server = "https://" + (v6 ? "[" + host_text + "]" : host_text) + ":" + port;
    auto address = parse_server_url(out.server);
    if (!address) return address.error();
    out.address = *address;
    out.token_file = sa_dir + "/token";
    auto token = out.bearer_token();
    if (!token) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("in-cluster credentials: {}", token.error().describe()));
    }
    auto ca = read_file_text(sa_dir + "/ca.crt");
    if (!ca) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("in-cluster credentials: {}", ca.error().describe()));
    }
    out.ca_pem = std::move(*ca);
    return out;
}

}  // namespace sb::watch::kube
