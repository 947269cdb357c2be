// GraphCapture: the calls an engine that captures whole steps as CUDA graphs offers (the CUDA engine; the CPU
// engine has none). The trainer asks the engine once (StepEngine::graph_capture()) and plans graphs only where
// the answer is an engine: no cast from StepEngine to a CUDA type anywhere.
// Guarantees: a capture begun is either ended (the graph is kept for the current input parity and variant) or
// abandoned (nothing is kept and the stream leaves capture mode); replay() runs only a captured graph.
#pragma once
#include <cstdint>

namespace ddpx {

// Each input parity has up to three graphs: `plain`, `timed`, which also records when each gradient bucket became
// ready (replayed at the steps whose bucket timings are sampled; see Note [Bucket ready times cost a graph node]
// in ddp/cuda_bucket_launcher.cpp), and `calibration`, the warm-up's calibration step (backward without the
// reducer, the whole buffer reduced after it; Note [Calibration steps] in train/calibration.hpp).
enum class GraphVariant { plain = 0, timed = 1, calibration = 2 };
inline constexpr int kGraphVariants = 3;

class GraphCapture {
 public:
  virtual ~GraphCapture() = default;
  virtual int input_parity() const = 0;  // which input buffer the staged micro-batch is in
  virtual bool has_graph(int parity, GraphVariant variant) const = 0;
  virtual void capture_begin(GraphVariant variant) = 0;  // the next step's calls are captured, not run
  virtual void capture_end() = 0;                        // instantiates the graph begun, for the current parity
  virtual void capture_abandon() noexcept = 0;           // ends a capture that failed midway; no graph is kept
  virtual void replay(int64_t step, GraphVariant variant) = 0;  // runs that captured step for the current parity
};

}  // namespace ddpx
