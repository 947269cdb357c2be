// Class names and counts from the training data (train/data_classes.hpp): a --model without classes= takes the
// data's count (not with --load alone, where the file's head decides); Fashion-MNIST's names reach the run report
// (JSON and `ddpx report`'s table, with every evaluation), --metrics, the checkpoint and --save's metadata, and
// `ddpx eval` prints them beside each class.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.hpp"
#include "image_files.hpp"
#include "support/scratch_dir.hpp"
#include "error_expect.hpp"
#include "io/checkpoint.hpp"
#include "io/npy.hpp"
#include "io/param_safetensors.hpp"
#include "model/model_registry.hpp"
#include "train/data_classes.hpp"

namespace ddpx {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ddpx_data_classes_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

// Plain idx files of 6 images 4x4 with labels 0, 1, 2, 0, 1, 2: three classes, no names.
fs::path tiny_idx() {
  const fs::path dir = scratch("idx");
  fs::create_directories(dir);
  std::vector<uint8_t> images, labels;
  put_u32(images, 0x803);
  for (uint32_t v : {6u, 4u, 4u}) put_u32(images, v);
  for (int i = 0; i < 6 * 16; ++i) images.push_back(uint8_t(i * 7));
  put_u32(labels, 0x801);
  put_u32(labels, 6);
  for (int i = 0; i < 6; ++i) labels.push_back(uint8_t(i % 3));
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(images.data()), std::streamsize(images.size()));
  std::ofstream(dir / "train-labels-idx1-ubyte", std::ios::binary)
      .write(reinterpret_cast<const char*>(labels.data()), std::streamsize(labels.size()));
  return dir;
}

// with_data_classes() on the options' data, opened once as a run opens it.
TrainOptions resolved_classes(const TrainOptions& o) { return with_data_classes(o, open_run_data(o)); }

TEST(DataClasses, AModelWithoutClassesTakesTheDatasCount) {
  EXPECT_EQ(model_spec_with_classes("vit_b_32", 10), "vit_b_32:classes=10");
  EXPECT_EQ(model_spec_with_classes("mlp:width=64", 3), "mlp:width=64,classes=3");
  EXPECT_EQ(model_spec_with_classes("mlp:classes=5,width=64", 3), "mlp:classes=5,width=64");
  EXPECT_FALSE(model_spec_names_classes("mlp:width=64"));
  TrainOptions o;
  o.model = "mlp:image=4,channels=1,layers=1,width=8";  // the MLP's default: 10 classes
  o.data = parse_data_spec("idx:" + tiny_idx().string(), DataOrigin::train_data);
  TrainOptions resolved = resolved_classes(o);
  // A typed count, the spec left as typed: the model is made with it, the records spell it.
  EXPECT_EQ(resolved.model, o.model);
  EXPECT_EQ(resolved.model_classes, 3);
  EXPECT_EQ(make_run_model(resolved)->num_classes(), 3);
  EXPECT_EQ(trained_model_spec(resolved), "mlp:image=4,channels=1,layers=1,width=8,classes=3");
  EXPECT_TRUE(resolved.class_names.empty());  // idx files other than Fashion-MNIST's name none
  o.model = "mlp:image=4,channels=1,layers=1,width=8,classes=5";  // given: kept
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), o.model);
  o.model = "mlp:image=4,channels=1,layers=1,width=8";
  o.load = "weights.safetensors";  // --load alone: the file's head decides
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), o.model);
  o.reset_head = true;  // fine-tuning: a new head of the data's classes
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), "mlp:image=4,channels=1,layers=1,width=8,classes=3");
  TrainOptions synthetic;
  synthetic.model = "mlp_tiny_test";
  EXPECT_EQ(trained_model_spec(resolved_classes(synthetic)), "mlp_tiny_test");
}

TEST(DataClasses, FashionMnistsNamesReachTheReportMetricsCheckpointWeightsAndEval) {
  const std::string fashion = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fashion + "/t10k-labels-idx1-ubyte.gz")) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const std::string model = "mlp:image=28,channels=1,layers=1,width=16";  // 10 classes: the spec stays as given
  const fs::path report = scratch("run.json"), metrics = scratch("m.jsonl"), saved = scratch("w.safetensors"),
                 ckpt = scratch("ckpt");
  fs::remove_all(ckpt);
  const testing::CliResult r = testing::run_ddpx(fmt::format(
      "train --model {0} --data idx:{1}:test --val idx:{1}:test --steps 4 --batch 64 --lr 0.1 --eval-every 2 "
      "--workers 1 --warmup 0 --report {2} --metrics {3} --save {4} --checkpoint-dir {5}",
      model, fashion, report.string(), metrics.string(), saved.string(), ckpt.string()));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  const nlohmann::json json = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(json["config"]["classes"].get<std::vector<std::string>>(), names);
  ASSERT_EQ(json["evaluations"].size(), 2u);  // steps 2 and 4
  EXPECT_EQ(json["evaluations"][0]["step"], 2);
  EXPECT_EQ(json["evaluations"][1]["step"], 4);
  EXPECT_EQ(json["evaluations"][1]["count"], 10000);
  EXPECT_EQ(json["evaluations"][1]["weights"], "model");
  const double top1 = json["evaluations"][1]["top1"].get<double>();
  EXPECT_GT(top1, 10.0);  // four steps of SGD beat chance on Fashion-MNIST
  EXPECT_NE(r.output.find(fmt::format("top-1 {:.2f}%", top1)), std::string::npos) << r.output;

  const testing::CliResult shown = testing::run_ddpx("report " + report.string());
  ASSERT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(shown.output.find("classes: 10 (0 T-shirt/top, 1 Trouser, 2 Pullover"), std::string::npos)
      << shown.output;
  EXPECT_NE(shown.output.find("evaluation on --val (10000 images):"), std::string::npos) << shown.output;
  EXPECT_NE(shown.output.find(fmt::format("{:>7.2f}%", top1)), std::string::npos) << shown.output;

  std::ifstream metrics_in(metrics);
  std::string first;
  std::getline(metrics_in, first);
  const nlohmann::json run_line = nlohmann::json::parse(first);
  EXPECT_EQ(run_line["kind"], "run");
  EXPECT_EQ(run_line["step"], 0);
  EXPECT_EQ(run_line["classes"].get<std::vector<std::string>>(), names);

  EXPECT_EQ(read_checkpoint_info(ckpt).state.extra["classes"].get<std::vector<std::string>>(), names);
  EXPECT_EQ(weights_class_names(SafetensorsReader(saved)), names);

  // `ddpx eval` on four test images: each predicted class printed with its name.
  std::vector<float> images(4 * 28 * 28);
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(i % 29) / 29.f - 0.5f;
  const fs::path npy = scratch("x.npy");
  write_npy(npy, HostTensor::from_values<float>({4, 1, 28, 28}, images));
  const testing::CliResult eval =
      testing::run_ddpx(fmt::format("eval --model {} --weights {} --images {}", model, saved.string(), npy.string()));
  ASSERT_EQ(eval.status, 0) << eval.output;
  int named = 0;
  for (size_t at = eval.output.find(": class "); at != std::string::npos; at = eval.output.find(": class ", at + 1)) {
    const int label = std::stoi(eval.output.substr(at + 8, 4));  // "image    0: class    7 Sneaker (logit ..."
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    EXPECT_EQ(eval.output.substr(at + 8 + 4, names[size_t(label)].size() + 1), " " + names[size_t(label)])
        << eval.output;
    ++named;
  }
  EXPECT_EQ(named, 4) << eval.output;
}

// --load W: a --model without classes= takes W's class count and the run says so (a custom shape used to become the
// family's default and fail on the head's shape); a classes= that differs from W's names both and --reset-head.
TEST(DataClasses, LoadedWeightsDecideTheClassCount) {
  const std::string four = "mlp:image=4,channels=1,layers=1,width=8,classes=4";
  const std::unique_ptr<Model> model = make_model(four);
  std::vector<float> params(model->layout().buffer_size());
  model->init_params(params.data(), 3);
  const std::string weights = scratch("four_classes.safetensors").string();
  save_params_safetensors(weights, model->layout(), params.data());
  EXPECT_EQ(weights_class_count(weights, *make_model("mlp:image=4,channels=1,layers=1,width=8")), 4);
  TrainOptions o;
  o.model = "mlp:image=4,channels=1,layers=1,width=8";  // the MLP's default would be 10 classes
  o.data = DataSource::learnable;
  o.load = weights;
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), "mlp:image=4,channels=1,layers=1,width=8,classes=4");
  o.data = parse_data_spec("idx:" + tiny_idx().string(), DataOrigin::train_data);  // the file, not the data's 3 classes
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), "mlp:image=4,channels=1,layers=1,width=8,classes=4");
  o.model = "mlp:image=4,channels=1,layers=1,width=8,classes=5";
  testing::expect_error([&] { (void)resolved_classes(o); },
                        {"--model mlp:image=4,channels=1,layers=1,width=8,classes=5 has 5 classes",
                         "holds a classifier head of 4 classes", "--reset-head"});
  o.model = four;
  EXPECT_EQ(trained_model_spec(resolved_classes(o)), four);

  const testing::CliResult r = testing::run_ddpx("train --device cpu --model mlp:image=4,channels=1,layers=1,width=8 "
                                                 "--data learnable --steps 2 --batch 4 --warmup 0 --load " + weights);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("the file's classifier head has 4 classes"), std::string::npos) << r.output;
  const testing::CliResult differs = testing::run_ddpx(
      "train --device cpu --model mlp:image=4,channels=1,layers=1,width=8,classes=10 --data learnable --steps 2 "
      "--load " + weights);
  EXPECT_EQ(differs.status, 2) << differs.output;
  EXPECT_NE(differs.output.find("--reset-head"), std::string::npos) << differs.output;
}

}  // namespace
}  // namespace ddpx

namespace ddpx {
namespace {

// issue 47: `ddpx report` printed top-5 = 100% for a 4-class task; train, eval and report show it only above 5.
TEST(DataClasses, ReportShowsTopFiveOnlyAboveFiveClasses) {
  const std::filesystem::path dir = testing::fresh_dir("train", "report_top5");
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i) {
      testing::Pixels image{std::vector<uint8_t>(16 * 16 * 3, static_cast<uint8_t>(40 * c + 5 * i)), 16, 16, 3};
      std::filesystem::create_directories(dir / "data" / ("c" + std::to_string(c)));
      testing::write_file((dir / "data" / ("c" + std::to_string(c)) / (std::to_string(i) + ".png")).string(),
                          testing::encode_png(image));
    }
  const std::string report = (dir / "run.json").string();
  const testing::CliResult trained = testing::run_ddpx(
      "train --device cpu --model mlp:image=16,channels=3,layers=1,width=8 --data folder:" + (dir / "data").string() +
      " --val folder:" + (dir / "data").string() + " --batch 4 --steps 2 --warmup 0 --workers 1 --report " + report);
  ASSERT_EQ(trained.status, 0) << trained.output;
  EXPECT_EQ(trained.output.find("top-5"), std::string::npos) << trained.output;
  const testing::CliResult shown = testing::run_ddpx("report " + report);
  ASSERT_EQ(shown.status, 0) << shown.output;
  EXPECT_NE(shown.output.find("evaluation on --val (16 images):"), std::string::npos) << shown.output;
  EXPECT_EQ(shown.output.find("top-5"), std::string::npos) << shown.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddpx
