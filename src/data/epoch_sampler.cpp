// DistributedSampler-like epochs; see Note [Epochs and the sampler] in epoch_sampler.hpp.
#include "data/epoch_sampler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/internal_assert.hpp"
#include "core/rng.hpp"
#include "data/torch_randperm.hpp"

namespace ddpx {

EpochSampler::EpochSampler(int64_t samples, int world, int64_t batch, uint64_t seed, bool shuffle,
                           const std::string& what, std::vector<int64_t> groups, int64_t shuffle_buffer,
                           int64_t repeats)
    : samples_(samples),
      world_(world),
      batch_(batch),
      seed_(seed),
      shuffle_(shuffle),
      group_sizes_(std::move(groups)),
      shuffle_buffer_(shuffle_buffer),
      repeats_(repeats > 1 ? repeats : 1) {
  int64_t start = 0;
  for (int64_t size : group_sizes_) group_starts_.push_back(start), start += size;
  DDPX_INTERNAL_ASSERT(group_sizes_.empty() || start == samples, "groups of {} samples for {}", start, samples);
  DDPX_REQUIRE(samples > 0, "{}: holds no samples", what);
  DDPX_REQUIRE(world >= 1 && batch >= 1, "{}: world {} and batch {} must be positive", what, world, batch);
  if (repeats_ > 1) {
    DDPX_INTERNAL_ASSERT(shuffle && group_sizes_.empty(), "repeated augmentation of an unshuffled or grouped source");
    DDPX_REQUIRE(samples < kTorchRandpermMax / repeats_,
                 "--repeated-augment {}: {} samples are more than torchvision's sampler is reproduced for ({})",
                 repeats_, samples, kTorchRandpermMax / repeats_);
    // torchvision's RASampler: each rank keeps floor(N // 256 * 256 / W) of its ceil(N R / W).
    share_ = (samples * repeats_ + world - 1) / world;
    const int64_t kept = samples / 256 * 256 / world;
    batches_per_epoch_ = kept / batch;
    DDPX_REQUIRE(batches_per_epoch_ >= 1,
                 "--repeated-augment {}: {} has {} samples; torchvision's repeated-augmentation sampler uses {} of them "
                 "(a multiple of 256) per epoch, {} per rank over {} rank(s), fewer than one --batch of {}; {}", repeats_,
                 what, samples, samples / 256 * 256, kept, world, batch,
                 kept == 0 ? "it needs at least 256 samples per rank: use more data or leave --repeated-augment off"
                           : fmt::format("lower --batch to {} or less", kept));
    return;
  }
  share_ = (samples + world - 1) / world;
  batches_per_epoch_ = share_ / batch;
  DDPX_REQUIRE(batches_per_epoch_ >= 1,
               "{}: {} samples over {} rank(s) give each rank {}, fewer than one --batch of {}; lower --batch to {} "
               "or less", what, samples, world, share_, batch, share_);
}

std::vector<int64_t> EpochSampler::order(int64_t epoch) const {
  // Note [Repeated augmentation]: torch's randperm from seed + epoch; pick() reads each entry R times in a row.
  if (repeats_ > 1) return torch_randperm(samples_, seed_ + static_cast<uint64_t>(epoch));
  std::vector<int64_t> order(static_cast<size_t>(samples_));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle_) return order;
  // Fisher-Yates from a stream keyed by (seed, epoch) only: identical on every rank and thread.
  Rng rng(seed_ ^ (0x65706f6368ULL + static_cast<uint64_t>(epoch) * 0x9e3779b97f4a7c15ULL));
  const auto shuffle = [&](std::vector<int64_t>& items) {
    for (int64_t i = static_cast<int64_t>(items.size()) - 1; i > 0; --i) {
      const int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)));
      std::swap(items[static_cast<size_t>(i)], items[static_cast<size_t>(j)]);
    }
  };
  if (group_sizes_.empty()) {
    shuffle(order);
    return order;
  }
  std::vector<int64_t> groups(group_sizes_.size());
  std::iota(groups.begin(), groups.end(), int64_t{0});
  shuffle(groups);
  order.clear();
  // Note [Shuffle buffer]: the groups' samples stream through the buffer as they are read.
  const size_t slots = static_cast<size_t>(shuffle_buffer_ > 1 ? shuffle_buffer_ : 0);
  std::vector<int64_t> buffer;
  buffer.reserve(std::min(slots, static_cast<size_t>(samples_)));
  for (int64_t g : groups)
    for (int64_t i = 0; i < group_sizes_[static_cast<size_t>(g)]; ++i) {
      const int64_t incoming = group_starts_[static_cast<size_t>(g)] + i;
      if (slots == 0) {
        order.push_back(incoming);
      } else if (buffer.size() < slots) {
        buffer.push_back(incoming);
      } else {
        int64_t& slot = buffer[static_cast<size_t>(rng.below(slots))];
        order.push_back(slot);
        slot = incoming;
      }
    }
  while (!buffer.empty()) {  // the stream's end: the buffer empties in a random order
    int64_t& slot = buffer[static_cast<size_t>(rng.below(buffer.size()))];
    order.push_back(slot);
    slot = buffer.back();
    buffer.pop_back();
  }
  return order;
}

std::shared_ptr<const std::vector<int64_t>> EpochSampler::cached_order(int64_t epoch) const {
  {
    std::lock_guard lock(cache_mutex_);
    for (const auto& [e, order] : cache_)
      if (e == epoch) return order;
  }
  auto made = std::make_shared<const std::vector<int64_t>>(order(epoch));
  std::lock_guard lock(cache_mutex_);
  // Loader threads work on at most two epochs at once (around an epoch's end); keep a few.
  if (cache_.size() >= 4) cache_.erase(cache_.begin());
  cache_.emplace_back(epoch, made);
  return made;
}

void EpochSampler::pick(int64_t micro_batch, int rank, SamplePick* out) const {
  const int64_t epoch = micro_batch / batches_per_epoch_;
  const int64_t k = micro_batch % batches_per_epoch_;
  const std::shared_ptr<const std::vector<int64_t>> order = cached_order(epoch);
  for (int64_t t = 0; t < batch_; ++t) {
    const int64_t position = (k * batch_ + t) * world_ + rank;  // < share * world: the padded order
    // Padded with the order's front (repeated: entry i at positions i R .. i R + R - 1 of the N R long order).
    const int64_t entry = position % (samples_ * repeats_) / repeats_;
    out[t] = {(*order)[static_cast<size_t>(entry)], epoch, position};
  }
}

EpochSamplers::EpochSamplers(int64_t samples, uint64_t seed, bool shuffle, std::string what,
                             std::vector<int64_t> groups, int64_t shuffle_buffer, int64_t repeats)
    : samples_(samples),
      seed_(seed),
      shuffle_(shuffle),
      what_(std::move(what)),
      groups_(std::move(groups)),
      shuffle_buffer_(shuffle_buffer),
      repeats_(repeats) {}

const EpochSampler& EpochSamplers::get(int world, int64_t batch) const {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i] == std::pair<int, int64_t>{world, batch}) return *samplers_[i];
  samplers_.push_back(std::make_unique<EpochSampler>(samples_, world, batch, seed_, shuffle_, what_, groups_,
                                                     shuffle_buffer_, repeats_));
  keys_.emplace_back(world, batch);
  return *samplers_.back();
}

}  // namespace ddpx
