// EpochSampler: which samples each rank's micro-batch holds, with torch.utils.data.DistributedSampler's semantics.
//
// Note [Epochs and the sampler]
// Epoch e's order is a permutation of the N samples drawn from (seed, e) alone, the same on every rank (no shuffle:
// 0..N-1; with groups, e.g. tar shards: the groups in a permutation drawn from (seed, e), their samples streamed in
// that order through a shuffle buffer, see Note [Shuffle buffer]). As DistributedSampler does, the order is
// padded by repeating its first samples to a multiple of the world size W, and rank r takes positions r, r+W, r+2W, ...: shares are disjoint up to the padding and all have
// ceil(N/W) samples. Each rank cuts its share into micro-batches of b and drops the last partial one (DataLoader's
// drop_last), so every rank runs the same number of batches per epoch, floor(ceil(N/W) / b): no rank waits at an
// epoch's end for a batch another rank never runs (the hang of uneven shares). Micro-batch m of the run is batch
// m mod B of epoch m / B (B batches per epoch): the batch is a pure function of (seed, m, rank, world), so
// --resume at step s starts at m = s x grad_accum and sees exactly what an uninterrupted run would have.
// Global position p = (k*b + t)*W + r of batch k's t-th sample on rank r is also the key of the sample's random
// crop and flip: W ranks with b samples each see the same samples, augmented the same, as one rank with W*b.
//
// Note [Repeated augmentation]
// --repeated-augment R (R >= 2; torchvision's --ra-sampler --ra-reps R) replaces the order above with torchvision's
// RASampler (references/classification/sampler.py): epoch e's order is torch.randperm(N) from a generator seeded
// with seed + e (data/torch_randperm.hpp, bit for bit), each sample R times in a row (N x R entries), padded with its
// own front to a multiple of W, rank r taking positions r, r+W, ...; of each rank's ceil(N R / W) only the first
// floor(N // 256 x 256 / W) are used, so an epoch is about N / W samples per rank, as without it, but each sample
// R times on (mostly) R different ranks. Its R copies sit at R different positions, so each is cropped, flipped and
// RandAugmented differently (the key above); the rest holds as written: drop_last on each rank's share (torchvision's
// DataLoader keeps the last partial batch, ddpx drops it so ranks stay in step), the batch a pure function of (seed,
// m, rank, world), --resume exact. Sources read sample by sample only (not the shard stream of groups).
//
// Note [Shuffle buffer]
// WebDataset's shuffle(n): the stream of samples (the shards in the epoch's shard order, each front to back) passes
// through a buffer of n slots. The first n samples fill it; then each incoming sample draws a uniformly random slot,
// whose sample is output and replaced by the incoming one; at the stream's end the buffer empties in a random
// order. So samples mix inside a shard and across neighbouring shards while a rank still reads each shard roughly
// front to back; n >= the epoch's size is a uniform shuffle, n of 0 or 1 keeps the stream's order. The draws come
// from the same (seed, epoch) stream as the shard order: the epoch's order stays a pure function of (seed, epoch).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ddpx {

struct SamplePick {
  int64_t index = 0;     // the sample, in [0, N)
  int64_t epoch = 0;
  int64_t position = 0;  // global position in the epoch's padded order (the augmentation key)
};

class EpochSampler {
 public:
  // Throws ddpx::Error when one rank's share holds fewer than `batch` samples (naming --batch and the sizes).
  // shuffle_buffer: slots of the buffer the grouped stream passes through (Note [Shuffle buffer]); groups only.
  // repeats >= 2: Note [Repeated augmentation] (shuffled, no groups); throws ddpx::Error naming --repeated-augment
  // when the epoch's kept share is smaller than `batch`.
  EpochSampler(int64_t samples, int world, int64_t batch, uint64_t seed, bool shuffle, const std::string& what,
               std::vector<int64_t> groups = {}, int64_t shuffle_buffer = 0, int64_t repeats = 0);
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  int64_t share() const { return share_; }  // ceil(N / W); repeated: ceil(N R / W), of which batches x b are used
  // Samples of micro-batch `micro_batch` (counted from the run's start) on `rank`; out has `batch` entries.
  void pick(int64_t micro_batch, int rank, SamplePick* out) const;
  // The epoch's order (before padding): a permutation of 0..N-1 drawn from (seed, epoch); repeated: torch's
  // randperm, each entry of which pick() takes R times in a row.
  std::vector<int64_t> order(int64_t epoch) const;

 private:
  std::shared_ptr<const std::vector<int64_t>> cached_order(int64_t epoch) const;

  int64_t samples_;
  int world_;
  int64_t batch_;
  uint64_t seed_;
  bool shuffle_;
  std::vector<int64_t> group_starts_, group_sizes_;  // empty: samples shuffled one by one
  int64_t shuffle_buffer_ = 0;
  int64_t repeats_ = 1;
  int64_t share_ = 0, batches_per_epoch_ = 0;
  mutable std::mutex cache_mutex_;
  mutable std::vector<std::pair<int64_t, std::shared_ptr<const std::vector<int64_t>>>> cache_;  // recent epochs
};

// The samplers of one dataset: one EpochSampler per (world, batch) asked for, made on first use and kept, so any
// loader thread may ask. Used by every source with epochs (image sources and .npy).
class EpochSamplers {
 public:
  EpochSamplers(int64_t samples, uint64_t seed, bool shuffle, std::string what, std::vector<int64_t> groups = {},
                int64_t shuffle_buffer = 0, int64_t repeats = 0);
  // Throws ddpx::Error as EpochSampler does when one rank's share is smaller than `batch`.
  const EpochSampler& get(int world, int64_t batch) const;

 private:
  int64_t samples_;
  uint64_t seed_;
  bool shuffle_;
  std::string what_;  // "--data idx:DIR:train", "--images x.npy": for messages
  std::vector<int64_t> groups_;
  int64_t shuffle_buffer_ = 0;
  int64_t repeats_ = 0;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<EpochSampler>> samplers_;
  mutable std::vector<std::pair<int, int64_t>> keys_;  // (world, batch) of samplers_[i]
};

}  // namespace ddpx
