// The emulated HMX unit's stores computed on several host threads. The unit's calls stay what they
// are (checks at the call, faults at the call, one accumulator per unit); what changes is when the
// arithmetic happens: a store becomes a task (its multiplies' operand runs, the scale/bias it
// stores through, its output tile) recorded into a batch, and the batch runs on the HMX thread and
// `helpers` pool threads at once when it is full, when a task would depend on two of its chains,
// and at hmx_drain (the HMX queue's end of every job). Tasks that touch one another's tiles (an
// output read or overwritten later, an operand overwritten later) run in order in one chain;
// every other chain is independent. Each task accumulates from zero in the unit's order
// (vnpu::hmx::mac_tile, tile after tile), so the bytes stored are the one-thread unit's, and a
// kernel sees its outputs once its HMX job has ended, as on the device.
//
// Operands are read when the batch runs, not at the call: a kernel that rewrote an operand tile
// from another thread while its HMX job runs would see a difference; none does (the HVX threads
// touch the tiles of a job only before it is pushed and after it is popped).
#pragma once

#include "vnpu/hmx/hmx-compute.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace hexnpu::vnpu::hmx {

class deferral {
  public:
    static constexpr uint32_t MAX_TASKS = 256;  // a batch runs once this many stores are recorded (< 2^16)

    // last_first: chains are claimed from the batch's last (they are independent: the tests run
    // them against the recorded order to show it).
    explicit deferral(uint32_t helpers, bool last_first = false) : last_first_(last_first) {
        for (uint32_t i = 0; i < helpers; ++i) {
            threads_.emplace_back([this] { helper_main(); });
        }
    }
    ~deferral() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (std::thread & t : threads_) {
            t.join();
        }
    }
    deferral(const deferral &)             = delete;
    deferral & operator=(const deferral &) = delete;

    // A multiply of n tiles into the accumulation in progress.
    void mac(const uint16_t * act, const uint16_t * wt, uint32_t n) { pending_.push_back(mac_op{act, wt, n}); }
    // The accumulation in progress discarded.
    void clear() { pending_.clear(); }
    // The accumulation in progress stored through scale/bias into out (and cleared).
    void store(uint16_t * out, const float * scale, const float * bias) {
        task t{};
        t.out = out;
        std::memcpy(t.scale, scale, sizeof t.scale);
        std::memcpy(t.bias, bias, sizeof t.bias);
        int32_t chain = NONE;
        if (!place(out, &chain)) {
            run();
            chain = NONE;
        }
        const int32_t id = int32_t(tasks_.size());
        t.next           = -1;
        if (chain == NONE) {
            chain = int32_t(heads_.size());
            heads_.push_back(id);
            tails_.push_back(id);
        } else {
            tasks_[tails_[chain]].next = id;
            tails_[chain]              = id;
        }
        mark(out, chain);
        t.first = uint32_t(macs_.size());
        t.count = uint32_t(pending_.size());
        macs_.insert(macs_.end(), pending_.begin(), pending_.end());
        pending_.clear();
        tasks_.push_back(t);
        if (tasks_.size() >= MAX_TASKS) {
            run();
        }
    }
    // Every recorded store in VTCM.
    void drain() { run(); }

  private:
    struct mac_op {
        const uint16_t * act;
        const uint16_t * wt;
        uint32_t         n;
    };
    struct task {
        uint16_t * out;
        float      scale[TILE_DIM];
        float      bias[TILE_DIM];
        uint32_t   first, count;  // its multiplies in macs_
        int32_t    next;          // the next task of its chain
    };

    // Tiles (2048-byte aligned: the unit's checks) -> the chain of the batch that writes them
    // (outputs_) or reads them (operands_; MANY: several chains). Open addressing; an entry of
    // another batch (stamp) is empty, so a batch clears nothing.
    static constexpr uint32_t MAP_BITS = 15;  // 32768 slots: 64 MiB of distinct tiles
    static constexpr int32_t  NONE = -1, MANY = -2;
    struct slot {
        uintptr_t tile;
        int32_t   chain;
        uint32_t  stamp;
    };
    static uintptr_t tile_of(const void * p, uint32_t k = 0) { return (reinterpret_cast<uintptr_t>(p) >> 11) + k; }
    slot & find(std::vector<slot> & map, uintptr_t tile) {
        uint32_t i = uint32_t((uint64_t(tile) * 0x9E3779B97F4A7C15ull) >> (64 - MAP_BITS));
        for (;; i = (i + 1) & ((1u << MAP_BITS) - 1)) {
            slot & e = map[i];
            if (e.stamp != stamp_) {
                e = slot{tile, NONE, stamp_};
                return e;
            }
            if (e.tile == tile) {
                return e;
            }
        }
    }
    // Joins *chain to c (NONE: no constraint); false when t would depend on two chains.
    static bool join(int32_t * chain, int32_t c) {
        if (c == NONE || c == *chain) {
            return true;
        }
        if (c == MANY || *chain != NONE) {
            return false;
        }
        *chain = c;
        return true;
    }
    // The chain a store into out with the pending multiplies must follow (*chain; NONE: none),
    // false when it touches two chains.
    bool place(const uint16_t * out, int32_t * chain) {
        *chain = NONE;
        bool ok = join(chain, find(outputs_, tile_of(out)).chain) && join(chain, find(operands_, tile_of(out)).chain);
        for (const mac_op & m : pending_) {
            for (uint32_t k = 0; k < m.n && ok; ++k) {
                ok = join(chain, find(outputs_, tile_of(m.act, k)).chain) && join(chain, find(outputs_, tile_of(m.wt, k)).chain);
            }
        }
        return ok;
    }
    void mark(const uint16_t * out, int32_t chain) {
        find(outputs_, tile_of(out)).chain = chain;
        for (const mac_op & m : pending_) {
            for (uint32_t k = 0; k < m.n; ++k) {
                for (uintptr_t tile : {tile_of(m.act, k), tile_of(m.wt, k)}) {
                    slot & e = find(operands_, tile);
                    e.chain  = e.chain == NONE || e.chain == chain ? chain : MANY;
                }
            }
        }
    }

    void run_chain(int32_t head) {
        alignas(64) acc_tile acc;
        for (int32_t id = head; id >= 0; id = tasks_[id].next) {
            const task & t = tasks_[id];
            std::memset(acc, 0, sizeof acc);
            for (uint32_t i = t.first; i < t.first + t.count; ++i) {
                const mac_op & m = macs_[i];
                for (uint32_t k = 0; k < m.n; ++k) {
                    mac_tile(acc, m.act + k * TILE_DIM * TILE_DIM, m.wt + k * TILE_DIM * TILE_DIM);
                }
            }
            store_tile(t.out, acc, t.scale, t.bias);
        }
    }

    // The claim word: the batch's number, its chain count, the next chain to claim.
    static uint64_t claim_word(uint32_t gen, uint32_t n, uint32_t next) {
        return uint64_t(gen) << 32 | uint64_t(n) << 16 | next;
    }

    // Claims chains of batch `gen` until none is left (a helper woken late for an older batch
    // claims nothing: the word it sees is another batch's, or spent).
    void work(uint32_t gen) {
        for (;;) {
            uint64_t       v = claim_.load(std::memory_order_acquire);
            const uint32_t n = uint32_t(v >> 16) & 0xFFFF, next = uint32_t(v) & 0xFFFF;
            if (uint32_t(v >> 32) != gen || next >= n) {
                return;
            }
            if (!claim_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) {
                continue;
            }
            run_chain(heads_[last_first_ ? n - 1 - next : next]);
            if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n) {
                std::lock_guard lock(mutex_);
                finished_.notify_all();
            }
        }
    }

    // The batch on this thread and the helpers; returns when every chain has run (no helper
    // touches the batch after its last chain's completion is counted).
    void run() {
        const uint32_t n = uint32_t(heads_.size());
        if (n == 1 || (n > 1 && threads_.empty())) {
            for (uint32_t c = 0; c < n; ++c) {
                run_chain(heads_[last_first_ ? n - 1 - c : c]);
            }
        } else if (n > 1) {
            done_.store(0, std::memory_order_relaxed);
            uint32_t gen;
            {
                std::lock_guard lock(mutex_);
                gen = ++generation_;
                claim_.store(claim_word(gen, n, 0), std::memory_order_release);
            }
            wake_.notify_all();
            work(gen);
            std::unique_lock lock(mutex_);
            finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == n; });
        }
        tasks_.clear();
        macs_.clear();
        heads_.clear();
        tails_.clear();
        ++stamp_;
    }

    void helper_main() {
        uint32_t seen = 0;
        for (;;) {
            uint32_t gen;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) {
                    return;
                }
                gen = seen = generation_;
            }
            work(gen);
        }
    }

    std::vector<mac_op>     pending_;  // the accumulation in progress
    std::vector<mac_op>     macs_;     // the batch's
    std::vector<task>       tasks_;
    std::vector<int32_t>    heads_, tails_;  // per chain
    std::vector<slot>       outputs_ = std::vector<slot>(1u << MAP_BITS);
    std::vector<slot>       operands_ = std::vector<slot>(1u << MAP_BITS);
    uint32_t                stamp_    = 1;
    std::atomic<uint64_t>   claim_{0};  // claim_word of the running batch
    std::atomic<uint32_t>   done_{0};
    std::mutex              mutex_;
    std::condition_variable wake_, finished_;
    uint32_t                generation_ = 0;
    bool                    stop_       = false;
    const bool              last_first_;
    std::vector<std::thread> threads_;
};

} // namespace hexnpu::vnpu::hmx
