// Throughput of the input side for `ddpx data-bench`: images/s of a dataset's uint8 batches on T threads, and
// the decode-only limit (libjpeg-turbo full-size decodes on one thread).
// Guarantees: every image counted was produced in full (the same fill_pixels the loader calls); threads split
// consecutive micro-batches of rank 0 of one; the clock covers the work only (sources are opened before).
// cpu_seconds is the process's CPU time over the same interval (all its threads): core-seconds spent, which a
// loaded machine inflates far less than the wall clock (other processes' time is not counted).
#pragma once
#include <cstdint>

#include "data/dataset.hpp"
#include "data/auto_augment.hpp"
#include "data/sample_source.hpp"

namespace ddpx {

struct Throughput {
  int64_t images = 0;
  double seconds = 0;
  double cpu_seconds = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(images) / seconds : 0; }
  double core_us_per_image() const { return images > 0 ? cpu_seconds * 1e6 / static_cast<double>(images) : 0; }
};

// Fills micro-batches 0, 1, ... of `batch` images on `threads` threads until at least `images` are done.
Throughput measure_batches(const Dataset& dataset, int threads, int64_t batch, int64_t images);

// An automatic augmentation (RandAugment, TrivialAugmentWide or AutoAugment) alone on one thread: `count` images
// (HWC uint8, size x size x channels, back to back) each augmented in turn (a copy, then auto_augment with a
// generator per image) until `images` are done; the copies are timed too.
Throughput measure_auto_augment(const AutoAugmentSpec& spec, const uint8_t* pixels, int count, int size, int channels,
                                int64_t images);

// Decodes samples 0, 1, ... (wrapping) of a JPEG/PNG source whole, on one thread, until `images` are done.
Throughput measure_full_decodes(const SampleSource& source, int64_t images);

}  // namespace ddpx
