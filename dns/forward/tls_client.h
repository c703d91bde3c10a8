// DNS over TLS to an upstream (RFC 7858): CoreDNS's `forward . tls://IP`
// with its `tls [CERT KEY [CA]]` and `tls_servername NAME`. One exchange is
// one connection (no reuse): TCP connect, TLS handshake (1.2 or 1.3), the
// length-prefixed query, the length-prefixed reply, all bounded by one
// deadline; non-blocking with poll. The upstream's certificate chain is
// verified against the CA file (else the system's CAs) and its name against
// `tls_servername`, or, without one, its IP address SAN: what Go's
// tls.DialWithDialer does for CoreDNS when ServerName is empty (it takes the
// dialled host, the IP). docs/corefile.md#forward.
//
// Thread safety: a loaded TlsClient is immutable; exchange() may be called
// from any number of threads at once (OpenSSL's SSL_CTX is shared
// read-only; each exchange owns its SSL and socket).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/ip.h"
#include "base/result.h"
#include "dns/wire/wire.h"

struct ssl_ctx_st;

namespace sb::dns {

// The files of forward's `tls` arguments, as CoreDNS's pkg/tls reads them:
// none: the system CAs; one: a CA file; two: a client certificate and key
// (system CAs); three: certificate, key and CA.
struct TlsFiles {
    std::string ca;    // empty: the system's CAs
    std::string cert;  // empty: no client certificate (then key is empty too)
    std::string key;
};

// One upstream asked over TLS and the name its certificate must carry
// (empty: its address).
struct TlsUpstream {
    HostPort address;
    std::string server_name;
    bool operator==(const TlsUpstream&) const = default;
};

class TlsClient {
  public:
    // Reads and checks every file now: a missing or unreadable file, a CA
    // file without a certificate, a key that does not match its
    // certificate is an error naming the file.
    static Result<std::shared_ptr<const TlsClient>> load(const TlsFiles& files,
                                                         std::string server_name);
    ~TlsClient();
    TlsClient(const TlsClient&) = delete;
    TlsClient& operator=(const TlsClient&) = delete;

    // `tls_servername`: the name every upstream's certificate must carry
    // unless the upstream has its own (tls://ADDRESS%NAME); may be empty.
    const std::string& server_name() const { return server_name_; }

    // `packet` to `upstream` over TLS; the parsed reply. The certificate
    // must name `server_name` (a host name, or an IP address checked as
    // one), or, when empty, the upstream's address. A failed handshake or
    // verification is an error (kUnavailable) naming why.
    Result<Message> exchange(const HostPort& upstream, std::string_view server_name,
                             const std::string& packet, std::chrono::milliseconds timeout,
                             const std::optional<IpAddress>& source = std::nullopt) const;

  private:
    TlsClient(ssl_ctx_st* context, std::string server_name)
        : context_(context), server_name_(std::move(server_name)) {}

    ssl_ctx_st* context_;
    std::string server_name_;
};

}  // namespace sb::dns
