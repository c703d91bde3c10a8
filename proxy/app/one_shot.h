// The runs that do one thing and exit (docs/daemon.md): `plan`, --dry-run,
// --cleanup and --cleanup-kube-proxy. Each returns the exit code, a failure
// printed as one line "switchboard: ...".
//
// Thread safety: for main's thread; `plan` and --dry-run block until the
// source's first complete state (SIGINT and SIGTERM, blocked, end the wait).
#pragma once

#include "proxy/options/options.h"

namespace sb::proxy {

// `switchboard plan`: the Plan of the source's state as JSON on stdout.
int run_plan(const Options& options);

// --dry-run: what --proxy-mode would program, as text on stdout, whether or
// not this kernel could take it. Touches no kernel state.
int run_dry_run(const Options& options);

// --cleanup: every backend's cleanup(), whatever --proxy-mode says, and the
// node-local DNS addresses.
int run_cleanup(const Options& options);

// --cleanup-kube-proxy: removes kube-proxy's kernel objects (any mode).
int run_cleanup_kube_proxy();

}  // namespace sb::proxy
