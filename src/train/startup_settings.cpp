// The start-up agreement table; see startup_settings.hpp for what is in it and why.
#include "train/startup_settings.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/fnv1a.hpp"

namespace ddpx {
namespace {

constexpr size_t kFingerprintBytes = 64 * 1024;

std::string given(const std::string& value) { return value.empty() ? "not given" : "given"; }

}  // namespace

std::string file_fingerprint(const std::string& path) {
  if (path.empty()) return "none";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return fmt::format("missing or unreadable: {}", std::strerror(errno));
  struct stat info {};
  std::string result;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    result = "not a regular file";
  } else {
    const uint64_t size = static_cast<uint64_t>(info.st_size);
    std::vector<unsigned char> bytes(kFingerprintBytes);
    uint64_t hash = kFnv1aOffset;
    bool readable = true;
    for (uint64_t offset : {uint64_t{0}, size > kFingerprintBytes ? size - kFingerprintBytes : uint64_t{0}}) {
      const ssize_t got = ::pread(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset));
      if (got < 0) readable = false;
      if (got > 0) hash = fnv1a(bytes.data(), static_cast<size_t>(got), hash);
    }
    result = readable ? fmt::format("{} bytes, fingerprint {:016x}", size, hash)
                      : fmt::format("unreadable: {}", std::strerror(errno));
  }
  ::close(fd);
  return result;
}

std::vector<AgreedSetting> startup_settings(const TrainOptions& options, const FlatLayout& layout,
                                            int64_t start_step, const std::string& hook_spec,
                                            const std::string& bucket_plan_signature) {
  auto number = [](auto value) { return fmt::format("{}", value); };
  const OptimizerSpec& optimizer = options.optimizer;
  return {
      {"--model", layout.spec()},
      {"--device/--precision", fmt::format("{}/{}", device_name(options.device), precision_name(options.precision))},
      {"--batch", std::to_string(options.batch)},
      {"--grad-accum", std::to_string(options.grad_accum)},
      {"--steps", std::to_string(options.steps)},
      {"the step to start from (--resume)", std::to_string(start_step)},
      {"--seed", std::to_string(options.seed)},
      {"--optimizer", std::string(optimizer.name())},
      {"--lr", number(optimizer.lr)},
      {"--momentum", number(optimizer.momentum)},
      {"--nesterov", optimizer.nesterov ? "set" : "not set"},
      {"--weight-decay", number(optimizer.weight_decay)},
      {"--beta1/--beta2", number(optimizer.beta1) + "/" + number(optimizer.beta2)},
      {"--eps", number(optimizer.eps)},
      {"--data", options.data.text()},
      {"--images", file_fingerprint(options.images)},
      {"--labels", file_fingerprint(options.labels)},
      {"--comm-hook", hook_spec},
      {"the bucket plan (--bucket-mb/--first-bucket-mb)", bucket_plan_signature},
      {"--no-overlap", options.no_overlap ? "set" : "not set"},
      {"--cuda-graph", std::string(graph_policy_name(options.cuda_graph))},
      {"--save", given(options.save)},
      {"--checkpoint-dir", given(options.checkpoint_dir)},
      {"--checkpoint-every", std::to_string(options.checkpoint_every)},
      {"--comm-timeout", number(options.comm_timeout_s)},
      // Every rank records its steps for the report and the trace, which rank 0 gathers: given on one rank only,
      // it was silently ignored (issue 37 item 9).
      {"--report", given(options.report)},
      {"--trace", given(options.trace)},
  };
}

}  // namespace ddpx
