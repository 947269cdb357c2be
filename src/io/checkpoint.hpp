// Training checkpoints for resume: one safetensors file <dir>/checkpoint.safetensors holding
//  - the parameters under the layout's names (F32; for the ViT the file loads as a torchvision state_dict after
//    dropping the "optimizer." and "ema." tensors),
//  - the optimizer state, one F32 tensor per parameter and state buffer: "optimizer.<state>.<tensor name>"
//    (state: "momentum" for sgd, "exp_avg" / "exp_avg_sq" for adamw),
//  - the trainer's other layout-shaped buffers (CheckpointState::buffers), "<buffer>.<tensor name>" (the weight
//    average of --ema-decay: "ema.<tensor name>"),
//  - __metadata__ (all strings): "format" = "pt", "ddpx_checkpoint_version" = "3", "model" (FlatLayout::spec()),
//    "optimizer" (name), "optimizer_options" (JSON), "optimizer_state" (JSON array of state names),
//    "optimizer_step" (decimal), "step" (decimal), "rng_states" (always "[]": no RNG state is needed, see
//    CheckpointState; kept for ddpx builds before 2026-12-05, which require the key; files that hold states, in
//    its old form, a JSON array of {"state", "inc", "spare_bits" as decimal u64 strings, "has_spare"}, are
//    checked and load), "data_position" (JSON), "extra" (JSON), "buffers" (JSON
//    array of the other buffers' names; files without it hold none), "ddpx.crc32" (JSON: tensor name -> CRC-32
//    of its bytes; io/tensor_integrity.hpp; version 1 files lack it and load unchecked),
//    "ddpx.header_crc32" (CRC-32 of all the other metadata and the tensors' names, dtypes and shapes; version 2
//    files lack it, and their metadata loads unchecked).
// With keep > 1 each save writes <dir>/checkpoint-<step>.safetensors and makes checkpoint.safetensors a hard link
// to it (a second copy where hard links are not supported); the newest `keep` numbered files are kept, older ones
// removed, later steps (from a run this one resumed before their end) never touched.
// Guarantees: saving is atomic (a fresh O_EXCL temporary, fsync, renameat, fsync <dir>): a crash at any point
// leaves the previous checkpoint loadable, and a failed save throws and leaves it untouched. The names in the folder
// belong to ddpx: a symlink planted under one is replaced, never followed (io/checkpoint_folder.hpp), and a folder
// other users can write is refused unless it is sticky and owned by this user. Nothing is written
// unless every value is finite (the error names the tensor). Loading verifies every tensor's checksum and names
// the one that fails. A save/load round
// trip restores parameters, optimizer state, step counts and the trainer's other buffers bit for bit. Loading checks the model
// spec and optimizer against this run's and reports a mismatch naming both values and the flag.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/checkpoint_folder.hpp"
#include "model/flat_layout.hpp"
#include "optim/optimizer.hpp"

namespace ddpx {

// What the trainer saves beyond parameters and optimizer state, and gets back on resume.
// No RNG state: every random draw of a run is a pure function of --seed and a counter (the step, the epoch, the
// sample, the tensor's name), so a resume at step k redraws exactly what the uninterrupted run draws.
struct CheckpointState {
  int64_t step = 0;                     // the trainer's step counter
  nlohmann::json data_position;         // where the data loader resumes (free-form; null if unused)
  nlohmann::json extra;                 // anything else the trainer wants back (free-form; null if unused)
  // More buffers of the layout's size, saved as "<name>.<tensor name>" and loaded back by name (e.g. {"ema", the
  // weight average}). A name may not be empty, contain '.', or be "optimizer".
  std::vector<std::pair<std::string, std::vector<float>>> buffers;
};

// Everything a checkpoint's metadata says, readable without loading tensors (for reports and option checks).
struct CheckpointInfo {
  std::string model_spec;
  std::string optimizer;
  nlohmann::json optimizer_options;
  std::vector<std::string> optimizer_state;  // state buffer names
  int64_t optimizer_step = 0;
  CheckpointState state;
};

// dir / "checkpoint.safetensors", or `dir` itself when it is a file (--resume D/checkpoint-<step>.safetensors).
std::filesystem::path checkpoint_file(const std::filesystem::path& dir);
bool checkpoint_exists(const std::filesystem::path& dir);

// A checkpoint written in full and fsynced in its folder, not yet under its name: commit() renames it into place
// (and rotates, with keep > 1); destroying it uncommitted removes it, leaving the folder as it was. The trainer
// commits step k's checkpoint only once step k+1's loss passed the numerics check (see Note [Deferred checkpoint
// commit] in train/trainer.cpp).
class PendingCheckpoint {
 public:
  PendingCheckpoint(std::unique_ptr<CheckpointFolder> folder, CheckpointFolder::NewFile file, int64_t step, int keep);
  PendingCheckpoint(PendingCheckpoint&&) noexcept;
  PendingCheckpoint& operator=(PendingCheckpoint&&) noexcept;
  ~PendingCheckpoint();
  int64_t step() const { return step_; }
  std::filesystem::path target() const;  // the name it will have
  void commit();
  void discard() noexcept;

 private:
  std::unique_ptr<CheckpointFolder> folder_;
  std::optional<CheckpointFolder::NewFile> file_;
  int64_t step_ = 0;
  int keep_ = 1;
};

// Creates dir if needed (io/checkpoint_folder.hpp: refused when others can write it) and writes the checkpoint
// under a temporary name. optimizer.num_elements() must equal layout.buffer_size(). keep: --keep-checkpoints.
PendingCheckpoint prepare_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                                     const Optimizer& optimizer, const CheckpointState& state, int keep = 1);

// prepare_checkpoint(...).commit().
void save_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, const float* params,
                     const Optimizer& optimizer, const CheckpointState& state, int keep = 1);

CheckpointInfo read_checkpoint_info(const std::filesystem::path& dir);

// Fills params (layout.buffer_size() floats) and the optimizer's state and step count. The checkpoint's model
// spec must equal layout.spec() (--model) and its optimizer name and state buffers the optimizer's
// (--optimizer); options such as --lr may differ (the run's values are kept; compare with read_checkpoint_info).
CheckpointState load_checkpoint(const std::filesystem::path& dir, const FlatLayout& layout, float* params,
                                Optimizer& optimizer);

}  // namespace ddpx
