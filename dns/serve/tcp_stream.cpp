#include "dns/serve/tcp_stream.h"

#include <algorithm>

namespace sb::dns {

namespace {

size_t frame_length(const std::string& bytes, size_t at) {
    return (static_cast<size_t>(static_cast<uint8_t>(bytes[at])) << 8) |
           static_cast<uint8_t>(bytes[at + 1]);
}

}  // namespace

bool TcpStream::paused() const {
    return output_.size() - output_pos_ >= kOutputBound || pending_forwards_ >= kMaxPendingForwards;
}

bool TcpStream::has_frame() const {
    return held_input() >= 2 && held_input() - 2 >= frame_length(input_, input_pos_);
}

size_t TcpStream::read_room() const {
    if (input_ended_ || paused()) return 0;
    return kMaxFrame - held_input();
}

void TcpStream::received(std::string_view bytes) {
    if (input_pos_ > 0) {
        input_.erase(0, input_pos_);
        input_pos_ = 0;
    }
    input_.append(bytes.substr(0, kMaxFrame - input_.size()));
}

void TcpStream::received_end() {
    input_ended_ = true;
}

bool TcpStream::next_query(Clock::time_point now, std::span<const uint8_t>& query) {
    if (paused() || !has_frame()) return false;
    size_t length = frame_length(input_, input_pos_);
    query = {reinterpret_cast<const uint8_t*>(input_.data()) + input_pos_ + 2, length};
    input_pos_ += 2 + length;
    last_query_ = now;
    any_query_ = true;
    return true;
}

bool TcpStream::queue_reply(std::string_view reply) {
    if (reply.size() > 0xffff) return false;
    output_.push_back(static_cast<char>(reply.size() >> 8));
    output_.push_back(static_cast<char>(reply.size() & 0xff));
    output_.append(reply);
    return true;
}

void TcpStream::forward_done() {
    if (pending_forwards_ > 0) --pending_forwards_;
}

std::string_view TcpStream::unsent() const {
    return std::string_view(output_).substr(output_pos_);
}

void TcpStream::sent(size_t n) {
    output_pos_ = std::min(output_.size(), output_pos_ + n);
    if (output_pos_ == output_.size()) {
        output_.clear();
        output_pos_ = 0;
    } else if (output_pos_ >= kOutputBound) {
        // Sent bytes are dropped in bulk: one move per bound's worth sent.
        output_.erase(0, output_pos_);
        output_pos_ = 0;
    }
}

bool TcpStream::finished() const {
    return input_ended_ && unsent().empty() && pending_forwards_ == 0 && !has_frame();
}

bool TcpStream::timed_out(Clock::time_point now, Clock::duration read, Clock::duration idle) const {
    if (pending_forwards_ > 0) return false;
    return now - last_query_ >= (any_query_ ? idle : read);
}

}  // namespace sb::dns
