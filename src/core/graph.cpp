#include "hexnpu/graph.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <unordered_set>

namespace hexnpu {
namespace {

// Graph-construction errors are programming errors of the caller (impossible shapes); they throw
// so a test harness or CLI can report them instead of crashing.
void require(bool ok, const char * op, const char * what) {
    if (!ok) {
        throw std::invalid_argument(std::string(op) + ": " + what);
    }
}

void set_contiguous_strides(ggml_tensor * t) {
    t->nb[0] = ggml_type_size(t->type);
    t->nb[1] = ggml_row_size(t->type, t->ne[0]);
    for (int i = 2; i < GGML_MAX_DIMS; ++i) {
        t->nb[i] = t->nb[i - 1] * size_t(t->ne[i - 1]);
    }
}

ggml_tensor * new_like(ggml_context * ctx, ggml_type type, const int64_t * ne) {
    return ctx->new_tensor(type, GGML_MAX_DIMS, ne);
}

ggml_tensor * op1(ggml_context * ctx, ggml_op op, ggml_tensor * a) {
    ggml_tensor * r = ggml_dup_tensor(ctx, a);
    r->op           = op;
    r->src[0]       = a;
    return r;
}

ggml_tensor * binary(ggml_context * ctx, ggml_op op, ggml_tensor * a, ggml_tensor * b) {
    require(ggml_can_repeat(b, a), ggml_op_name(op), "src1's shape must divide src0's in every dimension");
    ggml_tensor * r = op1(ctx, op, a);
    r->src[1]       = b;
    return r;
}

ggml_tensor * view_of(ggml_context * ctx, ggml_tensor * a, int n_dims, const int64_t * ne, const size_t * nb,
                      size_t offset) {
    ggml_tensor * r = ctx->new_view(a, n_dims, ne, nb, offset);
    r->src[0]       = a;
    return r;
}

} // namespace

ggml_context::ggml_context(const ggml_init_params & params) : mem_size_(params.mem_size), no_alloc_(params.no_alloc) {
    if (!no_alloc_ && mem_size_ > 0) {
        mem_.reset(new uint8_t[mem_size_]);
    }
}

ggml_tensor * ggml_context::new_tensor(ggml_type type, int n_dims, const int64_t * ne) {
    require(ggml_type_is_valid(type), "new_tensor", "invalid type");
    require(n_dims >= 1 && n_dims <= GGML_MAX_DIMS, "new_tensor", "n_dims must be 1..4");
    ggml_tensor & t = tensors_.emplace_back();
    t.type          = type;
    for (int i = 0; i < n_dims; ++i) {
        require(ne[i] >= 0, "new_tensor", "negative dimension");
        t.ne[i] = ne[i];
    }
    require(t.ne[0] % ggml_blck_size(type) == 0, "new_tensor", "ne[0] must be a multiple of the block size");
    set_contiguous_strides(&t);
    if (!no_alloc_) {
        const size_t size    = ggml_nbytes(&t);
        const size_t aligned = (used_ + 63) & ~size_t(63);
        require(aligned + size <= mem_size_, "new_tensor", "context memory exhausted");
        t.data = mem_.get() + aligned;
        used_  = aligned + size;
    }
    return &t;
}

ggml_tensor * ggml_context::new_view(ggml_tensor * src, int n_dims, const int64_t * ne, const size_t * nb,
                                     size_t offset) {
    ggml_tensor * base = src->view_src ? src->view_src : src;
    const size_t  offs = src->view_offs + offset;
    ggml_tensor & t    = tensors_.emplace_back();
    t.type             = src->type;
    for (int i = 0; i < n_dims; ++i) {
        t.ne[i] = ne[i];
    }
    if (nb) {
        for (int i = 0; i < GGML_MAX_DIMS; ++i) {
            t.nb[i] = nb[i];
        }
    } else {
        set_contiguous_strides(&t);
    }
    t.view_src  = base;
    t.view_offs = offs;
    t.buffer    = base->buffer;
    t.data      = base->data ? static_cast<uint8_t *>(base->data) + offs : nullptr;
    require(offs + ggml_nbytes(&t) <= ggml_nbytes(base), "view", "view extends past the viewed tensor");
    return &t;
}

ggml_tensor * ggml_new_tensor(ggml_context * ctx, ggml_type type, int n_dims, const int64_t * ne) {
    return ctx->new_tensor(type, n_dims, ne);
}
ggml_tensor * ggml_new_tensor_1d(ggml_context * ctx, ggml_type type, int64_t ne0) {
    return ctx->new_tensor(type, 1, &ne0);
}
ggml_tensor * ggml_new_tensor_2d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    return ctx->new_tensor(type, 2, ne);
}
ggml_tensor * ggml_new_tensor_3d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return ctx->new_tensor(type, 3, ne);
}
ggml_tensor * ggml_new_tensor_4d(ggml_context * ctx, ggml_type type, int64_t ne0, int64_t ne1, int64_t ne2,
                                 int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return ctx->new_tensor(type, 4, ne);
}
ggml_tensor * ggml_dup_tensor(ggml_context * ctx, const ggml_tensor * t) { return new_like(ctx, t->type, t->ne); }

// ---- views and layout ---------------------------------------------------------------------------

ggml_tensor * ggml_view_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, size_t offset) {
    const int64_t ne[1] = {ne0};
    ggml_tensor * r     = view_of(ctx, a, 1, ne, nullptr, offset);
    r->op               = GGML_OP_VIEW;
    ggml_set_op_param<uint64_t>(r, 0, offset);
    return r;
}
ggml_tensor * ggml_view_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    const int64_t ne[2] = {ne0, ne1};
    const size_t  nb[4] = {ggml_type_size(a->type), nb1, nb1 * size_t(ne1), nb1 * size_t(ne1)};
    ggml_tensor * r     = view_of(ctx, a, 2, ne, nb, offset);
    r->op               = GGML_OP_VIEW;
    ggml_set_op_param<uint64_t>(r, 0, offset);
    return r;
}
ggml_tensor * ggml_view_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1,
                           size_t nb2, size_t offset) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    const size_t  nb[4] = {ggml_type_size(a->type), nb1, nb2, nb2 * size_t(ne2)};
    ggml_tensor * r     = view_of(ctx, a, 3, ne, nb, offset);
    r->op               = GGML_OP_VIEW;
    ggml_set_op_param<uint64_t>(r, 0, offset);
    return r;
}
ggml_tensor * ggml_view_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                           size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    const size_t  nb[4] = {ggml_type_size(a->type), nb1, nb2, nb3};
    ggml_tensor * r     = view_of(ctx, a, 4, ne, nb, offset);
    r->op               = GGML_OP_VIEW;
    ggml_set_op_param<uint64_t>(r, 0, offset);
    return r;
}

static ggml_tensor * reshape(ggml_context * ctx, ggml_tensor * a, int n_dims, const int64_t * ne) {
    require(ggml_is_contiguous(a), "RESHAPE", "source must be contiguous");
    int64_t n = 1;
    for (int i = 0; i < n_dims; ++i) {
        n *= ne[i];
    }
    require(n == ggml_nelements(a), "RESHAPE", "element count must not change");
    ggml_tensor * r = view_of(ctx, a, n_dims, ne, nullptr, 0);
    r->op           = GGML_OP_RESHAPE;
    return r;
}
ggml_tensor * ggml_reshape_1d(ggml_context * ctx, ggml_tensor * a, int64_t ne0) { return reshape(ctx, a, 1, &ne0); }
ggml_tensor * ggml_reshape_2d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1) {
    const int64_t ne[2] = {ne0, ne1};
    return reshape(ctx, a, 2, ne);
}
ggml_tensor * ggml_reshape_3d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return reshape(ctx, a, 3, ne);
}
ggml_tensor * ggml_reshape_4d(ggml_context * ctx, ggml_tensor * a, int64_t ne0, int64_t ne1, int64_t ne2,
                              int64_t ne3) {
    const int64_t ne[4] = {ne0, ne1, ne2, ne3};
    return reshape(ctx, a, 4, ne);
}

ggml_tensor * ggml_permute(ggml_context * ctx, ggml_tensor * a, int axis0, int axis1, int axis2, int axis3) {
    const int axes[4] = {axis0, axis1, axis2, axis3};
    bool      seen[4] = {};
    for (int ax : axes) {
        require(ax >= 0 && ax < 4 && !seen[ax], "PERMUTE", "axes must be a permutation of 0..3");
        seen[ax] = true;
    }
    int64_t ne[4];
    size_t  nb[4];
    for (int i = 0; i < 4; ++i) {
        ne[axes[i]] = a->ne[i];
        nb[axes[i]] = a->nb[i];
    }
    ggml_tensor * r = view_of(ctx, a, 4, ne, nb, 0);
    r->op           = GGML_OP_PERMUTE;
    for (int i = 0; i < 4; ++i) {
        r->op_params[i] = axes[i];
    }
    return r;
}

ggml_tensor * ggml_transpose(ggml_context * ctx, ggml_tensor * a) {
    const int64_t ne[4] = {a->ne[1], a->ne[0], a->ne[2], a->ne[3]};
    const size_t  nb[4] = {a->nb[1], a->nb[0], a->nb[2], a->nb[3]};
    ggml_tensor * r     = view_of(ctx, a, 4, ne, nb, 0);
    r->op               = GGML_OP_TRANSPOSE;
    return r;
}

ggml_tensor * ggml_cont(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_CONT, a); }
ggml_tensor * ggml_dup(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_DUP, a); }

ggml_tensor * ggml_cpy(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    require(ggml_nelements(a) == ggml_nelements(b), "CPY", "element counts differ");
    ggml_tensor * r = view_of(ctx, b, 4, b->ne, b->nb, 0);
    r->op           = GGML_OP_CPY;
    r->src[0]       = a;
    r->src[1]       = b;
    return r;
}

ggml_tensor * ggml_cast(ggml_context * ctx, ggml_tensor * a, ggml_type type) {
    ggml_tensor * r = new_like(ctx, type, a->ne);
    r->op           = GGML_OP_CPY;
    r->src[0]       = a;
    r->src[1]       = r;
    return r;
}

// ---- element-wise -------------------------------------------------------------------------------

ggml_tensor * ggml_add(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) { return binary(ctx, GGML_OP_ADD, a, b); }
ggml_tensor * ggml_sub(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) { return binary(ctx, GGML_OP_SUB, a, b); }
ggml_tensor * ggml_mul(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) { return binary(ctx, GGML_OP_MUL, a, b); }
ggml_tensor * ggml_div(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) { return binary(ctx, GGML_OP_DIV, a, b); }

ggml_tensor * ggml_add_id(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_tensor * ids) {
    require(a->ne[0] == b->ne[0], "ADD_ID", "row lengths differ");
    require(ids->type == GGML_TYPE_I32, "ADD_ID", "ids must be I32");
    require(ids->ne[0] == a->ne[1] && ids->ne[1] == a->ne[2], "ADD_ID", "ids must be [a.ne1, a.ne2]");
    ggml_tensor * r = op1(ctx, GGML_OP_ADD_ID, a);
    r->src[1]       = b;
    r->src[2]       = ids;
    return r;
}

ggml_tensor * ggml_scale_bias(ggml_context * ctx, ggml_tensor * a, float s, float b) {
    ggml_tensor * r = op1(ctx, GGML_OP_SCALE, a);
    ggml_set_op_param<float>(r, 0, s);
    ggml_set_op_param<float>(r, 1, b);
    return r;
}
ggml_tensor * ggml_scale(ggml_context * ctx, ggml_tensor * a, float s) { return ggml_scale_bias(ctx, a, s, 0.0f); }

ggml_tensor * ggml_clamp(ggml_context * ctx, ggml_tensor * a, float min, float max) {
    ggml_tensor * r = op1(ctx, GGML_OP_CLAMP, a);
    ggml_set_op_param<float>(r, 0, min);
    ggml_set_op_param<float>(r, 1, max);
    return r;
}

ggml_tensor * ggml_sqr(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_SQR, a); }
ggml_tensor * ggml_sqrt(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_SQRT, a); }
ggml_tensor * ggml_log(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_LOG, a); }
ggml_tensor * ggml_sin(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_SIN, a); }
ggml_tensor * ggml_cos(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_COS, a); }

ggml_tensor * ggml_unary(ggml_context * ctx, ggml_tensor * a, ggml_unary_op op) {
    require(op >= 0 && op < GGML_UNARY_OP_COUNT, "UNARY", "unknown unary op");
    ggml_tensor * r = op1(ctx, GGML_OP_UNARY, a);
    ggml_set_op_param<int32_t>(r, 0, op);
    return r;
}

ggml_tensor * ggml_fill(ggml_context * ctx, ggml_tensor * a, float value) {
    ggml_tensor * r = op1(ctx, GGML_OP_FILL, a);
    ggml_set_op_param<float>(r, 0, value);
    return r;
}

ggml_tensor * ggml_glu(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, ggml_glu_op op, bool swapped) {
    require(op >= 0 && op < GGML_GLU_OP_COUNT, "GLU", "unknown GLU op");
    require(ggml_is_contiguous_rows(a), "GLU", "rows of src0 must be contiguous");
    int64_t ne[4] = {a->ne[0], a->ne[1], a->ne[2], a->ne[3]};
    if (b) {
        require(ggml_are_same_shape(a, b) && a->type == b->type, "GLU", "gate must match src0's shape and type");
    } else {
        require(a->ne[0] % 2 == 0, "GLU", "fused [x | gate] rows need an even length");
        ne[0] = a->ne[0] / 2;
    }
    ggml_tensor * r = new_like(ctx, a->type, ne);
    r->op           = GGML_OP_GLU;
    r->src[0]       = a;
    r->src[1]       = b;
    ggml_set_op_param<int32_t>(r, 0, op);
    ggml_set_op_param<int32_t>(r, 1, swapped ? 1 : 0);
    return r;
}

ggml_tensor * ggml_swiglu_oai(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float alpha, float limit) {
    ggml_tensor * r = ggml_glu(ctx, a, b, GGML_GLU_OP_SWIGLU_OAI, false);
    ggml_set_op_param<float>(r, 2, alpha);
    ggml_set_op_param<float>(r, 3, limit);
    return r;
}

ggml_tensor * ggml_swiglu_clamp(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, float limit) {
    ggml_tensor * r = ggml_glu(ctx, a, b, GGML_GLU_OP_SWIGLU_CLAMP, false);
    ggml_set_op_param<float>(r, 3, limit);
    return r;
}

ggml_tensor * ggml_leaky_relu(ggml_context * ctx, ggml_tensor * a, float negative_slope) {
    ggml_tensor * r = op1(ctx, GGML_OP_LEAKY_RELU, a);
    ggml_set_op_param<float>(r, 0, negative_slope);
    return r;
}

// ---- reductions and shape ops -------------------------------------------------------------------

ggml_tensor * ggml_sum(ggml_context * ctx, ggml_tensor * a) {
    const int64_t ne[4] = {1, 1, 1, 1};
    ggml_tensor * r     = new_like(ctx, a->type, ne);
    r->op               = GGML_OP_SUM;
    r->src[0]           = a;
    return r;
}

ggml_tensor * ggml_argmax(ggml_context * ctx, ggml_tensor * a) {
    require(a->ne[2] == 1 && a->ne[3] == 1, "ARGMAX", "src0 must be a matrix");
    require(a->ne[0] <= INT32_MAX, "ARGMAX", "rows longer than INT32_MAX elements");
    const int64_t ne[4] = {a->ne[1], 1, 1, 1};
    ggml_tensor * r     = new_like(ctx, GGML_TYPE_I32, ne);
    r->op               = GGML_OP_ARGMAX;
    r->src[0]           = a;
    return r;
}

ggml_tensor * ggml_sum_rows(ggml_context * ctx, ggml_tensor * a) {
    const int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    ggml_tensor * r     = new_like(ctx, a->type, ne);
    r->op               = GGML_OP_SUM_ROWS;
    r->src[0]           = a;
    return r;
}

ggml_tensor * ggml_mean(ggml_context * ctx, ggml_tensor * a) {
    ggml_tensor * r = ggml_sum_rows(ctx, a);
    r->op           = GGML_OP_MEAN;
    return r;
}

ggml_tensor * ggml_cumsum(ggml_context * ctx, ggml_tensor * a) { return op1(ctx, GGML_OP_CUMSUM, a); }

ggml_tensor * ggml_im2col(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int s0, int s1, int p0, int p1, int d0,
                          int d1, bool is_2D, ggml_type dst_type) {
    require(is_2D ? a->ne[2] == b->ne[2] : a->ne[1] == b->ne[1] && b->ne[3] == 1, "IM2COL",
            "the kernel's input channels must be the image's");
    require(dst_type == GGML_TYPE_F32 || dst_type == GGML_TYPE_F16, "IM2COL", "the result is F32 or F16");
    require(s0 > 0 && d0 > 0 && p0 >= 0 && (!is_2D || (s1 > 0 && d1 > 0 && p1 >= 0)), "IM2COL",
            "strides and dilations must be positive, paddings not negative");
    // GGML's ggml_calc_conv_output_size: (in + 2p - d (k - 1) - 1) / s + 1.
    auto out_size = [](int64_t in, int64_t k, int s, int p, int d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; };
    const int64_t OH = is_2D ? out_size(b->ne[1], a->ne[1], s1, p1, d1) : 1;
    const int64_t OW = out_size(b->ne[0], a->ne[0], s0, p0, d0);
    require(OH > 0 && OW > 0, "IM2COL", "the image is smaller than the kernel");
    ggml_tensor * r = ggml_new_tensor_4d(ctx, dst_type, is_2D ? a->ne[2] * a->ne[1] * a->ne[0] : a->ne[1] * a->ne[0], OW,
                                         is_2D ? OH : b->ne[2], is_2D ? b->ne[3] : 1);
    r->op     = GGML_OP_IM2COL;
    r->src[0] = a;
    r->src[1] = b;
    const int32_t params[7] = {s0, s1, p0, p1, d0, d1, is_2D ? 1 : 0};
    for (int k = 0; k < 7; ++k) {
        ggml_set_op_param<int32_t>(r, k, params[k]);
    }
    return r;
}

ggml_tensor * ggml_roll(ggml_context * ctx, ggml_tensor * a, int shift0, int shift1, int shift2, int shift3) {
    require(a->nb[0] == ggml_type_size(a->type), "ROLL", "src0's elements must be adjacent");
    const int shifts[4] = {shift0, shift1, shift2, shift3};
    for (int d = 0; d < 4; ++d) {
        require(std::abs(int64_t(shifts[d])) < a->ne[d], "ROLL", "each shift must be smaller than its dimension");
    }
    ggml_tensor * r = ggml_dup_tensor(ctx, a);
    r->op           = GGML_OP_ROLL;
    r->src[0]       = a;
    for (int d = 0; d < 4; ++d) {
        ggml_set_op_param<int32_t>(r, d, shifts[d]);
    }
    return r;
}

ggml_tensor * ggml_diag(ggml_context * ctx, ggml_tensor * a) {
    require(a->ne[1] == 1, "DIAG", "src0 must be one row per matrix (ne[1] == 1)");
    require(a->type == GGML_TYPE_F32, "DIAG", "src0 must be F32");
    const int64_t ne[4] = {a->ne[0], a->ne[0], a->ne[2], a->ne[3]};
    ggml_tensor * r     = new_like(ctx, a->type, ne);
    r->op               = GGML_OP_DIAG;
    r->src[0]           = a;
    return r;
}

ggml_tensor * ggml_tri(ggml_context * ctx, ggml_tensor * a, ggml_tri_type type) {
    require(a->type == GGML_TYPE_F32, "TRI", "src0 must be F32");
    require(ggml_is_contiguous(a), "TRI", "src0 must be contiguous");
    require(a->ne[0] == a->ne[1], "TRI", "src0 must be square (ne[0] == ne[1])");
    require(type >= GGML_TRI_TYPE_UPPER_DIAG && type <= GGML_TRI_TYPE_LOWER, "TRI", "the type must be 0..3");
    ggml_tensor * r = op1(ctx, GGML_OP_TRI, a);
    ggml_set_op_param<int32_t>(r, 0, type);
    return r;
}

ggml_tensor * ggml_ssm_conv(ggml_context * ctx, ggml_tensor * sx, ggml_tensor * c) {
    require(sx->ne[3] == 1, "SSM_CONV", "sx must be 3-D [d_conv - 1 + n_t, d_inner, n_s]");
    require(c->ne[2] == 1 && c->ne[3] == 1, "SSM_CONV", "c must be a matrix [d_conv, d_inner]");
    require(sx->ne[1] == c->ne[1], "SSM_CONV", "sx's channels (ne[1]) must be c's (ne[1])");
    require(c->ne[0] >= 1 && sx->ne[0] >= c->ne[0] - 1, "SSM_CONV", "sx must hold at least d_conv - 1 columns");
    ggml_tensor * r = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, c->ne[1], sx->ne[0] - c->ne[0] + 1, sx->ne[2]);
    r->op           = GGML_OP_SSM_CONV;
    r->src[0]       = sx;
    r->src[1]       = c;
    return r;
}

ggml_tensor * ggml_solve_tri(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, bool left, bool lower, bool uni) {
    require(a->type == GGML_TYPE_F32 && b->type == GGML_TYPE_F32, "SOLVE_TRI", "A and B must be F32");
    require(a->ne[0] == a->ne[1], "SOLVE_TRI", "A must be square");
    require(a->ne[1] == b->ne[1], "SOLVE_TRI", "B's rows (ne[1]) must be A's");
    require(a->ne[2] == b->ne[2] && a->ne[3] == b->ne[3], "SOLVE_TRI", "A and B must have the same batch dims");
    require(ggml_is_contiguous(a) && ggml_is_contiguous(b), "SOLVE_TRI", "A and B must be contiguous");
    require(left && lower && !uni, "SOLVE_TRI", "only left, lower, non-unit systems are defined (as GGML)");
    ggml_tensor * r = new_like(ctx, GGML_TYPE_F32, b->ne);
    r->op           = GGML_OP_SOLVE_TRI;
    r->src[0]       = a;
    r->src[1]       = b;
    return r;
}

ggml_tensor * ggml_gated_delta_net(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                   ggml_tensor * g, ggml_tensor * beta, ggml_tensor * state, int64_t K) {
    const char * op = "GATED_DELTA_NET";
    for (const ggml_tensor * t : {q, k, v, g, beta, state}) {
        require(t->type == GGML_TYPE_F32, op, "q, k, v, g, beta and state must be F32");
    }
    require(ggml_is_contiguous_rows(q) && ggml_is_contiguous_rows(k) && ggml_is_contiguous_rows(v), op,
            "q, k and v must have dense rows");
    require(ggml_is_contiguous(g) && ggml_is_contiguous(beta) && ggml_is_contiguous(state), op,
            "g, beta and state must be contiguous");
    const int64_t S = v->ne[0], H = v->ne[1], T = v->ne[2], n_seqs = v->ne[3];
    require(q->ne[0] == S && k->ne[0] == S, op, "q's and k's head size must be v's (S_k == S_v)");
    require(q->ne[2] == T && k->ne[2] == T, op, "q, k and v must have the same token count (ne[2])");
    require(q->ne[1] > 0 && k->ne[1] > 0 && H % q->ne[1] == 0 && H % k->ne[1] == 0, op,
            "v's head count must be a multiple of q's and k's");
    require(q->ne[3] > 0 && k->ne[3] > 0 && n_seqs % q->ne[3] == 0 && n_seqs % k->ne[3] == 0, op,
            "v's sequence count must be a multiple of q's and k's");
    require((g->ne[0] == 1 || g->ne[0] == S) && g->ne[1] == H && g->ne[2] == T && g->ne[3] == n_seqs, op,
            "g must be [1 or S, H, T, n_seqs]");
    require(beta->ne[0] == 1 && beta->ne[1] == H && beta->ne[2] == T && beta->ne[3] == n_seqs, op,
            "beta must be [1, H, T, n_seqs]");
    require(state->ne[0] == S && state->ne[1] == S && state->ne[2] == H && state->ne[3] == n_seqs, op,
            "state must be [S, S, H, n_seqs]");
    require(K >= 1 && K <= INT32_MAX, op, "K (the states kept) must be at least 1");
    ggml_tensor * r = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, S * H, T * n_seqs + K * S * n_seqs);
    r->op           = GGML_OP_GATED_DELTA_NET;
    ggml_tensor * srcs[6] = {q, k, v, g, beta, state};
    for (int i = 0; i < 6; ++i) {
        r->src[i] = srcs[i];
    }
    ggml_set_op_param<int32_t>(r, 0, int32_t(K));
    return r;
}

ggml_tensor * ggml_argsort(ggml_context * ctx, ggml_tensor * a, ggml_sort_order order) {
    ggml_tensor * r = new_like(ctx, GGML_TYPE_I32, a->ne);
    r->op           = GGML_OP_ARGSORT;
    r->src[0]       = a;
    ggml_set_op_param<int32_t>(r, 0, order);
    return r;
}

ggml_tensor * ggml_top_k(ggml_context * ctx, ggml_tensor * a, int k) {
    require(k >= 1 && k <= a->ne[0], "TOP_K", "k must be in 1..ne[0]");
    const int64_t ne[4] = {k, a->ne[1], a->ne[2], a->ne[3]};
    ggml_tensor * r     = new_like(ctx, GGML_TYPE_I32, ne);
    r->op               = GGML_OP_TOP_K;  // k is the row length: no op_params, as in GGML
    r->src[0]           = a;
    return r;
}

ggml_tensor * ggml_concat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b, int dim) {
    require(dim >= 0 && dim < GGML_MAX_DIMS, "CONCAT", "dim must be 0..3");
    require(a->type == b->type, "CONCAT", "types differ");
    int64_t ne[4];
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        require(d == dim || a->ne[d] == b->ne[d], "CONCAT", "shapes differ outside the concatenated dim");
        ne[d] = d == dim ? a->ne[d] + b->ne[d] : a->ne[d];
    }
    ggml_tensor * r = new_like(ctx, a->type, ne);
    r->op           = GGML_OP_CONCAT;
    r->src[0]       = a;
    r->src[1]       = b;
    ggml_set_op_param<int32_t>(r, 0, dim);
    return r;
}

ggml_tensor * ggml_repeat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * shape_of) {
    require(ggml_can_repeat(a, shape_of), "REPEAT", "target shape must be a multiple of the source's");
    ggml_tensor * r = new_like(ctx, a->type, shape_of->ne);
    r->op           = GGML_OP_REPEAT;
    r->src[0]       = a;
    return r;
}

ggml_tensor * ggml_pad(ggml_context * ctx, ggml_tensor * a, int p0, int p1, int p2, int p3) {
    require(p0 >= 0 && p1 >= 0 && p2 >= 0 && p3 >= 0, "PAD", "padding must be non-negative");
    const int64_t ne[4] = {a->ne[0] + p0, a->ne[1] + p1, a->ne[2] + p2, a->ne[3] + p3};
    ggml_tensor * r     = new_like(ctx, a->type, ne);
    r->op               = GGML_OP_PAD;
    r->src[0]           = a;
    const int32_t pads[4] = {p0, p1, p2, p3};
    for (int i = 0; i < 4; ++i) {
        // GGML's layout: (lp0, rp0, lp1, rp1, ...); only right padding is produced here.
        ggml_set_op_param<int32_t>(r, 2 * i, 0);
        ggml_set_op_param<int32_t>(r, 2 * i + 1, pads[i]);
    }
    return r;
}

// ---- normalization ------------------------------------------------------------------------------

static ggml_tensor * norm(ggml_context * ctx, ggml_op op, ggml_tensor * a, float eps) {
    ggml_tensor * r = op1(ctx, op, a);
    ggml_set_op_param<float>(r, 0, eps);
    return r;
}
ggml_tensor * ggml_norm(ggml_context * ctx, ggml_tensor * a, float eps) { return norm(ctx, GGML_OP_NORM, a, eps); }
ggml_tensor * ggml_rms_norm(ggml_context * ctx, ggml_tensor * a, float eps) {
    return norm(ctx, GGML_OP_RMS_NORM, a, eps);
}
ggml_tensor * ggml_l2_norm(ggml_context * ctx, ggml_tensor * a, float eps) {
    return norm(ctx, GGML_OP_L2_NORM, a, eps);
}

// ---- rows ---------------------------------------------------------------------------------------

ggml_tensor * ggml_get_rows(ggml_context * ctx, ggml_tensor * a, ggml_tensor * rows) {
    require(rows->type == GGML_TYPE_I32 || rows->type == GGML_TYPE_I64, "GET_ROWS", "row ids must be I32 or I64");
    require(a->ne[2] == rows->ne[1] && rows->ne[3] == 1 && a->ne[3] == rows->ne[2], "GET_ROWS",
            "ids must be [n, a.ne2, a.ne3]");
    const ggml_type type = a->type == GGML_TYPE_I32 ? GGML_TYPE_I32 : GGML_TYPE_F32;
    const int64_t   ne[4] = {a->ne[0], rows->ne[0], rows->ne[1], rows->ne[2]};
    ggml_tensor *   r     = new_like(ctx, type, ne);
    r->op                 = GGML_OP_GET_ROWS;
    r->src[0]             = a;
    r->src[1]             = rows;
    return r;
}

ggml_tensor * ggml_set_rows(ggml_context * ctx, ggml_tensor * dst, ggml_tensor * src, ggml_tensor * rows) {
    require(dst->ne[0] == src->ne[0], "SET_ROWS", "row lengths differ");
    require(dst->ne[2] == src->ne[2] && dst->ne[3] == src->ne[3], "SET_ROWS", "outer dims of dst and src differ");
    require(src->ne[1] == rows->ne[0], "SET_ROWS", "one row id per source row");
    require(rows->ne[1] > 0 && rows->ne[2] > 0 && src->ne[2] % rows->ne[1] == 0 && src->ne[3] % rows->ne[2] == 0 &&
                rows->ne[3] == 1,
            "SET_ROWS", "row ids must broadcast over src's outer dims");
    require(src->type == GGML_TYPE_F32, "SET_ROWS", "src must be F32");
    require(rows->type == GGML_TYPE_I32 || rows->type == GGML_TYPE_I64, "SET_ROWS", "row ids must be I32 or I64");
    ggml_tensor * r = view_of(ctx, dst, 4, dst->ne, dst->nb, 0);
    r->op           = GGML_OP_SET_ROWS;
    r->src[0]       = src;
    r->src[1]       = rows;
    return r;
}

// ---- matrix products ----------------------------------------------------------------------------

ggml_tensor * ggml_mul_mat(ggml_context * ctx, ggml_tensor * a, ggml_tensor * b) {
    require(a->ne[0] == b->ne[0], "MUL_MAT", "inner dimensions (ne[0]) differ");
    require(b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0, "MUL_MAT", "src0 must broadcast over src1 (dims 2, 3)");
    require(!ggml_is_transposed(a), "MUL_MAT", "src0 must not be transposed");
    const int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
    ggml_tensor * r     = new_like(ctx, GGML_TYPE_F32, ne);
    r->op               = GGML_OP_MUL_MAT;
    r->src[0]           = a;
    r->src[1]           = b;
    return r;
}

ggml_tensor * ggml_mul_mat_id(ggml_context * ctx, ggml_tensor * as, ggml_tensor * b, ggml_tensor * ids) {
    require(ids->type == GGML_TYPE_I32, "MUL_MAT_ID", "ids must be I32");
    require(as->ne[3] == 1 && b->ne[3] == 1, "MUL_MAT_ID", "4-D inputs are not supported");
    require(as->ne[0] == b->ne[0], "MUL_MAT_ID", "inner dimensions (ne[0]) differ");
    require(ids->ne[1] == b->ne[2], "MUL_MAT_ID", "one ids row per token (ids.ne1 == b.ne2)");
    require(b->ne[1] > 0 && ids->ne[0] % b->ne[1] == 0, "MUL_MAT_ID", "b.ne1 must divide the experts used");
    const int64_t ne[4] = {as->ne[1], ids->ne[0], b->ne[2], 1};
    ggml_tensor * r     = new_like(ctx, GGML_TYPE_F32, ne);
    r->op               = GGML_OP_MUL_MAT_ID;
    r->src[0]           = as;
    r->src[1]           = b;
    r->src[2]           = ids;
    return r;
}

// ---- attention ----------------------------------------------------------------------------------

ggml_tensor * ggml_soft_max_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * mask, float scale,
                                float max_bias) {
    require(ggml_is_contiguous_rows(a), "SOFT_MAX", "rows must be contiguous");
    if (mask) {
        require(mask->type == GGML_TYPE_F16 || mask->type == GGML_TYPE_F32, "SOFT_MAX", "mask must be F16 or F32");
        require(mask->ne[0] == a->ne[0] && mask->ne[1] >= a->ne[1], "SOFT_MAX", "mask must cover every row");
        require(a->ne[2] % mask->ne[2] == 0 && a->ne[3] % mask->ne[3] == 0, "SOFT_MAX", "mask must broadcast");
    }
    require(max_bias == 0.0f || mask, "SOFT_MAX", "ALiBi (max_bias > 0) needs a mask");
    ggml_tensor * r = op1(ctx, GGML_OP_SOFT_MAX, a);
    r->src[1]       = mask;
    ggml_set_op_param<float>(r, 0, scale);
    ggml_set_op_param<float>(r, 1, max_bias);
    return r;
}

void ggml_soft_max_add_sinks(ggml_tensor * soft_max, ggml_tensor * sinks) {
    require(soft_max->op == GGML_OP_SOFT_MAX, "SOFT_MAX", "sinks attach to a SOFT_MAX node");
    require(!sinks || (sinks->type == GGML_TYPE_F32 && sinks->ne[0] == soft_max->ne[2]), "SOFT_MAX",
            "sinks must be F32 with one value per head (ne[2])");
    soft_max->src[2] = sinks;
}

namespace {

ggml_tensor * rope_impl(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pos, ggml_tensor * freq_factors, int n_dims,
                        const int * sections, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                        float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    const bool multi = (mode & GGML_ROPE_TYPE_MROPE) != 0;
    // VISION rotates the whole row: pairs (i, i + n_dims), n_dims = ne[0] / 2.
    const int rotated = mode == GGML_ROPE_TYPE_VISION ? 2 * n_dims : n_dims;
    require(n_dims > 0 && n_dims % 2 == 0 && rotated <= a->ne[0], "ROPE", "n_dims must be even and <= ne[0]");
    require(mode != GGML_ROPE_TYPE_VISION || rotated == a->ne[0], "ROPE", "VISION rotates ne[0] = 2 n_dims");
    require(pos->type == GGML_TYPE_I32 && pos->ne[0] == (multi ? 4 : 1) * a->ne[2], "ROPE",
            multi ? "positions must be I32, four per ne[2]" : "positions must be I32, one per ne[2]");
    const int pairs = rotated / 2;
    require(!freq_factors || (freq_factors->type == GGML_TYPE_F32 && freq_factors->ne[0] >= pairs), "ROPE",
            "freq factors must be F32 with one entry per rotated pair");
    ggml_tensor * r = op1(ctx, GGML_OP_ROPE, a);
    r->src[1]       = pos;
    r->src[2]       = freq_factors;
    // GGML's layout: [n_past(unused), n_dims, mode, n_ctx(unused), n_ctx_orig, floats..., sections, n_offs].
    ggml_set_op_param<int32_t>(r, 1, n_dims);
    ggml_set_op_param<int32_t>(r, 2, mode);
    ggml_set_op_param<int32_t>(r, 4, n_ctx_orig);
    ggml_set_op_param<float>(r, 5, freq_base);
    ggml_set_op_param<float>(r, 6, freq_scale);
    ggml_set_op_param<float>(r, 7, ext_factor);
    ggml_set_op_param<float>(r, 8, attn_factor);
    ggml_set_op_param<float>(r, 9, beta_fast);
    ggml_set_op_param<float>(r, 10, beta_slow);
    for (int k = 0; sections && k < GGML_MROPE_SECTIONS; ++k) {
        ggml_set_op_param<int32_t>(r, 11 + k, sections[k]);
    }
    return r;
}

} // namespace

ggml_tensor * ggml_rope_ext(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pos, ggml_tensor * freq_factors,
                            int n_dims, int mode, int n_ctx_orig, float freq_base, float freq_scale,
                            float ext_factor, float attn_factor, float beta_fast, float beta_slow) {
    require(mode == GGML_ROPE_TYPE_NORMAL || mode == GGML_ROPE_TYPE_NEOX, "ROPE",
            "mode must be NORMAL or NEOX (ggml_rope_multi takes the others)");
    return rope_impl(ctx, a, pos, freq_factors, n_dims, nullptr, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                     attn_factor, beta_fast, beta_slow);
}

ggml_tensor * ggml_rope_multi(ggml_context * ctx, ggml_tensor * a, ggml_tensor * pos, ggml_tensor * freq_factors,
                              int n_dims, const int sections[GGML_MROPE_SECTIONS], int mode, int n_ctx_orig,
                              float freq_base, float freq_scale, float ext_factor, float attn_factor, float beta_fast,
                              float beta_slow) {
    require(mode == GGML_ROPE_TYPE_MROPE || mode == GGML_ROPE_TYPE_IMROPE || mode == GGML_ROPE_TYPE_VISION, "ROPE",
            "ggml_rope_multi's mode must be MROPE, IMROPE or VISION");
    int sum = 0;
    for (int k = 0; k < GGML_MROPE_SECTIONS; ++k) {
        require(sections[k] >= 0, "ROPE", "sections must not be negative");
        sum += sections[k];
    }
    require(sections[0] > 0 || sections[1] > 0 || sections[2] > 0, "ROPE", "one of sections 0-2 must be positive");
    require(sum <= a->ne[0], "ROPE", "the sections add up to more than ne[0]");
    return rope_impl(ctx, a, pos, freq_factors, n_dims, sections, mode, n_ctx_orig, freq_base, freq_scale, ext_factor,
                     attn_factor, beta_fast, beta_slow);
}

ggml_tensor * ggml_rope_set_offset(ggml_tensor * rope, int n_offs) {
    require(rope->op == GGML_OP_ROPE, "ROPE", "the offset is a ROPE node's");
    const int mode   = ggml_get_op_param<int32_t>(rope, 2);
    const int n_dims = ggml_get_op_param<int32_t>(rope, 1);
    require(mode != GGML_ROPE_TYPE_VISION, "ROPE", "VISION rotates the whole row: no offset");
    require(n_offs >= 0 && n_offs % 2 == 0 && n_offs + n_dims <= rope->ne[0], "ROPE",
            "the offset must be even, with offset + n_dims <= ne[0]");
    ggml_set_op_param<int32_t>(rope, 15, n_offs);
    return rope;
}

ggml_tensor * ggml_flash_attn_ext(ggml_context * ctx, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v,
                                  ggml_tensor * mask, float scale, float max_bias, float logit_softcap) {
    require(q->ne[0] == k->ne[0], "FLASH_ATTN_EXT", "Q and K head sizes differ");
    require(k->ne[1] == v->ne[1], "FLASH_ATTN_EXT", "K and V lengths differ");
    require(q->ne[2] % k->ne[2] == 0 && k->ne[2] == v->ne[2], "FLASH_ATTN_EXT", "heads must broadcast (GQA)");
    require(q->ne[3] == k->ne[3] && k->ne[3] == v->ne[3], "FLASH_ATTN_EXT", "ne[3] must match");
    if (mask) {
        require(mask->ne[0] == k->ne[1] && mask->ne[1] >= q->ne[1], "FLASH_ATTN_EXT", "mask must be [n_kv, >= n_q]");
        require(q->ne[2] % mask->ne[2] == 0 && q->ne[3] % mask->ne[3] == 0, "FLASH_ATTN_EXT", "mask must broadcast");
    }
    require(max_bias == 0.0f || mask, "FLASH_ATTN_EXT", "ALiBi (max_bias > 0) needs a mask");
    // Result is [Dv, n_head, n_q, ne3]: heads of one token adjacent, as GGML lays it out.
    const int64_t ne[4] = {v->ne[0], q->ne[2], q->ne[1], q->ne[3]};
    ggml_tensor * r     = new_like(ctx, GGML_TYPE_F32, ne);
    r->op               = GGML_OP_FLASH_ATTN_EXT;
    r->src[0]           = q;
    r->src[1]           = k;
    r->src[2]           = v;
    r->src[3]           = mask;
    ggml_set_op_param<float>(r, 0, scale);
    ggml_set_op_param<float>(r, 1, max_bias);
    ggml_set_op_param<float>(r, 2, logit_softcap);
    return r;
}

void ggml_flash_attn_ext_add_sinks(ggml_tensor * fa, ggml_tensor * sinks) {
    require(fa->op == GGML_OP_FLASH_ATTN_EXT, "FLASH_ATTN_EXT", "sinks attach to a FLASH_ATTN_EXT node");
    require(!sinks || (sinks->type == GGML_TYPE_F32 && sinks->ne[0] == fa->ne[1]), "FLASH_ATTN_EXT",
            "sinks must be F32 with one value per head");
    fa->src[4] = sinks;
}

// ---- graph --------------------------------------------------------------------------------------

void ggml_build_forward_expand(ggml_cgraph & graph, ggml_tensor * t) {
    std::unordered_set<const ggml_tensor *> visited(graph.nodes.begin(), graph.nodes.end());
    visited.insert(graph.leafs.begin(), graph.leafs.end());
    // Iterative post-order DFS: deep graphs (many layers) must not overflow the stack.
    struct frame {
        ggml_tensor * t;
        int           next_src;
    };
    std::vector<frame> stack;
    if (!visited.insert(t).second) {
        return;
    }
    stack.push_back({t, 0});
    while (!stack.empty()) {
        frame & f = stack.back();
        if (f.next_src < GGML_MAX_SRC) {
            ggml_tensor * s = f.t->src[f.next_src++];
            if (s && visited.insert(s).second) {
                stack.push_back({s, 0});
            }
            continue;
        }
        ggml_tensor * done = f.t;
        stack.pop_back();
        (done->op == GGML_OP_NONE ? graph.leafs : graph.nodes).push_back(done);
    }
}

int ggml_graph_n_readers(const ggml_cgraph & graph, const ggml_tensor * t) {
    int n = (t->flags & GGML_TENSOR_FLAG_OUTPUT) != 0 ? 1 : 0;
    for (const ggml_tensor * node : graph.nodes) {
        bool reads = false;
        for (const ggml_tensor * s : node->src) {
            if (s == t) {
                ++n;
                reads = true;
            }
        }
        if (node->view_src == t && !reads) {
            ++n;
        }
    }
    return n;
}

} // namespace hexnpu
