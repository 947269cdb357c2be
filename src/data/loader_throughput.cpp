// Input throughput measurement; see loader_throughput.hpp.
#include "data/loader_throughput.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>

#include "data/image_decode.hpp"

namespace ddpx {
namespace {

double process_cpu_seconds() {
  timespec now{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

Throughput measure_batches(const Dataset& dataset, int threads, int64_t batch, int64_t images) {
  const int64_t batches = (images + batch - 1) / batch;
  std::atomic<int64_t> next{0};
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<uint8_t> pixels(static_cast<size_t>(batch * dataset.shape().image_numel()));
      std::vector<int32_t> labels(static_cast<size_t>(batch));
      try {
        for (int64_t step = next++; step < batches; step = next++)
          dataset.fill_pixels(step, 0, 1, batch, pixels.data(), labels.data());
      } catch (...) {
        errors[static_cast<size_t>(t)] = std::current_exception();
      }
    });
  for (std::thread& thread : pool) thread.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu_seconds = process_cpu_seconds() - cpu_start;
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  return {batches * batch, seconds, cpu_seconds};
}

Throughput measure_auto_augment(const AutoAugmentSpec& spec, const uint8_t* pixels, int count, int size, int channels,
                                int64_t images) {
  const size_t bytes = static_cast<size_t>(size) * static_cast<size_t>(size) * static_cast<size_t>(channels);
  std::vector<uint8_t> work(bytes), scratch;
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < images; ++i) {
    const uint8_t* image = pixels + static_cast<size_t>(i % count) * bytes;
    std::copy(image, image + bytes, work.begin());
    Rng rng(static_cast<uint64_t>(i));
    auto_augment(spec, work.data(), size, size, channels, rng, scratch);
  }
  return {images, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          process_cpu_seconds() - cpu_start};
}

Throughput measure_full_decodes(const SampleSource& source, int64_t images) {
  std::vector<uint8_t> file, decoded;
  DecodeRequest request;
  request.choose_box = [](int h, int w) { return CropBox{0, 0, static_cast<double>(h), static_cast<double>(w)}; };
  request.box_bounds_sampling = false;
  request.dct_scaling = false;
  request.max_pixels = int64_t{1} << 40;
  int64_t index = 0;
  request.name = [&] { return source.sample_name(index); };
  const double cpu_start = process_cpu_seconds();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < images; ++done, index = (index + 1) % source.size()) {
    const SampleBytes bytes = source.read(index, file);
    if (bytes.format == SampleFormat::jpeg) {
      decode_jpeg(bytes.data, bytes.size, request, decoded);
    } else if (bytes.format == SampleFormat::png) {
      decode_png(bytes.data, bytes.size, request, decoded);
    }
  }
  return {images, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
          process_cpu_seconds() - cpu_start};
}

}  // namespace ddpx
