// train_cnn: a small convolutional network written with LibTorch, trained data-parallel by
// ddpx::torch::DistributedDataParallel. The same binary runs under any launcher:
//   torchrun --nproc_per_node 2 --no_python train_cnn --fashion-mnist /usr/share/datasets/fashion-mnist
//   mpirun -np 2 train_cnn --fashion-mnist /usr/share/datasets/fashion-mnist
//   train_cnn --nproc-per-node 2 --fashion-mnist ...      (ddpx's own launcher, launch/launcher.hpp)
//   train_cnn --fashion-mnist ...                          (alone: a world of one)
// Each optimizer step takes one global batch of world x --batch images; rank r trains on its r-th slice, so any
// world size trains on the same images per step and, with plain SGD, reaches the same weights up to fp32
// rounding (what tests/torch_ddp checks, with --data DIR fixtures from tools/make_torch_ddp_fixture.py).
// Flags (all optional): --steps N --batch B --lr X --accum K (K micro-batches per step, K-1 of them in no_sync())
//   --hook H --bucket-mb X --first-bucket-mb X --backend B --timeout S --find-unused --unused-branch
//   --width W --width-on-rank R:W (a different model on rank R: refused) --seed S
//   --device cpu|cuda (cuda: rank r on GPU local_rank; needs a LibTorch with CUDA)
//   --bad-input float64|noncontiguous|reallocated (a model the wrapper must refuse, for the tests)
//   --data DIR (images.u8, labels.u8, optional weights.f32 loaded on rank 0; --image-size P) | --fashion-mnist DIR
//   --out PREFIX (every rank writes PREFIX.rank<R>.f32: its parameters in registration order)
//   --expect FILE --tolerance T (rank 0 compares its parameters with FILE; exit 1 beyond T)
//   --report FILE (the run report, for `ddpx report FILE`) --quiet
// Exit status: 0 done, 1 parameters beyond --tolerance, 2 an error (printed as "train_cnn: error: ...").
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/cuda.h>
#include <torch/optim/sgd.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "dist/bootstrap.hpp"
#include "launch/launcher.hpp"
#include "torch_ddp/distributed_data_parallel.hpp"

namespace {

struct CnnImpl : torch::nn::Module {
  CnnImpl(int64_t width, int64_t image_size, bool unused_branch) {
    using namespace torch::nn;
    conv1 = register_module("conv1", Conv2d(Conv2dOptions(1, width, 3).padding(1)));
    conv2 = register_module("conv2", Conv2d(Conv2dOptions(width, 2 * width, 3).padding(1)));
    fc = register_module("fc", Linear(2 * width * (image_size / 4) * (image_size / 4), 10));
    if (unused_branch) unused_head = register_module("unused_head", Linear(10, 10));  // never in forward
  }
  at::Tensor forward(at::Tensor x) {
    x = at::max_pool2d(at::relu(conv1->forward(x)), {2, 2});
    x = at::max_pool2d(at::relu(conv2->forward(x)), {2, 2});
    return fc->forward(x.flatten(1));
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr}, unused_head{nullptr};
};
TORCH_MODULE(Cnn);

struct Dataset {
  at::Tensor images;  // N x 1 x P x P float32 in [0, 1]
  at::Tensor labels;  // N int64
};

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path + "'");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<uint8_t> read_gzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot read '" + path + "' (Debian: apt install dataset-fashion-mnist)");
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  int n;
  while ((n = gzread(file, chunk, sizeof(chunk))) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  gzclose(file);
  return bytes;
}

Dataset from_bytes(const std::vector<uint8_t>& images, const std::vector<uint8_t>& labels, int64_t size) {
  const int64_t n = static_cast<int64_t>(labels.size());
  if (static_cast<int64_t>(images.size()) != n * size * size)
    throw std::runtime_error("images and labels disagree: " + std::to_string(images.size()) + " image bytes for " +
                             std::to_string(n) + " labels of " + std::to_string(size) + "x" + std::to_string(size));
  Dataset d;
  d.images = at::from_blob(const_cast<uint8_t*>(images.data()), {n, 1, size, size}, at::kByte).to(at::kFloat) / 255;
  d.labels = at::from_blob(const_cast<uint8_t*>(labels.data()), {n}, at::kByte).to(at::kLong);
  return d;
}

Dataset fashion_mnist(const std::string& dir) {
  const std::vector<uint8_t> images = read_gzip(dir + "/train-images-idx3-ubyte.gz");
  const std::vector<uint8_t> labels = read_gzip(dir + "/train-labels-idx1-ubyte.gz");
  if (images.size() < 16 || labels.size() < 8) throw std::runtime_error("'" + dir + "' holds no idx files");
  return from_bytes({images.begin() + 16, images.end()}, {labels.begin() + 8, labels.end()}, 28);
}

void write_parameters(torch::nn::Module& model, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const at::Tensor& p : model.parameters()) {
    const at::Tensor host = p.detach().to(at::kCPU).contiguous();
    out.write(static_cast<const char*>(host.data_ptr()), host.numel() * 4);
  }
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

void load_parameters(torch::nn::Module& model, const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  at::NoGradGuard no_grad;
  size_t at = 0;
  for (at::Tensor& p : model.parameters()) {
    const size_t n = p.numel() * 4;
    if (at == bytes.size()) break;  // the leading parameters (--unused-branch adds its head last)
    if (at + n > bytes.size()) throw std::runtime_error("'" + path + "' ends inside a parameter");
    p.copy_(at::from_blob(const_cast<uint8_t*>(bytes.data() + at), p.sizes(), at::kFloat));
    at += n;
  }
  if (at != bytes.size()) throw std::runtime_error("'" + path + "' is longer than the model's parameters");
}

double max_difference(torch::nn::Module& model, const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  std::vector<float> expected(bytes.size() / 4);
  std::memcpy(expected.data(), bytes.data(), expected.size() * 4);
  double worst = 0;
  size_t i = 0;
  for (const at::Tensor& p : model.parameters()) {
    const at::Tensor host = p.detach().to(at::kCPU).contiguous();
    const float* values = host.data_ptr<float>();
    for (int64_t k = 0; k < host.numel(); ++k, ++i) {
      if (i >= expected.size()) return worst;  // the leading parameters (--unused-branch adds its head last)
      worst = std::max(worst, std::fabs(static_cast<double>(values[k]) - expected[i]));
    }
  }
  if (i != expected.size()) throw std::runtime_error("'" + path + "' is longer than the model's parameters");
  return worst;
}

int run(std::map<std::string, std::string>& flags) {
  auto flag = [&](const std::string& name, const std::string& fallback) {
    auto it = flags.find(name);
    return it == flags.end() ? fallback : it->second;
  };
  const ddpx::WorldInfo world_info = ddpx::detect_world();
  const int rank = world_info.rank;
  // --device cuda: rank r on GPU local_rank (the adapter's CUDA form: gradients on the GPU, NCCL between ranks).
  const bool on_gpu = flag("device", "cpu") == "cuda";
  if (on_gpu && !torch::cuda::is_available())
    throw std::runtime_error("--device cuda: this LibTorch sees no GPU (Debian's libtorch is CPU-only)");
  const torch::Device device = on_gpu ? torch::Device(torch::kCUDA, static_cast<int16_t>(world_info.local_rank))
                                      : torch::Device(torch::kCPU);
  const int64_t steps = std::stoll(flag("steps", "20")), batch = std::stoll(flag("batch", "16"));
  const int64_t accum = std::stoll(flag("accum", "1"));
  int64_t width = std::stoll(flag("width", "4"));
  const std::string width_on_rank = flag("width-on-rank", "");
  if (!width_on_rank.empty() && std::stoi(width_on_rank.substr(0, width_on_rank.find(':'))) == rank)
    width = std::stoll(width_on_rank.substr(width_on_rank.find(':') + 1));
  if (batch % accum != 0) throw std::runtime_error("--batch must be a multiple of --accum");

  std::vector<uint8_t> image_bytes, label_bytes;
  Dataset data;
  int64_t image_size = 28;
  if (flags.count("data")) {
    image_size = std::stoll(flag("image-size", "16"));
    image_bytes = read_file(flags["data"] + "/images.u8");
    label_bytes = read_file(flags["data"] + "/labels.u8");
    data = from_bytes(image_bytes, label_bytes, image_size);
  } else {
    data = fashion_mnist(flag("fashion-mnist", "/usr/share/datasets/fashion-mnist"));
  }

  torch::manual_seed(std::stoll(flag("seed", "1")) + rank);  // different per rank: the broadcast must fix it
  Cnn model(width, image_size, flags.count("unused-branch") > 0);
  if (flags.count("data") && rank == 0 && std::ifstream(flags["data"] + "/weights.f32"))
    load_parameters(*model, flags["data"] + "/weights.f32");

  model->to(device);
  // --bad-input KIND (the tests' refusals): a float64 model, a parameter that is a transposed (non-contiguous)
  // view, or a module moved to float64 after wrapping.
  const std::string bad_input = flag("bad-input", "");
  if (bad_input == "float64") model->to(at::kDouble);
  if (bad_input == "noncontiguous") {
    at::NoGradGuard no_grad;
    at::Tensor& w = model->fc->weight;
    w.set_(w.t().contiguous().storage(), 0, w.sizes(), {1, w.size(0)});
  }

  ddpx::torch::DdpOptions options;
  options.backend = flag("backend", "auto");
  options.comm_hook = flag("hook", "allreduce");
  options.bucket_cap_mb = std::stod(flag("bucket-mb", "25"));
  options.first_bucket_cap_mb = std::stod(flag("first-bucket-mb", "1"));
  options.comm_timeout_s = std::stod(flag("timeout", "60"));
  options.find_unused_parameters = flags.count("find-unused") > 0;
  options.model_name = "train_cnn";
  ddpx::torch::DistributedDataParallel ddp(model, options);
  const int world = ddp.engine().world();
  const bool quiet = flags.count("quiet") > 0;
  if (rank == 0 && !quiet)
    std::printf("train_cnn: %d rank(s), %lld images per rank per step, hook %s\n%s", world,
                static_cast<long long>(batch), options.comm_hook.c_str(), ddp.engine().bucket_table().c_str());

  if (bad_input == "reallocated") model->to(at::kDouble);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(std::stod(flag("lr", "0.1"))));
  const int64_t n = data.labels.size(0), micro = batch / accum;
  std::chrono::steady_clock::time_point timed_from;
  for (int64_t step = 0; step < steps; ++step) {
    if (step == 1) timed_from = std::chrono::steady_clock::now();  // step 0 allocates: left out
    const int64_t first = (step * world * batch + rank * batch) % n;
    const at::Tensor index = (at::arange(batch, at::kLong) + first) % n;
    const at::Tensor x = data.images.index_select(0, index).to(device);
    const at::Tensor y = data.labels.index_select(0, index).to(device);
    optimizer.zero_grad();
    double loss_sum = 0;
    for (int64_t k = 0; k < accum; ++k) {
      auto pass = [&] {
        const at::Tensor logits = ddp(x.narrow(0, k * micro, micro));
        const at::Tensor loss = at::nll_loss(at::log_softmax(logits, 1), y.narrow(0, k * micro, micro)) / accum;
        loss.backward();
        loss_sum += loss.item<double>();
      };
      if (k + 1 < accum) {
        auto no_sync = ddp.no_sync();
        pass();
      } else {
        pass();
      }
    }
    optimizer.step();
    if (rank == 0 && !quiet && (step % 10 == 0 || step + 1 == steps))
      std::printf("step %lld loss %.4f\n", static_cast<long long>(step), loss_sum);
  }
  if (rank == 0 && steps > 1)
    std::printf("train_cnn: %.3f ms/step (steps 1..%lld)\n",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - timed_from).count() /
                    static_cast<double>(steps - 1), static_cast<long long>(steps - 1));
  if (flags.count("report")) ddp.write_report(flags["report"]);
  if (flags.count("out")) write_parameters(*model, flags["out"] + ".rank" + std::to_string(rank) + ".f32");
  if (flags.count("expect") && rank == 0) {
    const double worst = max_difference(*model, flags["expect"]);
    const double tolerance = std::stod(flag("tolerance", "1e-5"));
    std::printf("train_cnn: max |parameter - expected| = %.3g (tolerance %.3g)\n", worst, tolerance);
    if (!(worst <= tolerance)) return 1;
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  std::vector<std::string> worker_args{argv[0]};
  int nproc = 0;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name.rfind("--", 0) != 0) {
      std::fprintf(stderr, "train_cnn: error: unexpected argument '%s'\n", argv[i]);
      return 2;
    }
    name = name.substr(2);
    const bool is_switch = name == "find-unused" || name == "unused-branch" || name == "quiet";
    std::string value = is_switch ? "1" : (i + 1 < argc ? argv[++i] : "");
    if (name == "nproc-per-node") {
      nproc = std::atoi(value.c_str());
      continue;
    }
    worker_args.push_back(argv[is_switch ? i : i - 1]);
    if (!is_switch) worker_args.push_back(value);
    flags[name] = value;
  }
  try {
    if (nproc > 0 && !ddpx::launched_as_worker()) return ddpx::launch_local_workers(nproc, worker_args, {});
    return run(flags);
  } catch (const std::exception& e) {
    // ddpx's errors name the rank already; LibTorch's and the example's own do not.
    const std::string message = e.what();
    if (message.rfind("rank ", 0) == 0) std::fprintf(stderr, "train_cnn: error: %s\n", message.c_str());
    else std::fprintf(stderr, "train_cnn: error: rank %d: %s\n", ddpx::detect_world().rank, message.c_str());
    return 2;
  }
}
