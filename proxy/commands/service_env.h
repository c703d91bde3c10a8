// The Service environment variables kubelet gives a Pod (pkg/kubelet:
// getServiceEnvVarMap, envvars.FromServices): what `switchboard pod-env`
// prints (docs/pod-commands.md, "pod-env"). Pure.
#pragma once

#include <string>
#include <vector>

#include "watch/objects.h"
#include "watch/snapshot.h"

namespace sb::proxy {

struct EnvVar {
    std::string name;
    std::string value;
    bool operator==(const EnvVar&) const = default;
};

// One Service's variables in kubelet's order (`<P>_SERVICE_HOST`,
// `<P>_SERVICE_PORT`, one `<P>_SERVICE_PORT_<NAME>` per named port, then
// the Docker link variables `<P>_PORT` and, per port,
// `<P>_PORT_<port>_<PROTO>` with `_PROTO`, `_PORT`, `_ADDR`); none for a
// Service without a ClusterIP (headless, ExternalName) or without ports.
std::vector<EnvVar> service_variables(const watch::Service& service);

// The variables of a Pod started now in namespace `ns`, sorted by name
// (kubelet keeps them in a map): the master Service default/kubernetes in
// every namespace, and with `enable_service_links` every Service of `ns`
// (a Service of `ns` called kubernetes over the master's, as kubelet's
// map ends up either way).
std::vector<EnvVar> pod_service_environment(const watch::Snapshot& snapshot, const std::string& ns,
                                            bool enable_service_links);

}  // namespace sb::proxy
