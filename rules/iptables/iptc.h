// The kernel edge of the iptables backend: the Xtables interface
// (xtables.h) over libiptc (IPv4) / libip6tc (IPv6) and the legacy x_tables
// kernel interface. A table opened is a libiptc handle (iptc_init); its
// commit is one iptc_commit, i.e. one atomic table replace; a backup is a
// TableSnapshot (table_snapshot.h), since libiptc cannot put a table back.
// The lock is /run/xtables.lock, as iptables-legacy -w takes it. Not
// thread-safe; one caller at a time.
#pragma once

#include <memory>

#include "rules/iptables/xtables.h"

namespace sb::rules::iptables {

// Touches no kernel state until used.
std::unique_ptr<Xtables> make_libiptc_xtables();

}  // namespace sb::rules::iptables
