// The commands that show what a Pod sees (README "What does my Pod see").
// Each takes the arguments after its command word and returns the process
// exit code: 0 ok, 1 runtime failure, 2 bad flags or input (one line on
// stderr). Called from main's thread only.
#pragma once

#include <string>
#include <vector>

namespace sb::proxy {

// `switchboard pod-dns POD.json ...`: the resolv.conf kubelet writes for the Pod.
int run_pod_dns(const std::vector<std::string>& args);

// `switchboard pod-env --namespace NS ...`: the Service environment
// variables kubelet gives a Pod started now in NS.
int run_pod_env(const std::vector<std::string>& args);

// `switchboard lookup --pod NS/NAME QNAME ...`: each step of the name
// lookup the Pod's resolver makes.
int run_lookup(const std::vector<std::string>& args);

}  // namespace sb::proxy
