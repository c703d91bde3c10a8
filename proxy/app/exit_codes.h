// switchboard's exit codes (docs/daemon.md, "Exit codes") and the one line
// a failure prints. Thread safety: pure, or writes one line to stderr.
#pragma once

#include <string>

#include "base/result.h"

namespace sb::proxy {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a runtime failure
inline constexpr int kExitUsage = 2;    // bad flags or configuration

// Exit code for an error: kInvalidArgument (bad flag, file or kubeconfig) is
// a configuration problem, anything else a runtime failure.
int exit_code_for(const Error& error);

// Prints "switchboard: MESSAGE" on stderr.
void print_error(const std::string& message);

// Prints `error` as print_error() does and returns exit_code_for(error).
int report_failure(const Error& error);

}  // namespace sb::proxy
