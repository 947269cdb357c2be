// DDP's cost from a run report: the measured DDP step against the calibrated plain step (the warm-up's
// calibration steps, Note [Calibration steps] in train/calibration.hpp), split into the parts that can be
// attributed. Guarantees:
//  - ddp_cost_of() is a pure function of the report; it returns nothing without DDP (config.ddp false) or when a
//    rank recorded no calibration steps, so an unknown cost is never reported as 0.
//  - Per rank, each figure is the median over steps: measured = total_ms of the measured steps, plain = total_ms of
//    the calibration steps' plain phases, exposed = exposed_comm_ms, hook work = over the steps that recorded
//    buckets, the union of the buckets' intervals minus that step's exposed communication (clipped at 0; 0 when
//    no step recorded buckets). The run's figure is the median over ranks of the per-rank figures, as the
//    breakdown's across-rank medians.
//  - The parts add up by construction: cost = measured - plain, other = cost - exposed - hook work.
//  - With the optimizer overlapped (--optimizer-overlap, on by default with DDP) a bucket's interval includes its
//    span's optimizer update, so hook work includes those updates while the measured step's optimizer phase shrinks
//    by as much; the plain step runs its optimizer after the backward pass (as a run without --ddp does), so the
//    rest is lower by the same amount: the sum is unchanged.
#pragma once
#include <optional>

#include "report/step_record.hpp"

namespace ddpx {

std::optional<DdpCost> ddp_cost_of(const RunReport& report);

}  // namespace ddpx
