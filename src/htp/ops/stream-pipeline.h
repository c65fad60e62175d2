// The spec's multi-buffered DMA pipeline for one thread, shared by the streaming ops: blocks of rows
// flow DDR -> DMA -> VTCM, are computed in VTCM by HVX, and flow VTCM -> DMA -> DDR, with n_slots
// blocks in flight and every push matched by a pop in FIFO order:
//   prologue: per slot, a zero-row token standing in for the slot's "previous writeback", then the
//             block's input pushes;
//   loop:     pop the slot's writeback (or token), pop its inputs, compute, push the writeback,
//             push the next block's inputs into the same slot;
//   epilogue: pop the last writebacks.
#pragma once

#include "dma-queue.h"
#include "proto/htp-trace.h"
#include "trace.h"

#include <stdint.h>

namespace hexnpu::htp {

// Deliberate breaks of the pipeline's rules, for the test variant's TEST_STREAM op only: the
// strict-mode tests exercise this very pipeline. Real ops use the default, which compiles away.
struct pipeline_rules_kept {
    static constexpr bool read_before_pop = false;  // compute on a slot before popping its inputs
    static constexpr bool skip_drain      = false;  // return without popping the last writebacks
};

template <class T> struct pipeline_returns_void {
    static constexpr bool value = false;
};
template <> struct pipeline_returns_void<void> {
    static constexpr bool value = true;
};

// n_slots <= MaxSlots. next(Block &) -> bool takes the following block (false when the thread's rows are done);
// push_inputs(slot, b) pushes n_inputs DDR -> VTCM transfers; compute(slot, b) works on the slot in
// VTCM; push_output(slot, b) pushes its VTCM -> DDR writeback (one queue entry, or as many as it
// returns: a scattered writeback); token(slot, b) pushes the zero-row token. HVX_COMP trace events
// carry the block's first row (b.row) as info.
template <uint32_t MaxSlots, typename Block, typename Rules = pipeline_rules_kept, typename Next, typename Token,
          typename PushInputs, typename Compute, typename PushOutput>
void stream_blocks(dma_queue * q, trace_buf * tr, uint32_t n_slots, uint32_t n_inputs, Next next, Token token,
                   PushInputs push_inputs, Compute compute, PushOutput push_output) {
    Block    blocks[MaxSlots];
    uint32_t outputs[MaxSlots];  // queue entries of each slot's last writeback (or token)
    uint32_t primed = 0;
    for (; primed < n_slots && next(blocks[primed]); ++primed) {
        token(primed, blocks[primed]);
        outputs[primed] = 1;
        push_inputs(primed, blocks[primed]);
    }
    uint32_t in_flight = primed;
    for (uint32_t k = 0; in_flight > 0; k = k + 1 == n_slots ? 0 : k + 1) {
        Block & b = blocks[k];
        for (uint32_t j = 0; j < outputs[k]; ++j) {
            dma_queue_pop(q);  // the slot's previous writeback (or its token) is done
        }
        for (uint32_t j = 0; j < n_inputs && !Rules::read_before_pop; ++j) {
            dma_queue_pop(q);  // the block's inputs have landed
        }
        trace_event_start(tr, proto::HTP_TRACE_EVT_HVX_COMP, trace_info(b.row));
        compute(k, b);
        trace_event_stop(tr, proto::HTP_TRACE_EVT_HVX_COMP, trace_info(b.row));
        for (uint32_t j = 0; j < n_inputs && Rules::read_before_pop; ++j) {
            dma_queue_pop(q);
        }
        if constexpr (pipeline_returns_void<decltype(push_output(k, b))>::value) {
            push_output(k, b);
            outputs[k] = 1;
        } else {
            outputs[k] = push_output(k, b);
        }
        --in_flight;
        if (next(b)) {
            push_inputs(k, b);
            ++in_flight;
        }
    }
    for (uint32_t k = 0; k < primed && !Rules::skip_drain; ++k) {
        for (uint32_t j = 0; j < outputs[k]; ++j) {
            dma_queue_pop(q);  // the last writebacks
        }
    }
}

} // namespace hexnpu::htp
