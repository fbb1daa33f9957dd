"""attn.Captioner against `attn caption -m RUN IMAGE...` on a tiny captioner
trained here (the C++ tests' toy captioner, tests/caption_run.h, 30 steps on
attn's generated scenes), from paths and from arrays."""
import matplotlib.image
import numpy as np
import pytest

import attn
from conftest import run_cli

CONFIG = """data:
  captions: {d}/dataset_shapes.json
vocab:
  size: 40
model:
  type: show_attend_tell
  image_size: 32
  grid: 4
  cnn_channels: 8
  embed: 16
  decoder_hidden: 32
  attention: 16
  image_attention: soft
train:
  out_dir: {d}/run
  max_tokens: 400
  lr: 0.003
  label_smoothing: 0
  max_epochs: 0
  max_steps: 30
  valid_every: 0
  threads: 1
"""


@pytest.fixture(scope="module")
def caption_run(tmp_path_factory, attn_cli):
    d = tmp_path_factory.mktemp("scenes")
    run_cli(attn_cli, ["caption", "data", "--out", str(d), "--count", "60", "--seed", "1", "--size", "32"])
    (d / "run.yaml").write_text(CONFIG.format(d=d), encoding="utf-8")
    assert attn.train(str(d / "run.yaml"), progress=None)["completed"]
    return d


def test_caption_equals_the_command(caption_run, attn_cli):
    images = sorted(str(p) for p in (caption_run / "images").glob("*.png"))[:4]
    want = [line.split("\t") for line in run_cli(attn_cli, ["caption", "-m", str(caption_run / "run"), "--threads", "1",
                                                            *images]).splitlines()]
    cap = attn.Captioner(str(caption_run / "run"), threads=1)
    got = cap.caption(images)
    assert [[p, r.caption] for p, r in zip(images, got)] == want
    assert any(r.words for r in got)  # captions with words: the comparisons below see attention rows
    one = cap.caption(images[0])
    assert one.caption == got[0].caption
    assert one.attention.shape == (len(one.words), 4, 4) and one.attention.dtype == np.float32
    if one.words:
        np.testing.assert_allclose(one.attention.sum(axis=(1, 2)), 1, atol=1e-5)
    # the same picture as an array (float32 in [0, 1], as matplotlib reads a PNG; and uint8)
    rgb = np.ascontiguousarray(matplotlib.image.imread(images[0])[:, :, :3])
    assert cap.caption(rgb).caption == one.caption
    assert cap.caption(np.ascontiguousarray((rgb * 255).round().astype(np.uint8))).caption == one.caption


def test_captioner_errors(caption_run, toy_run):
    with pytest.raises(ValueError, match="rnnsearch"):
        attn.Captioner(str(toy_run))
    cap = attn.Captioner(str(caption_run / "run"))
    with pytest.raises(ValueError, match=r"\[H, W, 3\]"):
        cap.caption(np.zeros((8, 8), np.float32))
    with pytest.raises(TypeError, match="uint8"):
        cap.caption(np.zeros((8, 8, 3), np.float64))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        cap.caption(np.full((8, 8, 3), 2, np.float32))
    with pytest.raises(RuntimeError, match="missing.png"):
        cap.caption(str(caption_run / "missing.png"))
    with pytest.raises(TypeError):
        cap.caption(3)
