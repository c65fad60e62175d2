// The one way hexnpu writes a file (architecture.md §6). Every command that writes (quantize, synth,
// tile, --trace, and later the model runner and bench-ops) goes through output_file:
//
//   hexnpu::output_file out = hexnpu::output_file::create(out_path, {in_path});  // checks, makes the temporary
//   out.write(bytes, n);                                                            // ... as often as needed
//   out.commit();                                                                   // atomic rename over out_path
//
// - The data goes to a fresh temporary in the target's own directory, created with O_EXCL under a
//   random name (never a fixed "OUT.tmp"), so it can be neither an input nor another writer's
//   temporary, and the rename is atomic. Two concurrent writers of one target each rename a
//   complete file: the later rename wins whole, nothing is interleaved.
// - The target must not be one of the command's inputs, compared by identity (device and inode,
//   symbolic links followed), so "./in.gguf", a hard link or a symbolic link to an input are
//   refused just like "in.gguf" itself.
// - The target must be a regular file or not exist. A character or block device, FIFO, socket or
//   directory is refused with a clear error before anything is written: hexnpu never streams to,
//   renames over or removes anything but a regular file it created. (Refusing was chosen over
//   streaming: a quantized model written to /dev/null is never what was meant, and a FIFO would
//   block.) A symbolic link to a regular file is written through: the file it points to is
//   replaced, the link stays. A dangling link is refused.
// - Until commit() nothing visible changes. On any failure (ENOSPC, EFBIG, an exception in the
//   producer, SIGINT/SIGTERM/SIGHUP) the temporary is removed and an existing target is untouched.
// - A replaced target keeps its permission bits; a new one gets 0666 minus the umask.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace hexnpu {

// Why a file cannot be (or was not) written; what() names the path and the reason.
class output_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

class output_file {
  public:
    // Checks `path` against the rules above and creates the temporary. `inputs` are the command's
    // input paths (an input that does not exist is ignored: it cannot be the target). Throws
    // output_error.
    static output_file create(const std::string & path, std::span<const std::string> inputs = {});
    static output_file create(const std::string & path, std::initializer_list<std::string> inputs) {
        return create(path, std::span<const std::string>(inputs.begin(), inputs.size()));
    }

    output_file(output_file && other) noexcept;
    output_file & operator=(output_file && other) noexcept;
    output_file(const output_file &)             = delete;
    output_file & operator=(const output_file &) = delete;
    // Discards the temporary unless committed.
    ~output_file();

    const std::string & path() const { return path_; }       // the target as given
    const std::string & temp_path() const { return temp_; }  // the temporary (exists until commit/discard)
    int                 fd() const { return fd_; }           // open for writing, until commit/discard
    uint64_t            bytes_written() const { return written_; }

    // Appends n bytes; throws output_error naming the target and the system error (the temporary
    // stays until the object is destroyed or discarded).
    void write(const void * data, size_t n);

    // Syncs and closes the temporary, checks the target again (still not an input, still a regular
    // file or absent) and renames the temporary over it. Throws output_error (and discards the
    // temporary) when any of that fails. Call once.
    void commit();

    // Removes the temporary if it is still the file this object created. Idempotent; no-throw.
    void discard() noexcept;

  private:
    struct identity {
        uint64_t dev = 0;
        uint64_t ino = 0;
        friend bool operator==(const identity &, const identity &) = default;
    };

    output_file() = default;
    void check_target(bool at_commit) const;

    std::string           path_;      // as given, for messages
    std::string           target_;    // what gets replaced: path_, or the file a symbolic link names
    std::string           temp_;
    std::vector<std::string> inputs_;
    std::vector<identity> input_ids_;
    identity              temp_id_;
    int                   fd_        = -1;
    int                   slot_      = -1;  // the signal-cleanup slot holding temp_
    uint64_t              written_   = 0;
    bool                  committed_ = false;
};

} // namespace hexnpu
