"""The commands that measure what `cost` estimates, with the same lengths, batch, precision and parallelism.

- vLLM (docs.vllm.ai, "Benchmark CLI"): `vllm bench latency` runs one batch to the end in-process (the static
  batch: engine TTFT + output × TPOT); `vllm bench serve` against `vllm serve` times each request as a client does
  (TTFT with the request overhead, TPOT); `vllm bench throughput` runs many requests with in-flight batching.
- TensorRT-LLM (`trtllm-bench`, "Benchmarking with trtllm-bench"): a dataset of fixed lengths from
  `benchmarks/cpp/prepare_dataset.py`, then `trtllm-bench latency` (one request at a time) or `throughput`.
- llama.cpp (`llama-bench`, tools/llama-bench/README.md): `-p` prompt tokens read (pp: prompt tokens/s = prompt /
  engine TTFT) and `-n` tokens generated (tg: tokens/s = 1 / TPOT), one sequence; `llama-batched-bench` for batches.
Pure: strings only.
"""

from __future__ import annotations

import shlex

VLLM_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def commands(model: str, r: dict) -> dict:
    """{engine: [command, …]} for the setup of the `cost` result `r`; `model` is the folder, file or hub id."""
    t, g = r["terms"], r["gpus"]
    prompt, generate, batch, tp, pp = t["prompt"], t["generate"], t["batch"], g["tp"], g["pp"]
    m = shlex.quote(model)
    dtype = VLLM_DTYPE.get(t["compute_dtype"], "bfloat16")
    quant = {"fp8": " --quantization fp8", "int4": " --quantization awq", "int8": " --quantization gptq"}.get(
        t["weights_dtype"], ""
    )
    kv = " --kv-cache-dtype fp8" if t["kv_dtype"] == "fp8" else ""
    par = f" --tensor-parallel-size {tp} --pipeline-parallel-size {pp}"
    lengths = f"--input-len {prompt} --output-len {max(generate, 1)}"
    vllm = [
        f"vllm bench latency --model {m} {lengths} --batch-size {batch} --dtype {dtype}{quant}{kv}{par}",
        f"vllm serve {m} --dtype {dtype}{quant}{kv}{par}",
        f"vllm bench serve --model {m} --dataset-name random --random-input-len {prompt}"
        f" --random-output-len {max(generate, 1)} --max-concurrency {batch} --num-prompts {10 * batch}",
        f"vllm bench throughput --model {m} {lengths} --num-prompts 1000 --dtype {dtype}{quant}{kv}{par}",
    ]
    trt = [
        f"python benchmarks/cpp/prepare_dataset.py --stdout --tokenizer {m} token-norm-dist --input-mean {prompt}"
        f" --output-mean {max(generate, 1)} --input-stdev 0 --output-stdev 0 --num-requests 1000 > dataset.txt",
        f"trtllm-bench --model {m} latency --dataset dataset.txt --tp {tp} --pp {pp}",
        f"trtllm-bench --model {m} throughput --dataset dataset.txt --tp {tp} --pp {pp}",
    ]
    split = " -sm row" if tp * pp > 1 else ""
    llama = [f"llama-bench -m {m} -p {prompt} -n {max(generate, 1)} -ngl 99{split}"]
    if batch > 1:
        llama.append(f"llama-batched-bench -m {m} -npp {prompt} -ntg {max(generate, 1)} -npl {batch} -ngl 99{split}")
    return {"vllm": vllm, "trtllm": trt, "llama.cpp": llama}
