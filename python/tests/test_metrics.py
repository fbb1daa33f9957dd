"""attn.bleu / attn.chrf against `attn score --json` on the same files."""
import json

import pytest

import attn
from conftest import run_cli, write_lines

HYPS = ["The cat sat on the mat.", "A dog barks loudly at night!", "Il fait beau aujourd'hui.", ""]
REFS = ["The cat is sitting on the mat.", "The dog barks loudly at night.", "Il fait très beau aujourd'hui.", "x"]
REFS2 = ["A cat sat on the mat.", "A dog is barking in the night.", "Aujourd'hui il fait beau.", "y"]


def cli_scores(attn_cli, tmp_path, refs):
    write_lines(tmp_path / "hyp.txt", HYPS)
    args = ["score", "--json", "--hyp", str(tmp_path / "hyp.txt")]
    for i, r in enumerate(refs):
        write_lines(tmp_path / f"ref{i}.txt", r)
        args += ["-r", str(tmp_path / f"ref{i}.txt")]
    return json.loads(run_cli(attn_cli, args))


@pytest.mark.parametrize("streams", [[REFS], [REFS, REFS2]])
def test_bleu_chrf_equal_attn_score(attn_cli, tmp_path, streams):
    want = cli_scores(attn_cli, tmp_path, streams)
    refs = streams[0] if len(streams) == 1 else streams
    b, c = attn.bleu(HYPS, refs), attn.chrf(HYPS, refs)
    assert b.score == want["bleu"] and float(b) == want["bleu"]
    assert str(b) == want["bleu_verbose"]
    assert b.signature == want["bleu_signature"]
    assert c.score == want["chrf"] and c.signature == want["chrf_signature"]
    assert 0 < b.score < 100


def test_chrf_plus_plus_differs():
    assert attn.chrf(HYPS, REFS, word_order=2).score != attn.chrf(HYPS, REFS).score
    assert "chrF2++" in str(attn.chrf(HYPS, REFS, word_order=2))


def test_metric_errors():
    with pytest.raises(ValueError, match="lines|length|segments|hyp"):
        attn.bleu(HYPS, REFS[:2])
    with pytest.raises(TypeError, match="not a str"):
        attn.bleu(HYPS, "the cat")
    with pytest.raises(TypeError):
        attn.chrf([1, 2], REFS)
