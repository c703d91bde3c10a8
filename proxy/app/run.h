// run(): what the parsed options ask for, from main(): one of the one-shot
// runs (proxy/app/one_shot.h) or the daemon until SIGINT or SIGTERM.
#pragma once

#include "proxy/options/options.h"

namespace sb::proxy {

// Runs what `options` ask for (the daemon, plan, --dry-run or --cleanup) and
// returns the exit code; errors are printed as one line "switchboard: ...".
// Precondition: SIGINT and SIGTERM are blocked in every thread (main() does
// it first), so that they are taken here with sigtimedwait.
int run(const Options& options);

}  // namespace sb::proxy
