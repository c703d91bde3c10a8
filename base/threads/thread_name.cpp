#include "base/threads/thread_name.h"

#include <pthread.h>

#include <algorithm>
#include <array>

namespace sb {

void name_this_thread(std::string_view name) noexcept {
    std::array<char, kThreadNameMax + 1> buffer{};
    const size_t length = std::min(name.size(), kThreadNameMax);
    std::copy_n(name.data(), length, buffer.data());
    (void)::pthread_setname_np(::pthread_self(), buffer.data());
}

}  // namespace sb
