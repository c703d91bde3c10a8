// libFuzzer target: the API client's credentials (watch/kube/credentials.h).
// The input is, at once, a kubeconfig (parse_kubeconfig), the text of a
// *-data field (decode_base64) and a server URL (parse_server_url).
// Invariants checked: nothing crashes, hangs or throws (yaml-cpp's
// exceptions must stay inside the parser); every error is one line naming
// the file; a parsed server URL, printed back as https://HOST:PORT/PATH,
// parses to the same address; base64 decoding inverts encoding, both of the
// input's bytes and of what a decoded input gives.
#include <cstdint>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "watch/kube/credentials.h"

namespace {

using namespace sb::watch::kube;

// Relative paths in the kubeconfig resolve here: a folder that does not
// exist, so that a fuzzed kubeconfig reads no file it names relatively.
const std::string kBaseDir = "/nonexistent/sb-fuzz";
const std::string kFile = "fuzz/kubeconfig";

std::string encode_base64(std::string_view bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        uint32_t bits = (uint32_t{static_cast<uint8_t>(bytes[i])} << 16) |
                        (uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8) |
                        uint32_t{static_cast<uint8_t>(bytes[i + 2])};
        for (int shift = 18; shift >= 0; shift -= 6) out += kAlphabet[(bits >> shift) & 63];
    }
    const size_t rest = bytes.size() - i;
    if (rest > 0) {
        uint32_t bits = uint32_t{static_cast<uint8_t>(bytes[i])} << 16;
        if (rest == 2) bits |= uint32_t{static_cast<uint8_t>(bytes[i + 1])} << 8;
        out += kAlphabet[(bits >> 18) & 63];
        out += kAlphabet[(bits >> 12) & 63];
        out += rest == 2 ? kAlphabet[(bits >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

void check_server_url(std::string_view url) {
    auto address = parse_server_url(url);
    if (!address) {
        FUZZ_REQUIRE_ONE_LINE(address.error().message);
        return;
    }
    FUZZ_REQUIRE(!address->host.empty());
    FUZZ_REQUIRE(address->base_path.empty() || address->base_path.front() == '/');
    auto again = parse_server_url("https://" + address->host_header() + address->base_path);
    FUZZ_REQUIRE(again.ok());
    FUZZ_REQUIRE(again->host == address->host && again->port == address->port &&
                 again->base_path == address->base_path);
}

void check_base64(std::string_view text) {
    auto own = decode_base64(encode_base64(text));
    FUZZ_REQUIRE(own.ok() && *own == text);
    auto decoded = decode_base64(text);
    if (!decoded) {
        FUZZ_REQUIRE_ONE_LINE(decoded.error().message);
        return;
    }
    FUZZ_REQUIRE(decoded->size() <= text.size());
    auto again = decode_base64(encode_base64(*decoded));
    FUZZ_REQUIRE(again.ok() && *again == *decoded);
}

void check_kubeconfig(std::string_view text) {
    auto credentials = parse_kubeconfig(text, kBaseDir, kFile);
    if (!credentials) {
        FUZZ_REQUIRE(credentials.error().message.rfind("kubeconfig " + kFile + ": ", 0) == 0);
        FUZZ_REQUIRE_ONE_LINE(credentials.error().message);
        return;
    }
    FUZZ_REQUIRE(!credentials->server.empty());
    FUZZ_REQUIRE(credentials->client_cert_pem.empty() == credentials->client_key_pem.empty());
    check_server_url(credentials->server);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    check_kubeconfig(text);
    check_base64(text);
    check_server_url(text);
    return 0;
}
