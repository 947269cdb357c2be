// What the trainer's multi-rank tests share (test_trainer_cuda.cpp on GPUs, test_trainer_multirank_cpu.cpp on CPU
// ranks, test_family_properties*.cpp on every model family): a scratch file per test process and the check that
// two ranks on batch 4 each train exactly like one rank on batch 8 (a run's saved weights: saved_weights.hpp).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "io/npy.hpp"
#include "model/model_registry.hpp"
#include "saved_weights.hpp"
#include "support/numeric.hpp"

namespace ddpx::testing {

// A file name in this process's scratch folder (created on first use).
inline std::filesystem::path scratch(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ddpx_test_cuda_train_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

inline CliResult run_cli(const std::string& args) { return run_ddpx(args); }

// Two ranks on batch 4 each train `model` (a registry spec) exactly like one rank on batch 8: .npy input is taken
// in global order, so both see the same 8 images per step. device "cuda" adds --cuda-graph on; backend_flags picks
// the backend (" --backend gloo"; empty: MPI on the CPU, NCCL on GPUs); pair_flags go to the two-rank run only
// (" --ranks-per-gpu 2": both ranks on one GPU, shares_one_gpu_flags()).
inline void expect_two_ranks_equal_one(const std::string& model, const std::string& device,
                                       const std::string& backend_flags = "", const std::string& pair_flags = "") {
  const std::unique_ptr<Model> m = make_model(model);
  const InputShape shape = m->input_shape();
  const int64_t count = 64, numel = shape.numel();
  std::vector<float> images(static_cast<size_t>(count * numel));
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(0.37f * static_cast<float>(i)) * 1.5f;
  for (int64_t i = 0; i < count; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % m->num_classes());
  const std::string tag = model + "_" + device + (backend_flags.empty() ? "" : "_gloo");
  const std::filesystem::path images_path = scratch(tag + "_two_rank_images.npy");
  const std::filesystem::path labels_path = scratch(tag + "_two_rank_labels.npy");
  write_npy(images_path,
            HostTensor::from_values<float>({count, shape.channels, shape.image_size, shape.image_size}, images));
  write_npy(labels_path, HostTensor::from_values<int32_t>({count}, labels));
  const std::string common = fmt::format(
      "train --device {} --model {} --precision fp32 --steps 6 --warmup 2 --lr 0.05 --momentum 0.9 "
      "--workers 1 --images {} --labels {} --comm-timeout 60{}",
      device, model, images_path.string(), labels_path.string(), device == "cuda" ? " --cuda-graph on" : "");
  const std::string one = scratch(tag + "_one_rank.safetensors").string();
  const std::string two = scratch(tag + "_two_ranks.safetensors").string();
  const CliResult single = run_cli(common + " --batch 8 --save " + one);
  ASSERT_EQ(single.status, 0) << single.output;
  const CliResult pair = run_cli(common + " --batch 4 --nproc-per-node 2 --save " + two + backend_flags + pair_flags);
  ASSERT_EQ(pair.status, 0) << pair.output;
  EXPECT_NE(pair.output.find("2 rank(s)"), std::string::npos) << pair.output;
  if (!backend_flags.empty()) EXPECT_NE(pair.output.find("gloo, 2 rank(s)"), std::string::npos) << pair.output;
  const std::vector<float> a = saved_weights(one, model), b = saved_weights(two, model);
  // Per-rank means then their average vs one mean over 8: fp32 rounding only, after 6 steps.
  EXPECT_LT(max_abs_diff(a, b), 2e-5);
  std::vector<float> initial(a.size());
  m->init_params(initial.data(), 0);
  EXPECT_GT(max_abs_diff(a, initial), 1e-2);  // training moved the weights far more than the tolerance
}

}  // namespace ddpx::testing
