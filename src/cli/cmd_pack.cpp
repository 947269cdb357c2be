// `ddpx pack SOURCE OUT`: any image source (folder:, idx:, pack:) written as a pack file (data/pack_writer.hpp;
// layout in docs/pack-format.md), the packed images' longer side at most --max-side, stored raw or as JPEG.
#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <thread>

#include "cli/commands.hpp"
#include "data/data_sources.hpp"
#include "data/pack_writer.hpp"

namespace ddpx::cli {

Command add_pack_command(CLI::App* cmd) {
  struct Flags {
    std::string source, out, store = "jpeg:90";
    int max_side = 256, threads = 0;
    int64_t max_pixels = 178956970;
  };
  const auto f = command_flags<Flags>(cmd, HelpDefaults::per_flag);
  cmd->add_option("SOURCE", f->source, "an image source: folder:DIR, idx:DIR[:train|test] or pack:FILE")->required();
  cmd->add_option("OUT", f->out, "the pack file to write (replaced atomically when complete)")->required();
  cmd->add_option("--max-side", f->max_side,
                  "resize (antialiased bilinear) so the longer side is at most S pixels; 0 keeps every size "
                  "(default 256: a 224 RandomResizedCrop still has its pixels)")
      ->capture_default_str();
  cmd->add_option("--store", f->store, "raw (uint8 HWC) | jpeg:Q (re-encoded at quality Q, 1-100)")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "decoding threads (0: the machine's hardware threads)");
  cmd->add_option("--max-pixels", f->max_pixels, "refuse source images whose header claims more pixels")
      ->capture_default_str();
  return {cmd, [f] {
            PackOptions options;
            parse_pack_store(f->store, options);
            options.max_side = f->max_side;
            options.max_pixels = f->max_pixels;
            options.threads = f->threads > 0 ? f->threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
            const std::unique_ptr<SampleSource> source = open_sample_source(parse_data_spec(f->source, DataOrigin::pack_source));
            const auto start = std::chrono::steady_clock::now();
            const PackSummary summary = write_pack(*source, f->out, options);
            const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            fmt::print("ddpx pack: {} -> {}: {} images, {:.1f} MB ({}, longer side <= {}), {:.1f} s, {:.0f} images/s "
                       "on {} thread{}\n",
                       source->describe(), f->out, summary.records, summary.bytes / 1e6, f->store,
                       f->max_side > 0 ? std::to_string(f->max_side) : "any", seconds, summary.records / std::max(seconds, 1e-9),
                       options.threads, options.threads == 1 ? "" : "s");
            return 0;
          }};
}

}  // namespace ddpx::cli
