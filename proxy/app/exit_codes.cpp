#include "proxy/app/exit_codes.h"

#include <cstdio>

namespace sb::proxy {

int exit_code_for(const Error& error) {
    return error.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

void print_error(const std::string& message) {
    std::fprintf(stderr, "switchboard: %s\n", message.c_str());
}

int report_failure(const Error& error) {
    print_error(error.describe());
    return exit_code_for(error);
}

}  // namespace sb::proxy
