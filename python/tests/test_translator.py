"""attn.Translator against `attn translate` / `attn explain --format json` on
the session's toy run (conftest.py), and from 4 Python threads at once."""
import json
import threading

import numpy as np
import pytest

import attn
from conftest import run_cli


@pytest.fixture(scope="module")
def translator(toy_run):
    return attn.Translator(str(toy_run), threads=1)


def cli_translate(attn_cli, run, lines, *args):
    return run_cli(attn_cli, ["translate", "-m", str(run), "--threads", "1", *args], "\n".join(lines) + "\n")


def test_translate_equals_the_command(translator, attn_cli, toy_run, toy_sentences):
    res = translator.translate(toy_sentences, beam=5)
    assert len(res) == len(toy_sentences)
    want = cli_translate(attn_cli, toy_run, toy_sentences, "-b", "5").split("\n")[:-1]
    assert [r.hypotheses[0] if r.hypotheses else "" for r in res] == want
    assert res[-2].hypotheses == [] and res[-2].src_pieces == []  # the empty line
    assert any(r.hypotheses and r.hypotheses[0] for r in res)


def test_nbest_and_scores_equal_the_command(translator, attn_cli, toy_run, toy_sentences):
    lines = toy_sentences[:4]
    res = translator.translate(lines, beam=4, n_best=3)
    rows = [line.split(" ||| ") for line in cli_translate(attn_cli, toy_run, lines, "-b", "4", "--nbest", "3").splitlines()]
    got = [[str(i), h, f"{s:.6f}"] for i, r in enumerate(res) for h, s in zip(r.hypotheses, r.scores)]
    assert got == rows
    assert all(len(r.hypotheses) == 3 and r.scores == sorted(r.scores, reverse=True) for r in res)


def test_alignments_equal_the_commands_soft_alignments(translator, attn_cli, toy_run, toy_sentences):
    lines = [s for s in toy_sentences if s]
    res = translator.translate(lines, beam=5, alignments=True)
    soft = [json.loads(x) for x in cli_translate(attn_cli, toy_run, lines, "-b", "5", "--alignments", "soft").splitlines()]
    for r, want in zip(res, soft):
        a = r.attention[0]
        assert a.dtype == np.float32 and a.flags.c_contiguous
        assert a.shape == (len(want["tgt"]), len(want["src"])) == (len(r.tgt_pieces[0]) + r.finished[0], len(r.src_pieces))
        np.testing.assert_allclose(a, np.array(want["weights"]), atol=5e-5)  # the JSON has 4 decimals
        np.testing.assert_allclose(a.sum(1), 1, atol=1e-5)
    assert translator.translate(lines[:1])[0].attention == []  # only when asked


def test_compute_types(toy_run, attn_cli, toy_sentences):
    for compute in ("int8", "bf16"):
        t = attn.Translator(str(toy_run), compute=compute, threads=1)
        want = cli_translate(attn_cli, toy_run, toy_sentences, "-b", "5", "--compute", compute).split("\n")[:-1]
        assert [r.hypotheses[0] if r.hypotheses else "" for r in t.translate(toy_sentences)] == want, compute


def test_explain_equals_attn_explain_json(translator, attn_cli, toy_run):
    text = "one two three ."
    for args, kw in (([], {}), (["--beam", "3", "--words", "--top-k", "2"], dict(beam=3, words=True, top_k=2))):
        want = json.loads(run_cli(attn_cli, ["explain", "-m", str(toy_run), "--format", "json", "--threads", "1", *args],
                                  text + "\n"))
        got = translator.explain(text, **kw)
        assert got == want
    assert len(got["src_tokens"]) == 4 and got["steps"]


def test_four_threads_equal_the_serial_answers(translator, toy_sentences):
    jobs = [dict(beam=5), dict(beam=2, n_best=2), dict(beam=1, alignments=True), dict(beam=5, alignments=True)]
    serial = [translator.translate(toy_sentences, **kw) for kw in jobs]
    results = [None] * len(jobs)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                results[i] = translator.translate(toy_sentences, **jobs[i])
                same(results[i], serial[i])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    def same(a, b):
        assert [(r.hypotheses, r.scores) for r in a] == [(r.hypotheses, r.scores) for r in b]
        for x, y in zip(a, b):
            assert len(x.attention) == len(y.attention)
            for p, q in zip(x.attention, y.attention):
                np.testing.assert_array_equal(p, q)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_translator_errors(toy_run, tmp_path, translator):
    with pytest.raises(RuntimeError, match="model.safetensors|does not exist|no such"):
        attn.Translator(str(tmp_path))
    with pytest.raises(ValueError, match="compute|fp32"):
        attn.Translator(str(toy_run), compute="fp64")
    with pytest.raises(ValueError, match="nbest|n_best|beam"):
        translator.translate(["one ."], beam=2, n_best=3)
    with pytest.raises(ValueError, match="UTF-8|empty"):
        translator.explain("")
    with pytest.raises(ValueError, match="attention map|attention_map|maps"):
        translator.translate(["one ."], attention_map="nope")
    with pytest.raises(TypeError):
        translator.translate("one .")  # a str, not a list of str
    assert translator.model_type == "rnnsearch" and translator.attention_maps
