// run_guarded: the one way a background thread (a DNS serving worker, the
// forwarder's reply path, the zone builder, a reloader) runs a unit of work
// without letting an exception end the thread, and with it the whole
// process. CoreDNS recovers a plugin's panic in ServeDNS, counts it in
// coredns_panics_total and answers SERVFAIL; so do we (the SERVFAIL is the
// caller's, see dns::Server; the DNS service exports the count).
//
// Thread safety: any thread. The counter is process-wide, as CoreDNS's is, so
// it keeps counting across a Corefile reload that replaces the DNS service.
#pragma once

#include <cstdint>
#include <exception>
#include <string_view>
#include <utility>

namespace sb {

// Exceptions caught by run_guarded since the process started.
uint64_t panics_total();

// Logs (at error: the first, then at each power of two, so a query that
// throws every time cannot flood the log) and counts one caught exception.
// `what` may be null. Never throws.
void record_panic(std::string_view where, const char* what) noexcept;

// Runs `body()`. True when it returned; false when it threw, after
// record_panic(where, ...). `body` runs on the caller's thread, once.
template <typename Body>
bool run_guarded(std::string_view where, Body&& body) noexcept {
    try {
        std::forward<Body>(body)();
        return true;
    } catch (const std::exception& e) {
        record_panic(where, e.what());
    } catch (...) {
        record_panic(where, nullptr);
    }
    return false;
}

}  // namespace sb
