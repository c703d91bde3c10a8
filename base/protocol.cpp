#include "base/protocol.h"

#include <netinet/in.h>

namespace sb {

const char* to_string(Protocol protocol) {
    switch (protocol) {
        case Protocol::kTCP:
            return "TCP";
        case Protocol::kUDP:
            return "UDP";
        case Protocol::kSCTP:
            return "SCTP";
    }
    return "TCP";
}

uint8_t ip_protocol_number(Protocol protocol) {
    switch (protocol) {
        case Protocol::kTCP:
            return IPPROTO_TCP;
        case Protocol::kUDP:
            return IPPROTO_UDP;
        case Protocol::kSCTP:
            return IPPROTO_SCTP;
    }
    return IPPROTO_TCP;
}

}  // namespace sb
