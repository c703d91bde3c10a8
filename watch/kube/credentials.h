// Where the API server is and how to authenticate to it: parsed from a
// kubeconfig file or from the in-cluster service account.
//
// Pure except for file reads; thread-compatible (no shared state).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb::watch::kube {

// The parts of an https://HOST[:PORT][/PATH] server URL the client needs.
struct ServerAddress {
    std::string host;       // without brackets for IPv6
    std::string port;       // "443" when the URL has none
    std::string base_path;  // "" or "/prefix" (no trailing slash), prepended to API paths
    // "host:port" as the Host header wants it (brackets around IPv6).
    std::string host_header() const;
};
Result<ServerAddress> parse_server_url(std::string_view url);

struct Credentials {
    std::string server;  // the URL, for log lines
    ServerAddress address;
    std::string ca_pem;  // empty: the system's trust store
    bool insecure_skip_tls_verify = false;
    std::string tls_server_name;  // overrides the name checked in the certificate
    std::string token;            // static bearer token
    std::string token_file;       // re-read on every request (bound tokens rotate)
    std::string client_cert_pem;
    std::string client_key_pem;
    // "kubeconfig /path (context ctx)" or "in-cluster service account", for messages.
    std::string origin;

    // The bearer token to send now ("" for none). Reads token_file when set;
    // an unreadable file is an error naming it.
    Result<std::string> bearer_token() const;
};

// Parses kubeconfig text. `base_dir` resolves relative file paths (the
// kubeconfig's own folder, as kubectl does); `file_name` names the file in
// errors. Errors are kInvalidArgument and name the file and field.
Result<Credentials> parse_kubeconfig(std::string_view text, const std::string& base_dir,
                                     const std::string& file_name);
Result<Credentials> load_kubeconfig(const std::string& path);

// In-cluster: KUBERNETES_SERVICE_HOST/_PORT from `getenv`, token and ca.crt in `sa_dir`.
using EnvLookup = std::function<const char*(const char*)>;
Result<Credentials> load_in_cluster(const std::string& sa_dir, const EnvLookup& getenv);

inline constexpr const char* kDefaultServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";

// RFC 4648 base64 (whitespace ignored), for the kubeconfig's *-data fields.
Result<std::string> decode_base64(std::string_view text);

}  // namespace sb::watch::kube
