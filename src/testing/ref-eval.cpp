#include "ref-eval.h"

#include "ref-eval-ops.h"
#include "tensor-values.h"

#include "core/fp16.h"

#include <stdexcept>
#include <string>

namespace hexnpu::optest {
namespace {

const ggml_tensor * base_of(const ggml_tensor * t) { return t->view_src ? t->view_src : t; }

// The value a store of v into an element of this type leaves behind.
double stored_value(ggml_type type, double v) {
    switch (type) {
    case GGML_TYPE_F32:  // kept in double: the oracle's own results are not rounded
    case GGML_TYPE_I32:
    case GGML_TYPE_I64:
        return v;
    case GGML_TYPE_F16:
        return fp16_to_fp32(fp32_to_fp16(float(v)));
    case GGML_TYPE_BF16:
        return bf16_to_fp32(fp32_to_bf16(float(v)));
    default:
        throw std::invalid_argument(std::string("element store into ") + ggml_type_name(type));
    }
}

} // namespace

void ref_evaluator::load(const ggml_tensor * leaf, const void * bytes) {
    if (leaf->view_src) {
        throw std::invalid_argument("load: views take their values from their source");
    }
    slots_[leaf] = decode_slots(leaf->type, bytes, ggml_nbytes(leaf));
}

void ref_evaluator::compute(const ggml_cgraph & graph) {
    for (const ggml_tensor * node : graph.nodes) {
        switch (node->op) {
        case GGML_OP_NONE:
        case GGML_OP_VIEW:
        case GGML_OP_RESHAPE:
        case GGML_OP_PERMUTE:
        case GGML_OP_TRANSPOSE:
            break;  // views read their source's slots through their own offset and strides
        case GGML_OP_DUP:
        case GGML_OP_CONT:
        case GGML_OP_CPY:
            eval_copy(*this, node);
            break;
        case GGML_OP_ADD:
        case GGML_OP_SUB:
        case GGML_OP_MUL:
        case GGML_OP_DIV:
        case GGML_OP_ADD_ID:
            eval_binary(*this, node);
            break;
        case GGML_OP_SQR:
        case GGML_OP_SQRT:
        case GGML_OP_LOG:
        case GGML_OP_SIN:
        case GGML_OP_COS:
        case GGML_OP_SCALE:
        case GGML_OP_CLAMP:
        case GGML_OP_LEAKY_RELU:
        case GGML_OP_FILL:
        case GGML_OP_UNARY:
            eval_unary(*this, node);
            break;
        case GGML_OP_GLU:
            eval_glu(*this, node);
            break;
        case GGML_OP_SUM:
        case GGML_OP_ARGMAX:
        case GGML_OP_SUM_ROWS:
        case GGML_OP_MEAN:
        case GGML_OP_CUMSUM:
            eval_reduce(*this, node);
            break;
        case GGML_OP_ARGSORT:
        case GGML_OP_TOP_K:
            eval_sort(*this, node);
            break;
        case GGML_OP_CONCAT:
        case GGML_OP_REPEAT:
        case GGML_OP_PAD:
        case GGML_OP_ROLL:
            eval_layout(*this, node);
            break;
        case GGML_OP_IM2COL:
            eval_im2col(*this, node);
            break;
        case GGML_OP_GET_ROWS:
        case GGML_OP_SET_ROWS:
            eval_rows(*this, node);
            break;
        case GGML_OP_NORM:
        case GGML_OP_RMS_NORM:
        case GGML_OP_L2_NORM:
            eval_norm(*this, node);
            break;
        case GGML_OP_MUL_MAT:
        case GGML_OP_MUL_MAT_ID:
            eval_matmul(*this, node);
            break;
        case GGML_OP_SOFT_MAX:
            eval_softmax(*this, node);
            break;
        case GGML_OP_ROPE:
            eval_rope(*this, node);
            break;
        case GGML_OP_FLASH_ATTN_EXT:
            eval_flash_attn(*this, node);
            break;
        case GGML_OP_TRI:
            eval_tri(*this, node);
            break;
        case GGML_OP_DIAG:
            eval_diag(*this, node);
            break;
        case GGML_OP_SOLVE_TRI:
            eval_solve_tri(*this, node);
            break;
        case GGML_OP_SSM_CONV:
            eval_ssm_conv(*this, node);
            break;
        case GGML_OP_GATED_DELTA_NET:
            eval_gated_delta_net(*this, node);
            break;
        default:
            throw std::invalid_argument(std::string("float64 evaluator: no ") + ggml_op_desc(node));
        }
    }
}

std::vector<double> ref_evaluator::values(const ggml_tensor * t) const { return gather_values(t, slots_of(t)); }

double ref_evaluator::get(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
    return slots_of(t)[element_slot(t, i0, i1, i2, i3)];
}

std::vector<double> ref_evaluator::row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3) const {
    const std::vector<double> & slots = slots_of(t);
    std::vector<double>         r(size_t(t->ne[0]));
    for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
        r[size_t(i0)] = slots[element_slot(t, i0, i1, i2, i3)];
    }
    return r;
}

void ref_evaluator::set(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    slots_of(t)[element_slot(t, i0, i1, i2, i3)] = stored_value(t->type, v);
}

void ref_evaluator::set_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, std::span<const double> values) {
    if (int64_t(values.size()) != t->ne[0]) {
        throw std::logic_error("set_row: row length differs from ne[0]");
    }
    if (!ggml_is_quantized(t->type)) {
        for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
            set(t, i0, i1, i2, i3, values[size_t(i0)]);
        }
        return;
    }
    // Block types store what GGML's reference quantizer makes of the fp32 row.
    const ggml_type_traits * tr = ggml_get_type_traits(t->type);
    if (!tr->from_float_ref || !tr->to_float_ref) {
        throw std::invalid_argument(std::string("float64 evaluator: cannot store ") + ggml_type_name(t->type));
    }
    const std::vector<float> f(values.begin(), values.end());
    std::vector<uint8_t>     q(ggml_row_size(t->type, t->ne[0]));
    std::vector<float>       back(f.size());
    tr->from_float_ref(f.data(), q.data(), t->ne[0]);
    tr->to_float_ref(q.data(), back.data(), t->ne[0]);
    std::vector<double> & slots = slots_of(t);
    const size_t          first = element_slot(t, 0, i1, i2, i3);
    for (size_t i = 0; i < back.size(); ++i) {
        slots[first + i] = back[i];
    }
}

void ref_evaluator::copy_row(const ggml_tensor * t, int64_t i1, int64_t i2, int64_t i3, std::span<const double> values) {
    std::vector<double> & slots = slots_of(t);
    for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
        slots[element_slot(t, i0, i1, i2, i3)] = values[size_t(i0)];
    }
}

const std::vector<double> & ref_evaluator::slots_of(const ggml_tensor * t) const {
    const auto it = slots_.find(base_of(t));
    if (it == slots_.end()) {
        throw std::logic_error(std::string("float64 evaluator: '") + t->name + "' read before it has values");
    }
    return it->second;
}

std::vector<double> & ref_evaluator::slots_of(const ggml_tensor * t) {
    const ggml_tensor * base = base_of(t);
    auto                it   = slots_.find(base);
    if (it == slots_.end()) {  // the first store into an op's result creates its memory
        it = slots_.emplace(base, std::vector<double>(slot_count(base))).first;
    }
    return it->second;
}

} // namespace hexnpu::optest
