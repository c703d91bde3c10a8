#include "dns/forward/secure_random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace sb::dns {

void SecureRandom::take(void* out, size_t size) {
    if (block_.size() - used_ < size) {
        size_t filled = 0;
        while (filled < block_.size()) {
            ssize_t n = ::getrandom(block_.data() + filled, block_.size() - filled, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) throw std::system_error(errno, std::generic_category(), "getrandom");
            filled += static_cast<size_t>(n);
        }
        used_ = 0;
    }
    std::memcpy(out, block_.data() + used_, size);
    // Bytes handed out are wiped: a later memory disclosure cannot replay them.
    std::memset(block_.data() + used_, 0, size);
    used_ += size;
}

uint64_t SecureRandom::next64() {
    uint64_t value = 0;
    take(&value, sizeof(value));
    return value;
}

uint16_t SecureRandom::next16() {
    uint16_t value = 0;
    take(&value, sizeof(value));
    return value;
}

}  // namespace sb::dns
