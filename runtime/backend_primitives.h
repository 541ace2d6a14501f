// The primitives every backend implements, declared once: runtime/backend.h expands this list into
// Backend's pure virtuals and each backend's header into its overrides, with GTPO_BACKEND_PRIMITIVE(RETURN,
// NAME, (PARAMETERS)) defined as each needs. No include guard: it is read once per expansion. A primitive
// that only some backends have is not here: it is a defaulted virtual of Backend asked for with supports().
// Shapes and contracts are the comments above each line; all pointers are device pointers of the backend.
// clang-format would read the parameter lists as expressions (int32_t * dst):
// clang-format off

// ---- memory --------------------------------------------------------------------------------
// Cached: steady loops do not reach the system allocator.
GTPO_BACKEND_PRIMITIVE(void*, allocate, (size_t bytes))
GTPO_BACKEND_PRIMITIVE(void, deallocate, (void* ptr, size_t bytes))
GTPO_BACKEND_PRIMITIVE(void, copy_from_host, (void* dst, const void* host_src, size_t bytes))
GTPO_BACKEND_PRIMITIVE(void, copy_to_host, (void* host_dst, const void* src, size_t bytes))
GTPO_BACKEND_PRIMITIVE(void, copy, (void* dst, const void* src, size_t bytes))
GTPO_BACKEND_PRIMITIVE(void, fill, (float* dst, float value, int64_t n))
GTPO_BACKEND_PRIMITIVE(void, fill_i32, (int32_t* dst, int32_t value, int64_t n))

// ---- dense algebra -------------------------------------------------------------------------
GTPO_BACKEND_PRIMITIVE(void, gemm, (const GemmArgs& args))

// ---- elementwise ---------------------------------------------------------------------------
GTPO_BACKEND_PRIMITIVE(void, unary, (UnaryOp op, const float* x, float* y, int64_t n, float scalar))
// gx = gy * dy/dx. x is the input, y the forward output (either may be used).
GTPO_BACKEND_PRIMITIVE(void, unary_backward,
                       (UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                        float scalar))
GTPO_BACKEND_PRIMITIVE(void, binary,
                       (BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan))

// ---- reductions and layout -----------------------------------------------------------------
// out[o, i] = scale * sum_l x[o, l, i], in one order on every backend: chunks of kReduceChunkRows
// consecutive l, each added in index order from 0.0f, the chunk sums added in chunk order from 0.0f, the
// total times scale (when scale != 1). Every backend gives the same bits.
GTPO_BACKEND_PRIMITIVE(void, reduce_sum,
                       (const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale))
// out[o, l, i] = scale * x[o, i]
GTPO_BACKEND_PRIMITIVE(void, expand_axis,
                       (const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale))
// Copies a [rows, cols] block of elem_size-byte elements between strided row-major buffers.
GTPO_BACKEND_PRIMITIVE(void, copy_2d,
                       (void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride,
                        int64_t rows, int64_t cols, size_t elem_size))
// out = x permuted: out.shape[i] = shape[perm[i]]; rank <= 8.
GTPO_BACKEND_PRIMITIVE(void, permute,
                       (const float* x, float* out, const std::vector<int64_t>& shape,
                        const std::vector<int64_t>& perm))
// out[i] = the sum of squares of the ns[i] elements at xs[i], accumulated in double in a fixed order, for
// every i in one call: a GPU waits once for all of them, not once per buffer (gradient clipping asks it of
// every parameter). out is host memory.
GTPO_BACKEND_PRIMITIVE(void, sum_squares_each,
                       (const std::vector<const float*>& xs, const std::vector<int64_t>& ns, double* out))

// ---- row-wise normalisation ----------------------------------------------------------------
// log_softmax=false: y = softmax(x) over the last dim; true: y = log_softmax(x).
GTPO_BACKEND_PRIMITIVE(void, softmax_forward,
                       (const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax))
GTPO_BACKEND_PRIMITIVE(void, softmax_backward,
                       (const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                        bool log_softmax))
// bias may be null. mean and rstd are [rows] saved for backward. gweight/gbias are overwritten; gbias may be
// null.
GTPO_BACKEND_PRIMITIVE(void, layer_norm_forward,
                       (const float* x, const float* weight, const float* bias, float* y, float* mean,
                        float* rstd, int64_t rows, int64_t cols, float eps))
GTPO_BACKEND_PRIMITIVE(void, layer_norm_backward,
                       (const float* x, const float* weight, const float* mean, const float* rstd,
                        const float* gy, float* gx, float* gweight, float* gbias, int64_t rows, int64_t cols))
GTPO_BACKEND_PRIMITIVE(void, rms_norm_forward,
                       (const float* x, const float* weight, float* y, float* rstd, int64_t rows,
                        int64_t cols, float eps))
GTPO_BACKEND_PRIMITIVE(void, rms_norm_backward,
                       (const float* x, const float* weight, const float* rstd, const float* gy, float* gx,
                        float* gweight, int64_t rows, int64_t cols))

// ---- embeddings and positions ----------------------------------------------------------------
// out[r] = table[ids[r]]; ids are validated by the op before the call.
GTPO_BACKEND_PRIMITIVE(void, embedding_forward,
                       (const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim))
// gtable (vocab x dim) is overwritten: zeros, then rows accumulated in id order.
GTPO_BACKEND_PRIMITIVE(void, embedding_backward,
                       (const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                        int64_t vocab))
// Rotary embedding, half-split convention (pairs (d, d + head_dim/2)), x laid out [rows, heads, head_dim],
// rotation angle positions[r] * rope_scaled_inv_freq(theta^(-2d/head_dim), freq)
// (runtime/rope_frequencies.h). inverse=true rotates by the negative angle (backward).
GTPO_BACKEND_PRIMITIVE(void, rope,
                       (const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                        int64_t head_dim, const RopeFrequencies& freq, bool inverse))

// ---- attention -----------------------------------------------------------------------------
// out has q's layout; lse [batch, q_heads, q_len] is saved for backward (-inf for a query with no key).
GTPO_BACKEND_PRIMITIVE(void, attention_forward,
                       (const AttentionArgs& args, const float* q, const float* k, const float* v, float* out,
                        float* lse))
// gq, gk, gv are overwritten (gk, gv with k's layout, dense: kv_batch_stride ignored for them).
GTPO_BACKEND_PRIMITIVE(void, attention_backward,
                       (const AttentionArgs& args, const float* q, const float* k, const float* v,
                        const float* out, const float* lse, const float* gout, float* gq, float* gk,
                        float* gv))

// ---- losses over a vocabulary --------------------------------------------------------------
// loss[r] = lse(x_r) - x_r[target_r]; rows whose target == ignore_index get loss 0.
GTPO_BACKEND_PRIMITIVE(void, cross_entropy_forward,
                       (const float* logits, const int32_t* targets, float* loss, float* lse, int64_t rows,
                        int64_t vocab, int32_t ignore_index))
// glogits[r] = grow[r] * (softmax(x_r) - onehot(target_r)); zero for ignored rows.
GTPO_BACKEND_PRIMITIVE(void, cross_entropy_backward,
                       (const float* logits, const int32_t* targets, const float* lse, const float* grow,
                        float* glogits, int64_t rows, int64_t vocab, int32_t ignore_index))
// With z = logits * inv_temperature: logprob[r] = z[target] - lse(z), entropy[r] = -sum p log p.
GTPO_BACKEND_PRIMITIVE(void, logprob_entropy_forward,
                       (const float* logits, const int32_t* targets, float* logprob, float* entropy,
                        float* lse, int64_t rows, int64_t vocab, float inv_temperature))
// glogits = inv_T * (glogprob (onehot - p) - gentropy p (log p + H)); glogprob or gentropy may be null.
GTPO_BACKEND_PRIMITIVE(void, logprob_entropy_backward,
                       (const float* logits, const int32_t* targets, const float* lse, const float* entropy,
                        const float* glogprob, const float* gentropy, float* glogits, int64_t rows,
                        int64_t vocab, float inv_temperature))

// ---- token choice --------------------------------------------------------------------------
// ids[r] = the token row r of logits [rows, vocab] gives with the uniform uniforms[r] in [0, 1) (the
// definition: runtime/token_choice.h). Every backend gives the same ids from the same logits. uniforms
// may be null when args.temperature is 0.
GTPO_BACKEND_PRIMITIVE(void, choose_tokens,
                       (const float* logits, const double* uniforms, int32_t* ids, int64_t rows,
                        int64_t vocab, const TokenChoiceArgs& args))

// ---- optimiser -----------------------------------------------------------------------------
// Decoupled AdamW on n elements, in place: param -= lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay *
// param).
GTPO_BACKEND_PRIMITIVE(void, adamw_step,
                       (float* param, const float* grad, float* m, float* v, int64_t n,
                        const AdamWStep& step))
// clang-format on
