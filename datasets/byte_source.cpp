#include "datasets/byte_source.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <vector>

#include <zlib.h>

#include "core/errors.hpp"
#include "core/input_file.hpp"

namespace mk {

// ---------------------------------------------------------------- ByteSource

void ByteSource::read_exact(void* destination, size_t bytes, const std::string& what) {
  size_t done = 0;
  while (done < bytes) {
    const size_t got = read(static_cast<char*>(destination) + done, bytes - done);
    if (got == 0)
      throw InputError(origin() + ": truncated: " + what + " needs " + std::to_string(bytes) +
                       " bytes but the data ends after " + std::to_string(done));
    done += got;
  }
}

void ByteSource::expect_end(const std::string& after_what) {
  const bool exact = size_is_exact();
  const uintmax_t left = most_remaining();
  char extra = 0;
  if (read(&extra, 1) == 0) return;
  throw InputError(origin() + ": " + (exact ? std::to_string(left) + " unexpected bytes" : "unexpected bytes") +
                   " after " + after_what + " (a concatenated or corrupt file?)");
}

bool looks_gzipped(std::string_view first_bytes) {
  return first_bytes.size() >= 2 && static_cast<unsigned char>(first_bytes[0]) == 0x1f &&
         static_cast<unsigned char>(first_bytes[1]) == 0x8b;
}

// ---------------------------------------------------------------- MemorySource

size_t MemorySource::read(void* destination, size_t bytes) {
  const size_t take = std::min(bytes, bytes_.size() - position_);
  if (take) std::memcpy(destination, bytes_.data() + position_, take);
  position_ += take;
  return take;
}

// ---------------------------------------------------------------- FileSource

FileSource::FileSource(const std::string& path) : path_(path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) throw InputError("cannot read '" + path + "': it is a directory");
  require_regular_file(path, "data file");  // before the open, which waits on a FIFO
  in_.open(path, std::ios::binary);
  if (!in_) throw InputError("cannot open '" + path + "': " + std::strerror(errno));
  size_ = std::filesystem::file_size(path, error);
  if (error) throw InputError("cannot read '" + path + "': " + error.message());
}

size_t FileSource::read(void* destination, size_t bytes) {
  const size_t take = static_cast<size_t>(std::min<uintmax_t>(bytes, size_ - position_));
  if (take == 0) return 0;
  in_.read(static_cast<char*>(destination), static_cast<std::streamsize>(take));
  const size_t got = static_cast<size_t>(in_.gcount());
  if (got != take)
    throw InputError(path_ + ": read failed after " + std::to_string(position_ + got) + " of " +
                     std::to_string(size_) + " bytes (was the file changed while it was read?)");
  hash_.update(destination, got);
  position_ += got;
  return got;
}

std::string FileSource::digest_of_whole_file() {
  std::vector<char> rest(size_t(1) << 20);
  while (read(rest.data(), rest.size()) != 0) {
  }
  return hash_.finish();
}

// ---------------------------------------------------------------- GzipSource

namespace {
// Deflate cannot expand its input by more than 1032:1 (zlib's technical notes), so this
// bounds what a gzip stream of a given size can still produce.
constexpr uintmax_t kMaxDeflateRatio = 1032;
constexpr size_t kInputChunk = size_t(256) << 10;
}  // namespace

struct GzipSource::State {
  z_stream stream{};
  std::vector<unsigned char> input;
  bool between_members = false;  // a member ended; more input starts another
  bool finished = false;         // the last member ended and no input is left
};

GzipSource::GzipSource(ByteSource& compressed) : compressed_(compressed), state_(std::make_unique<State>()) {
  state_->input.resize(static_cast<size_t>(std::clamp<uintmax_t>(compressed.most_remaining(), 1, kInputChunk)));
  // 16 + MAX_WBITS: a gzip wrapper only (its CRC-32 and length are checked at each member's end).
  if (inflateInit2(&state_->stream, 16 + MAX_WBITS) != Z_OK)
    throw InputError(origin() + ": cannot start the gzip decoder (out of memory?)");
}

GzipSource::~GzipSource() { inflateEnd(&state_->stream); }

uintmax_t GzipSource::most_remaining() const {
  if (state_->finished) return 0;
  const uintmax_t compressed = compressed_.most_remaining() + state_->stream.avail_in;
  // Plus what the decoder may hold from input it has already taken.
  return compressed * kMaxDeflateRatio + (uintmax_t(1) << 16);
}

size_t GzipSource::read(void* destination, size_t bytes) {
  State& s = *state_;
  size_t produced = 0;
  while (produced < bytes && !s.finished) {
    if (s.stream.avail_in == 0) {
      const size_t got = compressed_.read(s.input.data(), s.input.size());
      if (got == 0) {
        if (s.between_members) {
          s.finished = true;
          break;
        }
        throw InputError(origin() + ": truncated gzip stream: the data ends before the stream's end marker "
                         "(was the file cut short?)");
      }
      s.stream.next_in = s.input.data();
      s.stream.avail_in = static_cast<uInt>(got);
    }
    if (s.between_members) {
      inflateReset(&s.stream);
      s.between_members = false;
    }
    const size_t room = std::min<size_t>(bytes - produced, UINT_MAX);
    s.stream.next_out = static_cast<unsigned char*>(destination) + produced;
    s.stream.avail_out = static_cast<uInt>(room);
    const uInt in_before = s.stream.avail_in;
    const int rc = inflate(&s.stream, Z_NO_FLUSH);
    produced += room - s.stream.avail_out;
    if (rc == Z_STREAM_END) {
      s.between_members = true;
    } else if (rc == Z_BUF_ERROR) {
      // No progress is possible only when the input is used up; the loop then reads more.
      if (s.stream.avail_in != 0 && s.stream.avail_in == in_before)
        throw InputError(origin() + ": corrupt gzip stream (the decoder made no progress)");
    } else if (rc != Z_OK) {
      const std::string detail = s.stream.msg ? s.stream.msg : "zlib error " + std::to_string(rc);
      throw InputError(origin() + ": corrupt gzip stream (" + detail + ")");
    }
  }
  return produced;
}

}  // namespace mk
