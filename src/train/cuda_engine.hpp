// CudaStepEngine: the StepEngine calls only the CUDA engine has (whole-step graph capture and replay).
#pragma once
#include <string>

#include "train/step_engine.hpp"

namespace ddpx {

class CudaStepEngine : public StepEngine {
 public:
  virtual int input_parity() const = 0;      // which input buffer the staged micro-batch is in
  virtual bool has_graph(int parity) const = 0;
  virtual void capture_begin() = 0;          // the next step's calls are captured, not run
  virtual void capture_end() = 0;            // instantiates the graph for the current parity
  virtual void capture_abandon() noexcept = 0;  // ends a capture that failed midway; no graph is kept
  virtual void replay(int64_t step) = 0;     // runs the captured step for the current parity
};

}  // namespace ddpx
