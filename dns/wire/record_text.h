// Records as text, in zone-file presentation ("web.a.svc.cluster.local. 30
// IN A 10.96.0.21"), for the commands that explain answers. Pure.
#pragma once

#include <string>

#include "dns/wire/wire.h"

namespace sb::dns {

// The record's data: an address, a name, "PRIORITY WEIGHT PORT TARGET" for
// SRV; RFC 3597's "\# LENGTH HEX" for other types and for data that does
// not fit its type.
std::string rdata_text(const Record& record);

// "NAME TTL IN TYPE DATA".
std::string record_text(const Record& record);

}  // namespace sb::dns
