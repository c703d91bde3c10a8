// Reading the one Pod a command is about from a file, as `kubectl get pod
// NAME -o json` prints it ("-" for stdin). Called from main's thread only.
#pragma once

#include <string>

#include "base/result.h"
#include "watch/objects.h"

namespace sb::proxy {

// The Pod, validated as the daemon validates Pods (watch/decode/pod.cpp).
// kInvalidArgument naming `path`: unreadable, not JSON, not a Pod (another
// kind, a list), or a Pod with a bad field.
Result<watch::Pod> read_pod_file(const std::string& path);

}  // namespace sb::proxy
