// How many loader threads a rank starts when --workers is not given (0, "auto").
// Guarantees of choose_loader_workers():
//  - An explicit request (> 0) is returned unchanged.
//  - GPU ranks get half of the CPUs their rank may use: the usable CPUs (affinity mask) shared out by the ranks
//    on the node, halved, at least 1 and at most 16. Half, so the other half stays free for the host thread that
//    enqueues the step, NCCL's proxy threads and the OS; 16 because one worker fills a ViT-L/32 batch of 32
//    synthetic images in about 40 ms, so 16 feed more than 400 steps/s, beyond any single GPU's step today.
//  - CPU ranks get 2: their step takes tens of milliseconds or more, and their cores belong to OpenBLAS.
//  - The result never exceeds 256 (the --workers limit).
// The reason is returned too, for the start-up line ("8 = 16 CPUs / 1 rank on this node / 2").
#pragma once
#include <string>

namespace ddpx {

struct LoaderWorkerChoice {
  int workers = 1;
  std::string source;
};

LoaderWorkerChoice choose_loader_workers(int requested, bool gpu_ranks, int usable_cpus, int ranks_on_node);

}  // namespace ddpx
