// Unpredictable numbers for what an off-path attacker must not guess: the
// forwarder's query IDs and loop-probe labels (issue 10). Drawn from the
// kernel's CSPRNG (getrandom(2)) in blocks, so a query costs no system call.
//
// Thread safety: none; one instance per thread (the forwarder's loop owns
// its own). Throws std::system_error when the kernel gives no randomness,
// which only a kernel without getrandom(2) (before 3.17) does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace sb::dns {

class SecureRandom {
  public:
    uint64_t next64();
    uint16_t next16();

  private:
    void take(void* out, size_t size);

    std::array<uint8_t, 256> block_{};
    size_t used_ = block_.size();  // all used: the first take() refills
};

}  // namespace sb::dns
