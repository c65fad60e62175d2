// GGML-compatible tensors: the same fields, shape rules and names as GGML's ggml_tensor, so a GGML
// user reads this code without a glossary and a later port into GGML is mechanical.
#pragma once

#include "hexnpu/ggml-types.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hexnpu {

inline constexpr int GGML_MAX_DIMS      = 4;
inline constexpr int GGML_MAX_SRC       = 10;
inline constexpr int GGML_MAX_OP_PARAMS = 64;  // bytes
inline constexpr int GGML_MAX_NAME      = 64;

enum ggml_op : int32_t {
    GGML_OP_NONE = 0,
    GGML_OP_DUP,
    GGML_OP_ADD,
    GGML_OP_ADD_ID,
    GGML_OP_SUB,
    GGML_OP_MUL,
    GGML_OP_DIV,
    GGML_OP_SQR,
    GGML_OP_SQRT,
    GGML_OP_LOG,
    GGML_OP_SIN,
    GGML_OP_COS,
    GGML_OP_SUM_ROWS,
    GGML_OP_MEAN,
    GGML_OP_CUMSUM,
    GGML_OP_ARGSORT,
    GGML_OP_TOP_K,
    GGML_OP_CONCAT,
    GGML_OP_REPEAT,
    GGML_OP_PAD,
    GGML_OP_FILL,
    GGML_OP_NORM,
    GGML_OP_RMS_NORM,
    GGML_OP_L2_NORM,
    GGML_OP_MUL_MAT,
    GGML_OP_MUL_MAT_ID,
    GGML_OP_SCALE,
    GGML_OP_CLAMP,
    GGML_OP_SET_ROWS,
    GGML_OP_GET_ROWS,
    GGML_OP_CPY,
    GGML_OP_CONT,
    GGML_OP_RESHAPE,
    GGML_OP_VIEW,
    GGML_OP_PERMUTE,
    GGML_OP_TRANSPOSE,
    GGML_OP_SOFT_MAX,
    GGML_OP_ROPE,
    GGML_OP_FLASH_ATTN_EXT,
    GGML_OP_UNARY,
    GGML_OP_GLU,
    GGML_OP_SUM,
    GGML_OP_ARGMAX,
    GGML_OP_LEAKY_RELU,
    GGML_OP_ROLL,
    GGML_OP_IM2COL,
    GGML_OP_DIAG,
    GGML_OP_TRI,
    GGML_OP_SSM_CONV,
    GGML_OP_SOLVE_TRI,
    GGML_OP_GATED_DELTA_NET,
    GGML_OP_COUNT,
};

enum ggml_unary_op : int32_t {
    GGML_UNARY_OP_ABS,
    GGML_UNARY_OP_NEG,
    GGML_UNARY_OP_TANH,
    GGML_UNARY_OP_RELU,
    GGML_UNARY_OP_SIGMOID,
    GGML_UNARY_OP_GELU,
    GGML_UNARY_OP_GELU_QUICK,
    GGML_UNARY_OP_SILU,
    GGML_UNARY_OP_EXP,
    GGML_UNARY_OP_GELU_ERF,
    GGML_UNARY_OP_SOFTPLUS,
    GGML_UNARY_OP_STEP,
    GGML_UNARY_OP_COUNT,
};

enum ggml_glu_op : int32_t {
    GGML_GLU_OP_SWIGLU,
    GGML_GLU_OP_GEGLU,
    GGML_GLU_OP_SWIGLU_OAI,
    GGML_GLU_OP_REGLU,
    GGML_GLU_OP_GEGLU_ERF,
    GGML_GLU_OP_GEGLU_QUICK,
    GGML_GLU_OP_SWIGLU_CLAMP,
    GGML_GLU_OP_COUNT,
};

// TRI's op_params[0]: which triangle of each matrix is kept (column i0 against row i1), the rest
// becomes 0.
enum ggml_tri_type : int32_t {
    GGML_TRI_TYPE_UPPER_DIAG = 0,  // i0 >= i1
    GGML_TRI_TYPE_UPPER      = 1,  // i0 >  i1
    GGML_TRI_TYPE_LOWER_DIAG = 2,  // i0 <= i1
    GGML_TRI_TYPE_LOWER      = 3,  // i0 <  i1
};

enum ggml_sort_order : int32_t { GGML_SORT_ORDER_ASC, GGML_SORT_ORDER_DESC };

// A matmul's accumulation precision (MUL_MAT / MUL_MAT_ID op_params[0], GGML's ggml_prec_set_acc):
// F32 asks for fp32 sums and outputs, so the NPU keeps such a product off the HMX unit's fp16 tiles.
enum ggml_prec : int32_t { GGML_PREC_DEFAULT = 0, GGML_PREC_F32 = 10 };

// ROPE modes (op_params[2]). MROPE, VISION and IMROPE take four positions per token (t, h, w, e) and
// the sections (op_params 11-14) that say which pairs turn by which (ggml_rope_multi).
inline constexpr int GGML_ROPE_TYPE_NORMAL = 0;
inline constexpr int GGML_ROPE_TYPE_NEOX   = 2;
inline constexpr int GGML_ROPE_TYPE_MROPE  = 8;
inline constexpr int GGML_ROPE_TYPE_VISION = 24;
inline constexpr int GGML_ROPE_TYPE_IMROPE = 40;
inline constexpr int GGML_MROPE_SECTIONS   = 4;

enum ggml_tensor_flag : int32_t {
    GGML_TENSOR_FLAG_INPUT  = 1,
    GGML_TENSOR_FLAG_OUTPUT = 2,
    GGML_TENSOR_FLAG_PARAM  = 4,
};

class backend_buffer;

struct ggml_tensor {
    ggml_type        type = GGML_TYPE_F32;
    backend_buffer * buffer = nullptr;  // where data lives, once allocated

    int64_t ne[GGML_MAX_DIMS] = {1, 1, 1, 1};  // elements per dimension
    size_t  nb[GGML_MAX_DIMS] = {0, 0, 0, 0};  // stride in bytes; nb[0] = type size, nb[1] = row bytes

    ggml_op op = GGML_OP_NONE;
    int32_t op_params[GGML_MAX_OP_PARAMS / sizeof(int32_t)] = {};
    int32_t flags = 0;

    ggml_tensor * src[GGML_MAX_SRC] = {};

    ggml_tensor * view_src  = nullptr;  // tensor whose memory this one views
    size_t        view_offs = 0;

    void * data = nullptr;
    char   name[GGML_MAX_NAME] = {};
    void * extra = nullptr;  // backend-specific (e.g. tiled-layout info)
};

// Shape queries (GGML semantics).
int64_t ggml_nelements(const ggml_tensor * t);
int64_t ggml_nrows(const ggml_tensor * t);  // ne[1]*ne[2]*ne[3]
size_t  ggml_nbytes(const ggml_tensor * t);  // bytes spanned, honouring strides
size_t  ggml_row_size_of(const ggml_tensor * t);
int     ggml_n_dims(const ggml_tensor * t);  // 1 + index of the last dim != 1
bool    ggml_is_contiguous(const ggml_tensor * t);
bool    ggml_is_contiguous_rows(const ggml_tensor * t);  // each row dense (nb[0] = type size)
bool    ggml_is_permuted(const ggml_tensor * t);
bool    ggml_is_transposed(const ggml_tensor * t);
bool    ggml_is_view(const ggml_tensor * t);
bool    ggml_are_same_shape(const ggml_tensor * a, const ggml_tensor * b);
bool    ggml_are_same_stride(const ggml_tensor * a, const ggml_tensor * b);
bool    ggml_can_repeat(const ggml_tensor * a, const ggml_tensor * b);  // b's shape is a multiple of a's

const char * ggml_op_name(ggml_op op);
const char * ggml_unary_op_name(ggml_unary_op op);
const char * ggml_glu_op_name(ggml_glu_op op);
// As GGML: the op name, or the sub-op name for UNARY and GLU ("SILU", "SWIGLU"); what
// OPFILTER-style regexes match.
const char * ggml_op_desc(const ggml_tensor * t);

void ggml_set_name(ggml_tensor * t, const char * name);

template <typename T> T ggml_get_op_param(const ggml_tensor * t, int i) {
    T v;
    std::memcpy(&v, reinterpret_cast<const uint8_t *>(t->op_params) + size_t(i) * sizeof(T), sizeof(T));
    return v;
}

template <typename T> void ggml_set_op_param(ggml_tensor * t, int i, T v) {
    std::memcpy(reinterpret_cast<uint8_t *>(t->op_params) + size_t(i) * sizeof(T), &v, sizeof(T));
}

} // namespace hexnpu
