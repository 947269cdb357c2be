// What `ddpx train` and `ddpx eval` guarantee about data, end to end on the CPU: a diverged run stops at the step
// where it diverged and never writes its state over the last good checkpoint; outputs never destroy inputs,
// devices or each other; a bad checkpoint folder or a second run on it is refused before training; a failing
// checkpoint does not lose --save; a full disk leaves the old report whole; FIFOs and devices given as inputs are
// refused at once; train and eval apply one policy to images.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "io/checkpoint.hpp"
#include "io/directory_lock.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/vit/vit_layout.hpp"
#include "model/vit/vit_config.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;
using testing::CliResult;
using testing::fresh_dir;
using testing::read_text;
using testing::run_ddpx;

constexpr const char* kTiny = "train --model vit_tiny_test --batch 4 --workers 1 --quiet";

// Every command that could block on a FIFO runs under timeout(1): a regression fails the test, never hangs it.
CliResult run_bounded(const std::string& args) { return run_ddpx(args, "timeout 60"); }

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

bool mentions(const CliResult& r, const std::string& text) { return r.output.find(text) != std::string::npos; }

// Runs `args` with the size of any file this process tree writes capped at `bytes` (the kernel fails write() with
// EFBIG past it, as a full disk fails with ENOSPC; SIGXFSZ is ignored so the error is reported, not fatal).
CliResult run_with_file_size_cap(const std::string& args, rlim_t bytes) {
  rlimit original{};
  getrlimit(RLIMIT_FSIZE, &original);
  const auto previous = signal(SIGXFSZ, SIG_IGN);
  rlimit capped = original;
  capped.rlim_cur = bytes;
  setrlimit(RLIMIT_FSIZE, &capped);
  CliResult r = run_ddpx(args);
  setrlimit(RLIMIT_FSIZE, &original);
  signal(SIGXFSZ, previous);
  return r;
}

void write_images(const fs::path& path, int64_t n, float value, TensorDType dtype = TensorDType::f32) {
  const VitConfig c = parse_vit_spec("vit_tiny_test");
  std::vector<float> pixels(static_cast<size_t>(n * c.image_numel()), 0.5f);
  pixels[static_cast<size_t>(c.image_numel()) + 7] = value;  // image 1
  if (dtype == TensorDType::f64) {
    write_npy(path, HostTensor::from_values<double>({n, c.channels, c.image_size, c.image_size},
                                                    std::vector<double>(pixels.begin(), pixels.end())));
  } else {
    write_npy(path, HostTensor::from_values<float>({n, c.channels, c.image_size, c.image_size}, pixels));
  }
}

// AdamW at lr 1e6: the loss jumps from 2.3 to ~1e7 at step 2. Before, the loss was checked only on logged
// steps, an all-NaN checkpoint replaced the good one and --resume failed; now step 2 is named, and step 1's
// checkpoint, whose weights gave that loss, is never committed (Note [Deferred checkpoint commit]).
TEST(DataSafety, ADivergedRunStopsAtTheBadStepAndKeepsTheLastGoodCheckpoint) {
  const fs::path dir = fresh_dir("diverged");
  const std::string ck = (dir / "ck").string(), save = (dir / "w.safetensors").string();
  const CliResult r = run_ddpx(std::string(kTiny) + " --optimizer adamw --lr 1e6 --steps 30 --log-every 10 "
                               "--checkpoint-dir " + ck + " --checkpoint-every 1 --save " + save);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "at step 2")) << r.output;
  EXPECT_TRUE(mentions(r, "--divergence-ratio")) << r.output;
  EXPECT_FALSE(fs::exists(save)) << "no --save from a diverged state";
  EXPECT_FALSE(checkpoint_exists(ck)) << "step 1's weights are the ones that diverged";
  EXPECT_TRUE(fs::is_empty(ck) || (fs::exists(fs::path(ck) / ".ddpx.lock") &&
                                   std::distance(fs::directory_iterator(ck), fs::directory_iterator()) == 1));

  // With the divergence rule off, SGD at lr 1e30 turns the numbers non-finite: still named and stopped, on a
  // step that is not a logged one.
  const CliResult nan = run_ddpx(std::string(kTiny) + " --lr 1e30 --steps 30 --log-every 100 --divergence-ratio 0");
  EXPECT_EQ(nan.status, 2) << nan.output;
  EXPECT_TRUE(mentions(nan, "not finite") || mentions(nan, "the loss is")) << nan.output;
  EXPECT_FALSE(mentions(nan, "at step 30")) << nan.output;
  fs::remove_all(dir);
}

// Issue 37 item 5: with --checkpoint-every 1 --keep-checkpoints 1, an update that blows up at a checkpoint step
// replaced the last good checkpoint (the loss of its weights is seen one step later). Three good steps, then a
// resumed run whose first update diverges: the checkpoint of step 3 stays, step 4's is never committed, and
// resuming from it trains normally.
TEST(DataSafety, ACheckpointIsCommittedOnlyAfterTheNextStepsLossPassed) {
  const fs::path dir = fresh_dir("deferred");
  const std::string ck = (dir / "ck").string();
  const std::string flags = std::string(kTiny) + " --optimizer adamw --checkpoint-dir " + ck +
                            " --checkpoint-every 1 --keep-checkpoints 1 --log-every 100";
  const CliResult good = run_ddpx(flags + " --lr 1e-3 --steps 3");
  ASSERT_EQ(good.status, 0) << good.output;
  ASSERT_EQ(read_checkpoint_info(ck).state.step, 3);
  const CliResult diverged = run_ddpx(flags + " --lr 1e6 --steps 10 --resume " + ck);
  EXPECT_EQ(diverged.status, 2) << diverged.output;
  EXPECT_TRUE(mentions(diverged, "at step 5")) << diverged.output;
  EXPECT_TRUE(mentions(diverged, "the last checkpoint, if any, is the last good one")) << diverged.output;
  EXPECT_EQ(read_checkpoint_info(ck).state.step, 3);
  const CliResult resumed = run_ddpx(flags + " --lr 1e-3 --steps 5 --resume " + ck);
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_EQ(read_checkpoint_info(ck).state.step, 5);
  fs::remove_all(dir);
}

TEST(DataSafety, BadCheckpointFolderOrASecondRunIsRefusedBeforeTraining) {
  const fs::path dir = fresh_dir("ckdir");
  write_text(dir / "notadir", "");
  const std::string save = (dir / "w.safetensors").string();
  const CliResult r = run_ddpx(std::string(kTiny) + " --steps 2 --checkpoint-dir " + (dir / "notadir/ck").string() +
                               " --save " + save);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "--checkpoint-dir")) << r.output;
  EXPECT_FALSE(mentions(r, "summary:")) << "refused after training:\n" << r.output;

  // A second run on a folder another run holds: a clear error, not two runs overwriting each other.
  fs::create_directories(dir / "shared");
  DirectoryLock held(dir / "shared", "--checkpoint-dir");
  const CliResult second = run_ddpx(std::string(kTiny) + " --steps 2 --checkpoint-dir " + (dir / "shared").string());
  EXPECT_EQ(second.status, 2) << second.output;
  EXPECT_TRUE(mentions(second, "another ddpx run")) << second.output;
  fs::remove_all(dir);
}

// The checkpoint (AdamW: weights and two state buffers) fails on a full disk where --save (weights only) fits:
// before, the final checkpoint was written first and its failure lost --save as well.
TEST(DataSafety, AFailingCheckpointDoesNotLoseSave) {
  const fs::path dir = fresh_dir("save_survives");
  const std::string save = (dir / "w.safetensors").string();
  const CliResult r = run_with_file_size_cap(std::string(kTiny) + " --optimizer adamw --lr 1e-3 --steps 2 "
                                             "--checkpoint-dir " + (dir / "ck").string() + " --save " + save,
                                             160 * 1024);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "saving checkpoint")) << r.output;
  EXPECT_TRUE(mentions(r, "holds the weights of step 2")) << r.output;
  ASSERT_TRUE(fs::exists(save)) << r.output;
  EXPECT_EQ(run_ddpx("eval --model vit_tiny_test --weights " + save + " --images " +
                     (write_images(dir / "x.npy", 2, 0.f), (dir / "x.npy").string())).status, 0);
  fs::remove_all(dir);
}

// A full disk while writing the report: the earlier report stays whole (before, a truncated file was left).
TEST(DataSafety, AFullDiskLeavesTheOldReportWhole) {
  const fs::path dir = fresh_dir("full_disk");
  const fs::path report = dir / "run.json";
  write_text(report, "{\"old\": true}\n");
  const CliResult r = run_with_file_size_cap(std::string(kTiny) + " --steps 8 --warmup 2 --report " + report.string(),
                                             1024);  // a report of 6 steps has about 3.7 KB
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "unchanged")) << r.output;
  EXPECT_EQ(read_text(report), "{\"old\": true}\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "a temporary was left";
  fs::remove_all(dir);
}

TEST(DataSafety, OutputsNeverDestroyInputsDevicesOrEachOther) {
  const fs::path dir = fresh_dir("outputs");
  write_images(dir / "x.npy", 4, 0.f);
  write_npy(dir / "y.npy", HostTensor::from_values<int64_t>({4}, std::vector<int64_t>{0, 1, 2, 3}));
  const std::string data = " --images " + (dir / "x.npy").string() + " --labels " + (dir / "y.npy").string();
  const std::string x_before = read_text(dir / "x.npy");
  CliResult r = run_ddpx(std::string(kTiny) + " --steps 1" + data + " --save " + (dir / "x.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "--save") && mentions(r, "--images") && mentions(r, "same file")) << r.output;
  EXPECT_EQ(read_text(dir / "x.npy"), x_before);

  const std::string weights = (dir / "w.safetensors").string();
  ASSERT_EQ(run_ddpx(std::string(kTiny) + " --steps 1 --save " + weights).status, 0);
  r = run_ddpx(std::string(kTiny) + " --steps 8 --warmup 2 --load " + weights + " --report " + dir.string() +
               "/./w.safetensors");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "--report") && mentions(r, "--load")) << r.output;
  r = run_ddpx(std::string(kTiny) + " --steps 8 --warmup 2 --report " + (dir / "a.json").string() + " --trace " +
               (dir / "a.json").string());
  EXPECT_TRUE(mentions(r, "--report") && mentions(r, "--trace") && mentions(r, "same file")) << r.output;
  const std::string report = (dir / "run.json").string();
  ASSERT_EQ(run_ddpx(std::string(kTiny) + " --steps 8 --warmup 2 --report " + report).status, 0);
  const std::string report_before = read_text(report);
  r = run_ddpx("report " + report + " --trace " + dir.string() + "/./run.json");
  EXPECT_TRUE(mentions(r, "--trace") && mentions(r, "same file")) << r.output;
  EXPECT_EQ(read_text(report), report_before);
  r = run_ddpx("eval --model vit_tiny_test --weights " + weights + " --images " + (dir / "x.npy").string() +
               " --out " + (dir / "x.npy").string());
  EXPECT_TRUE(mentions(r, "--out") && mentions(r, "--images")) << r.output;
  EXPECT_EQ(read_text(dir / "x.npy"), x_before);

  // A character device is written in place and stays a device (run as root, rename() used to replace it with a
  // regular file). The test's own null device (mknod needs root, which CI has), so that old code under test
  // cannot damage the system's /dev/null.
  const fs::path null_device = dir / "null";
  if (::mknod(null_device.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    r = run_ddpx(std::string(kTiny) + " --steps 1 --save " + null_device.string());
    EXPECT_EQ(r.status, 0) << r.output;
    struct stat info{};
    ASSERT_EQ(::stat(null_device.c_str(), &info), 0);
    EXPECT_TRUE(S_ISCHR(info.st_mode)) << "the device was replaced by a file";
  }
  // A symlink: the file it points to is written; the link stays a link.
  fs::create_symlink(weights, dir / "link.safetensors");
  r = run_ddpx(std::string(kTiny) + " --steps 2 --save " + (dir / "link.safetensors").string());
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir / "link.safetensors"));
  ASSERT_EQ(::mkfifo((dir / "out.fifo").c_str(), 0600), 0);
  r = run_bounded(std::string(kTiny) + " --steps 1 --save " + (dir / "out.fifo").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "FIFO")) << r.output;
  fs::remove_all(dir);
}

TEST(DataSafety, FifosAndDevicesAsInputsAreRefusedAtOnce) {
  const fs::path dir = fresh_dir("inputs");
  const std::string fifo = (dir / "in.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  write_npy(dir / "y.npy", HostTensor::from_values<int64_t>({4}, std::vector<int64_t>{0, 1, 2, 3}));
  for (const std::string& flags : {" --load " + fifo, " --images " + fifo + " --labels " + (dir / "y.npy").string(),
                                   " --config " + fifo, std::string(" --config /dev/urandom")}) {
    const CliResult r = run_bounded(std::string(kTiny) + " --steps 1" + flags);
    EXPECT_EQ(r.status, 2) << flags << ": " << r.output;
    EXPECT_TRUE(mentions(r, "FIFO") || mentions(r, "device")) << flags << ": " << r.output;
  }
  const CliResult eval = run_bounded("eval --model vit_tiny_test --weights " + fifo + " --images " + fifo);
  EXPECT_EQ(eval.status, 2) << eval.output;
  EXPECT_TRUE(mentions(eval, "FIFO")) << eval.output;
  fs::remove_all(dir);
}

TEST(DataSafety, ConfigsImagesAndHyperParametersFollowOnePolicy) {
  const fs::path dir = fresh_dir("policy");
  // A .json config with a key twice is refused, as the .cfg reader always did (before: the last one won).
  write_text(dir / "twice.json", "{\"steps\": 2, \"steps\": 3}");
  CliResult r = run_ddpx(std::string(kTiny) + " --config " + (dir / "twice.json").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "'steps' is set twice")) << r.output;
  // An lr that is 0 in fp32 never trains.
  r = run_ddpx(std::string(kTiny) + " --steps 1 --lr 1e-50");
  EXPECT_TRUE(mentions(r, "--lr 1e-50 is 0 in fp32")) << r.output;
  // train refuses float64 images as eval does, and both refuse non-finite pixels (before: eval printed NaN logits
  // and exited 0).
  write_images(dir / "x64.npy", 4, 0.f, TensorDType::f64);
  write_images(dir / "nan.npy", 4, std::numeric_limits<float>::quiet_NaN());
  write_npy(dir / "y.npy", HostTensor::from_values<int64_t>({4}, std::vector<int64_t>{0, 1, 2, 3}));
  r = run_ddpx(std::string(kTiny) + " --steps 1 --images " + (dir / "x64.npy").string() + " --labels " +
               (dir / "y.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "holds f64 values; ddpx reads float32 images")) << r.output;
  const std::string weights = (dir / "w.safetensors").string();
  ASSERT_EQ(run_ddpx(std::string(kTiny) + " --steps 1 --save " + weights).status, 0);
  r = run_ddpx("eval --model vit_tiny_test --weights " + weights + " --images " + (dir / "nan.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "is not finite") && mentions(r, "(image 1)")) << r.output;
  r = run_ddpx(std::string(kTiny) + " --steps 1 --images " + (dir / "nan.npy").string() + " --labels " +
               (dir / "y.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "is not finite")) << r.output;
  // Non-finite weights (written by another tool): eval names the tensor instead of printing NaN logits.
  const VitLayout layout(parse_vit_spec("vit_tiny_test"));
  std::vector<float> params(layout.buffer_size(), 0.f);
  params[layout.at("encoder.ln.bias").offset + 2] = std::numeric_limits<float>::infinity();
  write_safetensors(dir / "inf.safetensors", layout_tensor_views(layout, "", params.data()));
  write_images(dir / "x.npy", 4, 0.f);
  r = run_ddpx("eval --model vit_tiny_test --weights " + (dir / "inf.safetensors").string() + " --images " +
               (dir / "x.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "'encoder.ln.bias' (element 2")) << r.output;
  fs::remove_all(dir);
}

#ifdef DDPX_HAVE_MPI
// Ctrl-C on a CPU multi-rank run (the launcher under mpirun gets SIGINT): before, the job exited 1 with no word;
// now it says what stopped it and exits 130, as a shell reports an interrupted command. Every wait is bounded.
// Issue 40: a --batch larger than the .npy data, or not dividing it, trained silently on repeated images. Now the
// images are taken in epochs as the image sources take theirs (tests/data/test_npy_dataset.cpp checks the batches):
// a batch larger than the data is refused naming --batch, the file and the sizes, and --epochs counts the batches.
TEST(DataSafety, NpyDataRunsInEpochsAndRefusesABatchLargerThanTheData) {
  const fs::path dir = fresh_dir("npy_epochs");
  write_images(dir / "x.npy", 10, 0.f);
  write_npy(dir / "y.npy", HostTensor::from_values<int64_t>({10}, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  const std::string data = " --images " + (dir / "x.npy").string() + " --labels " + (dir / "y.npy").string();
  CliResult r = run_ddpx("train --model vit_tiny_test --workers 1 --steps 1 --batch 16" + data);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "--images " + (dir / "x.npy").string() + ": 10 samples over 1 rank(s)")) << r.output;
  EXPECT_TRUE(mentions(r, "fewer than one --batch of 16; lower --batch to 10 or less")) << r.output;
  // 10 images in batches of 4: 2 batches per epoch (images 8 and 9 dropped), so 3 epochs are 6 steps.
  r = run_ddpx("train --model vit_tiny_test --workers 1 --warmup 0 --batch 4 --epochs 3" + data);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(mentions(r, "step      6/6")) << r.output;
  fs::remove_all(dir);
}

// Issue 37 item 8: eval wrote its logits and then failed on an out-of-range label, leaving --out behind. Labels are
// checked before anything runs or is written.
TEST(DataSafety, EvalChecksLabelsBeforeWritingItsLogits) {
  const fs::path dir = fresh_dir("eval_labels");
  write_images(dir / "x.npy", 4, 0.f);
  write_npy(dir / "bad.npy", HostTensor::from_values<int64_t>({4}, std::vector<int64_t>{0, 1, 999, 3}));
  const std::string weights = (dir / "w.safetensors").string();
  ASSERT_EQ(run_ddpx(std::string(kTiny) + " --steps 1 --save " + weights).status, 0);
  const CliResult r = run_ddpx("eval --model vit_tiny_test --weights " + weights + " --images " +
                               (dir / "x.npy").string() + " --labels " + (dir / "bad.npy").string() + " --out " +
                               (dir / "logits.npy").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(mentions(r, "label 999 of image 2")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "logits.npy")) << r.output;
  fs::remove_all(dir);
}

TEST(DataSafety, CtrlCOnACpuMultiRankRunSaysSoAndExits130) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
  const fs::path dir = fresh_dir("ctrl_c");
  const fs::path log = dir / "train.log";
  const std::string script =
      "env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE -u SLURM_PROCID "
      "-u SLURM_NTASKS " + std::string(DDPX_BINARY) + " train --device cpu --model vit_tiny_test --nproc-per-node 2 "
      "--batch 4 --workers 1 --steps 100000000 --log-every 20 > " + log.string() + " 2>&1 & p=$!; "
      "for i in $(seq 1 600); do grep -q 'step ' " + log.string() + " && break; sleep 0.1; done; kill -INT $p; "
      "for i in $(seq 1 600); do kill -0 $p 2>/dev/null || break; sleep 0.1; done; kill -KILL $p 2>/dev/null; "
      "wait $p; echo \"rc=$?\"";
  FILE* pipe = ::popen(script.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) out += buffer;
  ::pclose(pipe);
  const std::string printed = read_text(log);
  EXPECT_NE(out.find("rc=130"), std::string::npos) << out << printed;
  EXPECT_NE(printed.find("stopped by SIGINT"), std::string::npos) << printed;
  fs::remove_all(dir);
}
#endif

}  // namespace
}  // namespace ddpx
