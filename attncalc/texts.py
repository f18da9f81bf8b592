"""What `walk` says, in English and Chinese: screen titles, why each step exists, and the prompts.

`WHY` is keyed by a graph node's `about` (plus a few keys walk adds from context: the mask kind,
RoPE/ALiBi, GQA, RMSNorm, SwiGLU, pre-norm, teacher forcing); `TITLES` by the screen's group.
Plain text only (no Rich markup, no Markdown): every renderer prints it as it is.
"""

from __future__ import annotations

import os
import re

LANGS = ("en", "zh")


def default_lang() -> str:
    """zh when LANG starts with zh, else en."""
    return "zh" if os.environ.get("LANG", "").lower().startswith("zh") else "en"


WHY = {
    "embed": (
        "A network computes with numbers, not words. Each token is looked up by its id in the embedding "
        "table E, and that row is the token's vector. The rows are learned, so tokens that are used alike "
        "end up with similar vectors.",
        "神经网络只能处理数字，不能直接处理词。每个词按编号在嵌入表 E 中取出一行，这一行就是它的向量。"
        "这些行是训练出来的，用法相近的词，向量也会相近。"),
    "pe": (
        "Attention by itself ignores order: shuffle the tokens and every token gets the same result, only "
        "shuffled. So each row gets a vector that depends only on its position. Sinusoidal PE uses sines and "
        "cosines of many frequencies: every position gets its own pattern, and nearby positions similar ones.",
        "注意力本身不看顺序：把词打乱，每个词得到的结果不变，只是换了位置。所以给每一行加上一个只取决于位置的"
        "向量。正弦位置编码用不同频率的 sin 和 cos，让每个位置的编码各不相同，相邻位置的编码又比较接近。"),
    "pe_learned": (
        "Attention by itself ignores order, so each row gets a vector for its position. Here the position "
        "vectors are a learned table (as in BERT and GPT-2), one row per position.",
        "注意力本身不看顺序，所以要给每一行加上表示位置的向量。这里的位置向量是一张训练出来的表"
        "（BERT、GPT-2 就是这样），每个位置一行。"),
    "residual_pe": (
        "H = X + PE: adding instead of concatenating keeps the width d_model. H now holds both what the token "
        "is and where it is; it is the input of attention.",
        "H = X + PE：用相加而不是拼接，宽度仍是 d_model。H 同时包含“是什么词”和“在哪个位置”，它就是注意力的输入。"),
    "pe_rope": (
        "With RoPE nothing is added to X: position enters later, by rotating Q and K, so that a score depends "
        "on how far apart two tokens are. Here H = X.",
        "使用 RoPE 时不给 X 加任何东西：位置信息稍后通过旋转 Q 和 K 加入，使得分数取决于两个词相隔多远。这里 H = X。"),
    "pe_alibi": (
        "With ALiBi nothing is added to X: position enters as a penalty on the scores that grows with "
        "distance. Here H = X.",
        "使用 ALiBi 时不给 X 加任何东西：位置信息以分数上的惩罚加入，距离越远惩罚越大。这里 H = X。"),
    "pe_none": (
        "No positional encoding is added here (the vectors are used as they are, as in a RoPE model before "
        "its rotation). H = X.",
        "这里不加位置编码（向量按原样使用，就像 RoPE 模型在旋转之前那样）。H = X。"),
    "Q": (
        "Q, the queries: what each token is looking for.",
        "Q（查询）：每个词想找什么。"),
    "K": (
        "K, the keys: what each token can be found by; a query matches a key through their dot product.",
        "K（键）：每个词凭什么被别人找到；查询和键的点积衡量两者的匹配程度。"),
    "V": (
        "V, the values: what a token hands over once it is attended to. Three separate learned matrices let "
        "a token look for one thing, be found for another and pass on a third, instead of comparing raw "
        "embeddings.",
        "V（值）：一个词被关注时真正交出去的内容。用三个不同的可学习矩阵，词“找的”“被找的”“给出的”可以各不相同，"
        "而不是直接拿原始嵌入来比较。"),
    "rope_angles": (
        "RoPE's angles: position × inv_freq_j, one angle per pair of columns. The first pairs turn fast, "
        "the last ones slowly, like the hands of a clock.",
        "RoPE 的角度：位置 × inv_freq_j，每一对列一个角度。前面的列对转得快，后面的转得慢，就像钟表的指针。"),
    "rope": (
        "RoPE rotates each pair of Q and K columns by its angle. Once the query at position m and the key at "
        "position n are both rotated, their dot product depends only on m − n: relative position, with no "
        "extra parameters (LLaMA, Mistral, Qwen).",
        "RoPE 把 Q、K 的每一对列按各自的角度旋转。位置 m 的查询和位置 n 的键都旋转之后，它们的点积只取决于 m − n，"
        "也就是相对位置，而且不需要额外参数（LLaMA、Mistral、Qwen 都用它）。"),
    "S": (
        "S[i, j] = q_i · k_j: how well query i matches key j. The more two vectors point the same way, the "
        "larger their dot product.",
        "S[i, j] = q_i · k_j：查询 i 与键 j 的匹配程度。两个向量方向越一致，点积越大。"),
    "alibi": (
        "ALiBi adds −slope·(i − j) to the scores: the farther back a key, the larger the penalty, with a "
        "different slope per head (some heads look far, some near). No position vectors at all, and it "
        "extrapolates to longer inputs.",
        "ALiBi 给分数加上 −slope·(i − j)：键离得越远，惩罚越大；每个头的斜率不同（有的头看得远，有的看得近）。"
        "它完全不需要位置向量，对更长的输入也能外推。"),
    "scale": (
        "Why ÷√d_k: a dot product adds up d_k products, so for entries of variance 1 its variance is d_k. "
        "Large scores push the softmax to almost 0 and 1, where its gradients vanish; dividing by √d_k brings "
        "the variance back to about 1.",
        "为什么除以 √d_k：点积是 d_k 个乘积相加，若各分量方差为 1，点积的方差就是 d_k。分数太大时 softmax "
        "几乎只输出 0 和 1，梯度消失；除以 √d_k 让方差回到 1 左右。"),
    "mask": (
        "The mask says which keys each query may look at. A blocked score becomes −∞ because e^(−∞) = 0: it "
        "gets exactly zero weight after the softmax, and the other weights still add up to 1.",
        "掩码规定每个查询能看哪些键。被屏蔽的分数设为 −∞，因为 e^(−∞) = 0：softmax 之后它的权重正好是 0，"
        "其余权重之和仍然是 1。"),
    "mask_none": (
        "Here nothing is blocked (M is all ones): the encoder reads the whole source at once, so every token "
        "may look at every other token, before and after it.",
        "这里什么都不屏蔽（M 全为 1）：编码器一次读入整个源句，每个词都可以看它前后的所有词。"),
    "mask_causal": (
        "Causal mask: position i may not look at keys after i. In training the decoder gets the whole target "
        "at once (teacher forcing); without the mask it could copy the next word instead of predicting it. "
        "It also makes training match generation, where later tokens do not exist yet.",
        "因果掩码：位置 i 不能看 i 之后的键。训练时解码器一次拿到整个目标句（教师强制），不屏蔽的话它可以直接抄下一个词，"
        "而不是去预测它。这也让训练和生成一致：生成时后面的词本来就还不存在。"),
    "mask_padding": (
        "Padding mask: pad tokens only fill a batch up to equal length and mean nothing, so no query may "
        "attend to them.",
        "填充掩码：pad 只是为了把一批句子补齐到相同长度，没有任何含义，所以任何查询都不能关注它们。"),
    "softmax": (
        "Softmax turns each row of scores into weights: e^s makes them positive and keeps their order, and "
        "dividing by the row's sum makes them add up to 1. Row i is how query i shares its attention among "
        "the keys. Subtracting the row maximum first avoids overflow and changes nothing.",
        "softmax 把每一行分数变成权重：e^s 让它们都为正且保持大小顺序，再除以这一行的和，使它们加起来等于 1。"
        "第 i 行就是查询 i 把注意力分给各个键的比例。先减去行最大值可以防止溢出，结果不变。"),
    "O": (
        "O = A·V: each output row is a weighted average of the value rows, with the weights of its row of A. "
        "A token's new vector is mixed from the tokens it attends to, so now it carries context.",
        "O = A·V：每个输出行是各个值行的加权平均，权重就是 A 中它的那一行。词的新向量由它关注的词混合而成，"
        "因此带上了上下文。"),
    "Z": (
        "Z = O·Wo: the heads' outputs, side by side, are mixed back into d_model columns by Wo. With one head "
        "and no Wo, Z = O.",
        "Z = O·Wo：各个头的输出并排拼接后，由 Wo 混合回 d_model 列。只有一个头且没有 Wo 时，Z = O。"),
    "multihead": (
        "Multi-head: the columns of Q, K and V are split into h heads of d_k columns; each head computes its "
        "own scores and weights, so different heads can follow different relations (syntax, reference, "
        "position) for the cost of one big head.",
        "多头注意力：Q、K、V 的列被分成 h 个头，每头 d_k 列；每个头各自计算分数和权重，于是不同的头可以关注不同的关系"
        "（句法、指代、位置），而总计算量和一个大头差不多。"),
    "gqa": (
        "GQA: there are fewer K/V heads than query heads, and each group of query heads shares one K/V head. "
        "Quality stays close to full multi-head while the KV cache is heads/kv_heads times smaller; with a "
        "single K/V head this is MQA.",
        "GQA（分组查询注意力）：K/V 头比查询头少，每组查询头共用一个 K/V 头。效果接近完整的多头注意力，"
        "而 KV 缓存缩小为原来的 kv_heads/heads；只有一个 K/V 头时就是 MQA。"),
    "residual": (
        "Residual (the Add): the sublayer's output is added to its input, x + sublayer(x). The sublayer only "
        "learns a correction, the input can pass through unchanged, and gradients flow straight back through "
        "the sum, which is what lets deep stacks train.",
        "残差连接（Add）：把子层的输出加回它的输入，x + sublayer(x)。子层只需学习一个修正量，输入可以原样通过，"
        "梯度也能沿着这条加法直接传回去，所以很深的网络也能训练。"),
    "norm": (
        "LayerNorm (the Norm): each row is shifted to mean 0 and scaled to variance 1, then γ and β rescale "
        "it. The numbers stay in a steady range layer after layer, which keeps training stable; it works on "
        "each token alone, independent of the batch.",
        "层归一化（Norm）：把每一行减去均值、除以标准差，变成均值 0、方差 1，再用 γ、β 缩放和平移。这样每一层的数值范围"
        "都保持稳定，训练更稳；它对每个词单独计算，与批次无关。"),
    "rmsnorm": (
        "RMSNorm (LLaMA, Gemma): each row is divided by its root mean square and multiplied by γ; no mean is "
        "subtracted and there is no β. Cheaper than LayerNorm, and as good in practice.",
        "RMSNorm（LLaMA、Gemma 使用）：每一行除以它的均方根再乘以 γ，不减均值，也没有 β。比 LayerNorm 省计算，"
        "实际效果相当。"),
    "prenorm": (
        "Pre-norm (GPT-2, LLaMA): the sublayer gets a normed copy of its input, x + sublayer(Norm(x)), so the "
        "residual path runs untouched from the first layer to the last. Deep models train more stably; a "
        "final norm follows the last layer.",
        "Pre-Norm（GPT-2、LLaMA）：子层接收归一化后的输入，x + sublayer(Norm(x))，残差通路从第一层到最后一层不受干扰。"
        "深层模型训练更稳定；最后一层之后再做一次最终归一化。"),
    "ffn": (
        "Feed-forward network: the same small two-layer network is applied to each token on its own: widen "
        "to d_ff, apply a nonlinearity, project back to d_model. Attention moves information between tokens; "
        "the FFN works on what each token now holds (much of what a model knows is stored in these weights).",
        "前馈网络：对每个词单独使用同一个两层小网络：先升维到 d_ff，经过非线性激活，再投影回 d_model。注意力负责在词之间"
        "传递信息，FFN 负责加工每个词手里的信息（模型的很多“知识”就存在这些权重里）。"),
    "gelu": (
        "GELU is a smooth ReLU, x·Φ(x) (BERT, GPT-2): small negative inputs give small negative outputs "
        "instead of a hard zero.",
        "GELU 是平滑版的 ReLU，x·Φ(x)（BERT、GPT-2 使用）：较小的负输入得到较小的负输出，而不是直接截成 0。"),
    "swiglu": (
        "SwiGLU (LLaMA, Mistral): two projections; silu(x·W1) acts as a gate on x·W3, element by element. "
        "Gated FFNs reach a lower loss than ReLU for the same size.",
        "SwiGLU（LLaMA、Mistral 使用）：两路投影，silu(x·W1) 逐元素地作为门控乘以 x·W3。同样大小下，"
        "门控 FFN 的损失比 ReLU 更低。"),
    "layer_attention": (
        "This layer's self-attention: the same steps as above (Q, K, V; scores ÷ √d_k; mask; softmax; A·V) "
        "with this layer's own weights.",
        "本层的自注意力：步骤同前（Q、K、V；打分并除以 √d_k；掩码；softmax；A·V），使用本层自己的权重。"),
    "masked_self": (
        "Masked self-attention: the decoder's tokens attend to each other, but only to themselves and "
        "earlier positions.",
        "掩码自注意力：解码器的词彼此关注，但只能看自己和之前的位置。"),
    "cross": (
        "Cross-attention: the queries come from the decoder (what the next word needs), the keys and values "
        "from the encoder output (the source sentence). This is where a translation looks at its source; the "
        "whole source is known, so no causal mask is needed.",
        "交叉注意力：查询来自解码器（生成下一个词需要什么），键和值来自编码器的输出（源句）。翻译就是在这里“看”源句的；"
        "源句是完整已知的，所以不需要因果掩码。"),
    "layer_same": (
        "This layer's self-attention is the block worked through in stages qkv to attend above: the same "
        "weights on the same input, so Q, K, V, the weights A and the output are exactly the ones shown "
        "there. Only the output is repeated here.",
        "本层的自注意力就是上面 qkv 到 attend 各阶段逐步算过的那一块：同样的权重、同样的输入，所以 Q、K、V、"
        "权重 A 和输出都与上面完全相同，这里只再列出输出。"),
    "enc_out": (
        "enc_out, the encoder's output: one context-aware vector per source token. Every decoder layer reads "
        "it, as keys and values, in its cross-attention.",
        "enc_out：编码器的输出，每个源词一个融合了上下文的向量。解码器的每一层都在交叉注意力中把它当作键和值来读取。"),
    "dec_out": (
        "dec_out, the decoder's output: one vector per target position, ready to be scored against the "
        "vocabulary.",
        "dec_out：解码器的输出，每个目标位置一个向量，接下来要和词表中的每个词打分。"),
    "teacher_forcing": (
        "Teacher forcing: in training the decoder is given the correct previous words, not its own guesses. "
        "Its input is [<s>] + target and its labels are target + [</s>], so every position is computed at "
        "once; the causal mask keeps each position from seeing its own answer. When generating there is no "
        "target: the model feeds back its own output one token at a time (autoregressive).",
        "教师强制：训练时喂给解码器的是正确的前文，而不是它自己猜的词。输入是 [<s>] + 目标，标签是 目标 + [</s>]，"
        "所有位置可以一次算完；因果掩码保证每个位置看不到自己的答案。生成时没有目标句，模型只能把自己生成的词一个一个"
        "喂回去（自回归）。"),
    "decoder_only": (
        "Decoder-only (GPT, LLaMA): no encoder. Prompt and continuation are one sequence under a causal mask, "
        "and each position predicts the next token.",
        "仅解码器模型（GPT、LLaMA）：没有编码器。提示词和续写是同一个序列，使用因果掩码，每个位置预测下一个词。"),
    "logits": (
        "logits = dec_out·W: at each position, one score per word of the vocabulary; the larger it is, the "
        "better the hidden state matches that word.",
        "logits = dec_out·W：每个位置对词表中的每个词打一个分；分数越高，隐藏状态与这个词越匹配。"),
    "tied": (
        "Tied output: W is the embedding table transposed (Eᵀ), so a word is scored by how close the hidden "
        "state is to that word's own embedding, and there are fewer parameters.",
        "共享权重：W 就是嵌入表的转置（Eᵀ），用隐藏状态与词自身嵌入的接近程度来打分，参数也更少。"),
    "probs": (
        "probs = softmax(logits): a probability for every word of the vocabulary being the next token.",
        "probs = softmax(logits)：词表中每个词成为下一个词的概率。"),
    "loss": (
        "Cross-entropy: at each position the loss is −log of the probability given to the correct next "
        "token: 0 when the model is sure and right, large when it is sure and wrong. Training lowers the mean "
        "over the positions.",
        "交叉熵：每个位置的损失是 −log(正确的下一个词的概率)：模型有把握且答对时为 0，有把握却答错时很大。"
        "训练就是降低各位置损失的平均值。"),
    "generate": (
        "Generation is autoregressive: encode the source once, start the decoder with <s>, pick a token from "
        "the last position's probabilities, append it and repeat until </s>. The KV cache keeps the keys and "
        "values of earlier positions, so each step computes only the new row.",
        "生成是自回归的：源句只编码一次，解码器从 <s> 开始，根据最后一个位置的概率选出一个词，接在后面，"
        "重复直到 </s>。KV 缓存保存之前各位置的键和值，所以每一步只需计算新的一行。"),

    "kv_cache": (
        "Only the new token's row is computed: its query attends to every cached key, and its own k and v "
        "rows are appended to the cache. Earlier rows never change, because the causal mask keeps them from "
        "seeing later tokens, so recomputing them would give the same numbers.",
        "只计算新词的那一行：它的查询与缓存中所有的键打分，它自己的 k、v 行追加到缓存里。之前的行不会改变，"
        "因为因果掩码让它们看不到后来的词，重新计算也只会得到相同的数。"),
}

TITLES = {
    "embed": ("Embedding: tokens become vectors", "词嵌入：把词变成向量"),
    "pe": ("Positional encoding: where each token is", "位置编码：每个词在哪里"),
    "qkv": ("Q, K, V: queries, keys and values", "Q、K、V：查询、键、值"),
    "rope": ("RoPE: rotating Q and K by position", "RoPE：按位置旋转 Q 和 K"),
    "scores": ("Scores and scaling: Q·Kᵀ ÷ √d_k", "打分与缩放：Q·Kᵀ ÷ √d_k"),
    "mask": ("Mask: which keys each query may see", "掩码：每个查询能看哪些键"),
    "softmax": ("Softmax: scores become weights", "softmax：分数变成权重"),
    "weights": ("Scores ÷ √d_k, mask, softmax", "打分 ÷ √d_k、掩码、softmax"),
    "attend": ("Weighted sum of the values, output projection", "对值加权求和，输出投影"),
    "same": ("the same as the stages above", "与上面各阶段相同"),
    "addnorm": ("Add & Norm", "残差与归一化（Add & Norm）"),
    "add": ("Residual: add the sublayer's output", "残差：加上子层的输出"),
    "prenorm": ("Norm before the sublayer (pre-norm)", "子层之前先归一化（Pre-Norm）"),
    "ffn": ("Feed-forward network", "前馈网络（FFN）"),
    "enc_out": ("Encoder output", "编码器输出"),
    "dec_out": ("Decoder output", "解码器输出"),
    "input": ("Decoder input: the shifted target", "解码器输入：右移一位的目标句"),
    "input_only": ("Decoder input: prompt and continuation", "解码器输入：提示词与续写"),
    "output": ("Logits and probabilities", "输出层：logits 与概率"),
    "loss": ("Loss: cross-entropy", "损失：交叉熵"),
    "generate": ("Generation step {i}: {inputs} → {token}", "生成第 {i} 步：{inputs} → {token}"),
}

CONTEXT = {
    "enc": ("Encoder layer {i}", "编码器第 {i} 层"),
    "dec": ("Decoder layer {i}", "解码器第 {i} 层"),
    "self": ("masked self-attention", "掩码自注意力"),
    "cross": ("cross-attention", "交叉注意力"),
    "attn": ("self-attention", "自注意力"),
}

UI = {
    "step": ("Step {k}/{n}", "第 {k}/{n} 步"),
    "weights": ("Weights used here", "这一步用到的权重"),
    "inputs": ("Its inputs", "它的输入"),
    "example": ("A worked cell:", "算一个格子："),
    "keys": ("Enter/space next · b back · c ROW,COL explain a cell · q quit",
             "回车/空格 下一步 · b 上一步 · c 行,列 讲解一个格子 · q 退出"),
    "first": ("(this is the first screen)", "（已经是第一屏）"),
    "cell_prompt": ("cell (ROW,COL or TENSOR:ROW,COL): ", "格子（行,列 或 张量:行,列）："),
    "no_cell": ("a screen before generation (c does not explain the generation steps' cells)",
                "生成之前的屏幕（c 不讲解生成步骤的格子）"),
    "quiz_ask": ("Quiz: compute {label} yourself (Enter skips): ", "小测验：请自己算出 {label}（回车跳过）："),
    "quiz_nan": ("Please type a number, or just Enter to skip.", "请输入一个数，或直接回车跳过。"),
    "right": ("Right: {answer} is within {tol:g} of {value}.", "正确：{answer} 与 {value} 相差不超过 {tol:g}。"),
    "wrong": ("Not quite: {label} is {value}, you wrote {answer} (tolerance {tol:g}). The arithmetic:",
              "不太对：{label} 是 {value}，你写的是 {answer}（允许误差 {tol:g}）。计算过程："),
    "skipped": ("Skipped. The arithmetic:", "已跳过。计算过程："),
    "score": ("Quiz: {right} of {asked} right.", "小测验：{asked} 题答对 {right} 题。"),
    "stopped": ("The walk ends after stage {stage}: {name} has no later parts yet ({reason}).",
                "讲解到 {stage} 阶段为止：{name} 还没有后面的部分（{reason}）。"),
    "no_generate": ("Generation (decoding with a KV cache) is not part of this walk yet; "
                    "see `attncalc generate`.",
                    "生成（带 KV 缓存的逐词解码）暂未加入本讲解；可以试试 `attncalc generate`。"),
    "chosen": ("chosen: {token}, the most likely next token (p = {p}, greedy)",
               "选中：{token}，最可能的下一个词（p = {p}，贪心解码）"),
    "generated": ("generated: {tokens}", "生成结果：{tokens}"),
    "macs": ("multiply-adds with the KV cache: {w:,}; recomputing every step: {wo:,} (saved {saved:,})",
             "使用 KV 缓存的乘加次数：{w:,}；每步全部重算：{wo:,}（节省 {saved:,}）"),
    "doc_title": ("attncalc walk: {name}", "attncalc 逐步讲解：{name}"),
    "stage": ("stage:", "阶段："),
}


def pick(pair: tuple[str, str], lang: str) -> str:
    return pair[1] if lang == "zh" else pair[0]


def why(key: str, lang: str) -> str:
    """The why-text of `key`, or "" when there is none."""
    return pick(WHY[key], lang) if key in WHY else ""


def title(key: str, lang: str, **kw) -> str:
    return pick(TITLES[key], lang).format(**kw) if key in TITLES else key


def ui(key: str, lang: str, **kw) -> str:
    return pick(UI[key], lang).format(**kw)


def context(key: str, lang: str, **kw) -> str:
    return pick(CONTEXT[key], lang).format(**kw)


CLOSING = set("，。、；：！？）」』”’,.;:!?)")
_CJK = "\u2e80-\u9fff\u3000-\u303f\uff00-\uffef“”‘’"
_TOKEN = re.compile(f"[{_CJK}]|\\s+|[^\\s{_CJK}]+")


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width` cells, breaking between words and between Chinese characters (a closing
    mark stays on its line), which Rich's word wrap does not do for Chinese."""
    from rich.cells import cell_len

    lines, cur = [], ""
    for tok in _TOKEN.findall(text):
        if tok.isspace():
            cur += " " if cur else ""
        elif cur and cell_len(cur + tok) > width and not (tok in CLOSING and cell_len(cur + tok) <= width + 2):
            lines.append(cur.rstrip())
            cur = tok
        else:
            cur += tok
    return lines + [cur.rstrip()] if cur.strip() else lines
