"""Board text that is too long for its board keeps every word: smaller, on two lines, abbreviated."""
from __future__ import annotations

import numpy as np
import pytest

from cityseeker_ros.core.render import RenderSettings
from cityseeker_ros.core.render.boards import (
    BOARD_HEIGHT_M,
    FONT,
    TEXTURE_HEIGHT,
    _text_px,
    abbreviate,
    draw_board,
    layout_text,
)
from cityseeker_ros.core.render.palette import BoardStyle

STYLE = BoardStyle((20, 80, 118), (255, 255, 255))
BANK = "Raiffeisen Regionalbank Oberes Murtal und Umgebung"  # "bank" is inside the second word
CJK_BANK = "香港上海滙豐銀行有限公司"  # The Hongkong and Shanghai Banking Corporation; 銀行 = bank


@pytest.fixture(scope="module")
def font() -> str:
    return str(RenderSettings().resolve_font())


def _ink_rows(rgba: np.ndarray, x0: int) -> np.ndarray:
    """Rows holding white text pixels right of the pictogram."""
    text = rgba[12:-12, x0:, :3].astype(int)
    return np.flatnonzero((text.min(axis=2) > 200).any(axis=1)) + 12


@pytest.mark.parametrize("width_m", [2.5, 3.5, 6.0])
def test_a_long_bank_name_keeps_its_category_word(font, width_m):
    room = width_m / BOARD_HEIGHT_M * TEXTURE_HEIGHT - 0.99 * TEXTURE_HEIGHT
    lines, size = layout_text(BANK, font, room, 0.93 * TEXTURE_HEIGHT)
    shown = " ".join(lines)
    assert "Regionalbank" in shown or "Reg" in shown.split()[1]  # the word naming the bank stays whole ...
    assert "bank" in shown  # ... with its category word
    assert shown.replace("&", "und").replace("Reg.", "Regional") in (BANK, BANK.replace("Regionalbank", "Reg.bank"))
    assert len(lines) == 2 and max(_text_px(line, font, size) for line in lines) <= room
    assert "…" not in shown


def test_two_lines_are_drawn_and_nothing_is_cut(font):
    rgba, em = draw_board(BANK, STYLE, "money", 4.0, font)
    rows = _ink_rows(rgba, round(0.9 * TEXTURE_HEIGHT))
    assert np.ptp(rows) > 1.6 * em * TEXTURE_HEIGHT  # two lines of text, one above the other
    assert 0.15 <= em < FONT  # smaller than one line's, still 14+ texels tall


def test_a_name_that_fits_stays_on_one_line_at_full_size(font):
    lines, size = layout_text("Cafe Uno", font, 400.0, 90.0)
    assert lines == ("Cafe Uno",) and size == round(FONT * TEXTURE_HEIGHT)


def test_a_long_cjk_name_splits_between_characters_and_keeps_them_all(font):
    room = 2.5 / BOARD_HEIGHT_M * TEXTURE_HEIGHT - 0.99 * TEXTURE_HEIGHT
    lines, size = layout_text(CJK_BANK, font, room, 0.93 * TEXTURE_HEIGHT)
    assert "".join(lines) == CJK_BANK and len(lines) == 2
    assert max(_text_px(line, font, size) for line in lines) <= room
    rgba, em = draw_board(CJK_BANK, STYLE, "money", 2.5, font)
    assert np.ptp(_ink_rows(rgba, round(0.9 * TEXTURE_HEIGHT))) > 1.6 * em * TEXTURE_HEIGHT


def test_abbreviations_touch_only_known_filler_words():
    assert abbreviate("Musterbank Aktiengesellschaft Filiale Hauptstraße") == "Musterbank AG Fil. Hauptstraße"
    assert abbreviate("Bank of Saint Kitts and Nevis Limited") == "Bank of St. Kitts & Nevis Ltd."
    assert abbreviate("Apotheke am Markt") == "Apotheke am Markt"


def test_a_single_latin_word_is_set_smaller_never_broken(font):
    lines, size = layout_text("Pharmacy", font, 150.0, 90.0)
    assert lines == ("Pharmacy",) and _text_px("Pharmacy", font, size) <= 150.0
