// Kubeconfig and in-cluster credential parsing, with the shapes real tools write.
#include <unistd.h>

#include <catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "watch/kube/credentials.h"

using namespace sb::watch::kube;

namespace {

// A scratch folder removed at scope exit.
struct TempDir {
    TempDir() {
        char pattern[] = "/tmp/unit_kube_XXXXXX";
        path = mkdtemp(pattern);
    }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string write(const std::string& name, const std::string& content) const {
        std::filesystem::create_directories(std::filesystem::path(path + "/" + name).parent_path());
        std::ofstream(path + "/" + name) << content;
        return path + "/" + name;
    }
    std::string path;
};

// base64 of "CA PEM", "CERT PEM", "KEY PEM".
const char* kCaData = "Q0EgUEVN";
const char* kCertData = "Q0VSVCBQRU0=";
const char* kKeyData = "S0VZIFBFTQ==";

}  // namespace

TEST_CASE("kind kubeconfig: embedded CA and client certificate data") {
    std::string yaml = std::string(R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: )") +
                       kCaData + R"(
    server: https://127.0.0.1:40155
  name: kind-kind
contexts:
- context:
    cluster: kind-kind
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: )" +
                       kCertData + R"(
    client-key-data: )" +
                       kKeyData + "\n";
    auto credentials = parse_kubeconfig(yaml, "/nowhere", "kind.yaml");
    REQUIRE(credentials.ok());
    CHECK(credentials->server == "https://127.0.0.1:40155");
    CHECK(credentials->address.host == "127.0.0.1");
    CHECK(credentials->address.port == "40155");
    CHECK(credentials->ca_pem == "CA PEM");
    CHECK(credentials->client_cert_pem == "CERT PEM");
    CHECK(credentials->client_key_pem == "KEY PEM");
    CHECK(credentials->token.empty());
    CHECK_FALSE(credentials->insecure_skip_tls_verify);
    CHECK(credentials->origin.find("kind-kind") != std::string::npos);
}

TEST_CASE("minikube kubeconfig: file paths, relative ones against the kubeconfig's folder") {
    TempDir dir;
    dir.write("certs/ca.crt", "MINIKUBE CA");
    dir.write("profiles/minikube/client.crt", "MINIKUBE CERT");
    dir.write("/abs-key.pem", "MINIKUBE KEY");
    std::string config = dir.write("config", R"(apiVersion: v1
clusters:
- cluster:
    certificate-authority: certs/ca.crt
    extensions:
    - extension:
        provider: minikube.sigs.k8s.io
        version: v1.32.0
      name: cluster_info
    server: https://192.168.49.2:8443
  name: minikube
contexts:
- context:
    cluster: minikube
    namespace: default
    user: minikube
  name: minikube
current-context: minikube
kind: Config
users:
- name: minikube
  user:
    client-certificate: profiles/minikube/client.crt
    client-key: )" + dir.path + R"(/abs-key.pem
)");
    auto credentials = load_kubeconfig(config);
    REQUIRE(credentials.ok());
    CHECK(credentials->ca_pem == "MINIKUBE CA");
    CHECK(credentials->client_cert_pem == "MINIKUBE CERT");
    CHECK(credentials->client_key_pem == "MINIKUBE KEY");
    CHECK(credentials->address.host == "192.168.49.2");
    CHECK(credentials->address.port == "8443");
}

TEST_CASE("EKS-style kubeconfig with a static token and a hostname server") {
    std::string yaml = std::string(R"(apiVersion: v1
kind: Config
clusters:
- name: arn:aws:eks:eu-west-1:123456789012:cluster/prod
  cluster:
    server: https://0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com
    certificate-authority-data: )") +
                       kCaData + R"(
contexts:
- name: arn:aws:eks:eu-west-1:123456789012:cluster/prod
  context:
    cluster: arn:aws:eks:eu-west-1:123456789012:cluster/prod
    user: switchboard
current-context: arn:aws:eks:eu-west-1:123456789012:cluster/prod
users:
- name: switchboard
  user:
    token: k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8
)";
    auto credentials = parse_kubeconfig(yaml, "/", "eks.yaml");
    REQUIRE(credentials.ok());
    CHECK(credentials->address.host == "0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com");
    CHECK(credentials->address.port == "443");
    CHECK(credentials->address.host_header() ==
          "0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com:443");
    auto token = credentials->bearer_token();
    REQUIRE(token.ok());
    CHECK(*token == "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8");
}

TEST_CASE("GKE-style kubeconfig with the exec auth plugin is refused with a clear error") {
    std::string yaml = std::string(R"(apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: )") +
                       kCaData + R"(
    server: https://34.78.1.2
  name: gke_proj_europe-west1_c1
contexts:
- context:
    cluster: gke_proj_europe-west1_c1
    user: gke_proj_europe-west1_c1
  name: gke_proj_europe-west1_c1
current-context: gke_proj_europe-west1_c1
users:
- name: gke_proj_europe-west1_c1
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      provideClusterInfo: true
)";
    auto credentials = parse_kubeconfig(yaml, "/", "gke.yaml");
    REQUIRE_FALSE(credentials.ok());
    CHECK(credentials.error().code == sb::ErrorCode::kInvalidArgument);
    CHECK(credentials.error().message.find("gke.yaml") != std::string::npos);
    CHECK(credentials.error().message.find("exec") != std::string::npos);
}

TEST_CASE("tokenFile is re-read on every request (rotating tokens)") {
    TempDir dir;
    dir.write("token", "first\n");
    std::string config = dir.write("kubeconfig", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://[fd00::1]:6443/prefix/", insecure-skip-tls-verify: true}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {tokenFile: token}}]
)");
    auto credentials = load_kubeconfig(config);
    REQUIRE(credentials.ok());
    CHECK(credentials->insecure_skip_tls_verify);
    CHECK(credentials->address.host == "fd00::1");
    CHECK(credentials->address.base_path == "/prefix");
    CHECK(credentials->address.host_header() == "[fd00::1]:6443");
    CHECK(*credentials->bearer_token() == "first");
    dir.write("token", "second");
    CHECK(*credentials->bearer_token() == "second");
}

TEST_CASE("kubeconfig errors name the file and the problem") {
    auto check = [](const std::string& yaml, const std::string& expected) {
        auto credentials = parse_kubeconfig(yaml, "/", "bad.yaml");
        REQUIRE_FALSE(credentials.ok());
        INFO(credentials.error().message);
        CHECK(credentials.error().code == sb::ErrorCode::kInvalidArgument);
        CHECK(credentials.error().message.find("bad.yaml") != std::string::npos);
        CHECK(credentials.error().message.find(expected) != std::string::npos);
    };
    const std::string body = R"(
clusters: [{name: k, cluster: {server: "https://10.0.0.1:6443"}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: t}}]
)";
    check(body, "current-context");
    check("current-context: other\n" + body, "no entry named \"other\"");
    check(
        "current-context: c\nclusters: [{name: k, cluster: {server: \"http://x\"}}]\n"
        "contexts: [{name: c, context: {cluster: k}}]\n",
        "https");
    check(
        "current-context: c\nclusters: [{name: k, cluster: {server: \"https://x:99999\"}}]\n"
        "contexts: [{name: c, context: {cluster: k}}]\n",
        "bad port");
    check(
        "current-context: c\nclusters: [{name: k, cluster: {certificate-authority-data: "
        "\"@@@\", server: \"https://x\"}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
        "certificate-authority-data");
    check(
        "current-context: c\nclusters: [{name: k, cluster: {certificate-authority: "
        "missing.crt, server: \"https://x\"}}]\ncontexts: [{name: c, context: {cluster: k}}]\n",
        "missing.crt");
    check(
        "current-context: c\nclusters: [{name: k, cluster: {server: \"https://x\"}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        "users: [{name: u, user: {client-certificate-data: " +
            std::string(kCertData) + "}}]\n",
        "together");
    check("{ not yaml: [", "not valid YAML");
    check("- a list\n", "expected a map");
    CHECK(load_kubeconfig("/nonexistent/kubeconfig")
              .error()
              .message.find("/nonexistent/kubeconfig") != std::string::npos);
}

TEST_CASE("kubeconfig and server URL errors are one line whatever the file's strings hold") {
    // Found by tests/fuzz/kubeconfig_fuzz.cpp: a server URL or a context name
    // with a newline (a quoted YAML string) made a multi-line error.
    auto url = parse_server_url("c3dpdGNo\nZm9v");
    auto port = parse_server_url("https://host:4\x01");
    auto credentials = parse_kubeconfig("current-context: \"a\\nb\\x01\"\n", "/", "bad.yaml");
    REQUIRE_FALSE(url.ok());
    REQUIRE_FALSE(port.ok());
    REQUIRE_FALSE(credentials.ok());
    CHECK(credentials.error().message.find("no entry named") != std::string::npos);
    for (const auto& message :
         {url.error().message, port.error().message, credentials.error().message}) {
        INFO(message);
        CHECK(message.find_first_of("\n\r\x01") == std::string::npos);
    }
}

TEST_CASE("server URL: an IPv6 address without brackets is refused, not split at its last colon") {
    // Found by tests/fuzz/kubeconfig_fuzz.cpp.
    for (const char* url : {"https://fd00::1", "https://fd00:10::1]:6443/path"}) {
        INFO(url);
        auto address = parse_server_url(url);
        REQUIRE_FALSE(address.ok());
        CHECK(address.error().message.find("brackets") != std::string::npos);
    }
    auto bracketed = parse_server_url("https://[fd00::1]:6443");
    REQUIRE(bracketed.ok());
    CHECK(bracketed->host == "fd00::1");
    CHECK(bracketed->host_header() == "[fd00::1]:6443");
}

TEST_CASE("anonymous user: a context without a user sends no token") {
    auto credentials = parse_kubeconfig(
        "current-context: c\nclusters: [{name: k, cluster: {server: \"https://k.example\"}}]\n"
        "contexts: [{name: c, context: {cluster: k}}]\n",
        "/", "anon.yaml");
    REQUIRE(credentials.ok());
    CHECK(credentials->bearer_token()->empty());
    CHECK(credentials->client_cert_pem.empty());
}

TEST_CASE("in-cluster credentials from the service account folder and the environment") {
    TempDir dir;
    dir.write("token", "sa-token\n");
    dir.write("ca.crt", "CLUSTER CA");
    std::map<std::string, std::string> env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                              {"KUBERNETES_SERVICE_PORT", "443"}};
    auto lookup = [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
    };
    auto credentials = load_in_cluster(dir.path, lookup);
    REQUIRE(credentials.ok());
    CHECK(credentials->server == "https://10.96.0.1:443");
    CHECK(credentials->ca_pem == "CLUSTER CA");
    CHECK(*credentials->bearer_token() == "sa-token");
    dir.write("token", "rotated");
    CHECK(*credentials->bearer_token() == "rotated");

    env["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
    auto v6 = load_in_cluster(dir.path, lookup);
    REQUIRE(v6.ok());
    CHECK(v6->server == "https://[fd00:10:96::1]:443");

    env.erase("KUBERNETES_SERVICE_HOST");
    auto outside = load_in_cluster(dir.path, lookup);
    REQUIRE_FALSE(outside.ok());
    CHECK(outside.error().message.find("--kubeconfig") != std::string::npos);

    env["KUBERNETES_SERVICE_HOST"] = "10.96.0.1";
    auto no_folder = load_in_cluster(dir.path + "/missing", lookup);
    REQUIRE_FALSE(no_folder.ok());
    CHECK(no_folder.error().message.find("missing/token") != std::string::npos);
}

TEST_CASE("base64 of the *-data fields") {
    CHECK(*decode_base64("aGVsbG8=") == "hello");
    CHECK(*decode_base64("aGVs\nbG8h") == "hello!");
    CHECK(*decode_base64("aGk") == "hi");
    CHECK_FALSE(decode_base64("a").ok());
    CHECK_FALSE(decode_base64("aGk=x").ok());
    CHECK_FALSE(decode_base64("a*b").ok());
}
