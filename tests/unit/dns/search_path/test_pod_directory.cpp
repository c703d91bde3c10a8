// The source address -> client Pod index of the server-side search path
// (dns/search_path/pod_directory.h): which Pods are entered, whose search path counts
// as the default one, and who holds a reused address.
#include <catch.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "dns/search_path/pod_directory.h"

using namespace sb;
using namespace sb::dns;
using watch::DnsPolicy;
using watch::Pod;
using watch::PodPhase;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

Pod pod(const char* ns, const char* name, std::vector<const char*> ips, int created_seconds = 0) {
    Pod p;
    p.meta.ns = ns;
    p.meta.name = name;
    p.node_name = "node-a";
    p.phase = PodPhase::kRunning;
    for (const char* address : ips) p.pod_ips.push_back(ip(address));
    p.created =
        std::chrono::system_clock::time_point(std::chrono::seconds(1700000000 + created_seconds));
    return p;
}

std::shared_ptr<const PodDirectory> build(const std::vector<Pod>& pods,
                                          std::string_view node = "node-a") {
    std::vector<const Pod*> pointers;
    for (const auto& p : pods) pointers.push_back(&p);
    return PodDirectory::build(pointers, node);
}

}  // namespace

TEST_CASE("pod directory: a Pod's addresses map to its namespace, other nodes' Pods are unknown") {
    Pod other_node = pod("b", "elsewhere", {"10.244.2.5"});
    other_node.node_name = "node-b";
    auto directory = build({pod("a", "web", {"10.244.1.5", "fd00::5"}), other_node});
    REQUIRE(directory->size() == 2);
    const PodClient* v4 = directory->find(ip("10.244.1.5"));
    REQUIRE(v4);
    CHECK(*v4 == PodClient{"a", true});
    REQUIRE(directory->find(ip("fd00::5")));
    CHECK(directory->find(ip("fd00::5"))->ns == "a");
    // A client of a dual-stack socket shows up IPv4-mapped.
    REQUIRE(directory->find(ip("::ffff:10.244.1.5")));
    CHECK(directory->find(ip("10.244.2.5")) == nullptr);
    CHECK(directory->find(ip("10.244.1.6")) == nullptr);
    // No node name: no Pod is this node's.
    CHECK(build({pod("a", "web", {"10.244.1.5"})}, "")->size() == 0);
}

TEST_CASE("pod directory: hostNetwork and finished Pods are never entered") {
    Pod host = pod("kube-system", "proxy", {"192.168.1.10"});
    host.host_network = true;
    host.dns_policy = DnsPolicy::kClusterFirstWithHostNet;
    Pod done = pod("a", "job", {"10.244.1.7"});
    done.phase = PodPhase::kSucceeded;
    Pod failed = pod("a", "crashed", {"10.244.1.8"});
    failed.phase = PodPhase::kFailed;
    Pod pending = pod("a", "starting", {"10.244.1.9"});
    pending.phase = PodPhase::kPending;
    auto directory = build({host, done, failed, pending});
    CHECK(directory->find(ip("192.168.1.10")) == nullptr);
    CHECK(directory->find(ip("10.244.1.7")) == nullptr);
    CHECK(directory->find(ip("10.244.1.8")) == nullptr);
    CHECK(directory->find(ip("10.244.1.9")) != nullptr);  // it may already ask
    CHECK(directory->size() == 1);
}

TEST_CASE("pod directory: which Pods walk the default search path") {
    auto entry = [](Pod p) {
        auto directory = build({p});
        const PodClient* client = directory->find(p.pod_ips[0]);
        REQUIRE(client);
        return client->default_search;
    };
    Pod p = pod("a", "p", {"10.244.1.5"});
    CHECK(entry(p));  // ClusterFirst, no dnsConfig
    p.dns_policy = DnsPolicy::kClusterFirstWithHostNet;
    CHECK(entry(p));  // kubelet treats it as ClusterFirst without hostNetwork
    p.dns_policy = DnsPolicy::kDefault;
    CHECK_FALSE(entry(p));  // the node's resolv.conf
    p.dns_policy = DnsPolicy::kNone;
    p.dns_config = watch::PodDnsConfig{{"10.0.0.10"}, {"a.svc.cluster.local"}, {}};
    CHECK_FALSE(entry(p));
    p.dns_policy = DnsPolicy::kClusterFirst;
    p.dns_config = watch::PodDnsConfig{{}, {"corp.example"}, {}};
    CHECK_FALSE(entry(p));  // searches of its own
    p.dns_config = watch::PodDnsConfig{{"192.0.2.53"}, {}, {{"ndots", "2"}}};
    CHECK(entry(p));  // options and nameservers leave the search list alone
}

TEST_CASE("pod directory: a reused Pod IP maps to the new Pod") {
    Pod old_pod = pod("a", "old", {"10.244.1.5"}, 0);
    Pod new_pod = pod("b", "new", {"10.244.1.5"}, 60);
    // Whatever the order the Pods come in.
    for (auto pods : {std::vector<Pod>{old_pod, new_pod}, std::vector<Pod>{new_pod, old_pod}}) {
        auto directory = build(pods);
        REQUIRE(directory->find(ip("10.244.1.5")));
        CHECK(directory->find(ip("10.244.1.5"))->ns == "b");
    }
    // The old one finished: only the new one is a candidate anyway.
    old_pod.phase = PodPhase::kSucceeded;
    CHECK(build({new_pod, old_pod})->find(ip("10.244.1.5"))->ns == "b");
}

TEST_CASE("pod directory: two Pods created at one time make the address ambiguous") {
    Pod first = pod("a", "one", {"10.244.1.5"}, 10);
    Pod second = pod("b", "two", {"10.244.1.5"}, 10);
    auto directory = build({first, second});
    CHECK(directory->find(ip("10.244.1.5")) == nullptr);
    CHECK(directory->ambiguous() == 1);
    CHECK(directory->size() == 0);
    // A third, newer Pod holds it again.
    Pod third = pod("c", "three", {"10.244.1.5"}, 20);
    auto resolved = build({first, second, third});
    REQUIRE(resolved->find(ip("10.244.1.5")));
    CHECK(resolved->find(ip("10.244.1.5"))->ns == "c");
    CHECK(resolved->ambiguous() == 0);
}
