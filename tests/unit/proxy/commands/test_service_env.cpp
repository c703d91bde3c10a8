// kubelet's Service environment variables (proxy/commands/service_env.h), against the
// Kubernetes documentation's Service page example and a multi-port Service
// with named ports.
#include <catch.hpp>

#include <string>
#include <vector>

#include "proxy/commands/service_env.h"
#include "watch/decode.h"
#include "watch/store.h"

using namespace sb;
using namespace sb::proxy;

namespace {

using Vars = std::vector<EnvVar>;

// A Service decoded as the daemon decodes one, from its spec's JSON.
watch::Service service(const std::string& ns, const std::string& name, const std::string& spec) {
    auto document =
        watch::decode_document(R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" +
                               name + R"(","namespace":")" + ns + R"("},"spec":)" + spec + "}");
    REQUIRE(document);
    REQUIRE(document->errors.empty());
    REQUIRE(document->objects.services.size() == 1);
    return document->objects.services.front();
}

const char* kMasterSpec =
    R"({"clusterIP":"10.96.0.1","ports":[{"name":"https","port":443,"targetPort":6443}]})";

std::shared_ptr<const watch::Snapshot> cluster(const std::vector<watch::Service>& services) {
    watch::Store store;
    store.upsert(service("default", "kubernetes", kMasterSpec));
    for (const auto& item : services) store.upsert(item);
    return store.snapshot();
}

std::vector<std::string> names(const Vars& vars) {
    std::vector<std::string> out;
    for (const auto& var : vars) out.push_back(var.name);
    return out;
}

const Vars kMaster = {
    {"KUBERNETES_PORT", "tcp://10.96.0.1:443"},
    {"KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443"},
    {"KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1"},
    {"KUBERNETES_PORT_443_TCP_PORT", "443"},
    {"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
    {"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
    {"KUBERNETES_SERVICE_PORT", "443"},
    {"KUBERNETES_SERVICE_PORT_HTTPS", "443"},
};

}  // namespace

TEST_CASE("pod-env: the Service page's redis-primary example, word for word") {
    auto redis = service("default", "redis-primary",
                         R"({"clusterIP":"10.0.0.11","ports":[{"port":6379,"protocol":"TCP"}]})");
    CHECK(service_variables(redis) == Vars{
                                          {"REDIS_PRIMARY_SERVICE_HOST", "10.0.0.11"},
                                          {"REDIS_PRIMARY_SERVICE_PORT", "6379"},
                                          {"REDIS_PRIMARY_PORT", "tcp://10.0.0.11:6379"},
                                          {"REDIS_PRIMARY_PORT_6379_TCP", "tcp://10.0.0.11:6379"},
                                          {"REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"},
                                          {"REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"},
                                          {"REDIS_PRIMARY_PORT_6379_TCP_ADDR", "10.0.0.11"},
                                      });
}

TEST_CASE("pod-env: a multi-port Service with named ports") {
    auto web = service("shop", "web-frontend", R"({"clusterIP":"10.96.7.7","ports":[
        {"name":"http","port":80,"targetPort":8080},
        {"name":"metrics-port","port":9090,"protocol":"TCP"},
        {"name":"dns","port":53,"protocol":"UDP"}]})");
    CHECK(service_variables(web) == Vars{
                                        {"WEB_FRONTEND_SERVICE_HOST", "10.96.7.7"},
                                        {"WEB_FRONTEND_SERVICE_PORT", "80"},
                                        {"WEB_FRONTEND_SERVICE_PORT_HTTP", "80"},
                                        {"WEB_FRONTEND_SERVICE_PORT_METRICS_PORT", "9090"},
                                        {"WEB_FRONTEND_SERVICE_PORT_DNS", "53"},
                                        {"WEB_FRONTEND_PORT", "tcp://10.96.7.7:80"},
                                        {"WEB_FRONTEND_PORT_80_TCP", "tcp://10.96.7.7:80"},
                                        {"WEB_FRONTEND_PORT_80_TCP_PROTO", "tcp"},
                                        {"WEB_FRONTEND_PORT_80_TCP_PORT", "80"},
                                        {"WEB_FRONTEND_PORT_80_TCP_ADDR", "10.96.7.7"},
                                        {"WEB_FRONTEND_PORT_9090_TCP", "tcp://10.96.7.7:9090"},
                                        {"WEB_FRONTEND_PORT_9090_TCP_PROTO", "tcp"},
                                        {"WEB_FRONTEND_PORT_9090_TCP_PORT", "9090"},
                                        {"WEB_FRONTEND_PORT_9090_TCP_ADDR", "10.96.7.7"},
                                        {"WEB_FRONTEND_PORT_53_UDP", "udp://10.96.7.7:53"},
                                        {"WEB_FRONTEND_PORT_53_UDP_PROTO", "udp"},
                                        {"WEB_FRONTEND_PORT_53_UDP_PORT", "53"},
                                        {"WEB_FRONTEND_PORT_53_UDP_ADDR", "10.96.7.7"},
                                    });
}

TEST_CASE("pod-env: an IPv6 ClusterIP is bracketed in the URLs, not in _ADDR") {
    auto vars =
        service_variables(service("a", "web", R"({"clusterIP":"fd00::21","ports":[{"port":80}]})"));
    CHECK(vars[0] == EnvVar{"WEB_SERVICE_HOST", "fd00::21"});
    CHECK(vars[2] == EnvVar{"WEB_PORT", "tcp://[fd00::21]:80"});
    CHECK(vars[6] == EnvVar{"WEB_PORT_80_TCP_ADDR", "fd00::21"});
}

TEST_CASE("pod-env: headless and ExternalName Services get none") {
    CHECK(service_variables(service("a", "db", R"({"clusterIP":"None","ports":[{"port":5432}]})"))
              .empty());
    CHECK(service_variables(
              service("a", "ext", R"({"type":"ExternalName","externalName":"db.example.com"})"))
              .empty());
}

TEST_CASE("pod-env: the master Service in every namespace; the namespace's own with links") {
    auto snapshot = cluster({
        service("shop", "cart", R"({"clusterIP":"10.96.1.1","ports":[{"port":80}]})"),
        service("other", "cart", R"({"clusterIP":"10.96.2.2","ports":[{"port":80}]})"),
    });
    auto shop = pod_service_environment(*snapshot, "shop", true);
    CHECK(std::find(shop.begin(), shop.end(), EnvVar{"CART_SERVICE_HOST", "10.96.1.1"}) !=
          shop.end());
    CHECK(shop.size() == kMaster.size() + 7);
    // Sorted by name, the master's among them.
    CHECK(std::is_sorted(shop.begin(), shop.end(),
                         [](const EnvVar& a, const EnvVar& b) { return a.name < b.name; }));
    CHECK(pod_service_environment(*snapshot, "shop", false) == kMaster);
    CHECK(pod_service_environment(*snapshot, "empty", true) == kMaster);
    auto in_default = pod_service_environment(*snapshot, "default", true);
    CHECK(in_default == kMaster);
}

TEST_CASE("pod-env: a namespace's own Service called kubernetes wins over the master's") {
    auto snapshot = cluster(
        {service("shop", "kubernetes", R"({"clusterIP":"10.96.9.9","ports":[{"port":8443}]})")});
    auto vars = pod_service_environment(*snapshot, "shop", true);
    CHECK(std::find(vars.begin(), vars.end(), EnvVar{"KUBERNETES_SERVICE_HOST", "10.96.9.9"}) !=
          vars.end());
    CHECK(names(vars) ==
          std::vector<std::string>{"KUBERNETES_PORT", "KUBERNETES_PORT_8443_TCP",
                                   "KUBERNETES_PORT_8443_TCP_ADDR", "KUBERNETES_PORT_8443_TCP_PORT",
                                   "KUBERNETES_PORT_8443_TCP_PROTO", "KUBERNETES_SERVICE_HOST",
                                   "KUBERNETES_SERVICE_PORT"});
    CHECK(pod_service_environment(*snapshot, "shop", false) == kMaster);
}

TEST_CASE("pod-env: a namespace is known when an object of the source is in it") {
    auto snapshot = cluster({service("shop", "cart", R"({"clusterIP":"None","ports":[]})")});
    CHECK(watch::namespace_in_use(*snapshot, "default"));
    CHECK(watch::namespace_in_use(*snapshot, "shop"));
    CHECK_FALSE(watch::namespace_in_use(*snapshot, "nope"));
}
