// llama.cpp's tensor split asks the registry (get_proc_address) for ggml_backend_comm_init, _free
// and _allreduce_tensor; these answer with hexnpu's ALLREDUCE on the NPU (src/hexagon/htp-allreduce.h).
// GGML_HEXAGON_AR_SELECT=0 declines every all-reduce: ggml then copies the partial results between
// the devices and adds them with ADD graphs.
#pragma once

#include "ggml-abi.h"

#include <cstddef>

namespace hexnpu::ggml_plugin {

// A context for the backends of one tensor split (2..4 HTP sessions), or nullptr (ggml's fallback).
void * comm_init(ggml_abi::backend ** backends, size_t n_backends);
void   comm_free(void * comm);
// tensors[k] is backends[k]'s partial result; each ends holding the sum. false: declined, nothing
// written (ggml falls back), or failed on the NPU: then every backend's next graph_compute fails.
bool   comm_allreduce_tensor(void * comm, ggml_abi::tensor ** tensors);

} // namespace hexnpu::ggml_plugin
