"""A few example command lines under each command's --help (Click's epilog), kept in one place.

Every line here runs as written after the set-up (tests/test_surprises.py runs them)."""

EXAMPLES = {
    "embed": ["attncalc embed --example woaini", 'attncalc embed --example woaini --set \'source=["你", "爱", "我"]\''],
    "pe": ["attncalc pe --example woaini", "attncalc pe --example woaini --cell 爱,0"],
    "qkv": [
        "attncalc qkv --example woaini",
        'attncalc qkv --x "0.8 0.1 -0.2 0.4" --wq "0.5 0.1; 0.2 -0.3; -0.4 0.8; 0.1 0.2"',
    ],
    "scores": ["attncalc scores --example woaini", "attncalc scores --example wochiyu --scale 1"],
    "mask": [
        "attncalc mask --example woaini --kind causal",
        'attncalc mask --scores "5 1 4; 1 2 3; 0 0 1" --kind causal',
    ],
    "softmax": [
        "attncalc softmax --example woaini --cell 爱,我",
        'attncalc softmax --scores "5.1 1.0 4.3"',
        'attncalc softmax --scores "5 -inf 4; 1 2 3"',
    ],
    "attend": [
        "attncalc attend --example woaini",
        'attncalc softmax --scores "5 1; 2 3" | attncalc attend --v "1 0; 0 1"',
    ],
    "encoder": ["attncalc encoder --example woaini", "attncalc encoder --example woaini --only enc_out -f json"],
    "decoder": ["attncalc decoder --example woaini", "attncalc decoder --example tinyllama --cell probs:0,0"],
    "backward": [
        "attncalc backward --example woaini --only dec.0.cross.dS --cell dec.0.cross.dS:1,2",
        "attncalc backward --example wochiyu --cell dS:我,吃",
    ],
    "examples": ["attncalc examples", "attncalc examples -f json"],
    "generate": [
        "attncalc generate --example woaini",
        "attncalc generate --example woaini --strategy sample --temperature 0.8 --top-k 5 --top-p 0.9 --seed 1",
    ],
    "walk": ["attncalc walk", "attncalc walk --example wochiyu --lang zh", "attncalc walk --from softmax --to attend"],
    "check": [
        "attncalc check examples/worksheets/woaini-mine.txt --example woaini",
        "attncalc check examples/worksheets/exercise-7.txt --exercise 7",
        "attncalc check examples/worksheets/woaini-mine.txt --example woaini --hint --lang zh",
    ],
    "worksheet": [
        "attncalc worksheet --example woaini --stage softmax",
        "attncalc worksheet --example multihead --from qkv --to attend --answers -f markdown",
    ],
    "exercise": [
        "attncalc exercise --seed 7",
        "attncalc exercise --seed 7 --tokens 4 --heads 2 --kind causal --lang zh",
        "attncalc exercise --seed 7 -f json",
        "attncalc walk --exercise 7:heads=2 --to attend",
    ],
    "kvcache": ["attncalc kvcache examples/configs/llama-3-8b.json --tokens 8192"],
    "heads": [
        "attncalc heads --example multihead --from 爱 --to 我",
        "attncalc heads --example tinyllama --from mat --to cat --walk",
    ],
    "compare": ["attncalc compare --example wochiyu --left-set attention.scale=1 --right-set attention.scale=0.5"],
}


def epilog(name: str) -> str | None:
    """The examples of `name` as an epilog Click prints as written (\\b: no re-wrapping)."""
    lines = EXAMPLES.get(name)
    return "\b\nExamples:\n" + "\n".join("  " + line for line in lines) if lines else None
