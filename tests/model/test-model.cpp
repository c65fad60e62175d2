// Loading errors name what is wrong (unknown architecture, missing or misshapen tensor, missing
// key); the context refuses tokens that overflow it; sampling is seeded and greedy is argmax.
#include "model/context.h"
#include "model/model.h"
#include "model/sampler.h"
#include "model/synth-model.h"

#include "cpu/cpu-backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>

using namespace hexnpu;

namespace {

std::string temp_path(const std::string & tag) {
    return (std::filesystem::temp_directory_path() /
            ("hexnpu-test-model-" + std::to_string(getpid()) + "-" + tag + ".gguf"))
        .string();
}

struct cpu_env {
    std::unique_ptr<backend_device> dev = make_cpu_device();
    std::unique_ptr<backend>        be  = dev->init_backend();
};

// A copy of the tiny synthesized model with its metadata and tensors edited.
std::string edited_model(const std::string & tag, const std::function<void(gguf::writer &)> & edit_kv,
                         const std::string & drop_tensor = "", const std::string & reshape_tensor = "",
                         const std::string & preset = "tiny") {
    synth_params p;
    synth_preset(preset, p);
    const std::string src = temp_path(tag + "-src");
    synth_model(p).writer().write(src);
    const gguf::reader r = gguf::reader::open(src);
    gguf::writer       w;
    for (const auto & m : r.metadata()) {
        w.set(m.key, m.val);
    }
    edit_kv(w);
    std::vector<std::vector<uint8_t>> keep;
    for (const auto & t : r.tensors()) {
        if (t.name == drop_tensor) {
            continue;
        }
        std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
        if (t.name == reshape_tensor) {
            std::swap(ne[0], ne[1]);
        }
        const auto d = r.tensor_data(t);
        keep.emplace_back(d.begin(), d.end());
        w.add_tensor(t.name, t.type, ne, keep.back().data());
    }
    const std::string out = temp_path(tag);
    w.write(out);
    std::remove(src.c_str());
    return out;
}

std::string load_error(const std::string & path) {
    cpu_env             env;
    model::load_options o;
    o.host_buft = env.dev->buffer_type();
    try {
        model::model::load(path, o);
    } catch (const std::exception & e) {
        std::remove(path.c_str());
        return e.what();
    }
    std::remove(path.c_str());
    return "(no error)";
}

} // namespace

TEST(ModelLoad, UnknownArchitectureIsNamed) {
    const std::string e = load_error(edited_model("arch", [](gguf::writer & w) {
        w.set("general.architecture", gguf::value::from_string("mamba"));
    }));
    EXPECT_NE(e.find("unknown architecture 'mamba'"), std::string::npos) << e;
}

TEST(ModelLoad, ANulInTheArchitectureNameIsEscaped) {
    // Issue 29: the message was cut at the NUL (no closing quote).
    const std::string e = load_error(edited_model("arch-nul", [](gguf::writer & w) {
        w.set("general.architecture", gguf::value::from_string(std::string("lla\0ma\n", 7)));
    }));
    EXPECT_NE(e.find("unknown architecture 'lla\\x00ma\\n' (supported: "), std::string::npos) << e;
}

TEST(ModelLoad, HyperparametersWithoutMeaningAreRefused) {
    // Issue 29: both loaded and ran (a context of 0 tokens; rms_norm dividing by sqrt of a negative).
    const std::string ctx = load_error(edited_model("ctx0", [](gguf::writer & w) {
        w.set("llama.context_length", gguf::value::from_u32(0));
    }));
    EXPECT_NE(ctx.find("key llama.context_length is 0"), std::string::npos) << ctx;
    for (const float eps : {-1.0f, 0.0f}) {
        const std::string e = load_error(edited_model("eps", [eps](gguf::writer & w) {
            w.set("llama.attention.layer_norm_rms_epsilon", gguf::value::from_f32(eps));
        }));
        EXPECT_NE(e.find("key llama.attention.layer_norm_rms_epsilon must be positive"), std::string::npos) << e;
    }
}

TEST(SynthPresets, EveryNamedPresetExists) {
    // The list the unknown-preset error shows (issue 29: it named two of six).
    const std::string names = synth_preset_names();
    size_t            n     = 0;
    for (size_t pos = 0; pos < names.size(); ++n) {
        const size_t      end  = std::min(names.find(", ", pos), names.size());
        const std::string name = names.substr(pos, end - pos);
        synth_params      p;
        EXPECT_TRUE(synth_preset(name, p)) << name;
        EXPECT_EQ(p.name, name);
        pos = end + 2;
    }
    EXPECT_EQ(n, 11u) << names;
    synth_params p;
    EXPECT_FALSE(synth_preset("huge", p));
}

TEST(ModelLoad, MissingKeyIsNamed) {
    const std::string e = load_error(edited_model("key", [](gguf::writer & w) { w.remove("llama.block_count"); }));
    EXPECT_NE(e.find("llama.block_count"), std::string::npos) << e;
}

TEST(ModelLoad, MissingTensorIsNamed) {
    const std::string e = load_error(edited_model("missing", [](gguf::writer &) {}, "blk.1.ffn_up.weight"));
    EXPECT_NE(e.find("missing tensor blk.1.ffn_up.weight"), std::string::npos) << e;
}

TEST(ModelLoad, MisshapenTensorIsNamed) {
    const std::string e = load_error(edited_model("shape", [](gguf::writer &) {}, "", "blk.0.ffn_gate.weight"));
    EXPECT_NE(e.find("tensor blk.0.ffn_gate.weight has shape [768, 256], expected [256, 768]"), std::string::npos)
        << e;
}

TEST(ModelLoad, HybridStateShapesThatCannotWorkAreNamed) {
    // The delta net's widths must agree (inner = state x value heads; value heads a multiple of the
    // key heads), else GATED_DELTA_NET's state or its head broadcast would not fit.
    for (const auto & [key, value] : {std::pair{"qwen35.ssm.inner_size", 100u}, std::pair{"qwen35.ssm.time_step_rank", 3u}}) {
        const std::string e = load_error(edited_model("q35-kv", [&](gguf::writer & w) {
            w.set(key, gguf::value::from_u32(value));
        }, "", "", "qwen35-tiny"));
        EXPECT_NE(e.find("bad delta-net hyperparameters"), std::string::npos) << key << ": " << e;
    }
    const std::string conv = load_error(edited_model("q35-conv", [](gguf::writer &) {}, "", "blk.0.ssm_conv1d.weight",
                                                     "qwen35-tiny"));
    EXPECT_NE(conv.find("tensor blk.0.ssm_conv1d.weight has shape [256, 4], expected [4, 256]"), std::string::npos)
        << conv;
    const std::string kv = load_error(edited_model("lfm2-kv", [](gguf::writer & w) {
        w.set("lfm2.attention.head_count_kv", gguf::value::from_u32(2));  // one count: no convolution layer
    }, "", "", "lfm2-tiny"));
    EXPECT_NE(kv.find("missing tensor blk.0.attn_q.weight"), std::string::npos) << kv;
}

TEST(ModelLoad, TiedOutputEmbedding) {
    synth_params p;
    synth_preset("gemma3-tiny", p);
    const std::string path = temp_path("tied");
    synth_model(p).writer().write(path);
    cpu_env             env;
    model::load_options o;
    o.host_buft = env.dev->buffer_type();
    auto m      = model::model::load(path, o);
    EXPECT_TRUE(m->tied());
    EXPECT_EQ(m->output->data, m->tok_embd->data);  // mapped: the same bytes of the file
    EXPECT_EQ(m->hp().n_swa, 4);
    EXPECT_EQ(m->hp().n_embd_head_k, 64);
    EXPECT_EQ(m->hp().swa_layers, (std::vector<bool>{true, true, true, true, true, false}));
    std::remove(path.c_str());
}

TEST(ModelContext, OverflowIsAnErrorAndEvaluatesNothing) {
    synth_params p;
    synth_preset("tiny", p);
    const std::string path = temp_path("ctx");
    synth_model(p).writer().write(path);
    cpu_env             env;
    model::load_options o;
    o.host_buft = env.dev->buffer_type();
    auto                  m = model::model::load(path, o);
    model::context_params cp;
    cp.n_ctx    = 8;
    cp.n_ubatch = 3;
    cp.backends = {env.be.get()};
    model::context ctx(*m, cp);
    const std::vector<int32_t> six = {1, 5, 9, 300, 2, 7};
    ctx.decode(six);
    EXPECT_EQ(ctx.n_past(), 6);
    const std::vector<int32_t> three = {4, 5, 6};
    try {
        ctx.decode(three);
        FAIL() << "no error";
    } catch (const model::model_error & e) {
        EXPECT_NE(std::string(e.what()).find("context overflow"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.n_past(), 6);
    const std::vector<int32_t> bad = {512};
    EXPECT_THROW(ctx.decode(bad), model::model_error);
    const std::vector<int32_t> two = {4, 5};
    EXPECT_NO_THROW(ctx.decode(two));
    EXPECT_EQ(ctx.n_past(), 8);
    std::remove(path.c_str());
}

TEST(Sampler, GreedyIsArgmaxAndSeedsRepeat) {
    const std::vector<float> logits = {0.1f, 2.0f, 1.9f, -1.0f, 1.95f, 0.0f};
    model::sampler_params    g;
    g.temp = 0.0f;
    EXPECT_EQ(model::sampler(g).sample(logits), 1);
    model::sampler_params t;
    t.temp = 1.0f, t.top_k = 0, t.top_p = 1.0f, t.min_p = 0.0f, t.seed = 7;
    std::vector<int32_t> a, b;
    model::sampler       s1(t), s2(t);
    for (int i = 0; i < 200; ++i) {
        a.push_back(s1.sample(logits));
        b.push_back(s2.sample(logits));
    }
    EXPECT_EQ(a, b);
    EXPECT_NE(std::count(a.begin(), a.end(), 2), 0);  // not greedy
    // top-k 1 is greedy whatever the temperature; min-p 0.9 keeps only tokens near the best.
    t.top_k = 1;
    model::sampler k1(t);
    for (int i = 0; i < 50; ++i) {
        EXPECT_EQ(k1.sample(logits), 1);
    }
    t.top_k = 0, t.min_p = 0.9f;
    model::sampler mp(t);
    for (int i = 0; i < 100; ++i) {
        const int32_t id = mp.sample(logits);
        EXPECT_TRUE(id == 1 || id == 4 || id == 2) << id;  // exp(-0.1) > 0.9 > exp(-2.1)
    }
    // The repetition penalty demotes a token seen before.
    g.repeat_penalty = 1.5f;
    model::sampler rp(g);
    rp.accept(1);
    EXPECT_EQ(rp.sample(logits), 4);
}

TEST(ModelLoad, CopiedWeightsGiveTheSameLogitsAsMapped) {
    synth_params p;
    synth_preset("gemma3-tiny", p);
    const std::string path = temp_path("copy");
    synth_model(p).writer().write(path);
    cpu_env             env;
    std::vector<float>  logits[3];
    const std::vector<int32_t> toks = {1, 17, 300, 42, 99, 7, 7, 3};
    for (int mode = 0; mode < 3; ++mode) {
        model::load_options o;
        o.host_buft = env.dev->buffer_type();
        if (mode == 1) {
            o.weight_buft = env.dev->buffer_type();  // everything copied
        } else if (mode == 2) {                      // matmul weights copied, the rest mapped
            o.placement = [&](const ggml_tensor *, const model::weight_use & use) {
                const bool is_matmul = use.is_matmul;
                return is_matmul ? env.dev->buffer_type() : nullptr;
            };
        }
        size_t calls = 0;
        o.progress_user = &calls;
        o.progress      = [](size_t done, size_t total, void * user) {
            ++*static_cast<size_t *>(user);
            EXPECT_LE(done, total);
        };
        auto                  m = model::model::load(path, o);
        model::context_params cp;
        cp.n_ctx    = 16;
        cp.backends = {env.be.get()};
        model::context ctx(*m, cp);
        logits[mode] = ctx.decode(toks, true);
        EXPECT_EQ(calls > 0, mode != 0);
    }
    EXPECT_EQ(logits[0], logits[1]);
    EXPECT_EQ(logits[0], logits[2]);
    std::remove(path.c_str());
}

TEST(ModelContext, OutputsOfATailEqualThoseOfAllTokens) {
    synth_params p;
    synth_preset("gemma3-tiny", p);
    const std::string path = temp_path("tail");
    synth_model(p).writer().write(path);
    cpu_env             env;
    model::load_options o;
    o.host_buft = env.dev->buffer_type();
    auto                       m    = model::model::load(path, o);
    const std::vector<int32_t> toks = {1, 17, 300, 42, 99, 7, 7, 3, 250, 11};
    const int64_t              V    = m->hp().n_vocab;
    std::vector<float>         all;
    for (int64_t ub : {10, 3}) {
        model::context_params cp;
        cp.n_ctx    = 16;
        cp.n_ubatch = ub;
        cp.backends = {env.be.get()};
        model::context ctx(*m, cp);
        if (all.empty()) {
            all = ctx.decode(toks, true);
            ASSERT_EQ(all.size(), toks.size() * size_t(V));
            ctx.clear();
        }
        for (int64_t first : {0, 4, 9}) {
            ctx.clear();
            const std::vector<float> & tail = ctx.decode_from(toks, first);
            ASSERT_EQ(tail.size(), (toks.size() - size_t(first)) * size_t(V));
            EXPECT_TRUE(std::equal(tail.begin(), tail.end(), all.begin() + first * V)) << "ub " << ub << " first " << first;
        }
        ctx.clear();
        const std::vector<float> & last = ctx.decode(toks);
        EXPECT_TRUE(std::equal(last.begin(), last.end(), all.end() - V));
    }
    std::remove(path.c_str());
}
