#include "hexnpu/tensor.h"

#include <algorithm>
#include <cstdio>

namespace hexnpu {

int64_t ggml_nelements(const ggml_tensor * t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

int64_t ggml_nrows(const ggml_tensor * t) { return t->ne[1] * t->ne[2] * t->ne[3]; }

size_t ggml_nbytes(const ggml_tensor * t) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (t->ne[i] <= 0) {
            return 0;
        }
    }
    const int64_t blck = ggml_blck_size(t->type);
    // Bytes from the first to one past the last element, whatever the strides (views included).
    size_t bytes = blck == 1 ? ggml_type_size(t->type) : t->ne[0] * t->nb[0] / size_t(blck);
    if (blck == 1) {
        for (int i = 0; i < GGML_MAX_DIMS; ++i) {
            bytes += size_t(t->ne[i] - 1) * t->nb[i];
        }
    } else {
        for (int i = 1; i < GGML_MAX_DIMS; ++i) {
            bytes += size_t(t->ne[i] - 1) * t->nb[i];
        }
    }
    return bytes;
}

size_t ggml_row_size_of(const ggml_tensor * t) { return ggml_row_size(t->type, t->ne[0]); }

int ggml_n_dims(const ggml_tensor * t) {
    for (int i = GGML_MAX_DIMS - 1; i >= 1; --i) {
        if (t->ne[i] != 1) {
            return i + 1;
        }
    }
    return 1;
}

bool ggml_is_contiguous(const ggml_tensor * t) {
    // Dimensions of size 1 may have any stride.
    size_t next = ggml_type_size(t->type);
    if (t->ne[0] != ggml_blck_size(t->type) && t->nb[0] != next) {
        return false;
    }
    next = ggml_row_size(t->type, t->ne[0]);
    for (int i = 1; i < GGML_MAX_DIMS; ++i) {
        if (t->ne[i] != 1) {
            if (t->nb[i] != next) {
                return false;
            }
            next *= size_t(t->ne[i]);
        }
    }
    return true;
}

bool ggml_is_contiguous_rows(const ggml_tensor * t) {
    return t->ne[0] == ggml_blck_size(t->type) || t->nb[0] == ggml_type_size(t->type);
}

bool ggml_is_permuted(const ggml_tensor * t) {
    return t->nb[0] > t->nb[1] || t->nb[1] > t->nb[2] || t->nb[2] > t->nb[3];
}

bool ggml_is_transposed(const ggml_tensor * t) { return t->nb[0] > t->nb[1]; }

bool ggml_is_view(const ggml_tensor * t) { return t->view_src != nullptr; }

bool ggml_are_same_shape(const ggml_tensor * a, const ggml_tensor * b) {
    return std::equal(a->ne, a->ne + GGML_MAX_DIMS, b->ne);
}

bool ggml_are_same_stride(const ggml_tensor * a, const ggml_tensor * b) {
    return std::equal(a->nb, a->nb + GGML_MAX_DIMS, b->nb);
}

bool ggml_can_repeat(const ggml_tensor * a, const ggml_tensor * b) {
    for (int i = 0; i < GGML_MAX_DIMS; ++i) {
        if (a->ne[i] == 0 || b->ne[i] % a->ne[i] != 0) {
            return false;
        }
    }
    return true;
}

const char * ggml_op_name(ggml_op op) {
    static const char * names[GGML_OP_COUNT] = {
        "NONE",     "DUP",        "ADD",       "ADD_ID",    "SUB",     "MUL",        "DIV",      "SQR",
        "SQRT",     "LOG",        "SIN",       "COS",       "SUM_ROWS", "MEAN",      "CUMSUM",   "ARGSORT",
        "TOP_K",    "CONCAT",     "REPEAT",    "PAD",       "FILL",    "NORM",       "RMS_NORM", "L2_NORM",
        "MUL_MAT",  "MUL_MAT_ID", "SCALE",     "CLAMP",     "SET_ROWS", "GET_ROWS",  "CPY",      "CONT",
        "RESHAPE",  "VIEW",       "PERMUTE",   "TRANSPOSE", "SOFT_MAX", "ROPE",      "FLASH_ATTN_EXT",
        "UNARY",    "GLU",        "SUM",       "ARGMAX",    "LEAKY_RELU", "ROLL",    "IM2COL",
        "DIAG",     "TRI",        "SSM_CONV",  "SOLVE_TRI", "GATED_DELTA_NET",
    };
    return op >= 0 && op < GGML_OP_COUNT ? names[op] : "?";
}

const char * ggml_unary_op_name(ggml_unary_op op) {
    static const char * names[GGML_UNARY_OP_COUNT] = {"ABS",  "NEG",  "TANH",     "RELU",     "SIGMOID", "GELU",
                                                      "GELU_QUICK", "SILU", "EXP", "GELU_ERF", "SOFTPLUS", "STEP"};
    return op >= 0 && op < GGML_UNARY_OP_COUNT ? names[op] : "?";
}

const char * ggml_glu_op_name(ggml_glu_op op) {
    static const char * names[GGML_GLU_OP_COUNT] = {"SWIGLU",   "GEGLU",       "SWIGLU_OAI",
                                                    "REGLU",    "GEGLU_ERF",   "GEGLU_QUICK", "SWIGLU_CLAMP"};
    return op >= 0 && op < GGML_GLU_OP_COUNT ? names[op] : "?";
}

const char * ggml_op_desc(const ggml_tensor * t) {
    if (t->op == GGML_OP_UNARY) {
        return ggml_unary_op_name(ggml_unary_op(ggml_get_op_param<int32_t>(t, 0)));
    }
    if (t->op == GGML_OP_GLU) {
        return ggml_glu_op_name(ggml_glu_op(ggml_get_op_param<int32_t>(t, 0)));
    }
    return ggml_op_name(t->op);
}

void ggml_set_name(ggml_tensor * t, const char * name) {
    std::snprintf(t->name, sizeof t->name, "%s", name);
}

} // namespace hexnpu
