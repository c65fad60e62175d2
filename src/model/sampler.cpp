#include "model/sampler.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hexnpu::model {

int32_t argmax(std::span<const float> logits) {
    return int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

sampler::sampler(const sampler_params & p) : p_(p), rng_(p.seed) {}

void sampler::accept(int32_t token) {
    last_.push_back(token);
    while (int(last_.size()) > std::max(0, p_.repeat_last_n)) {
        last_.pop_front();
    }
}

int32_t sampler::sample(std::span<const float> logits) {
    struct cand {
        int32_t id;
        float   logit;
    };
    std::vector<float> l(logits.begin(), logits.end());
    if (p_.repeat_penalty != 1.0f) {
        std::vector<int32_t> seen(last_.begin(), last_.end());
        std::sort(seen.begin(), seen.end());
        seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
        for (int32_t t : seen) {
            if (t >= 0 && size_t(t) < l.size()) {
                l[size_t(t)] = l[size_t(t)] > 0 ? l[size_t(t)] / p_.repeat_penalty : l[size_t(t)] * p_.repeat_penalty;
            }
        }
    }
    if (p_.temp <= 0.0f) {
        return argmax(l);
    }
    std::vector<cand> c;
    c.reserve(l.size());
    for (size_t i = 0; i < l.size(); ++i) {
        c.push_back({int32_t(i), l[i]});
    }
    auto by_logit = [](const cand & a, const cand & b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); };
    const size_t k = p_.top_k > 0 ? std::min(c.size(), size_t(p_.top_k)) : c.size();
    std::partial_sort(c.begin(), c.begin() + ptrdiff_t(k), c.end(), by_logit);
    c.resize(k);
    // Probabilities at temperature 1 for top-p / min-p (as llama.cpp's chain, temperature last).
    auto softmax = [&](float t) {
        std::vector<double> p(c.size());
        double              sum = 0;
        for (size_t i = 0; i < c.size(); ++i) {
            p[i] = std::exp(double(c[i].logit - c[0].logit) / t);
            sum += p[i];
        }
        for (double & v : p) {
            v /= sum;
        }
        return p;
    };
    if (p_.top_p < 1.0f) {
        const auto p   = softmax(1.0f);
        double     cum = 0;
        size_t     n   = c.size();
        for (size_t i = 0; i < c.size(); ++i) {
            cum += p[i];
            if (cum >= p_.top_p) {
                n = i + 1;
                break;
            }
        }
        c.resize(std::max<size_t>(n, 1));
    }
    if (p_.min_p > 0.0f) {
        const float floor = c[0].logit + std::log(p_.min_p);
        size_t      n     = 1;
        while (n < c.size() && c[n].logit >= floor) {
            ++n;
        }
        c.resize(n);
    }
    const auto p = softmax(p_.temp);
    double     r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    for (size_t i = 0; i < c.size(); ++i) {
        r -= p[i];
        if (r <= 0) {
            return c[i].id;
        }
    }
    return c.back().id;
}

} // namespace hexnpu::model
