// Kubelet's resolv.conf for a Pod (dns/search_path/pod_resolv_conf.h), against the
// Kubernetes documentation's "DNS for Services and Pods" page: each
// dnsPolicy, the dnsConfig example, the IPv6 example, and kubelet's limits.
#include <catch.hpp>

#include <string>
#include <vector>

#include "dns/search_path/pod_resolv_conf.h"
#include "dns/search_path/search_limits.h"
#include "watch/decode.h"

using namespace sb;
using namespace sb::dns;

namespace {

// A Pod decoded as the daemon decodes one, from its spec's JSON.
watch::Pod pod_of(const std::string& spec, const std::string& ns = "default") {
    auto document = watch::decode_document(R"({"apiVersion":"v1","kind":"Pod","metadata":)"
                                           R"({"name":"p","namespace":")" +
                                           ns + R"("},"spec":)" + spec + "}");
    REQUIRE(document);
    REQUIRE(document->errors.empty());
    REQUIRE(document->objects.pods.size() == 1);
    return document->objects.pods.front();
}

// kubelet as kubeadm configures it, on a node whose resolv.conf is `node`.
KubeletDnsSettings kubeadm(const std::string& node =
                               "nameserver 192.0.2.53\n"
                               "search corp.example\n"
                               "options timeout:2\n",
                           std::vector<std::string> cluster_dns = {"10.96.0.10"}) {
    KubeletDnsSettings settings;
    settings.cluster_dns = std::move(cluster_dns);
    settings.cluster_domain = "cluster.local";
    settings.node = parse_resolv_conf_as_kubelet(node);
    return settings;
}

PodResolvConf compose(const watch::Pod& pod, const KubeletDnsSettings& settings) {
    auto conf = compose_pod_resolv_conf(pod, settings);
    REQUIRE(conf);
    return *conf;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("pod-dns: ClusterFirst is the cluster DNS server, the cluster's search list, ndots:5") {
    auto conf = compose(pod_of(R"({"containers":[]})", "shop"), kubeadm());
    CHECK(conf.nameservers == Strings{"10.96.0.10"});
    // The node's search domains come after the cluster's; its options do not.
    CHECK(conf.searches ==
          Strings{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"});
    CHECK(conf.options == Strings{"ndots:5"});
    CHECK(conf.warnings.empty());
    CHECK(format_resolv_conf(conf) ==
          "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\n"
          "nameserver 10.96.0.10\n"
          "options ndots:5\n");
}

TEST_CASE("pod-dns: dnsPolicy absent is ClusterFirst") {
    CHECK(compose(pod_of(R"({})"), kubeadm()).nameservers == Strings{"10.96.0.10"});
}

TEST_CASE("pod-dns: the documentation's IPv6 example, word for word") {
    auto settings = kubeadm("nameserver 2001:db8::53\n", {"2001:db8:30::a"});
    settings.cluster_domain = "cluster-domain.example";
    CHECK(format_resolv_conf(compose(pod_of(R"({"dnsPolicy":"ClusterFirst"})"), settings)) ==
          "search default.svc.cluster-domain.example svc.cluster-domain.example "
          "cluster-domain.example\n"
          "nameserver 2001:db8:30::a\n"
          "options ndots:5\n");
}

TEST_CASE("pod-dns: Default copies the node's resolv.conf, options included") {
    auto conf = compose(pod_of(R"({"dnsPolicy":"Default"})"), kubeadm());
    CHECK(conf.nameservers == Strings{"192.0.2.53"});
    CHECK(conf.searches == Strings{"corp.example"});
    CHECK(conf.options == Strings{"timeout:2"});
}

TEST_CASE("pod-dns: a hostNetwork Pod under ClusterFirst falls back to Default") {
    auto conf = compose(pod_of(R"({"dnsPolicy":"ClusterFirst","hostNetwork":true})"), kubeadm());
    CHECK(conf.nameservers == Strings{"192.0.2.53"});
    CHECK(conf.searches == Strings{"corp.example"});
}

TEST_CASE("pod-dns: ClusterFirstWithHostNet keeps a hostNetwork Pod on the cluster DNS") {
    auto conf = compose(
        pod_of(R"({"dnsPolicy":"ClusterFirstWithHostNet","hostNetwork":true})", "kube-system"),
        kubeadm());
    CHECK(conf.nameservers == Strings{"10.96.0.10"});
    CHECK(conf.searches.front() == "kube-system.svc.cluster.local");
    CHECK(conf.options == Strings{"ndots:5"});
}

TEST_CASE("pod-dns: the documentation's dnsConfig example (dnsPolicy None)") {
    auto pod = pod_of(R"({"containers":[{"name":"test","image":"nginx"}],"dnsPolicy":"None",
        "dnsConfig":{"nameservers":["192.0.2.1"],
                     "searches":["ns1.svc.cluster-domain.example","my.dns.search.suffix"],
                     "options":[{"name":"ndots","value":"2"},{"name":"edns0"}]}})");
    auto conf = compose(pod, kubeadm());
    // None starts from nothing: neither the cluster's nor the node's settings.
    CHECK(conf.nameservers == Strings{"192.0.2.1"});
    CHECK(conf.searches == Strings{"ns1.svc.cluster-domain.example", "my.dns.search.suffix"});
    CHECK(conf.options == Strings{"ndots:2", "edns0"});
    CHECK(format_resolv_conf(conf) ==
          "search ns1.svc.cluster-domain.example my.dns.search.suffix\n"
          "nameserver 192.0.2.1\n"
          "options ndots:2 edns0\n");
}

TEST_CASE("pod-dns: dnsPolicy None without a nameserver is the API server's error") {
    for (const char* spec : {R"({"dnsPolicy":"None"})",
                             R"({"dnsPolicy":"None","dnsConfig":{"searches":["a.example"]}})"}) {
        auto conf = compose_pod_resolv_conf(pod_of(spec), kubeadm());
        REQUIRE_FALSE(conf);
        CHECK(conf.error().code == ErrorCode::kInvalidArgument);
        CHECK(conf.error().message.find("must provide at least one DNS nameserver when "
                                        "`dnsPolicy` is `None`") != std::string::npos);
    }
}

TEST_CASE("pod-dns: dnsConfig adds to ClusterFirst, without duplicates; its options win") {
    auto pod = pod_of(R"({"dnsConfig":{"nameservers":["10.96.0.10","192.0.2.9"],
        "searches":["svc.cluster.local","extra.example"],
        "options":[{"name":"ndots","value":"2"},{"name":"single-request-reopen"},
                   {"name":"timeout","value":""}]}})");
    auto conf = compose(pod, kubeadm());
    CHECK(conf.nameservers == Strings{"10.96.0.10", "192.0.2.9"});
    CHECK(conf.searches == Strings{"default.svc.cluster.local", "svc.cluster.local",
                                   "cluster.local", "corp.example", "extra.example"});
    // An option with an empty value is written as a flag.
    CHECK(conf.options == Strings{"ndots:2", "single-request-reopen", "timeout"});
}

TEST_CASE("pod-dns: more than 3 nameservers are cut to 3, with kubelet's warning") {
    auto settings = kubeadm("nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.3\n");
    auto conf = compose(
        pod_of(R"({"dnsPolicy":"Default","dnsConfig":{"nameservers":["192.0.2.4"]}})"), settings);
    CHECK(conf.nameservers == Strings{"192.0.2.1", "192.0.2.2", "192.0.2.3"});
    REQUIRE(conf.warnings.size() == 1);
    CHECK(conf.warnings[0] ==
          "DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, "
          "the applied nameserver line is: 192.0.2.1 192.0.2.2 192.0.2.3");
}

TEST_CASE("pod-dns: a search list over 32 domains is cut to 32, with kubelet's warning") {
    std::string node = "nameserver 192.0.2.53\nsearch";
    for (int i = 0; i < 40; ++i) node += " d" + std::to_string(i) + ".example";
    auto conf = compose(pod_of(R"({})"), kubeadm(node + "\n"));
    REQUIRE(conf.searches.size() == kMaxSearchPaths);
    CHECK(conf.searches[2] == "cluster.local");
    CHECK(conf.searches.back() == "d28.example");  // 3 cluster domains + 29 of the node's
    REQUIRE(conf.warnings.size() == 1);
    CHECK(conf.warnings[0].rfind("DNSConfigForming: Search Line limits were exceeded, some "
                                 "search paths have been omitted, the applied search line is: "
                                 "default.svc.cluster.local svc.cluster.local",
                                 0) == 0);
}

TEST_CASE("pod-dns: a search line over 2048 characters is cut from its end") {
    // The cluster's three domains take 57 characters; each node domain of
    // 108 adds 109 with its space: 18 fit in 2048 (2019), 19 do not (2128).
    std::string node = "nameserver 192.0.2.53\nsearch";
    std::vector<std::string> long_domains;
    for (int i = 0; i < 20; ++i) {
        std::string domain = std::string(1, static_cast<char>('a' + i)) + std::string(58, 'x') +
                             "." + std::string(40, 'y') + ".example";
        REQUIRE(domain.size() == 108);
        long_domains.push_back(domain);
        node += " " + domain;
    }
    auto conf = compose(pod_of(R"({})"), kubeadm(node + "\n"));
    REQUIRE(conf.searches.size() == 3 + 18);
    CHECK(conf.searches.back() == long_domains[17]);
    size_t line = 0;
    for (const auto& search : conf.searches) line += search.size() + 1;
    CHECK(line - 1 == 2019);
    CHECK(line - 1 <= kMaxSearchListChars);
    CHECK(conf.warnings.size() == 1);
}

TEST_CASE("pod-dns: a search domain over 253 characters is dropped, with the warning") {
    const std::string too_long = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                 std::string(63, 'c') + "." + std::string(63, 'd') + ".example";
    auto conf = compose(pod_of(R"({})"),
                        kubeadm("nameserver 192.0.2.53\nsearch " + too_long + " ok.example\n"));
    CHECK(conf.searches.back() == "ok.example");
    CHECK(std::find(conf.searches.begin(), conf.searches.end(), too_long) == conf.searches.end());
    CHECK(conf.warnings.size() == 1);
}

TEST_CASE("pod-dns: without clusterDNS, ClusterFirst falls back to Default with a warning") {
    auto conf = compose(pod_of(R"({})"), kubeadm("nameserver 192.0.2.53\n", {}));
    CHECK(conf.nameservers == Strings{"192.0.2.53"});
    CHECK(conf.options.empty());
    REQUIRE(conf.warnings.size() == 1);
    CHECK(conf.warnings[0] ==
          "MissingClusterDNS: kubelet does not have ClusterDNS IP configured and cannot create "
          "Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.");
}

TEST_CASE("pod-dns: resolvConf \"\" gives Default Pods the local machine's resolver") {
    auto settings = kubeadm();
    settings.resolv_conf_set = false;
    settings.node = {};
    auto conf = compose(pod_of(R"({"dnsPolicy":"Default"})"), settings);
    CHECK(conf.nameservers == Strings{"127.0.0.1"});
    CHECK(conf.searches == Strings{"."});
}

TEST_CASE("pod-dns: without a cluster domain, ClusterFirst has the node's search list only") {
    auto settings = kubeadm();
    settings.cluster_domain.clear();
    CHECK(compose(pod_of(R"({})"), settings).searches == Strings{"corp.example"});
}
