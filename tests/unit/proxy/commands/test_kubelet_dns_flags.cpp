// Kubelet's DNS settings for pod-dns and lookup (proxy/commands/kubelet_dns_flags.h):
// a KubeletConfiguration as kubeadm writes it, the flags over it, and the
// errors that are exit 2.
#include <catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "proxy/commands/kubelet_dns_flags.h"

using namespace sb;
using namespace sb::proxy;

namespace {

// A file in a fresh temporary folder, removed with the fixture.
struct TempFiles {
    std::filesystem::path folder =
        std::filesystem::temp_directory_path() /
        ("sb-kubelet-dns-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    TempFiles() { std::filesystem::create_directories(folder); }
    ~TempFiles() { std::filesystem::remove_all(folder); }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(folder / name) << text;
        return (folder / name).string();
    }
    static int& counter() {
        static int n = 0;
        return n;
    }
};

// kubeadm's /var/lib/kubelet/config.yaml, its DNS part.
constexpr const char* kKubeadmConfig =
    "apiVersion: kubelet.config.k8s.io/v1beta1\n"
    "kind: KubeletConfiguration\n"
    "clusterDNS:\n"
    "- 10.96.0.10\n"
    "clusterDomain: cluster.local\n"
    "resolvConf: RESOLV\n";

}  // namespace

TEST_CASE("kubelet DNS: kubeadm's KubeletConfiguration gives the three settings") {
    auto parsed = parse_kubelet_config_dns(kKubeadmConfig, "config.yaml");
    REQUIRE(parsed);
    CHECK(parsed->cluster_dns == std::vector<std::string>{"10.96.0.10"});
    CHECK(parsed->cluster_domain == "cluster.local");
    CHECK(parsed->resolv_conf == "RESOLV");
    auto empty = parse_kubelet_config_dns("kind: KubeletConfiguration\n", "config.yaml");
    REQUIRE(empty);
    CHECK_FALSE(empty->cluster_dns);
    CHECK_FALSE(empty->resolv_conf);
}

TEST_CASE("kubelet DNS: a file that is not a KubeletConfiguration is one line naming it") {
    for (const char* text : {"- a\n- b\n", "clusterDNS: {a: 1}\n", "clusterDNS: [\n"}) {
        auto parsed = parse_kubelet_config_dns(text, "/k/config.yaml");
        REQUIRE_FALSE(parsed);
        CHECK(parsed.error().code == ErrorCode::kInvalidArgument);
        CHECK(parsed.error().message.rfind("--kubelet-config: /k/config.yaml", 0) == 0);
        CHECK(parsed.error().message.find('\n') == std::string::npos);
    }
}

TEST_CASE("kubelet DNS: the file's settings, with the flags over them") {
    TempFiles files;
    const std::string resolv =
        files.write("resolv.conf", "nameserver 192.0.2.53\nsearch corp.example\n");
    std::string config = kKubeadmConfig;
    config.replace(config.find("RESOLV"), 6, resolv);
    KubeletDnsFlags flags;
    flags.kubelet_config = files.write("config.yaml", config);
    auto settings = finish_kubelet_dns_flags(flags);
    REQUIRE(settings);
    CHECK(settings->cluster_dns == std::vector<std::string>{"10.96.0.10"});
    CHECK(settings->cluster_domain == "cluster.local");
    CHECK(settings->node.searches == std::vector<std::string>{"corp.example"});

    flags.cluster_dns = "10.0.0.10,fd00::10";
    flags.cluster_domain = "corp.internal.";
    flags.resolv_conf = "";
    settings = finish_kubelet_dns_flags(flags);
    REQUIRE(settings);
    CHECK(settings->cluster_dns == std::vector<std::string>{"10.0.0.10", "fd00::10"});
    CHECK(settings->cluster_domain == "corp.internal");
    CHECK_FALSE(settings->resolv_conf_set);
    CHECK(settings->node.nameservers.empty());
}

TEST_CASE("kubelet DNS: bad addresses and unreadable files are exit-2 errors naming the flag") {
    TempFiles files;
    KubeletDnsFlags flags;
    flags.kubelet_config = (files.folder / "absent.yaml").string();
    auto settings = finish_kubelet_dns_flags(flags);
    REQUIRE_FALSE(settings);
    CHECK(settings.error().message.rfind("--kubelet-config: ", 0) == 0);

    flags.kubelet_config = files.write("config.yaml", "clusterDNS: [not-an-ip]\n");
    settings = finish_kubelet_dns_flags(flags);
    REQUIRE_FALSE(settings);
    CHECK(settings.error().message.find("\"not-an-ip\" is not an IP address") != std::string::npos);

    flags.cluster_dns = "10.96.0.10,,";
    settings = finish_kubelet_dns_flags(flags);
    REQUIRE_FALSE(settings);
    CHECK(settings.error().message.rfind("--cluster-dns: ", 0) == 0);

    flags.cluster_dns = "10.96.0.10";
    flags.resolv_conf = (files.folder / "absent.conf").string();
    settings = finish_kubelet_dns_flags(flags);
    REQUIRE_FALSE(settings);
    CHECK(settings.error().code == ErrorCode::kInvalidArgument);
    CHECK(settings.error().message.rfind("--node-resolv-conf: ", 0) == 0);
}
