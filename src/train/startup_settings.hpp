// startup_settings(): the one table of everything all ranks of a job must agree on before the first step,
// checked in one collective (dist/agreement.hpp). A setting is in it when a difference between ranks would
// change the math (model, precision, batch, accumulation, optimizer and every hyperparameter, seed, data and
// its files, hook, bucket plan) or the schedule of collectives and outputs (steps, the step a resume starts at,
// CUDA graphs, overlap, whether --save/--checkpoint-dir are given and how often checkpoints are written, the
// watchdog's timeout). Settings that change neither (workers, prefetch, threads, --log-every, --warmup,
// --report, --trace, output paths themselves) are left out, so ranks may differ in them.
// Guarantees: values are written exactly (doubles in their shortest round-trip form); a data file is
// represented by its size and a fingerprint of its first and last 64 KiB (cheap on large files: files that differ
// only in the middle pass) read without blocking on FIFOs; a file that cannot be read is represented by that fact,
// so its rank disagrees with the others instead of failing alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dist/agreement.hpp"
#include "model/flat_layout.hpp"
#include "train/train_options.hpp"

namespace ddpx {

std::vector<AgreedSetting> startup_settings(const TrainOptions& options, const FlatLayout& layout,
                                            int64_t start_step, const std::string& hook_spec,
                                            const std::string& bucket_plan_signature);

// "1048704 bytes, fingerprint 0123456789abcdef"; "missing or unreadable: <reason>" when it cannot be read.
std::string file_fingerprint(const std::string& path);

}  // namespace ddpx
