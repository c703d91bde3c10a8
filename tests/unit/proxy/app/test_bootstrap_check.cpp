// The warning for an API server reached through a Service's ClusterIP.
#include <catch.hpp>

#include "proxy/app/bootstrap_check.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using namespace sb::proxy;

namespace {

watch::Snapshot with_kubernetes_service() {
    watch::Service service;
    service.meta.ns = "default";
    service.meta.name = "kubernetes";
    service.cluster_ips = {*IpAddress::parse("10.96.0.1"), *IpAddress::parse("fd00::1")};
    return *watch::SnapshotBuilder().add(service).build();
}

}  // namespace

TEST_CASE("an API server reached through a ClusterIP is named, with the way out") {
    auto snapshot = with_kubernetes_service();
    auto warning = service_address_warning(snapshot, "10.96.0.1");
    REQUIRE(warning);
    CHECK(warning->find("KUBERNETES_SERVICE_HOST=10.96.0.1") != std::string::npos);
    CHECK(warning->find("Service default/kubernetes") != std::string::npos);
    CHECK(warning->find("--kubeconfig") != std::string::npos);
    CHECK(warning->find('\n') == std::string::npos);
    CHECK(service_address_warning(snapshot, "fd00::1"));
}

TEST_CASE("a real address, a host name or no in-cluster host is not warned about") {
    auto snapshot = with_kubernetes_service();
    CHECK_FALSE(service_address_warning(snapshot, "192.0.2.10"));
    CHECK_FALSE(service_address_warning(snapshot, "control-plane.example"));
    CHECK_FALSE(service_address_warning(snapshot, ""));
    CHECK_FALSE(service_address_warning(*watch::SnapshotBuilder().build(), "10.96.0.1"));
}
