"""Tokenizing inside DataLoader worker processes (fork): no deadlock, no warning per worker, same ids.

tokenizers releases before 0.2x printed a warning in every forked worker once the parent had
used the thread pool; the one installed here may stay silent by itself, so besides the absence
of the warning the test checks ember_text's own part: workers see TOKENIZERS_PARALLELISM=false
(they tokenize serially) and the parent's environment is left as the user had it.
"""

import os
import subprocess
import sys
import textwrap

WARNING = "huggingface/tokenizers: The current process just got forked"

SCRIPT = textwrap.dedent("""
    import os, sys
    from tokenizers import Tokenizer
    from ember.utils.data import DataLoader, Dataset

    folder = sys.argv[1]
    if sys.argv[2] == "ember":
        import ember_text
        tok = ember_text.AutoTokenizer.from_pretrained(folder)
        encode = lambda texts: tok(texts, padding="max_length", max_length=16, truncation=True)["input_ids"]
    else:
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        encode = lambda texts: [e.ids for e in tok.encode_batch(texts)]
    texts = [f"sentence number {i} with some words in it" for i in range(64)]
    parent = encode(texts)  # a batch: the tokenizers thread pool is used before the fork

    class Texts(Dataset):
        def __len__(self):
            return len(texts)
        def __getitem__(self, i):
            return encode(texts[i:i + 1])[0], os.environ.get("TOKENIZERS_PARALLELISM")

    for epoch in range(2):
        loader = DataLoader(Texts(), batch_size=8, num_workers=2, collate_fn=list)
        got = [item for batch in loader for item in batch]
        assert [ids for ids, _ in got] == parent, "worker ids differ from the parent's"
        print("in workers:", sorted({flag for _, flag in got}, key=str))
    print("parallelism after:", os.environ.get("TOKENIZERS_PARALLELISM"))
    print("OK")
""")


def _run(folder, mode):
    env = {k: v for k, v in os.environ.items() if k != "TOKENIZERS_PARALLELISM"}
    return subprocess.run([sys.executable, "-c", SCRIPT, folder, mode], capture_output=True, text=True, timeout=240,
                          env=env)


def test_workers_tokenize_without_warning_or_deadlock(bpe_folder):
    proc = _run(bpe_folder, "ember")
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout
    assert WARNING not in proc.stderr, proc.stderr
    assert "in workers: ['false']" in proc.stdout
    assert "parallelism after: None" in proc.stdout  # the parent's environment is left as the user had it


def test_user_setting_is_respected(bpe_folder):
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "true"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, bpe_folder, "ember"], capture_output=True, text=True,
                          timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "in workers: ['true']" in proc.stdout and "parallelism after: true" in proc.stdout
