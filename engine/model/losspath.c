/* losspath.c: the loss paths of the training stacks (see losspath.h).
 *
 * Each path is the ordered list of the allocations and frees of N x V tensors that one
 * training step performs, from the lm_head's output to the gradient the lm_head's backward
 * receives, read from the libraries' code and PyTorch's autograd rules (a node keeps what it
 * saves until its backward has run; torch/csrc/autograd/engine.cpp releases saved variables
 * after each node). The orders are those of the research note summarised in README
 * "Memory model"; transformers versions are located by the main-branch commits that bumped
 * __version__ (4.46.0.dev0 f0eabf6c7, 4.47.0.dev0 964306946, 4.48.0.dev0 66ab300aa).
 *
 * Sizes are per token and vocabulary entry and depend on the precision class: the compute
 * dtype e_a (2 under 16-bit training, 4 under fp32); fp32; an fp32 upcast of e_a-sized
 * logits (absent under fp32, where .float() returns the same tensor); tensors that exist
 * only under autocast (mixed precision through accelerate's native_amp, which HF Trainer
 * enables for bf16=True/fp16=True and which also converts 16-bit outputs to fp32). */
#include "losspath.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "allocsim.h"

enum lp_size {
    SZ_COMPUTE,     /* e_a */
    SZ_FP32,        /* 4 */
    SZ_UPCAST,      /* .float() of e_a-sized logits: 4, or 0 when they are fp32 already */
    SZ_AMP_FP32,    /* 4 under autocast, else 0 */
    SZ_AMP_WIDE,    /* 4 under autocast, else e_a (an op autocast runs in fp32) */
    SZ_AMP_COMPUTE, /* e_a under autocast, else 0 (the backward of autocast's cast) */
    SZ_FP32_CHUNK8, /* one fp32 chunk of eight: 0.5 */
    SZ_HALF_ONLY,   /* e_a-sized logits that exist beside their fp32 copy: e_a, or 0 under fp32
                       (where .to(torch.float32) returns the tensor itself) */
    SZ_PLAIN_COMPUTE, /* e_a without autocast, else 0 (what accelerate leaves unconverted) */
    SZ_WIDE_SAMPLE, /* SZ_AMP_WIDE of one sample of the micro-batch: 1 / b of it */
    SZ_WIDE_BATCHED,/* SZ_AMP_WIDE when the micro-batch has more than one sample, else 0 */
};

struct lp_event {
    bool alloc;        /* allocate the slot, else free it */
    uint8_t slot;      /* which tensor (0 .. LP_SLOTS - 1) */
    enum lp_size size; /* its bytes per token and vocabulary entry (alloc only) */
};

#define LP_SLOTS LOSSPATH_SLOTS
#define A(slot, size) {true, (slot), (size)}
#define F(slot) {false, (slot), SZ_COMPUTE}

/* transformers >= 4.49 (PR #35646, 8ebe9d7166: labels padded, logits only viewed;
 * loss/loss_utils.py ForCausalLMLoss:44-62 at 9c66b221): lm_head output H (0), the loss's
 * upcast L (1), log_softmax's saved output P (2); L dies with the loss; accelerate's
 * convert_to_fp32 (accelerator.py:1818-1829, utils/operations.py:889-910 at 16cb6eb8)
 * copies H to fp32 F (3) until Trainer.compute_loss returns `loss` only, so no logits are
 * alive in backward (trainer.py at 9c66b221 :3807-3920). Backward: nll_loss's gradient
 * (4), log_softmax's (5) beside P: the peak, 12; then the cast back to e_a (6). */
static const struct lp_event hf_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), F(1), A(3, SZ_AMP_FP32), F(0), F(3),
    A(4, SZ_FP32), A(5, SZ_FP32), F(2), F(4), A(6, SZ_COMPUTE), F(5), F(6),
};

/* transformers 4.46 .. 4.48 (ForCausalLMLoss at f0eabf6c7 .. 66ab300aa): the loss upcasts
 * H (1) and still shifts with a contiguous copy C (2) before log_softmax (3): 14 at the end
 * of the forward. Backward as above, plus SliceBackward0's zero-filled full-shape gradient
 * (7) that the shift's backward writes into. */
static const struct lp_event hf446_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), A(3, SZ_FP32), F(1), F(2),
    A(4, SZ_AMP_FP32), F(0), F(4),
    A(5, SZ_FP32), A(6, SZ_FP32), F(3), F(5), A(7, SZ_FP32), F(6), A(8, SZ_COMPUTE), F(7), F(8),
};

/* transformers 4.31 .. 4.45 (LlamaForCausalLM.forward: `logits = logits.float()`, then
 * `shift_logits = logits[..., :-1, :].contiguous()`; e9ad51306 .. 26a9443da): the fp32
 * logits L (1) replace the 16-bit lm_head output H (0) and are returned in `outputs` until
 * compute_loss returns; under fp32 `.float()` returns H itself, so H is sized as its 16-bit
 * part only (SZ_HALF_ONLY) and L as the fp32 tensor either way. Then the shifted copy C (2)
 * and log_softmax's output P (3); accelerate has nothing to convert. Backward as 4.46. */
static const struct lp_event hf431_path[] = {
    A(0, SZ_HALF_ONLY), A(1, SZ_FP32), F(0), A(2, SZ_FP32), A(3, SZ_FP32), F(2), F(1),
    A(4, SZ_FP32), A(5, SZ_FP32), F(3), F(4), A(6, SZ_FP32), F(5), A(7, SZ_COMPUTE), F(6), F(7),
};

/* A loop that keeps the model's `outputs` past the loss's backward (features outputs-kept,
 * outputs-until-step) on the older transformers: the paths above with the free of
 * `outputs.logits` deferred to the end (memmodel.c kept_outputs keeps it on through the
 * blocks' backward and the optimizer step): 4.46's 16-bit H (0), 4.31's fp32 L (1). */
static const struct lp_event hf446_kept_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), A(3, SZ_FP32), F(1), F(2),
    A(4, SZ_AMP_FP32), F(4),
    A(5, SZ_FP32), A(6, SZ_FP32), F(3), F(5), A(7, SZ_FP32), F(6), A(8, SZ_COMPUTE), F(7), F(8),
    F(0),
};
static const struct lp_event hf431_kept_path[] = {
    A(0, SZ_HALF_ONLY), A(1, SZ_FP32), F(0), A(2, SZ_FP32), A(3, SZ_FP32), F(2),
    A(4, SZ_FP32), A(5, SZ_FP32), F(3), F(4), A(6, SZ_FP32), F(5), A(7, SZ_COMPUTE), F(6), F(7),
    F(1),
};

/* Qwen v1 remote code (modeling_qwen.py QWenLMHeadModel.forward :1088-1106, the copy in
 * modelscope/ms-swift cb89d919): no upcast; a 16-bit shifted copy C (1), log_softmax in the
 * compute dtype P (2); under autocast nll_loss runs in fp32 on a copy X it saves (3);
 * accelerate's fp32 copy F of the 16-bit logits (4): 12 at the end of the forward. Backward:
 * nll_loss's gradient (5, fp32 under autocast), the cast back (6), log_softmax's gradient
 * (7), SliceBackward0's zeros (8). */
static const struct lp_event qwen1_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_COMPUTE), A(2, SZ_COMPUTE), A(3, SZ_AMP_FP32), F(1),
    A(4, SZ_AMP_FP32), F(0), F(4),
    A(5, SZ_AMP_WIDE), F(3), A(6, SZ_AMP_COMPUTE), F(5), A(7, SZ_COMPUTE), F(2), F(6),
    A(8, SZ_COMPUTE), F(7), F(8),
};

/* A loop that keeps `logits = model(x)[..., :-1, :].contiguous()` in fp32 (1) through
 * loss.backward(): torchtune's recipes at 0217d44c; later ones `del logits` first ("free
 * logits otherwise it peaks backward memory"). */
static const struct lp_event kept_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32), F(0), A(2, SZ_FP32),
    A(3, SZ_FP32), A(4, SZ_FP32), F(2), F(3), A(5, SZ_COMPUTE), F(4), F(5), F(1),
};

/* The hf path in a loop that keeps the model's `outputs` as a plain local
 * (`outputs = model(**batch, ...); loss = outputs.loss; loss.backward()`, PEFT
 * method_comparison/MetaMathQA/run.py L213-215 @5fe7f8f8, the same in 8be1a16f and
 * 51c2ff66): the 16-bit logits H (0) outlive the loss's backward, the optimizer step and
 * the next forward; the rest as hf: 14 at log_softmax's backward. */
static const struct lp_event outputs_kept_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), F(1), A(3, SZ_AMP_FP32), F(3),
    A(4, SZ_FP32), A(5, SZ_FP32), F(2), F(4), A(6, SZ_COMPUTE), F(5), F(6), F(0),
};

/* TRL's SFTTrainer.compute_loss calls Trainer.compute_loss(return_outputs=True), so the
 * model's `outputs` stay alive beside the loss's saved log_softmax output P (2) while it
 * computes its metrics, under torch.no_grad(), and returns `loss` only (the hf path's
 * backward). outputs.logits is accelerate's fp32 copy F (3) under autocast, the lm_head's
 * output itself otherwise: H is split into the part accelerate's conversion frees (0,
 * autocast only) and the part `outputs` holds until compute_loss returns (7, without
 * autocast). Every metric tensor is as wide as outputs.logits (SZ_AMP_WIDE).
 * - TRL 0.15 .. 0.21 (84d73fd00 "add token accuracy metric", trl/trainer/sft_trainer.py
 *   compute_loss at v0.16.0 :512-535): `shift_logits = outputs.logits[..., :-1, :]
 *   .contiguous()`, a copy C (8) that argmax reads; the same copy at 0.23 .. 1.5 (v1.0.0
 *   :1295-1296, v1.3.0 where the entropy reads it too). From 0.23 the entropy
 *   (trl/trainer/utils.py entropy_from_logits, deae7e00b) works on 128 rows of the flattened
 *   logits at a time: 128 x V x 12 bytes, no N x V tensor (not modelled).
 * - TRL 0.22 (da167d88b "Add entropy logging in SFT"; utils.py entropy_from_logits(logits,
 *   chunk_size=1) at v0.22.0 :1476-1500): before the accuracy's copy, the entropy splits
 *   outputs.logits along the batch, one sample at a time: log_softmax L (4), exp E (5), the
 *   product (6), E freed, its negation (9), each 1 / b of the micro-batch's logits.
 * - TRL >= 1.6 (a6b127190, #5930, "Remove unnecessary explicit .contiguous()"; sft_trainer.py
 *   compute_loss at v1.9.0 :1763-1785): entropy_from_logits(outputs.logits[..., :-1, :]) whose
 *   `logits.reshape(-1, V)` is a view for one sample and a copy (8) of the slice for more. */
#define TRL_FORWARD A(0, SZ_AMP_COMPUTE), A(7, SZ_PLAIN_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), \
                    F(1), A(3, SZ_AMP_FP32), F(0)
#define TRL_RETURN F(7), F(3), A(4, SZ_FP32), A(5, SZ_FP32), F(2), F(4), A(6, SZ_COMPUTE), F(5), F(6)
static const struct lp_event trl_path[] = {
    TRL_FORWARD, A(8, SZ_WIDE_BATCHED), F(8), TRL_RETURN,
};
static const struct lp_event trl022_path[] = {
    TRL_FORWARD, A(4, SZ_WIDE_SAMPLE), A(5, SZ_WIDE_SAMPLE), A(6, SZ_WIDE_SAMPLE), F(5),
    A(9, SZ_WIDE_SAMPLE), F(6), F(9), F(4), A(8, SZ_AMP_WIDE), F(8), TRL_RETURN,
};
static const struct lp_event trl015_path[] = {
    TRL_FORWARD, A(8, SZ_AMP_WIDE), F(8), TRL_RETURN,
};

/* torchtitan's loss under --training.compile from bbb1b616e (2025-04-02; components/loss.py
 * build_cross_entropy_loss: `loss_fn = torch.compile(loss_fn)` around
 * cross_entropy(pred.flatten(0, 1).float(), labels); at 9dec370 train.py still has that
 * line commented out). Inductor fuses the upcast into the log-softmax reductions, so no
 * fp32 N x V tensor is written; AOT autograd's min-cut partitioner saves the cheapest set
 * for backward, the 16-bit input H (0) rather than an fp32 log-softmax, and the fused
 * backward writes the 16-bit gradient G (1) beside it: 2 e_a. */
static const struct lp_event compiled_ce_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_COMPUTE), F(0), F(1),
};

/* torchtitan with TP and loss parallelism (on by default: the output Linear is
 * ColwiseParallel(output_layouts=Shard(-1), use_local_output=False) and train.py runs the
 * step inside loss_parallel(); torchtitan 9dec370 parallelisms/parallelize_llama.py
 * apply_tp, train.py loss_fn `cross_entropy(pred.flatten(0, 1).float(), labels)` then
 * `del pred` before loss.backward()). DTensor routes the loss's aten ops to the handlers of
 * torch/distributed/tensor/parallel/loss.py (pytorch/pytorch 02eef6b8, the fused backward
 * unchanged since loss_parallel landed in torch 2.3), which run on the rank's vocab shard:
 * forward _log_softmax: the upcast X (1) stays referenced by the caller until
 * cross_entropy returns; `shifted = x - x_max` S (2), `torch.exp(shifted)` E (3, freed
 * after the sum), `result = shifted - logsumexp` R (4), which log_softmax and nll_loss save;
 * 14 while R is written. Backward: _nll_loss_and_log_softmax_backward (the log-softmax
 * handler only returns grad.to(fp32), no copy): `grad_input = torch.zeros_like(x)` Z (5),
 * then `(grad_input + torch.exp(x)) * grad_output`: exp(x) (6), the sum (7), the product G
 * (8) beside R and Z: 16, against plain log_softmax's 12; then ToCopyBackward's cast to
 * e_a (9). */
static const struct lp_event loss_parallel_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_UPCAST), A(2, SZ_FP32), A(3, SZ_FP32), F(3), A(4, SZ_FP32), F(2),
    F(1), F(0),
    A(5, SZ_FP32), A(6, SZ_FP32), A(7, SZ_FP32), F(6), A(8, SZ_FP32), F(7), F(5), F(4),
    A(9, SZ_COMPUTE), F(8), F(9),
};

/* torchtune's CEWithChunkedOutputLoss (modules/loss/ce_chunked_output_loss.py): the model
 * returns 16-bit logits in chunks (0) and the loss upcasts each chunk (1); both stay for
 * backward. Under torch.compile the upcast is fused into the chunk's reduction: one fp32
 * chunk of the 8 exists at a time. */
static const struct lp_event chunked_upcast_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32), F(1), F(0),
};
static const struct lp_event chunked_compiled_path[] = {
    A(0, SZ_COMPUTE), A(1, SZ_FP32_CHUNK8), F(1), F(0),
};

/* litgpt runs under Lightning Fabric, whose _FabricModule.forward ends with
 * `output = precision.convert_output(output)`, and every precision plugin (HalfPrecision for
 * bf16-true, MixedPrecision, FSDPPrecision, BitsandbytesPrecision) converts the output to
 * torch.get_default_dtype(), fp32 outside its forward_context: apply_to_collection(...,
 * _convert_fp_tensor) makes an fp32 copy of every logits tensor while the 16-bit list is still
 * referenced, which is dropped when convert_output returns (lightning src/lightning/fabric/
 * wrappers.py _FabricModule.forward and plugins/precision/half.py convert_output at 438f29f07a,
 * the 2.3.0.dev20240328 that litgpt 5895df10 pins, and at 71aed751f7 that lit-gpt 8641822
 * pins). fit() binds them, `logits = model(input_ids, ...)`, and only that rebinding in the
 * next step, after model() has returned, drops the previous step's fp32 logits (0) (litgpt
 * finetune/lora.py and full.py fit at 5895df10; lit-gpt 8641822 finetune/lora.py train): the
 * previous step's, taken of the same length.
 * LoRA recipes compute the lm_head in 128-token chunks (1, 16-bit), the fp32 copies (2), then
 * chunked_cross_entropy's fp32 log_softmax of each chunk (3): 10 while convert_output
 * returns. Backward: the loss's nodes, created last, run first (the engine's ready queue
 * orders by sequence number), so each chunk's log_softmax gradient (4) waits in its
 * ToCopyBackward node while the saved outputs are released chunk by chunk; ToCopyBackward
 * casts them back to e_a (5) for the lm_head. The fp32 logits (2) stay bound into the next
 * step (memmodel.c kept_logits). */
static const struct lp_event litgpt_lora_path[] = {
    A(0, SZ_FP32), A(1, SZ_HALF_ONLY), A(2, SZ_FP32), F(1), F(0), A(3, SZ_FP32), F(3),
    A(4, SZ_FP32), F(4), A(5, SZ_HALF_ONLY), F(5), F(2),
};
/* finetune/full.py computes the full logits (1) and their fp32 copy (2), then
 * chunked_cross_entropy(logits[..., :-1, :]) reshapes the non-contiguous slice into a copy
 * (3) whose 128-row chunks get their log_softmax (4): 12 until it returns. Backward: the
 * chunks' gradients (5), SplitBackward's cat of them (6), SliceBackward's zero-filled full
 * shape (7), ToCopyBackward's cast (8). */
static const struct lp_event litgpt_full_path[] = {
    A(0, SZ_FP32), A(1, SZ_HALF_ONLY), A(2, SZ_FP32), F(1), F(0), A(3, SZ_FP32), A(4, SZ_FP32),
    F(3), F(4), A(5, SZ_FP32), A(6, SZ_FP32), F(5), A(7, SZ_FP32), F(6), A(8, SZ_HALF_ONLY),
    F(7), F(8), F(2),
};

/* The same in the run's first step (FEAT_LONGEST_FIRST): no previous step's logits. */
static const struct lp_event litgpt_lora_first_path[] = {
    A(1, SZ_HALF_ONLY), A(2, SZ_FP32), F(1), A(3, SZ_FP32), F(3),
    A(4, SZ_FP32), F(4), A(5, SZ_HALF_ONLY), F(5), F(2),
};
static const struct lp_event litgpt_full_first_path[] = {
    A(1, SZ_HALF_ONLY), A(2, SZ_FP32), F(1), A(3, SZ_FP32), A(4, SZ_FP32),
    F(3), F(4), A(5, SZ_FP32), A(6, SZ_FP32), F(5), A(7, SZ_FP32), F(6), A(8, SZ_HALF_ONLY),
    F(7), F(8), F(2),
};

/* forward: how many of the first events the model's forward runs. Every path starts with
 * the lm_head's output (1); where the model computes the loss from its labels, its
 * forward runs the loss too: under HF Trainer inside accelerate's autocast wrapper, whose
 * convert_to_fp32 copy (SZ_AMP_FP32) comes after the autocast region has ended (accelerate
 * accelerator.py prepare_model: model.forward = convert_outputs_to_fp32(autocast(forward))
 * at 16cb6eb8). */
#define PATH_FWD(name, ev, fwd, src) {name, ev, sizeof ev / sizeof ev[0], fwd, src}
#define PATH(name, ev, src) PATH_FWD(name, ev, 1, src)
static const struct {
    const char *name;
    const struct lp_event *ev;
    size_t n;
    size_t forward;     /* the first events, the model's forward runs (PATH_FWD) */
    const char *source; /* the code each path follows, as the comments above cite it */
} paths[LOSS_COUNT] = {
    [LOSS_HF] = PATH_FWD("hf", hf_path, 4, "transformers loss/loss_utils.py ForCausalLMLoss @9c66b221 (PR #35646); "
                     "accelerate utils/operations.py convert_to_fp32 @16cb6eb8"),
    [LOSS_HF_446] = PATH_FWD("hf-4.46", hf446_path, 6, "transformers ForCausalLMLoss @f0eabf6c7 .. 66ab300aa "
                         "(shifted contiguous copy); accelerate convert_to_fp32"),
    [LOSS_HF_431] = PATH_FWD("hf-4.31", hf431_path, 6, "transformers LlamaForCausalLM.forward logits.float() "
                         "@e9ad51306 .. 26a9443da"),
    [LOSS_QWEN1] = PATH_FWD("qwen-v1", qwen1_path, 5, "Qwen modeling_qwen.py QWenLMHeadModel.forward :1088-1106 "
                        "(ms-swift copy @cb89d919); accelerate convert_to_fp32"),
    [LOSS_KEPT] = PATH("logits-kept", kept_path, "torchtune recipes @0217d44c: fp32 logits kept through "
                       "loss.backward()"),
    [LOSS_CHUNKED_UPCAST] = PATH("chunked-upcast", chunked_upcast_path,
                                 "torchtune modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss"),
    [LOSS_CHUNKED_COMPILED] = PATH("chunked-compiled", chunked_compiled_path,
                                   "torchtune CEWithChunkedOutputLoss under torch.compile (one fp32 chunk)"),
    [LOSS_LITGPT_LORA] = PATH("litgpt-lora", litgpt_lora_path,
                              "litgpt chunked lm_head + chunked_cross_entropy on Fabric's fp32 "
                              "convert_output copies, the previous step's kept (LoRA recipes)"),
    [LOSS_LITGPT_FULL] = PATH("litgpt-full", litgpt_full_path,
                              "litgpt finetune/full.py full logits, Fabric's fp32 copy, the "
                              "shifted reshape copy, the previous step's kept"),
    [LOSS_LITGPT_LORA_FIRST] = PATH("litgpt-lora-first", litgpt_lora_first_path,
                                    "litgpt-lora in the run's first (longest) step"),
    [LOSS_LITGPT_FULL_FIRST] = PATH("litgpt-full-first", litgpt_full_first_path,
                                    "litgpt-full in the run's first (longest) step"),
    [LOSS_OUTPUTS_KEPT] = PATH_FWD("outputs-kept", outputs_kept_path, 4, "PEFT method_comparison/MetaMathQA/run.py "
                               "L213-215 @5fe7f8f8: `outputs` kept; the hf path otherwise"),
    [LOSS_HF446_KEPT] = PATH_FWD("hf-4.46-outputs-kept", hf446_kept_path, 6, "the hf-4.46 path with "
                                 "`outputs.logits` (16-bit) kept past the loss's backward"),
    [LOSS_HF431_KEPT] = PATH_FWD("hf-4.31-outputs-kept", hf431_kept_path, 6, "the hf-4.31 path with "
                                 "`outputs.logits` (fp32) kept past the loss's backward (Answer.AI "
                                 "fsdp_qlora train.py L874 @50efa1e)"),
    [LOSS_TRL] = PATH_FWD("trl", trl_path, 5, "TRL trl/trainer/sft_trainer.py SFTTrainer.compute_loss @v1.9.0 "
                      ":1763-1785 (entropy_from_logits' reshape copy); the hf path otherwise"),
    [LOSS_TRL_022] = PATH_FWD("trl-0.22", trl022_path, 5, "TRL sft_trainer.py compute_loss @v0.22.0 :1045-1105, "
                          "utils.py entropy_from_logits(chunk_size=1) :1476-1500; the hf path otherwise"),
    [LOSS_TRL_015] = PATH_FWD("trl-0.15", trl015_path, 5, "TRL sft_trainer.py compute_loss @v0.16.0 :512-535 "
                          "(the accuracy's contiguous copy); the hf path otherwise"),
    [LOSS_COMPILED_CE] = PATH("compiled-ce", compiled_ce_path, "torchtitan components/loss.py "
                              "build_cross_entropy_loss under torch.compile @bbb1b616e"),
    [LOSS_LIGER] = {"liger-flce", NULL, 0, 0, "Liger-Kernel ops/fused_linear_cross_entropy.py "
                    "fused_linear_cross_entropy_forward @00eba634; transformers/model/loss_utils.py "
                    "LigerForCausalLMLoss @1226bba2"},
    [LOSS_LOSS_PARALLEL] = PATH("loss-parallel", loss_parallel_path, "torchtitan train.py loss_fn and "
                                "apply_tp loss_parallel @9dec370; torch distributed/tensor/parallel/"
                                "loss.py _log_softmax, _nll_loss_and_log_softmax_backward @02eef6b8"),
};

const char *losspath_source(enum loss_path lp)
{
    return (unsigned)lp < LOSS_COUNT ? paths[lp].source : "?";
}

const char *loss_path_name(enum loss_path lp)
{
    return (unsigned)lp < LOSS_COUNT ? paths[lp].name : "?";
}

/* A stack's own path; every stack it does not list runs hf's (the table's zeros). */
static enum loss_path stack_path(enum stack s)
{
    _Static_assert(LOSS_HF == 0, "unlisted stacks run the hf path");
    static const enum loss_path of_stack[STACK_COUNT] = {
        [STACK_HF_446] = LOSS_HF_446, [STACK_HF_431] = LOSS_HF_431, [STACK_TRL] = LOSS_TRL,
        [STACK_TRL_022] = LOSS_TRL_022, [STACK_TRL_015] = LOSS_TRL_015,
    };
    return (unsigned)s < STACK_COUNT ? of_stack[s] : LOSS_HF;
}

/* The path a loop that keeps `outputs` runs where the stack's own is `own` (losspath.h
 * losspath_outputs_kept); LOSS_COUNT where it is not modelled. */
static enum loss_path kept_of(enum loss_path own)
{
    return own == LOSS_HF ? LOSS_OUTPUTS_KEPT : own == LOSS_HF_446 ? LOSS_HF446_KEPT
         : own == LOSS_HF_431 ? LOSS_HF431_KEPT : LOSS_COUNT;
}

/* Whether lp is a transformers model's own loss (hf, hf-4.46, hf-4.31) or the form a loop
 * that keeps `outputs` makes of it (kept_of): the paths whose every step starts with the
 * lm_head's output and ends with the free of the logits' 16-bit gradient, then, where kept,
 * the free of `outputs.logits`. */
static bool transformers_path(enum loss_path lp, bool *keeps)
{
    *keeps = lp == kept_of(LOSS_HF) || lp == kept_of(LOSS_HF_446) || lp == kept_of(LOSS_HF_431);
    return *keeps || lp == LOSS_HF || lp == LOSS_HF_446 || lp == LOSS_HF_431;
}

bool losspath_transformers(enum loss_path lp)
{
    bool keeps;
    return transformers_path(lp, &keeps);
}

bool losspath_outputs_kept(enum stack s)
{
    return stack_hf_trainer(s) && kept_of(stack_path(s)) != LOSS_COUNT;
}

enum loss_path losspath_select(const struct train_config *c, const char *model_type)
{
    if (c->features & FEAT_CHUNKED_CE) {
        if (c->stack == STACK_LITGPT && (c->features & FEAT_LONGEST_FIRST))
            return c->finetune == FT_FULL ? LOSS_LITGPT_FULL_FIRST : LOSS_LITGPT_LORA_FIRST;
        if (c->stack == STACK_LITGPT)
            return c->finetune == FT_FULL ? LOSS_LITGPT_FULL : LOSS_LITGPT_LORA;
        return (c->features & FEAT_COMPILE) ? LOSS_CHUNKED_COMPILED : LOSS_CHUNKED_UPCAST;
    }
    if (c->features & FEAT_COMPILED_LOSS)
        return LOSS_COMPILED_CE;
    if (c->features & FEAT_LOGITS_KEPT)
        return LOSS_KEPT;
    /* torchtitan's TP keeps the loss vocab-parallel (activations.h act_seq_parallel) */
    if (c->stack == STACK_TORCHTITAN && c->tp > 1 && (c->features & FEAT_SEQ_PARALLEL))
        return LOSS_LOSS_PARALLEL;
    if ((c->features & (FEAT_OUTPUTS_KEPT | FEAT_OUTPUTS_UNTIL_STEP)) && losspath_outputs_kept(c->stack))
        return kept_of(stack_path(c->stack));
    if (model_type && strcmp(model_type, "qwen") == 0) /* the model's own remote code */
        return LOSS_QWEN1;
    /* HF Trainer patches the model's forward with Liger's (use_liger_kernel): training with
     * labels skips the logits, whatever the stack's own path */
    if ((c->features & FEAT_LIGER_FLCE) && stack_hf_trainer(c->stack))
        return LOSS_LIGER;
    return stack_path(c->stack);
}

enum data_shape losspath_data_shape(const struct train_config *c)
{
    return (c->features & FEAT_EMPTY_CACHE) ? DATA_PACKED : c->data;
}

enum lp_class losspath_class(enum precision p)
{
    return p == PREC_FP32 ? LP_FP32 : p == PREC_BF16_PURE ? LP_HALF : LP_MIXED;
}

/* Sizes are counted in 1/LP_UNIT of a byte per token and vocabulary entry, exact for
 * every size: one sample of the largest replayed micro-batch (32) of 16-bit logits is 1/16
 * of a byte. */
#define LP_UNIT LOSSPATH_UNIT

/* The size of s in class k at micro-batch b (a power of two, 1 .. 32), in 1/LP_UNIT bytes. */
static uint64_t units(enum lp_size s, enum lp_class k, uint32_t b)
{
    const uint64_t ea = k == LP_FP32 ? 4 * LP_UNIT : 2 * LP_UNIT, fp32 = 4 * LP_UNIT;
    const bool amp = k == LP_MIXED;
    switch (s) {
    case SZ_FP32:
        return fp32;
    case SZ_UPCAST:
        return k == LP_FP32 ? 0 : fp32;
    case SZ_AMP_FP32:
        return amp ? fp32 : 0;
    case SZ_AMP_WIDE:
        return amp ? fp32 : ea;
    case SZ_AMP_COMPUTE:
        return amp ? ea : 0;
    case SZ_FP32_CHUNK8:
        return fp32 / 8;
    case SZ_HALF_ONLY:
        return k == LP_FP32 ? 0 : ea;
    case SZ_PLAIN_COMPUTE:
        return amp ? 0 : ea;
    case SZ_WIDE_SAMPLE:
        return (amp ? fp32 : ea) / (b ? b : 1);
    case SZ_WIDE_BATCHED:
        return b > 1 ? (amp ? fp32 : ea) : 0;
    default:
        return ea;
    }
}

uint64_t losspath_kept_logits(enum stack s, enum precision p)
{
    if (!losspath_outputs_kept(s))
        return 0;
    const enum loss_path lp = kept_of(stack_path(s));
    const uint8_t slot = paths[lp].ev[paths[lp].n - 1].slot; /* the kept path frees it last */
    for (size_t i = 0; i < paths[lp].n; i++)
        if (paths[lp].ev[i].alloc && paths[lp].ev[i].slot == slot)
            return units(paths[lp].ev[i].size, losspath_class(p), 1) / LP_UNIT;
    return 0;
}

int losspath_ops(enum loss_path lp, enum lp_class k, uint32_t batch, struct lp_ops *out)
{
    bool keeps;
    if ((unsigned)lp >= LOSS_COUNT || (unsigned)k >= LP_CLASS_COUNT || !transformers_path(lp, &keeps) ||
        paths[lp].n > LOSSPATH_MAX_OPS || batch < 1)
        return -1;
    out->n = paths[lp].n;
    out->forward = paths[lp].forward;
    for (size_t i = 0; i < out->n; i++) {
        const struct lp_event *e = &paths[lp].ev[i];
        out->op[i] = (struct lp_op){e->alloc, e->slot, e->alloc ? (uint32_t)units(e->size, k, batch) : 0};
    }
    out->outputs_slot = keeps ? paths[lp].ev[paths[lp].n - 1].slot : -1;
    out->grad_free = keeps ? out->n - 2 : out->n - 1;
    return 0;
}

/* The allocated peak of the first n events at micro-batch b, in 1/LP_UNIT bytes. */
static uint64_t peak_of_first(enum loss_path lp, enum lp_class k, uint32_t b, size_t n)
{
    uint64_t size[LP_SLOTS] = {0}, live = 0, peak = 0;
    for (size_t i = 0; i < n && i < paths[lp].n; i++) {
        const struct lp_event *e = &paths[lp].ev[i];
        if (e->alloc) {
            size[e->slot] = units(e->size, k, b);
            live += size[e->slot];
        } else {
            live -= size[e->slot];
        }
        if (live > peak)
            peak = live;
    }
    return peak;
}

/* The allocated peak of one pass over the events at micro-batch b, in 1/LP_UNIT bytes. */
static uint64_t allocated_peak(enum loss_path lp, enum lp_class k, uint32_t b)
{
    return peak_of_first(lp, k, b, paths[lp].n);
}

/* The peak of the events the model's forward runs (paths[].forward), per token and
 * vocabulary entry; they come before any per-sample metric, so any micro-batch gives it. */
static double in_forward(enum loss_path lp, enum lp_class k)
{
    return (double)peak_of_first(lp, k, 1, paths[lp].forward) / LP_UNIT;
}

/* Entries (tokens x vocabulary) of the longest replayed step: 2^28. Every tensor of a path is
 * then a large allocation (at least 128 MiB at the cap, above kMinLargeAlloc), whose
 * segment is its own size rounded to 2 MiB; the allocator's rules being the same for all
 * large requests, the bytes per entry the replay finds hold at any batch and vocabulary
 * while every tensor stays well above the allocator's absolute thresholds (README). */
#define REF_ENTRIES (UINT64_C(1) << 28)

/* Step lengths are multiples of 1/LP_LEN_UNIT of the cap: a 4096-token cap in whole tokens. */
#define LEN_ENTRIES (REF_ENTRIES / LP_LEN_UNIT)

/* Packed (or padded to a fixed length): every step the same; two steps show the steady
 * state. */
static const uint32_t packed_steps[] = {LP_LEN_UNIT, LP_LEN_UNIT};

/* Variable-length batches (README "The loss path and the caching allocator"): a run of
 * LP_RUN_STEPS steps, each padded to the longest of its b samples, sample lengths drawn
 * uniformly from 1 .. cap (the least informed spread over what the cap admits), replayed
 * over LP_RUN_ORDERS data orders; the cost is the median order's. Without empty_cache a
 * segment once cut stays reserved (CCA malloc: alloc_block only after get_free_block
 * fails; release_cached_blocks only when cudaMalloc fails), so every step longer than
 * the ones that cut the cached blocks adds segments: the reserved peak depends on the
 * order of the lengths, which the median stands for. With 16 orders the median still
 * moved by 6 bytes per entry with the sample (the records a run sets, H(1000) = 7.5 on
 * average, decide it); 128 orders hold it within about 2 of 512 orders' (Qwen v1: 48.9
 * against 50.8 at micro-batch 1). */

/* splitmix64 (Steele, Lea, Flood 2014): a fixed, portable stream per data order. */
static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int losspath_replay(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t batch,
                    const uint32_t *len, size_t n, double *reserved, double *needed)
{
    allocsim_block blocks[1024];
    allocsim_state st;
    const allocsim_config cfg = {.capacity = 0, .max_split_size = 0,
                                 .expandable = alloc == ALLOC_EXPANDABLE};
    if ((unsigned)lp >= LOSS_COUNT || (unsigned)k >= LP_CLASS_COUNT ||
        allocsim_init(&st, &cfg, blocks, sizeof blocks / sizeof blocks[0]) != ALLOCSIM_OK)
        return -1;
    uint32_t handle[LP_SLOTS] = {0};
    uint64_t held_max = 0;
    for (size_t step = 0; step < n; step++) {
        if (len[step] == 0 || len[step] > LP_LEN_UNIT)
            return -1;
        const uint64_t entries = LEN_ENTRIES * len[step];
        for (size_t i = 0; i < paths[lp].n; i++) {
            const struct lp_event *e = &paths[lp].ev[i];
            allocsim_status s = e->alloc
                ? allocsim_alloc(&st, entries / LP_UNIT * units(e->size, k, batch), &handle[e->slot])
                : allocsim_free(&st, handle[e->slot]);
            if (s != ALLOCSIM_OK)
                return -1;
            if (!e->alloc) /* a free never raises what cannot be released */
                continue;
            uint64_t held = allocsim_get_stats(&st)->reserved - allocsim_releasable(&st);
            if (held > held_max)
                held_max = held;
        }
    }
    *reserved = (double)allocsim_get_stats(&st)->peak_reserved / (double)REF_ENTRIES;
    *needed = (double)held_max / (double)REF_ENTRIES;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of LP_RUN_ORDERS values in ascending order. */
static double median_of_orders(const double *v)
{
    return (v[LP_RUN_ORDERS / 2 - 1] + v[LP_RUN_ORDERS / 2]) / 2.0;
}

/* One sample's length in 1/LP_LEN_UNIT of the cap: uniform on 1 .. LP_LEN_UNIT, or a row of
 * the dataset's lengths tok[0..ntok) drawn uniformly, cut to the cap seq and rounded up. */
static uint32_t draw_sample(uint64_t *x, const uint32_t *tok, size_t ntok, uint32_t seq)
{
    if (!tok)
        return (uint32_t)(splitmix64(x) % LP_LEN_UNIT) + 1;
    const uint64_t l = tok[splitmix64(x) % ntok];
    return l >= seq ? LP_LEN_UNIT : (uint32_t)((l * LP_LEN_UNIT + seq - 1) / seq);
}

/* Every data order's run of `steps` steps of micro-batch `batch`, each padded to the longest
 * of its samples (draw_sample), replayed: reserved[] and needed[] ascending. */
static int replay_orders(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t batch,
                         size_t steps, const uint32_t *tok, size_t ntok, uint32_t seq,
                         double reserved[LP_RUN_ORDERS], double needed[LP_RUN_ORDERS])
{
    static thread_local uint32_t len[LP_RUN_STEPS];
    if (batch < 1 || steps < 1 || steps > LP_RUN_STEPS || (tok && (ntok < 1 || seq < 1)))
        return -1;
    for (uint64_t order = 0; order < LP_RUN_ORDERS; order++) {
        uint64_t x = order + 1;
        for (size_t i = 0; i < steps; i++) {
            uint32_t longest = 0;
            for (uint32_t j = 0; j < batch; j++) {
                const uint32_t l = draw_sample(&x, tok, ntok, seq);
                longest = l > longest ? l : longest;
            }
            len[i] = longest;
        }
        if (losspath_replay(lp, k, alloc, batch, len, steps, &reserved[order], &needed[order]) != 0)
            return -1;
    }
    qsort(reserved, LP_RUN_ORDERS, sizeof reserved[0], cmp_double);
    qsort(needed, LP_RUN_ORDERS, sizeof needed[0], cmp_double);
    return 0;
}

int losspath_variable_orders(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t batch,
                              size_t steps, double reserved[LP_RUN_ORDERS], double needed[LP_RUN_ORDERS])
{
    return replay_orders(lp, k, alloc, batch, steps, NULL, 0, 0, reserved, needed);
}

/* The median order's run of micro-batch b: lengths uniform up to the cap (tok NULL), or the
 * dataset's tok[0..ntok) cut to the cap seq. */
static int variable_run(enum loss_path lp, enum lp_class k, enum alloc_conf alloc, uint32_t b,
                        const uint32_t *tok, size_t ntok, uint32_t seq, double *reserved, double *needed)
{
    double res[LP_RUN_ORDERS], need[LP_RUN_ORDERS];
    if (replay_orders(lp, k, alloc, b, LP_RUN_STEPS, tok, ntok, seq, res, need) != 0)
        return -1;
    *reserved = median_of_orders(res);
    *needed = median_of_orders(need);
    return 0;
}

int losspath_lengths_cost(enum loss_path lp, enum lp_class k, enum alloc_conf alloc,
                          const uint32_t *tokens, size_t n, uint32_t seq, uint32_t batch,
                          double *reserved, double *needed)
{
    if (!tokens || (unsigned)lp >= LOSS_COUNT || lp == LOSS_LIGER)
        return -1;
    return variable_run(lp, k, alloc, batch, tokens, n, seq, reserved, needed);
}

int losspath_variable_cost(enum loss_path lp, enum lp_class k, enum alloc_conf alloc,
                           struct loss_cost *out)
{
    if ((unsigned)lp >= LOSS_COUNT || (unsigned)k >= LP_CLASS_COUNT || (unsigned)alloc >= ALLOC_COUNT)
        return -1;
    for (unsigned bk = 0; bk < LP_BATCH_BUCKETS; bk++)
        out->allocated[bk] = (double)allocated_peak(lp, k, UINT32_C(1) << bk) / LP_UNIT;
    out->in_forward = in_forward(lp, k);
    for (unsigned bk = 0; bk < LP_BATCH_BUCKETS; bk++)
        if (variable_run(lp, k, alloc, UINT32_C(1) << bk, NULL, 0, 0, &out->reserved[bk],
                         &out->needed[bk]) != 0)
            return -1;
    return 0;
}

#ifndef LOSSPATH_GENERATOR
/* The variable-length runs of every (path, class, allocator), replayed at build time by
 * losspath_gen (engine/model/gen) with losspath_variable_cost above: variable_table[lp][k]
 * [alloc][0 reserved, 1 needed][bucket]. A replay takes tens of milliseconds per
 * combination, too long to repeat at every start; test_losspath checks the table against a
 * fresh replay. */
#include "losspath_variable.inc"
#endif

static void cost_of(enum loss_path lp, enum lp_class k, enum data_shape data, enum alloc_conf alloc,
                    struct loss_cost *out)
{
    out->in_forward = in_forward(lp, k);
    for (unsigned bk = 0; bk < LP_BATCH_BUCKETS; bk++) {
        const uint32_t b = UINT32_C(1) << bk;
        double *r = &out->reserved[bk], *nd = &out->needed[bk];
        out->allocated[bk] = (double)allocated_peak(lp, k, b) / LP_UNIT;
        if (data == DATA_PACKED) {
            if (losspath_replay(lp, k, alloc, b, packed_steps, 2, r, nd) != 0)
                *r = *nd = out->allocated[bk]; /* the block array ran out: cannot happen */
            continue;
        }
#ifndef LOSSPATH_GENERATOR
        *r = variable_table[lp][k][alloc][0][bk];
        *nd = variable_table[lp][k][alloc][1][bk];
#else
        *r = *nd = out->allocated[bk]; /* the generator asks for variable_run directly */
#endif
    }
}

unsigned losspath_batch_bucket(int32_t micro_batch)
{
    unsigned bk = 0;
    while (bk + 1 < LP_BATCH_BUCKETS && micro_batch >= (INT32_C(2) << bk))
        bk++;
    return bk;
}

/* Every (path, element size, data shape, allocator) costs the same for every model: one
 * table entry, filled the first time a configuration asks for it, under a lock so that
 * sweep threads share it. */
static struct loss_cost table[LOSS_COUNT][LP_CLASS_COUNT][DATA_COUNT][ALLOC_COUNT];
static bool table_done[LOSS_COUNT][LP_CLASS_COUNT][DATA_COUNT][ALLOC_COUNT];
static mtx_t table_lock;
static once_flag table_once = ONCE_FLAG_INIT;

static void init_lock(void)
{
    mtx_init(&table_lock, mtx_plain);
}

void losspath_cost(enum loss_path lp, enum lp_class k, enum data_shape data, enum alloc_conf alloc,
                   struct loss_cost *out)
{
    lp = (unsigned)lp < LOSS_COUNT ? lp : LOSS_HF;
    k = (unsigned)k < LP_CLASS_COUNT ? k : LP_MIXED;
    data = (unsigned)data < DATA_COUNT ? data : DATA_VARIABLE;
    alloc = (unsigned)alloc < ALLOC_COUNT ? alloc : ALLOC_DEFAULT;
    call_once(&table_once, init_lock);
    mtx_lock(&table_lock);
    if (!table_done[lp][k][data][alloc]) {
        cost_of(lp, k, data, alloc, &table[lp][k][data][alloc]);
        table_done[lp][k][data][alloc] = true;
    }
    *out = table[lp][k][data][alloc];
    mtx_unlock(&table_lock);
}
