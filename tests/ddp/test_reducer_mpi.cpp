// Data parallelism on the MPI backend (registered as ddp_mpi_4ranks): N ranks x batch b must train like
// 1 rank x batch N*b. The toy regression keeps every number exact enough to compare tightly:
//  - allreduce hook, any bucket plan, with or without overlap: within 2e-6 of the single-process reference
//    (only the summation order of the batch mean differs);
//  - gradient accumulation (K micro-batches, the first K-1 without communication) == one big batch;
//  - fp16 / bf16 hooks: within their rounding (bounds below);
//  - PowerSGD: equal (1e-4) to a single-process simulation of the same algorithm on all N ranks' gradients,
//    with the same seed, and clearly different from exact averaging (it is lossy).
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "ddp/comm_hook_factory.hpp"
#include "ddp/powersgd_hook.hpp"
#include "ddp/reducer.hpp"
#include "dist/host_collectives.hpp"
#include "dist/mpi_communicator.hpp"
#include "support/numeric.hpp"
#include "toy_regression.hpp"

namespace ddpx {
namespace {

using testing::sgd_step;
using testing::ToyRegression;

struct TrainSetup {
  std::string hook = "allreduce";
  BucketPlanOptions plan{};
  bool overlap = true;
  int steps = 6;
  int local_batch = 3;
  int accumulation = 1;
  float lr = 0.05f;
};

constexpr uint64_t kInitSeed = 7;

// Every rank starts from its own random parameters; broadcast_host() (the trainer's broadcast of
// rank 0's parameters) must make them rank 0's.
std::vector<float> train_data_parallel(Communicator& comm, const TrainSetup& setup) {
  ToyRegression model;
  std::vector<float> params = model.initial_params(kInitSeed + uint64_t(comm.rank()));
  broadcast_host(comm, params.data(), params.size() * sizeof(float), 0);
  std::vector<float> grads(model.buffer_elems());
  Reducer reducer(comm, grads.data(), grads.size(), model.tensors(), BucketPlan(model.tensors(), setup.plan),
                  make_comm_hook(setup.hook), ReducerOptions{setup.overlap});
  for (int step = 0; step < setup.steps; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    for (int micro = 0; micro < setup.accumulation; ++micro) {
      reducer.begin_step(micro == setup.accumulation - 1);
      const int64_t first = int64_t(comm.rank() * setup.accumulation + micro) * setup.local_batch;
      model.accumulate_gradients(params, grads.data(), step, first, setup.local_batch, 1.0 / setup.accumulation,
                                 [&](size_t b, size_t e) { reducer.mark_ready(b, e); });
      reducer.finish_step();
    }
    sgd_step(params, grads, setup.lr);
  }
  return params;
}

// One process, the whole global batch of every step.
std::vector<float> train_single_process(int world, const TrainSetup& setup) {
  ToyRegression model;
  std::vector<float> params = model.initial_params(kInitSeed);
  std::vector<float> grads(model.buffer_elems());
  const int64_t global_batch = int64_t(world) * setup.accumulation * setup.local_batch;
  for (int step = 0; step < setup.steps; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    model.accumulate_gradients(params, grads.data(), step, 0, global_batch, 1.0);
    sgd_step(params, grads, setup.lr);
  }
  return params;
}

using testing::max_abs_diff;

class DataParallel : public ::testing::Test {
 protected:
  MpiCommunicator comm;
};

TEST_F(DataParallel, AllReduceMatchesTheBigBatchForEveryPlan) {
  const std::vector<float> reference = train_single_process(comm.size(), TrainSetup{});
  const std::vector<BucketPlanOptions> plans{
      {size_t{25} << 20, size_t{1} << 20, 4},  // PyTorch's defaults: one bucket for this model
      {1248, 208, 4},                          // one bucket per group
      {64, 64, 4},                             // every tensor alone (each is above the cap)
      {700, 100, 4},                           // mixed
  };
  for (const BucketPlanOptions& plan : plans)
    for (bool overlap : {true, false}) {
      TrainSetup setup;
      setup.plan = plan;
      setup.overlap = overlap;
      EXPECT_LT(max_abs_diff(train_data_parallel(comm, setup), reference), 2e-6)
          << "cap " << plan.cap_bytes << " overlap " << overlap;
    }
}

TEST_F(DataParallel, GradientAccumulationMatchesTheBigBatch) {
  TrainSetup setup;
  setup.accumulation = 3;
  setup.local_batch = 2;
  setup.plan = {700, 100, 4};
  EXPECT_LT(max_abs_diff(train_data_parallel(comm, setup), train_single_process(comm.size(), setup)), 2e-6);
}

TEST_F(DataParallel, SixteenBitHooksStayWithinTheirPrecision) {
  const std::vector<float> reference = train_single_process(comm.size(), TrainSetup{});
  // Gradients are O(1) here; a relative rounding of 2^-11 (fp16) / 2^-8 (bf16) per step, over 6 steps at
  // lr 0.05, moves parameters by at most ~6 * 0.05 * |g| * 2 ulp: bounds 1e-3 and 8e-3 leave margin, yet a hook
  // that forgot the 1/N scaling or the cast back would miss them by orders of magnitude.
  TrainSetup setup;
  setup.plan = {700, 100, 4};
  setup.hook = "fp16";
  const double fp16_error = max_abs_diff(train_data_parallel(comm, setup), reference);
  setup.hook = "bf16";
  const double bf16_error = max_abs_diff(train_data_parallel(comm, setup), reference);
  EXPECT_LT(fp16_error, 1e-3);
  EXPECT_LT(bf16_error, 8e-3);
  EXPECT_GT(bf16_error, 0.0);  // bf16 really rounds
}

// ---- PowerSGD: a single-process simulation of the hook on all ranks at once ----

void gram_schmidt(std::vector<std::vector<double>>& columns) {
  for (size_t j = 0; j < columns.size(); ++j) {
    double norm = 0;
    for (double x : columns[j]) norm += x * x;
    norm = std::sqrt(norm);
    for (double& x : columns[j]) x = norm > 0 ? x / norm : 0;
    for (size_t k = j + 1; k < columns.size(); ++k) {
      double dot = 0;
      for (size_t i = 0; i < columns[j].size(); ++i) dot += columns[j][i] * columns[k][i];
      for (size_t i = 0; i < columns[j].size(); ++i) columns[k][i] -= dot * columns[j][i];
    }
  }
}

class PowerSgdSimulation {
 public:
  PowerSgdSimulation(const ToyRegression& model, const BucketPlan& plan, int world, int64_t rank, uint64_t seed)
      : model_(model), plan_(plan), world_(world), errors_(size_t(world), std::vector<double>(model.buffer_elems())) {
    for (size_t b = 0; b < plan.size(); ++b) {
      std::vector<float> scratch(model.buffer_elems());
      BucketView view{b, scratch.data() + plan[b].begin, plan[b].begin, plan[b].end,
                      std::span<const GradTensor>(plan.tensors().data() + plan[b].first_tensor,
                                                  plan[b].end_tensor - plan[b].first_tensor),
                      GradDevice::cpu};
      layouts_.push_back(plan_compression(view, rank, 2.0));
      const std::vector<float> q = powersgd_initial_q(layouts_.back(), seed, b, 0);
      qs_.emplace_back(q.begin(), q.end());
    }
  }

  // rank_grads[r] = rank r's local gradient buffer; returns the reduced buffer every rank ends with.
  std::vector<float> reduce(const std::vector<std::vector<float>>& rank_grads) {
    std::vector<float> out(model_.buffer_elems(), 0.0f);
    for (size_t b = 0; b < plan_.size(); ++b) {
      const Bucket& bucket = plan_[b];
      const CompressionLayout& layout = layouts_[b];
      std::vector<std::vector<float>> inputs(static_cast<size_t>(world_));
      for (int r = 0; r < world_; ++r)
        for (size_t i = bucket.begin; i < bucket.end; ++i)
          inputs[r].push_back(float(rank_grads[r][i] + errors_[r][i]));
      std::vector<float> result = inputs[0];  // padding keeps rank 0's (zero) values
      for (const BucketSegment& segment : layout.uncompressed)
        for (size_t i = segment.offset; i < segment.offset + segment.numel; ++i) {
          double sum = 0;
          for (int r = 0; r < world_; ++r) sum += inputs[r][i];
          result[i] = float(sum / world_);
        }
      for (const LowRankMatrix& m : layout.matrices) {
        std::vector<std::vector<double>> q = q_columns(b, m);
        gram_schmidt(q);
        std::vector<std::vector<double>> p(size_t(m.rank), std::vector<double>(size_t(m.rows), 0.0));
        for (int r = 0; r < world_; ++r) {
          const float* matrix = inputs[r].data() + m.offset;
          for (int64_t k = 0; k < m.rank; ++k)
            for (int64_t i = 0; i < m.rows; ++i) {
              double dot = 0;
              for (int64_t j = 0; j < m.cols; ++j) dot += matrix[i * m.cols + j] * q[k][j];
              p[k][i] += dot / world_;
            }
        }
        gram_schmidt(p);
        std::vector<std::vector<double>> new_q(size_t(m.rank), std::vector<double>(size_t(m.cols), 0.0));
        for (int r = 0; r < world_; ++r) {
          const float* matrix = inputs[r].data() + m.offset;
          for (int64_t k = 0; k < m.rank; ++k)
            for (int64_t j = 0; j < m.cols; ++j) {
              double dot = 0;
              for (int64_t i = 0; i < m.rows; ++i) dot += matrix[i * m.cols + j] * p[k][i];
              new_q[k][j] += dot / world_;
            }
        }
        for (int64_t i = 0; i < m.rows; ++i)
          for (int64_t j = 0; j < m.cols; ++j) {
            double value = 0;
            for (int64_t k = 0; k < m.rank; ++k) value += p[k][i] * new_q[k][j];
            result[m.offset + i * m.cols + j] = float(value);
          }
        store_q(b, m, new_q);
      }
      for (int r = 0; r < world_; ++r)
        for (size_t i = 0; i < bucket.numel(); ++i) errors_[r][bucket.begin + i] = double(inputs[r][i]) - result[i];
      std::copy(result.begin(), result.end(), out.begin() + long(bucket.begin));
    }
    return out;
  }

 private:
  std::vector<std::vector<double>> q_columns(size_t b, const LowRankMatrix& m) const {
    std::vector<std::vector<double>> columns(size_t(m.rank), std::vector<double>(size_t(m.cols)));
    for (int64_t j = 0; j < m.cols; ++j)
      for (int64_t k = 0; k < m.rank; ++k) columns[k][j] = qs_[b][m.q_offset + j * m.rank + k];
    return columns;
  }
  void store_q(size_t b, const LowRankMatrix& m, const std::vector<std::vector<double>>& columns) {
    for (int64_t j = 0; j < m.cols; ++j)
      for (int64_t k = 0; k < m.rank; ++k) qs_[b][m.q_offset + j * m.rank + k] = columns[k][j];
  }

  const ToyRegression& model_;
  const BucketPlan& plan_;
  int world_;
  std::vector<CompressionLayout> layouts_;
  std::vector<std::vector<double>> qs_;      // per bucket, packed like the hook's Q
  std::vector<std::vector<double>> errors_;  // per rank, whole buffer
};

TEST_F(DataParallel, PowerSgdEqualsASingleProcessSimulation) {
  for (int64_t rank : {1, 2}) {
    TrainSetup setup;
    setup.plan = {1248, 208, 4};
    setup.hook = "powersgd:" + std::to_string(rank) + ":1";  // step 0 exact, steps 1.. compressed
    const std::vector<float> distributed = train_data_parallel(comm, setup);

    ToyRegression model;
    BucketPlan plan(model.tensors(), setup.plan);
    PowerSgdSimulation simulation(model, plan, comm.size(), rank, /*seed=*/0);
    std::vector<float> params = model.initial_params(kInitSeed);
    std::vector<float> exact_params = params;
    for (int step = 0; step < setup.steps; ++step) {
      std::vector<std::vector<float>> rank_grads(size_t(comm.size()), std::vector<float>(model.buffer_elems()));
      std::vector<float> exact(model.buffer_elems());
      for (int r = 0; r < comm.size(); ++r)
        model.accumulate_gradients(params, rank_grads[r].data(), step, int64_t(r) * setup.local_batch,
                                   setup.local_batch, 1.0);
      model.accumulate_gradients(exact_params, exact.data(), step, 0, int64_t(comm.size()) * setup.local_batch, 1.0);
      std::vector<float> reduced(model.buffer_elems(), 0.0f);
      if (step < 1) {
        for (size_t i = 0; i < reduced.size(); ++i) {
          double sum = 0;
          for (int r = 0; r < comm.size(); ++r) sum += rank_grads[r][i];
          reduced[i] = float(sum / comm.size());
        }
      } else {
        reduced = simulation.reduce(rank_grads);
      }
      sgd_step(params, reduced, setup.lr);
      sgd_step(exact_params, exact, setup.lr);
    }
    // fp32 gemms and all-reduces against a double simulation, through 5 orthogonalizations: 1e-4.
    EXPECT_LT(max_abs_diff(distributed, params), 1e-4) << "rank " << rank;
    EXPECT_GT(max_abs_diff(distributed, exact_params), 1e-3) << "PowerSGD should be lossy here";
  }
}

}  // namespace
}  // namespace ddpx
