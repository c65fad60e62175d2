// The one way hexnpu opens a file it reads (a GGUF model, a prompt or text file), as output_file is
// the one way it writes:
//
//   hexnpu::input_file in = hexnpu::input_file::open(path);   // a regular file, or input_error
//   std::string text = hexnpu::read_text_file(path);           // the same, read whole, bounded
//
// - The path is looked at before it is opened: open(O_RDONLY) of a FIFO blocks until a writer
//   appears, and opening a device can have side effects (and /dev/zero never ends). An O_PATH
//   descriptor opens nothing; fstat tells what it is. Anything but a regular file (symbolic links
//   followed) — a FIFO, a character or block device such as /dev/null or /dev/zero, a socket, a
//   directory — is refused at once: "'PATH' is a FIFO, not a regular file".
// - The file is then opened O_NONBLOCK and checked to be the one looked at (device and inode), so
//   a path swapped for a FIFO in between neither blocks nor is read.
// - Text inputs (-f of run, perplexity, tokenize) are read whole, up to MAX_TEXT_INPUT_BYTES: a
//   larger file is refused before anything is read.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hexnpu {

// Why a file cannot be read; what() names the path and the reason.
class input_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// The most bytes a text input may have: 256 MiB (wikitext-103's whole training text is ~540 MB;
// its test text, the usual perplexity input, 1.3 MB).
inline constexpr uint64_t MAX_TEXT_INPUT_BYTES = uint64_t(256) << 20;

class input_file {
  public:
    // Checks `path` against the rules above and opens it for reading. Throws input_error.
    static input_file open(const std::string & path);

    input_file(input_file && other) noexcept;
    input_file & operator=(input_file && other) noexcept;
    input_file(const input_file &)             = delete;
    input_file & operator=(const input_file &) = delete;
    ~input_file();

    int      fd() const { return fd_; }  // open read-only (O_NONBLOCK, O_CLOEXEC) until destroyed
    uint64_t size() const { return size_; }

  private:
    input_file(int fd, uint64_t size) : fd_(fd), size_(size) {}
    int      fd_   = -1;
    uint64_t size_ = 0;
};

// The whole text of `path`, checked as above; a file larger than max_bytes (also one that grows
// beyond it while being read) is an input_error naming the bound.
std::string read_text_file(const std::string & path, uint64_t max_bytes = MAX_TEXT_INPUT_BYTES);

} // namespace hexnpu
