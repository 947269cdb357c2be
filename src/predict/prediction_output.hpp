// How a Prediction is shown: the seed's table for people (nccl-tests' shape: a commented header, one line per
// row, commented summary lines) and JSON for machines.
// Guarantees: the table and the JSON carry the same rows in the same order; the JSON has "tool": "ddpx predict"
// and "version": 1, so a later reader (or `ddpx predict --link`) can tell it from other files.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "predict/scaling_prediction.hpp"

namespace ddpx::predict {

// What a recommendation of a lossy hook (fp16, bf16, PowerSGD) adds, in `ddpx predict` and `ddpx tune`: that it is
// lossy and where its accuracy is measured.
std::string lossy_hook_warning();


std::string format_prediction(const PredictionRequest& request, const Prediction& prediction);
nlohmann::json prediction_json(const PredictionRequest& request, const Prediction& prediction);

}  // namespace ddpx::predict
