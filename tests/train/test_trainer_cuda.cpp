// GPU-labelled end-to-end checks of the CUDA training path (skipped where no GPU is found): the trainer's
// whole-step CUDA graphs give the same weights as eager steps, the CUDA engine matches the CPU engine on the same
// data, learnable data converges in every precision, DDP with world size 1 equals plain training (also with the
// timed graphs replayed at progress lines, which alone carry bucket timings), and two GPUs (where a machine has
// them) equal one GPU with the whole batch. On the CPU the same two-ranks check runs over MPI and over Gloo, and a
// Gloo rank killed or stopped mid-run must end the job.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "gpu_guard.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_init.hpp"
#include "model/vit/vit_layout.hpp"
#include "profile/step_record.hpp"
#include "saved_weights.hpp"
#include "train/trainer.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::saved_weights;
using testing::max_abs_diff;

fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ddpx_test_cuda_train_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TrainOptions gpu_run(const std::string& model = "vit_tiny_test") {
  TrainOptions o;
  o.device = Device::cuda;
  o.model = model;
  o.batch = 8;
  o.steps = 12;
  o.warmup_steps = 2;
  o.data = DataSource::learnable;
  o.optimizer = OptimizerSpec{.kind = OptimizerKind::sgd, .lr = 0.05f, .momentum = 0.9f};
  o.workers = 2;
  o.quiet = true;
  o.seed = 5;
  return o;
}

using testing::CliResult;
CliResult run_cli(const std::string& args) { return testing::run_ddpx(args); }

TEST(CudaTraining, GraphReplayedStepsEqualEagerSteps) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "bf16"}) {
    TrainOptions eager = gpu_run(), graphed = gpu_run();
    eager.precision = graphed.precision = parse_precision(precision);
    eager.cuda_graph = GraphPolicy::off;
    graphed.cuda_graph = GraphPolicy::on;
    eager.save = scratch(std::string("eager_") + precision + ".safetensors").string();
    graphed.save = scratch(std::string("graph_") + precision + ".safetensors").string();
    run_training(eager);
    run_training(graphed);
    // Same kernels in the same order: bit-identical is expected; allow nothing.
    EXPECT_EQ(max_abs_diff(saved_weights(eager.save), saved_weights(graphed.save)), 0.0) << precision;
  }
}

TEST(CudaTraining, MatchesTheCpuEngineInFp32) {
  DDPX_REQUIRE_GPU();
  TrainOptions gpu = gpu_run(), cpu = gpu_run();
  cpu.device = Device::cpu;
  gpu.steps = cpu.steps = 5;
  gpu.cuda_graph = GraphPolicy::off;
  gpu.save = scratch("gpu_fp32.safetensors").string();
  cpu.save = scratch("cpu_fp32.safetensors").string();
  run_training(gpu);
  run_training(cpu);
  // 5 SGD steps of lr 0.05 on fp32 with different summation orders: weights agree to ~1e-5 absolute.
  EXPECT_LT(max_abs_diff(saved_weights(gpu.save), saved_weights(cpu.save)), 2e-4);
}

TEST(CudaTraining, LearnableDataConvergesInEveryPrecision) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "tf32", "bf16"}) {
    TrainOptions o = gpu_run();
    o.precision = parse_precision(precision);
    o.batch = 16;
    o.steps = 150;
    o.optimizer = OptimizerSpec{.kind = OptimizerKind::adamw, .lr = 2e-3f};
    o.cuda_graph = GraphPolicy::automatic;
    const TrainSummary s = run_training(o);
    EXPECT_LT(s.final_loss, 0.35 * s.first_loss) << precision << ": " << s.first_loss << " -> " << s.final_loss;
  }
}

// The allreduce hook at one rank reads nothing (CommHook::reads_bucket), so `--ddp` there keeps the plain run's
// gradients, bf16 weight gradients included (Note [bf16 weight gradients in their fp32 slots]), with its buckets
// updated as they become ready: the same weights bit for bit, eager and graph-replayed, in fp32 and bf16.
TEST(CudaTraining, DdpWithOneRankEqualsPlainTraining) {
  DDPX_REQUIRE_GPU();
  for (const char* precision : {"fp32", "bf16"}) {
    for (const char* graph : {"off", "on"}) {
      TrainOptions plain = gpu_run(), ddp = gpu_run();
      for (TrainOptions* o : {&plain, &ddp}) {
        o->precision = parse_precision(precision);
        o->cuda_graph = parse_graph_policy(graph);
      }
      ddp.ddp = true;
      ddp.bucket_mb = ddp.first_bucket_mb = 0.02;  // several buckets, each updated once ready
      plain.save = scratch("plain.safetensors").string();
      ddp.save = scratch("ddp.safetensors").string();
      plain.report = scratch("plain.json").string();
      ddp.report = scratch("ddp.json").string();
      run_training(plain);
      run_training(ddp);
      EXPECT_EQ(max_abs_diff(saved_weights(plain.save), saved_weights(ddp.save)), 0.0)
          << precision << ", graph " << graph;
      const std::string expected = std::string(precision) == "bf16" ? "bf16" : "fp32";
      EXPECT_EQ(load_run_report(ddp.report).config.weight_grads, expected) << precision << ", graph " << graph;
      EXPECT_EQ(load_run_report(plain.report).config.weight_grads, expected) << precision << ", graph " << graph;
    }
  }
}

// Note [Optimizer overlapped with backward] (train/step_engine.hpp): span updates on the engine's update stream (no
// DDP) or on the communication stream after each bucket (DDP, world 1) run the same element-wise kernels as the
// update after backward, so the weights are bit-identical: eager and graph-replayed, SGD with momentum, Nesterov
// and weight decay, AdamW, bf16 (whose bf16 weight copy the spans update too), and with accumulation.
TEST(CudaTraining, OverlappedOptimizerEqualsTheUpdateAfterBackward) {
  DDPX_REQUIRE_GPU();
  struct Case {
    const char* name;
    const char* optimizer;
    const char* precision;
    const char* graph;
    bool ddp;
    int64_t accum;
    const char* hook = "allreduce";
  };
  const Case cases[] = {{"sgd graph", "sgd", "fp32", "on", false, 1},  {"sgd eager", "sgd", "fp32", "off", false, 1},
                        {"sgd bf16 graph", "sgd", "bf16", "on", false, 1}, {"sgd ddp graph", "sgd", "bf16", "on", true, 1},
                        {"sgd ddp accum", "sgd", "fp32", "off", true, 2}, {"adamw", "adamw", "bf16", "off", false, 1},
                        {"adamw ddp", "adamw", "fp32", "off", true, 1},
                        // Note [Widening fused into the update]: overlapped, the update reads the hook's wire buffer
                        {"bf16 hook graph", "sgd", "bf16", "on", true, 1, "bf16"},
                        {"fp16 hook eager", "sgd", "fp32", "off", true, 1, "fp16"},
                        {"bf16 hook accum", "sgd", "fp32", "off", true, 2, "bf16"},
                        {"bf16 hook adamw", "adamw", "bf16", "off", true, 1, "bf16"},
                        // Note [Low-rank gradients fused into the update]: overlapped, the update reads PowerSGD's
                        // factors (from step 2 on; rank 3 is zero-padded to the kernels' width 4)
                        {"powersgd graph", "sgd", "bf16", "on", true, 1, "powersgd:2:2"},
                        {"powersgd eager rank 3", "sgd", "fp32", "off", true, 1, "powersgd:3:2"},
                        {"powersgd accum", "sgd", "fp32", "off", true, 2, "powersgd:2:2"},
                        {"powersgd adamw", "adamw", "fp32", "off", true, 1, "powersgd:2:2"}};
  for (const Case& c : cases) {
    TrainOptions overlapped = gpu_run(), after = gpu_run();
    for (TrainOptions* o : {&overlapped, &after}) {
      o->optimizer.kind = parse_optimizer_kind(c.optimizer);
      o->precision = parse_precision(c.precision);
      o->cuda_graph = parse_graph_policy(c.graph);
      o->ddp = c.ddp;
      o->grad_accum = c.accum;
      o->comm_hook = parse_comm_hook_spec(c.hook);
      o->bucket_mb = o->first_bucket_mb = 0.02;  // several buckets
      if (std::string(c.optimizer) == "sgd") o->optimizer.nesterov = true, o->optimizer.weight_decay = 1e-4f;
      if (std::string(c.optimizer) == "adamw")
        o->optimizer.lr = 1e-3f, o->optimizer.momentum = 0, o->optimizer.weight_decay = 0.01f;
    }
    overlapped.optimizer_overlap = OverlapPolicy::on;
    after.optimizer_overlap = OverlapPolicy::off;
    overlapped.save = scratch(std::string("overlapped.safetensors")).string();
    after.save = scratch(std::string("after.safetensors")).string();
    run_training(overlapped);
    run_training(after);
    EXPECT_EQ(max_abs_diff(saved_weights(overlapped.save), saved_weights(after.save)), 0.0) << c.name;
  }
}

// With a reducer, graph runs replay a second, timed graph per input parity at progress lines (bucket ready times
// are a node per bucket on the compute stream: see Note [Bucket ready times cost a graph node]). Both graphs
// compute the same step, so the weights equal eager DDP's; only the progress-line steps carry bucket timings.
TEST(CudaTraining, DdpGraphsTimeBucketsAtProgressLinesOnlyAndEqualEager) {
  DDPX_REQUIRE_GPU();
  TrainOptions eager = gpu_run(), graphed = gpu_run();
  eager.ddp = graphed.ddp = true;
  eager.bucket_mb = graphed.bucket_mb = 0.02;  // vit_tiny_test is 0.08 MB: about 4 buckets
  eager.first_bucket_mb = graphed.first_bucket_mb = 0.02;
  eager.log_every = graphed.log_every = 3;
  eager.cuda_graph = GraphPolicy::off;
  graphed.cuda_graph = GraphPolicy::on;
  eager.save = scratch("ddp_eager.safetensors").string();
  graphed.save = scratch("ddp_graphed.safetensors").string();
  graphed.report = scratch("ddp_graphed.json").string();
  run_training(eager);
  run_training(graphed);
  EXPECT_EQ(max_abs_diff(saved_weights(eager.save), saved_weights(graphed.save)), 0.0);
  const RunReport report = load_run_report(graphed.report);
  ASSERT_EQ(report.ranks.size(), 1u);
  // Warm-up 2: step 1 is eager, steps 2 and 3 capture the plain graphs, 4 and 5 the timed ones; measured steps
  // are 3..12, so the progress-line steps with bucket timings are 6, 9 and 12 (step 3 replayed a plain graph).
  std::vector<int64_t> timed_steps;
  for (const StepRecord& step : report.ranks[0].steps) {
    if (step.buckets.empty()) continue;
    timed_steps.push_back(step.step);
    ASSERT_GT(step.buckets.size(), 1u) << "step " << step.step;
    for (const BucketRecord& b : step.buckets) {
      EXPECT_LE(b.launch_ms, b.start_ms) << "step " << step.step << " bucket " << b.index;
      EXPECT_GT(b.launch_ms, 0.0) << "step " << step.step << " bucket " << b.index;
    }
    // Backward order: later buckets become ready later.
    EXPECT_LT(step.buckets.front().launch_ms, step.buckets.back().launch_ms) << "step " << step.step;
  }
  EXPECT_EQ(timed_steps, (std::vector<int64_t>{6, 9, 12}));
}

// Two ranks on batch 4 each train exactly like one rank on batch 8: .npy input is taken in global order, so both
// see the same 8 images per step. On GPUs this is NCCL through ddpx's own launcher with whole-step graphs holding
// the collectives; on the CPU the same check runs over MPI (and keeps the test itself honest in CI).
void expect_two_ranks_equal_one(const std::string& device, const std::string& backend_flags = "") {
  const VitConfig config = parse_vit_spec("vit_tiny_test");
  const int64_t count = 64, numel = config.image_numel();
  std::vector<float> images(static_cast<size_t>(count * numel));
  std::vector<int32_t> labels(static_cast<size_t>(count));
  for (size_t i = 0; i < images.size(); ++i) images[i] = std::sin(0.37f * static_cast<float>(i)) * 1.5f;
  for (int64_t i = 0; i < count; ++i) labels[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7) % config.num_classes);
  const std::string tag = device + (backend_flags.empty() ? "" : "_gloo");
  const fs::path images_path = scratch(tag + "_two_rank_images.npy");
  const fs::path labels_path = scratch(tag + "_two_rank_labels.npy");
  write_npy(images_path, HostTensor::from_values<float>({count, config.channels, config.image_size, config.image_size},
                                                        images));
  write_npy(labels_path, HostTensor::from_values<int32_t>({count}, labels));
  const std::string common = fmt::format(
      "train --device {} --model vit_tiny_test --precision fp32 --steps 6 --warmup 2 --lr 0.05 --momentum 0.9 "
      "--workers 1 --images {} --labels {} --comm-timeout 60{}",
      device, images_path.string(), labels_path.string(), device == "cuda" ? " --cuda-graph on" : "");
  const std::string one = scratch(tag + "_one_rank.safetensors").string();
  const std::string two = scratch(tag + "_two_ranks.safetensors").string();
  const CliResult single = run_cli(common + " --batch 8 --save " + one);
  ASSERT_EQ(single.status, 0) << single.output;
  const CliResult pair = run_cli(common + " --batch 4 --nproc-per-node 2 --save " + two + backend_flags);
  ASSERT_EQ(pair.status, 0) << pair.output;
  if (!backend_flags.empty()) EXPECT_NE(pair.output.find("gloo, 2 rank(s)"), std::string::npos) << pair.output;
  const std::vector<float> a = saved_weights(one), b = saved_weights(two);
  // Per-rank means then their average vs one mean over 8: fp32 rounding only, after 6 steps.
  EXPECT_LT(max_abs_diff(a, b), 2e-5);
  std::vector<float> initial(a.size());
  init_vit_params(VitLayout(config), initial.data(), 0);
  EXPECT_GT(max_abs_diff(a, initial), 1e-2);  // training moved the weights far more than the tolerance
}

TEST(CudaTraining, TwoGpusEqualOneGpuWithTheWholeBatch) {
  DDPX_REQUIRE_GPUS(2);
  expect_two_ranks_equal_one("cuda");
}

// Numerics on the CUDA path: every step is checked on the device (also inside replayed CUDA graphs) and read at
// the points where the host synchronizes anyway. SGD at lr 1e30 with the divergence rule off turns the numbers
// non-finite within a few steps; with progress lines only at the end (--log-every 1000) the run must still name
// the FIRST bad step (not the last one), and no checkpoint or --save may be written from that state.
TEST(CudaTraining, NonFiniteStepsAreCaughtOnTheDeviceAndNothingIsSaved) {
  DDPX_REQUIRE_GPU();
  for (const char* graphs : {"off", "on"}) {
    SCOPED_TRACE(graphs);
    const fs::path ck = scratch(std::string("nonfinite_ck_") + graphs), save = scratch(std::string("nonfinite_") + graphs + ".safetensors");
    fs::remove_all(ck);
    fs::remove(save);
    const CliResult r = run_cli(fmt::format(
        "train --device cuda --model vit_tiny_test --batch 8 --steps 40 --warmup 2 --workers 1 --lr 1e30 "
        "--divergence-ratio 0 --log-every 1000 --cuda-graph {} --checkpoint-dir {} --save {}",
        graphs, ck.string(), save.string()));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(r.output.find("not finite") != std::string::npos || r.output.find("the loss is") != std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("at step 40"), std::string::npos) << "the first bad step must be named:\n" << r.output;
    EXPECT_FALSE(fs::exists(save));
    EXPECT_FALSE(fs::exists(ck / "checkpoint.safetensors"));
  }
  // Divergence (finite loss far above the first) is caught by the same device flag. Weight decay 0: since AdamW's
  // default became PyTorch's 1e-2, lr 1e6 also scales every weight by 1 - 1e4 per step, and on the GPU a gradient
  // of step 2 overflowed (a non-finite gradient is reported first) before the loss could show the divergence.
  const CliResult adamw = run_cli("train --device cuda --model vit_tiny_test --batch 8 --steps 30 --workers 1 "
                                  "--optimizer adamw --lr 1e6 --weight-decay 0 --log-every 1000");
  EXPECT_EQ(adamw.status, 2) << adamw.output;
  EXPECT_NE(adamw.output.find("--divergence-ratio"), std::string::npos) << adamw.output;
}

#if defined(DDPX_HAVE_MPI) || defined(DDPX_HAVE_GLOO)
// Rank 0 fails between steps (its checkpoint cannot be written) while rank 1 already waits in the next step's
// all-reduce. The job must end at once with rank 0's own error, not hang in MPI_Finalize until rank 1's watchdog
// reports a communication timeout (60 s here; the test would then also fail on the message). Over Gloo, rank 1
// sees rank 0's connections close and fails at once; the launcher names rank 0 first. The folder passes the check
// before training; a folder squatting on the name of the step-3 checkpoint makes that save fail.
void expect_failing_rank_ends_the_job_with_its_own_error(const std::string& backend_flags) {
  const fs::path checkpoint_dir = scratch("checkpoint_blocked" + backend_flags.substr(backend_flags.find_last_of(' ') + 1));
  fs::remove_all(checkpoint_dir);
  fs::create_directories(checkpoint_dir / "checkpoint-3.safetensors" / "occupied");
  const CliResult r = run_cli(fmt::format(
      "train --device cpu --model vit_tiny_test --nproc-per-node 2 --batch 4 --steps 6 --workers 1 "
      "--checkpoint-dir {} --checkpoint-every 3 --keep-checkpoints 2 --comm-timeout 60{}",
      checkpoint_dir.string(), backend_flags));
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("saving checkpoint"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("communication timed out"), std::string::npos) << r.output;
  if (!backend_flags.empty()) EXPECT_NE(r.output.find("ddpx launch: rank 0 exited"), std::string::npos) << r.output;
}
#endif

#ifdef DDPX_HAVE_GLOO
// The same over Gloo: ddpx's launcher starts the two ranks itself (no mpirun), they connect through the TCP
// rendezvous' all-gather.
TEST(CpuTraining, TwoGlooRanksEqualOneRankWithTheWholeBatch) { expect_two_ranks_equal_one("cpu", " --backend gloo"); }

TEST(CpuTraining, AFailingGlooRankEndsTheJobWithItsOwnError) {
  expect_failing_rank_ends_the_job_with_its_own_error(" --backend gloo");
}

// The pid of the child of `parent` whose environment has RANK=<rank>, or -1 (a scan of /proc).
pid_t child_with_rank(pid_t parent, int rank) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));
    std::string state;
    pid_t ppid = 0;
    fields >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream environ(entry.path() / "environ");
    std::string env((std::istreambuf_iterator<char>(environ)), std::istreambuf_iterator<char>());
    if (env.find(std::string("\0RANK=", 6) + std::to_string(rank) + '\0') != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

// A rank killed or stopped mid-run ends a Gloo job: killed, the launcher names it; stopped (alive, silent), a live
// rank's watchdog or Gloo's own timeout (both --comm-timeout) fails that rank, its roll call names the stopped
// rank, and the launcher ends the job. Every
// wait here is bounded; the job is killed if it outlives them.
void expect_signalled_gloo_rank_ends_the_job(int signal_number, const std::vector<std::string>& expected) {
  const fs::path output = scratch("gloo_signal_" + std::to_string(signal_number) + ".log");
  const std::string command = fmt::format(
      "exec env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE -u SLURM_NTASKS {} train "
      "--device cpu --model vit_tiny_test --nproc-per-node 2 --backend gloo --batch 2 --steps 1000000 --warmup 0 "
      "--workers 1 --log-every 1 --comm-timeout 3 --data learnable > {} 2>&1",
      DDPX_BINARY, output.string());
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  bool exited = false;
  auto wait_for = [&](auto done, int tenths) {
    for (int i = 0; i < tenths && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return done();
  };
  const bool training =
      wait_for([&] { return testing::read_text(output).find("[rank 0] step      3") != std::string::npos; }, 600);
  pid_t rank1 = training ? child_with_rank(launcher, 1) : -1;
  if (rank1 > 0) ::kill(rank1, signal_number);
  wait_for([&] { return exited = exited || ::waitpid(launcher, &status, WNOHANG) == launcher; }, 600);
  if (!exited) {
    ::kill(launcher, SIGKILL);
    ::waitpid(launcher, &status, 0);
  }
  const std::string log = testing::read_text(output);
  ASSERT_TRUE(training) << log;
  ASSERT_GT(rank1, 0) << "rank 1's process was not found\n" << log;
  EXPECT_TRUE(exited) << "the job did not end within 60 s after rank 1 got signal " << signal_number << "\n" << log;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << log;
  for (const std::string& text : expected) EXPECT_NE(log.find(text), std::string::npos) << text << "\n" << log;
}

TEST(CpuTraining, AKilledGlooRankEndsTheJobAndIsNamed) {
  expect_signalled_gloo_rank_ends_the_job(SIGKILL, {"ddpx launch: rank 1 was killed by signal 9"});
}

TEST(CpuTraining, AStoppedGlooRankEndsTheJob) {
  // Rank 0's own watchdog message or Gloo's timeout, whichever comes first (both after 3 s), and the roll call
  // that names the stopped rank.
  expect_signalled_gloo_rank_ends_the_job(SIGSTOP, {"ddpx launch: rank 0 exited with status 2 first: ddpx: error: ",
                                                    "imed out", "3 s",
                                                    "ddpx: rank 0: roll call after the failed gloo all_reduce: "
                                                    "rank(s) 1 did not answer within 2 s"});
}
#endif

#ifdef DDPX_HAVE_MPI
TEST(CpuTraining, TwoMpiRanksEqualOneRankWithTheWholeBatch) { expect_two_ranks_equal_one("cpu"); }

TEST(CpuTraining, AFailingMpiRankEndsTheJobWithItsOwnError) { expect_failing_rank_ends_the_job_with_its_own_error(""); }

// A launcher's variables for a world of one (an sbatch script's single task) do not stop --nproc-per-node from
// starting its workers; a process that already is one rank of several refuses the flag instead of ignoring it.
TEST(CpuTraining, NprocPerNodeUnderAnotherLauncher) {
  const std::string args = "train --device cpu --model vit_tiny_test --nproc-per-node 2 --batch 4 --steps 2 --workers 1";
  const CliResult single_task = testing::run_ddpx(args, "SLURM_PROCID=0 SLURM_NTASKS=1");
  EXPECT_EQ(single_task.status, 0) << single_task.output;
  EXPECT_NE(single_task.output.find("batch 4 x 2 rank(s)"), std::string::npos) << single_task.output;
  // The workers re-run the same command line: --nproc-per-node from a --config file is not a second launch.
  const fs::path config = scratch("nproc.cfg");
  std::ofstream(config) << "nproc-per-node = 2\n";
  const CliResult from_config = testing::run_ddpx(
      "train --device cpu --model vit_tiny_test --batch 4 --steps 2 --workers 1 --config " + config.string());
  EXPECT_EQ(from_config.status, 0) << from_config.output;
  EXPECT_NE(from_config.output.find("batch 4 x 2 rank(s)"), std::string::npos) << from_config.output;
  const CliResult inside_job = testing::run_ddpx(args, "RANK=1 WORLD_SIZE=2");
  EXPECT_NE(inside_job.status, 0) << inside_job.output;
  EXPECT_NE(inside_job.output.find("--nproc-per-node 2: this process is already rank 1 of 2 started by torchrun"),
            std::string::npos)
      << inside_job.output;
}
#endif

TEST(CudaTraining, ResumeOnTheGpuContinuesTheRun) {
  DDPX_REQUIRE_GPU();
  TrainOptions full = gpu_run(), first = gpu_run(), resumed = gpu_run();
  full.cuda_graph = first.cuda_graph = resumed.cuda_graph = GraphPolicy::off;
  full.save = scratch("resume_full.safetensors").string();
  first.steps = 6;
  first.checkpoint_dir = scratch("resume_ckpt").string();
  resumed.resume = first.checkpoint_dir;
  resumed.save = scratch("resume_resumed.safetensors").string();
  run_training(full);
  run_training(first);
  run_training(resumed);
  // Deterministic kernels (no atomics in the reductions): bit-identical is expected.
  EXPECT_EQ(max_abs_diff(saved_weights(full.save), saved_weights(resumed.save)), 0.0);
}

}  // namespace
}  // namespace ddpx
