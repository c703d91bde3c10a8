// `switchboard pod-env`: the Service environment variables kubelet gives a
// Pod started now in a namespace (docs/pod-commands.md, "pod-env").
#include <fmt/format.h>

#include <iostream>

#include "base/quote.h"
#include "proxy/app/daemon.h"
#include "proxy/app/source_state.h"
#include "proxy/commands/pod_command_line.h"
#include "proxy/commands/pod_commands.h"
#include "proxy/commands/service_env.h"

namespace sb::proxy {

int run_pod_env(const std::vector<std::string>& args) {
    std::string ns;
    bool enable_service_links = true;
    SourceFlags source;
    CommandLine line{
        "pod-env",
        "Prints the Service environment variables kubelet gives a Pod started now in "
        "NAMESPACE, one NAME=value a line, sorted: those of default/kubernetes in "
        "every namespace, and with service links (enableServiceLinks, the default) "
        "those of every Service of NAMESPACE with a ClusterIP. Headless and "
        "ExternalName Services have none.",
        {text_option({"--namespace", "-n"}, "the Pod's namespace", ns).as_required(),
         // kubelet-style `--enable-service-links false` parses as `=false`
         // does (bare: true).
         bool_option({"--enable-service-links"},
                     "the Pod's spec.enableServiceLinks: --enable-service-links=false keeps "
                     "only the KUBERNETES_* variables",
                     enable_service_links, FlagValue::kBooleanOrWord)
             .with_default("true")},
        "Example:\n"
        "  switchboard pod-env --namespace shop --source file:cluster.json\n"
        "  KUBERNETES_PORT=tcp://10.96.0.1:443\n"
        "  ...\n"
        "  REDIS_PRIMARY_PORT=tcp://10.0.0.11:6379\n"
        "  REDIS_PRIMARY_PORT_6379_TCP=tcp://10.0.0.11:6379\n"
        "  REDIS_PRIMARY_PORT_6379_TCP_ADDR=10.0.0.11\n"
        "  REDIS_PRIMARY_PORT_6379_TCP_PORT=6379\n"
        "  REDIS_PRIMARY_PORT_6379_TCP_PROTO=tcp\n"
        "  REDIS_PRIMARY_SERVICE_HOST=10.0.0.11\n"
        "  REDIS_PRIMARY_SERVICE_PORT=6379\n"
        "Exit codes: 0 ok; 1 the source failed; 2 bad flags, a bad source file, or a namespace "
        "no object of the source is in.\n"};
    add_source_flags(line.options, source);
    if (auto code = parse_pod_command_line(line, args)) return *code;

    auto settings = finish_source_flags(source, /*watch_pods=*/false);
    if (!settings) return report_command_error("pod-env", settings.error());
    auto state = load_state(*settings);
    if (!state) return report_command_error("pod-env", state.error());
    auto snapshot = state->store->snapshot();
    if (!watch::namespace_in_use(*snapshot, ns)) {
        return report_command_error(
            "pod-env", make_error(ErrorCode::kInvalidArgument,
                                  fmt::format("--namespace: {} is unknown: no Service, "
                                              "EndpointSlice or Pod of the source is in it",
                                              quote_for_message(ns))));
    }
    std::string text;
    for (const auto& variable : pod_service_environment(*snapshot, ns, enable_service_links)) {
        text += fmt::format("{}={}\n", variable.name, variable.value);
    }
    std::cout << text << std::flush;
    return kExitOk;
}

}  // namespace sb::proxy
