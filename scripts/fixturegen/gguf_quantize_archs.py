"""The architectures whose llama-quant rules differ from llama's and falcon's, for
`fixturegen.gguf_quantize`: small models of them (made with gguf-py, tensors of 2 rows of 256
unless said) with the key/values llama.cpp's loader requires of each, their importance
matrices (written with gguf-py in llama-imatrix's GGUF layout), and the runs of llama-quantize
on them.

  qwen2.gguf, olmo.gguf, deci.gguf
              80 layers (tensors in 3 of them), no grouped-query attention: a "70B" to llama.cpp all the same (llama
              needs grouped-query attention for that); deci's head counts are per-layer arrays
  jais2.gguf  68 layers: jais2's "70B"
  rwkv6.gguf, rwkv7.gguf
              the time-mix tensors llama.cpp never quantizes beside those it does
  mamba.gguf  the SSM tensors: ssm_conv1d never quantized, ssm_a and ssm_d (no "weight" in the
              name) neither
  gemma3n.gguf
              altup, laurel and per_layer_model_proj never quantized; per_layer_token_embd a
              token embedding, and with no output both take the output's rules
  deepseek2.gguf
              multi-head latent attention (attn_kv_b counts as an attention value), 4 experts
              in the second layer after a dense first, a shared expert
  deepseek32.gguf
              deepseek2's tensors and the indexer's (indexer.attn_k counts as an attention key)
  glm5next.gguf
              glm5-next: the names it keeps as they are (hc_, its indexer's, ssm_f/g, attn_k_b...),
              attn_q_a, attn_q_b and nextn.eh_proj kept at Q8_0 or better, a prediction layer
  bailingmoe3.gguf
              a 3-D attention projection beside 3-D experts: MXFP4_MOE makes only the experts MXFP4
  names.gguf  gpt2 keys, the names llama.cpp keeps as they are whatever the architecture, and
              a name of 5 bytes (taken for one ending in "weight")

Only the layers the rules look at have tensors: llama-quantize reads the key/values, never
checks which tensors a model should have.
"""

from gguf import GGUFValueType as V, GGUFWriter

# The mixtures and plain presets of every model, without an importance matrix; and those that
# need one, with one.
PRESETS = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ3_M", "IQ4_NL",
           "IQ4_XS", "MXFP4_MOE", "Q4_0", "COPY"]
IMATRIX_PRESETS = ["IQ2_XXS", "IQ2_M", "IQ1_S", "IQ3_XXS", "IQ3_XS", "Q2_K_S", "Q4_0", "Q5_0"]
# The models whose rules differ from another's above by a few names.
FEW_PRESETS = ["Q2_K", "Q3_K_M", "Q4_K_M", "MXFP4_MOE", "COPY"]
FEW_IMATRIX_PRESETS = ["IQ2_XXS", "IQ3_XXS", "IQ3_XS"]
# The models whose rules differ only by llama.cpp's "70B" (attention values).
SEVENTY_PRESETS = ["Q2_K", "Q3_K_S", "Q3_K_M", "Q4_K_S", "Q4_K_M", "IQ4_XS", "COPY"]


def keys(w: GGUFWriter, name: str, layers: int, embd: int, extra) -> None:
    arch = w.arch
    w.add_key_value("general.type", "model", V.STRING)
    w.add_key_value("general.name", name, V.STRING)
    w.add_key_value("general.file_type", 1, V.UINT32)
    w.add_key_value(f"{arch}.block_count", layers, V.UINT32)
    w.add_key_value(f"{arch}.context_length", 4096, V.UINT32)
    w.add_key_value(f"{arch}.embedding_length", embd, V.UINT32)
    for key, value, vtype, *sub in extra:
        w.add_key_value(f"{arch}.{key}", value, vtype, sub_type=sub[0] if sub else None)


def seventy(add, write, path, arch: str, layers: int, eps_key: str, heads) -> None:
    """Attention and FFN tensors in the first, a middle and the last layers of a model of
    `layers`; `heads` the head count (a number, or a list of one per layer)."""
    w = GGUFWriter(path, arch)
    kind = (V.ARRAY, V.UINT32) if isinstance(heads, list) else (V.UINT32,)
    head_keys = [("attention.head_count", heads, *kind), ("attention.head_count_kv", heads, *kind)]
    keys(w, f"thin {arch}", layers, 8192, [("feed_forward_length", 28672, V.UINT32), *head_keys,
                                           (eps_key, 1e-5, V.FLOAT32)])
    add(w, "token_embd.weight", "F16", (2, 256))
    for i in [0, layers // 2, layers - 1]:
        for t in ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_down"]:
            add(w, f"blk.{i}.{t}.weight", "F16", (2, 256))
        add(w, f"blk.{i}.attn_norm.weight", "F32", (256,))
    add(w, "blk.0.attn_q.bias", "F32", (256,))
    add(w, "output_norm.weight", "F32", (256,))
    add(w, "output.weight", "F16", (2, 256))
    write(w)


def rwkv(add, write, path, arch: str) -> None:
    w = GGUFWriter(path, arch)
    if arch == "rwkv6":
        extra = [("time_mix_extra_dim", 32, V.UINT32), ("time_decay_extra_dim", 64, V.UINT32)]
        never = ["time_mix_w1", "time_mix_w2", "time_mix_first", "time_mix_decay_w1", "time_mix_decay_w2",
                 "time_mix_lerp_fused"]
    else:
        extra = [("attention.decay_lora_rank", 64, V.UINT32), ("attention.iclr_lora_rank", 64, V.UINT32),
                 ("attention.value_residual_mix_lora_rank", 32, V.UINT32), ("attention.gate_lora_rank", 128, V.UINT32)]
        never = ["time_mix_w0", "time_mix_w1", "time_mix_w2", "time_mix_a0", "time_mix_a1", "time_mix_a2",
                 "time_mix_v0", "time_mix_v1", "time_mix_v2", "time_mix_g1", "time_mix_g2", "time_mix_lerp_fused"]
    keys(w, f"thin {arch}", 1, 256, [("feed_forward_length", 896, V.UINT32), ("wkv.head_size", 64, V.UINT32),
                                     ("attention.layer_norm_epsilon", 1e-5, V.FLOAT32), *extra])
    add(w, "token_embd.weight", "F16", (4, 256))
    for i in range(1):
        b = f"blk.{i}."
        for t in never + ["time_mix_key", "time_mix_value", "time_mix_receptance", "time_mix_output",
                          "channel_mix_key", "channel_mix_value"]:
            add(w, b + t + ".weight", "F16", (2, 256))
        add(w, b + "time_mix_ln.weight", "F32", (256,))
        add(w, b + "attn_norm.weight", "F32", (256,))
    add(w, "output_norm.weight", "F32", (256,))
    add(w, "output.weight", "F16", (4, 256))
    write(w)


def mamba(add, write, path) -> None:
    w = GGUFWriter(path, "mamba")
    keys(w, "thin mamba", 2, 256, [("feed_forward_length", 0, V.UINT32), ("attention.head_count", 0, V.UINT32),
                                   ("ssm.conv_kernel", 4, V.UINT32), ("ssm.inner_size", 512, V.UINT32),
                                   ("ssm.state_size", 16, V.UINT32), ("ssm.time_step_rank", 16, V.UINT32),
                                   ("attention.layer_norm_rms_epsilon", 1e-5, V.FLOAT32)])
    add(w, "token_embd.weight", "F16", (4, 256))
    for i in range(2):
        b = f"blk.{i}."
        add(w, b + "attn_norm.weight", "F32", (256,))
        for t in ["ssm_in", "ssm_conv1d", "ssm_x", "ssm_dt", "ssm_out"]:
            add(w, b + t + ".weight", "F16", (2, 256))
        add(w, b + "ssm_dt.bias", "F32", (256,))
        add(w, b + "ssm_a", "F32", (2, 256))
        add(w, b + "ssm_d", "F32", (2, 256))
    add(w, "output_norm.weight", "F32", (256,))
    write(w)


def gemma3n(add, write, path) -> None:
    w = GGUFWriter(path, "gemma3n")
    keys(w, "thin gemma3n", 30, 2048, [("feed_forward_length", 8192, V.UINT32),
                                       ("attention.head_count", 8, V.UINT32),
                                       ("attention.head_count_kv", 2, V.UINT32),
                                       ("attention.sliding_window", 512, V.UINT32),
                                       ("attention.layer_norm_rms_epsilon", 1e-6, V.FLOAT32),
                                       ("embedding_length_per_layer_input", 256, V.UINT32)])
    add(w, "token_embd.weight", "F16", (4, 256))
    add(w, "per_layer_token_embd.weight", "F16", (4, 512))
    add(w, "per_layer_model_proj.weight", "F16", (2, 256))
    add(w, "per_layer_proj_norm.weight", "F32", (256,))
    for i in [0, 29]:
        b = f"blk.{i}."
        for t in ["attn_k", "attn_v", "attn_output", "ffn_up", "ffn_down", "altup_correct_coef",
                  "altup_predict_coef", "altup_router", "laurel_l", "laurel_r", "inp_gate", "proj"]:
            add(w, b + t + ".weight", "F16", (2, 256))
        add(w, b + "altup_router_norm.weight", "F32", (256,))
    add(w, "output_norm.weight", "F32", (256,))
    write(w)


def deepseek(add, write, path, arch: str) -> None:
    w = GGUFWriter(path, arch)
    extra = [("feed_forward_length", 10944, V.UINT32), ("attention.head_count", 16, V.UINT32),
             ("attention.head_count_kv", 16, V.UINT32), ("attention.layer_norm_rms_epsilon", 1e-6, V.FLOAT32),
             ("leading_dense_block_count", 1, V.UINT32), ("attention.q_lora_rank", 1536, V.UINT32),
             ("attention.kv_lora_rank", 512, V.UINT32), ("expert_feed_forward_length", 1408, V.UINT32),
             ("expert_shared_count", 2, V.UINT32), ("expert_count", 4, V.UINT32), ("expert_used_count", 2, V.UINT32),
             ("expert_gating_func", 2, V.UINT32)]
    if arch == "deepseek32":
        extra += [("attention.indexer.head_count", 64, V.UINT32), ("attention.indexer.key_length", 128, V.UINT32),
                  ("attention.indexer.top_k", 2048, V.UINT32)]
    keys(w, f"thin {arch}", 2, 2048, extra)
    add(w, "token_embd.weight", "F16", (4, 256))
    for i in range(2):
        b = f"blk.{i}."
        add(w, b + "attn_norm.weight", "F32", (256,))
        for t in ["attn_q_b", "attn_kv_a_mqa", "attn_kv_b", "attn_k_b", "attn_output"]:
            add(w, b + t + ".weight", "F16", (2, 256))
        add(w, b + "attn_kv_a_norm.weight", "F32", (256,))
        if arch == "deepseek32":
            for t in ["indexer.attn_k", "indexer.attn_q_b"]:
                add(w, b + t + ".weight", "F16", (2, 256))
            add(w, b + "indexer.k_norm.weight", "F32", (256,))
        if i == 0:
            for t in ["ffn_gate", "ffn_up", "ffn_down"]:
                add(w, b + t + ".weight", "F16", (2, 256))
        else:
            add(w, b + "ffn_gate_inp.weight", "F32", (4, 256))
            for t in ["ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"]:
                add(w, b + t + ".weight", "F16", (4, 2, 256))
            add(w, b + "ffn_down_shexp.weight", "F16", (2, 256))
    add(w, "output_norm.weight", "F32", (256,))
    add(w, "output.weight", "F16", (4, 256))
    write(w)


def mla_moe(add, write, path, arch: str) -> None:
    """glm5-next (the names it keeps as they are, the ones it keeps at Q8_0 or better, a
    next-token-prediction layer) or bailingmoe3 (3-D attention projections beside the experts,
    which MXFP4_MOE tells apart)."""
    w = GGUFWriter(path, arch)
    extra = [("feed_forward_length", 10944, V.UINT32), ("attention.head_count", 16, V.UINT32),
             ("attention.head_count_kv", 16, V.UINT32), ("attention.layer_norm_rms_epsilon", 1e-6, V.FLOAT32),
             ("attention.key_length_mla", 192, V.UINT32), ("attention.value_length_mla", 128, V.UINT32),
             ("attention.q_lora_rank", 1536, V.UINT32), ("attention.kv_lora_rank", 512, V.UINT32),
             ("ssm.conv_kernel", 4, V.UINT32), ("kda.head_dim", 128, V.UINT32),
             ("leading_dense_block_count", 1, V.UINT32), ("expert_feed_forward_length", 1408, V.UINT32),
             ("expert_shared_count", 1, V.UINT32), ("expert_count", 4, V.UINT32), ("expert_used_count", 2, V.UINT32),
             ("expert_gating_func", 2, V.UINT32)]
    if arch == "glm5-next":
        extra += [("nextn_predict_layers", 1, V.UINT32), ("attention.indexer.head_count", 32, V.UINT32),
                  ("attention.indexer.key_length", 128, V.UINT32), ("attention.indexer.top_k", 2048, V.UINT32),
                  ("attention.indexer.kpool", 4, V.UINT32), ("hyper_connection.count", 4, V.UINT32),
                  ("hyper_connection.sinkhorn_iterations", 20, V.UINT32), ("hyper_connection.epsilon", 1e-6, V.FLOAT32)]
        kept = ["hc_attn_fn", "indexer.attn_q_b", "indexer.attn_k", "indexer.proj", "indexer_compressor_gate",
                "indexer_compressor_ape", "ssm_f_a", "ssm_f_b", "ssm_g_a", "ssm_g_b", "ssm_beta", "attn_kv_a_mqa",
                "attn_k_b", "attn_v_b"]
        attention = ["attn_q_a", "attn_q_b", "attn_kv_b", "attn_output"]
    else:
        extra += [("kda.gate_lower_bound", -5.0, V.FLOAT32)]
        kept, attention = [], ["attn_q_a", "attn_q_b", "attn_kv_a_mqa", "attn_kv_b", "attn_output"]
    keys(w, f"thin {arch}", 2, 2048, extra)
    add(w, "token_embd.weight", "F16", (4, 256))
    for i in range(2):
        b = f"blk.{i}."
        add(w, b + "attn_norm.weight", "F32", (256,))
        for t in attention + kept:
            add(w, b + t + ".weight", "F16", (2, 256))
        if i == 0:
            add(w, b + "ffn_down.weight", "F16", (2, 256))
            continue
        if arch == "glm5-next":
            add(w, b + "nextn.eh_proj.weight", "F16", (2, 256))
        else:
            add(w, b + "attn_k_b.weight", "F16", (4, 2, 256))
        for t in ["ffn_up_exps", "ffn_down_exps"]:
            add(w, b + t + ".weight", "F16", (4, 2, 256))
        add(w, b + "ffn_gate_inp.weight", "F32", (4, 256))
    add(w, "output.weight", "F16", (4, 256))
    write(w)


def names(add, write, path) -> None:
    """gpt2 keys with the names llama.cpp keeps as they are whatever the architecture (positions,
    token types, a relative position bias, small convolutions and indexers, multimodal and audio
    tensors), and a name of 5 bytes, which llama.cpp takes for one ending in "weight"."""
    w = GGUFWriter(path, "gpt2")
    keys(w, "tensor names", 1, 256, [("feed_forward_length", 1024, V.UINT32), ("attention.head_count", 4, V.UINT32),
                                     ("attention.layer_norm_epsilon", 1e-5, V.FLOAT32)])
    for name in ["token_embd", "position_embd", "token_types", "blk.0.attn_qkv", "blk.0.attn_output",
                 "blk.0.attn_rel_b", "blk.0.shortconv.conv", "blk.0.indexer.k_proj", "blk.0.indexer.q_proj",
                 "blk.0.ffn_gate_tid2eid", "blk.0.ffn_up", "blk.0.ffn_down", "v.position_embd", "v.patch_embd",
                 "v.blk.0.attn.rel_pos_h", "sam.pos_embd", "sam.neck.0", "sam.net_2", "mm.patch_merger",
                 "a.rvq.codebook", "mm.a.code_embd", "output"]:
        add(w, name + ".weight", "F16", (2, 256))
    add(w, "blk.0.attn_qkv.bias", "F16", (2, 256))
    add(w, "abcde", "F16", (2, 256))
    write(w)


# The models: input name -> (maker, presets without an importance matrix, with one).
def models(add, write) -> dict:
    rms, eps = "attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"
    return {
        "qwen2.gguf": (lambda p: seventy(add, write, p, "qwen2", 80, rms, 8), SEVENTY_PRESETS, []),
        "olmo.gguf": (lambda p: seventy(add, write, p, "olmo", 80, eps, 8), SEVENTY_PRESETS, []),
        "deci.gguf": (lambda p: seventy(add, write, p, "deci", 80, rms, [8] * 80), SEVENTY_PRESETS, []),
        "jais2.gguf": (lambda p: seventy(add, write, p, "jais2", 68, eps, 8), SEVENTY_PRESETS, []),
        "rwkv6.gguf": (lambda p: rwkv(add, write, p, "rwkv6"), PRESETS, IMATRIX_PRESETS),
        "rwkv7.gguf": (lambda p: rwkv(add, write, p, "rwkv7"), FEW_PRESETS, FEW_IMATRIX_PRESETS),
        "mamba.gguf": (lambda p: mamba(add, write, p), FEW_PRESETS, FEW_IMATRIX_PRESETS),
        "gemma3n.gguf": (lambda p: gemma3n(add, write, p), PRESETS, IMATRIX_PRESETS),
        "deepseek2.gguf": (lambda p: deepseek(add, write, p, "deepseek2"), PRESETS, IMATRIX_PRESETS),
        "deepseek32.gguf": (lambda p: deepseek(add, write, p, "deepseek32"), FEW_PRESETS, FEW_IMATRIX_PRESETS),
        "glm5next.gguf": (lambda p: mla_moe(add, write, p, "glm5-next"), FEW_PRESETS + ["Q4_0", "Q8_0"],
                          FEW_IMATRIX_PRESETS),
        "bailingmoe3.gguf": (lambda p: mla_moe(add, write, p, "bailingmoe3"), FEW_PRESETS, []),
        "names.gguf": (lambda p: names(add, write, p), ["Q4_K_M", "Q4_0", "MXFP4_MOE", "COPY"], []),
    }


# Option combinations as people give them, most with importance matrices, and two refusals.
OPTION_RUNS = [
    ("tiny-Q4_K_M-imatrix-output-embd-q8", "tiny.gguf", {"preset": "Q4_K_M", "imatrix": "imatrix-tiny.gguf",
                                                        "output_tensor_type": "q8_0", "token_embedding_type": "q8_0"}),
    ("tiny-IQ4_XS-imatrix-tensor-types", "tiny.gguf", {"preset": "IQ4_XS", "imatrix": "imatrix-tiny.gguf",
                                                       "tensor_types": [["attn_v", "q6_k"], ["ffn_down", "q5_k"]]}),
    ("tiny-Q4_K_S-imatrix-dat-leave-output", "tiny.gguf", {"preset": "Q4_K_S", "imatrix": "imatrix-tiny.dat",
                                                           "leave_output_tensor": True}),
    ("tiny-IQ3_M-imatrix-pure", "tiny.gguf", {"preset": "IQ3_M", "imatrix": "imatrix-tiny.gguf", "pure": True}),
    ("moe-Q4_K_M-imatrix-exps-q4_k", "moe.gguf", {"preset": "Q4_K_M", "imatrix": "imatrix-moe.gguf",
                                                  "tensor_types": [["ffn_.*_exps", "q4_k"]],
                                                  "output_tensor_type": "q8_0"}),
    ("gemma3n-Q4_K_M-embedding-type", "gemma3n.gguf", {"preset": "Q4_K_M", "token_embedding_type": "q8_0"}),
    ("gemma3n-Q4_K_M-embedding-type-named", "gemma3n.gguf", {"preset": "Q4_K_M", "token_embedding_type": "q8_0",
                                                            "tensor_types": [["per_layer_token_embd", "q4_0"]]}),
    ("gemma3n-IQ2_M-imatrix-output-type", "gemma3n.gguf", {"preset": "IQ2_M", "imatrix": "imatrix-gemma3n.gguf",
                                                          "output_tensor_type": "q8_0"}),
    ("deepseek2-Q4_K_M-imatrix-kv-b", "deepseek2.gguf", {"preset": "Q4_K_M", "imatrix": "imatrix-deepseek2.gguf",
                                                         "tensor_types": [["attn_kv_b", "q8_0"]],
                                                         "leave_output_tensor": True}),
    ("deepseek2-IQ2_XS-imatrix-pure-output", "deepseek2.gguf", {"preset": "IQ2_XS", "imatrix": "imatrix-deepseek2.gguf",
                                                                "pure": True, "output_tensor_type": "q6_k",
                                                                "token_embedding_type": "q4_k"}),
    ("glm5next-Q4_0-pure", "glm5next.gguf", {"preset": "Q4_0", "pure": True}),
    # Refused: a type that needs an importance matrix, none given (the first tensor named).
    ("deepseek32-IQ3_XS", "deepseek32.gguf", {"preset": "IQ3_XS"}),
    ("gemma3n-IQ2_XXS", "gemma3n.gguf", {"preset": "IQ2_XXS"}),
    ("rwkv6-Q4_K_M-imatrix-exclude", "rwkv6.gguf", {"preset": "Q4_K_M", "imatrix": "imatrix-rwkv6.gguf",
                                                    "exclude_weights": ["channel_mix"]}),
]


def plan_runs() -> list:
    """(run name, input, options) of the runs on these models, and of the option combinations."""
    runs = list(OPTION_RUNS)
    for input_name, (_, plain, with_imatrix) in models(None, None).items():
        stem = input_name.removesuffix(".gguf")
        runs += [(f"{stem}-{p}", input_name, {"preset": p}) for p in plain]
        runs += [(f"{stem}-{p}-imatrix", input_name, {"preset": p, "imatrix": f"imatrix-{stem}.gguf"})
                 for p in with_imatrix]
    return runs


def imatrix_inputs() -> list:
    """The models that have an importance matrix."""
    return [name for name, (_, _, with_imatrix) in models(None, None).items() if with_imatrix]
