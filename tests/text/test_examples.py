"""The text examples run end to end on Debian's fortunes (small slices of them)."""

import os
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "text")
sys.path.insert(0, EXAMPLES)
FORTUNES = "/usr/share/games/fortunes"
needs_fortunes = pytest.mark.skipif(not os.path.isdir(FORTUNES), reason="Debian's fortunes package is not installed")


@needs_fortunes
def test_semantic_search_finds_the_planted_sentence(tmp_path, minilm):
    import semantic_search

    results = semantic_search.main(["never trust a computer you cannot repair", "--corpus-size", "40",
                                    "--model", minilm, "--top", "2", "--data-dir", FORTUNES])
    assert len(results) == 1 and len(results[0]) == 2
    assert results[0][0][1] >= results[0][1][1]  # best match first


@needs_fortunes
def test_gpt_example_trains_and_samples(capsys):
    import train_gpt_fortunes

    ppl, base = train_gpt_fortunes.main(["--steps", "4", "--max-fortunes", "300", "--vocab-size", "300",
                                         "--n-embd", "32", "--batch-size", "4", "--samples", "1"])
    out = capsys.readouterr().out
    assert "validation perplexity" in out and "--- sample 1 ---" in out
    assert 1.0 < ppl < 1e4 and 1.0 < base < 1e4


@needs_fortunes
def test_finetune_example_runs(minilm, capsys):
    import finetune_minilm_fortunes

    acc, majority = finetune_minilm_fortunes.main(["--per-class", "10", "--epochs", "1", "--max-length", "16",
                                                   "--model", minilm])
    assert 0.0 <= acc <= 1.0 and abs(majority - 0.25) < 1e-9  # 4 balanced categories of 2 test fortunes each
    assert "majority-class baseline" in capsys.readouterr().out
