"""Storefront board textures: a coloured board, a white category pictogram and the name.

Boards are drawn with Pillow in the font from the settings (WenQuanYi Micro Hei by default,
which covers Latin and CJK), with a stroke of the text colour for the bold face the font lacks;
pictograms are drawn four times larger and reduced, for antialiased edges. A board's width in
metres follows its text, so a long name makes a long board, as on real shopfronts.

A name too long for its board is never cut: the words that say what the place is ("bank" in
a long regional bank's name, 銀行 in a Chinese one) may be anywhere in it. It is set smaller,
then on two lines (split between words, or between characters in CJK), then with the usual
abbreviations of legal forms and filler words (ABBREVIATIONS), and at the last the two lines
get as small as they must.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from cityseeker_ros.core.render.mipmap import MipTexture
from cityseeker_ros.core.render.palette import RGB, BoardStyle
from cityseeker_ros.core.render.pictograms import draw_pictogram

BOARD_HEIGHT_M = 1.1
TEXTURE_HEIGHT = 96  # stored texels per board height
MIN_WIDTH_M, MAX_WIDTH_M = 2.5, 12.0
_SS = 4  # supersampling factor for pictograms
PAD, ICON, GAP, FONT = 0.13, 0.66, 0.10, 0.56  # fractions of the board height
BORDER, STRIPE = 0.035, 0.13
MIN_FONT_SCALE = 0.55
TWO_LINE_MIN_SCALE = 0.34  # two lines are tried down to this share of FONT before abbreviating
LINE_GAP = 0.12  # between two lines, as a share of the font size
# Words that real signs shorten; none of them says what kind of place it is. Whole words,
# any case; the key is matched after folding ß to ss.
ABBREVIATIONS: dict[str, str] = {
    "aktiengesellschaft": "AG", "gesellschaft": "Ges.", "genossenschaft": "eG", "eingetragene": "e.",
    "geschäftsstelle": "Gst.", "niederlassung": "Ndl.", "filiale": "Fil.", "strasse": "Str.",
    "international": "Int'l", "limited": "Ltd.", "company": "Co.", "corporation": "Corp.",
    "incorporated": "Inc.", "brothers": "Bros.", "saint": "St.", "sankt": "St.", "street": "St.",
    "avenue": "Ave.", "boulevard": "Blvd.", "and": "&", "und": "&", "et": "&", "société": "Sté",
    "compagnie": "Cie", "osakeyhtiö": "Oy", "società": "Soc.", "mutuel": "Mut.", "régionale": "Rég.",
    "regional": "Reg.", "regionale": "Reg.",
}


@lru_cache(maxsize=64)
def _font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size)


_CJK = re.compile(r"[\u2e80-\U0002ffff]")  # the CJK and later blocks, as _stroke counts them


def _stroke(size: int, text: str) -> int:
    """Faux-bold stroke width; thinner for CJK, whose dense glyphs would fill in."""
    cjk = any(ord(ch) >= 0x2E80 for ch in text)
    return max(1, round(size * (0.02 if cjk else 0.04)))


def _text_px(text: str, font_path: str, size: int) -> float:
    return _font(font_path, size).getlength(text) + 2 * _stroke(size, text)


def natural_width_m(text: str, font_path: str) -> float:
    """Board width that fits pictogram and text at the nominal size, before clamping."""
    h = TEXTURE_HEIGHT
    size = round(FONT * h)
    content = (2 * PAD + ICON + GAP) * h + _text_px(text, font_path, size)
    return content / h * BOARD_HEIGHT_M


def board_width_m(text: str, font_path: str, max_width_m: float = MAX_WIDTH_M) -> float:
    return min(max(natural_width_m(text, font_path), MIN_WIDTH_M), max(MIN_WIDTH_M, min(MAX_WIDTH_M, max_width_m)))


def draw_board(text: str, style: BoardStyle, pictogram: str, width_m: float,
               font_path: str) -> tuple[np.ndarray, float]:
    """(H, W, 4) uint8 RGBA board of the given width, and the text's em height over the board height.

    Text that does not fit is set smaller (down to MIN_FONT_SCALE), then cut with an ellipsis."""
    h = TEXTURE_HEIGHT
    w = max(h, round(width_m / BOARD_HEIGHT_M * h))
    board: RGB = style.board
    image = Image.new("RGB", (w, h), board)
    draw = ImageDraw.Draw(image)
    border = max(1, round(BORDER * h))
    edge = tuple(int(c * 0.55) for c in board)
    draw.rectangle([0, 0, w - 1, h - 1], outline=edge, width=border)
    body_bottom = h - border
    if style.stripe is not None:
        stripe_h = round(STRIPE * h)
        draw.rectangle([border, h - border - stripe_h, w - 1 - border, h - 1 - border], fill=style.stripe)
        body_bottom -= stripe_h
    middle = (border + body_bottom) / 2.0
    icon = round(ICON * h * (body_bottom - border) / (h - 2 * border))
    room = w - (2 * PAD + GAP) * h - icon
    lines, size = layout_text(text, font_path, room, body_bottom - border)
    content = icon + GAP * h + max(_text_px(line, font_path, size) for line in lines)
    x = max(PAD * h, (w - content) / 2.0)
    image.paste(_icon(pictogram, style.ink, board, icon, font_path), (round(x), round(middle - icon / 2.0)))
    pitch = size * (1.0 + LINE_GAP)
    for k, line in enumerate(lines):
        stroke = _stroke(size, line)
        draw.text((x + icon + GAP * h + stroke, middle + (k - (len(lines) - 1) / 2.0) * pitch), line,
                  font=_font(font_path, size), fill=style.ink, anchor="lm", stroke_width=stroke,
                  stroke_fill=style.ink)
    return np.asarray(image.convert("RGBA")), size / h


def layout_text(text: str, font_path: str, room_px: float, body_px: float) -> tuple[tuple[str, ...], int]:
    """(lines, font size in texels) that set every word of `text` within `room_px` by `body_px`:
    one line down to MIN_FONT_SCALE, then two lines down to TWO_LINE_MIN_SCALE, then the same
    with ABBREVIATIONS, then two lines as small as it takes. Nothing is ever cut off."""
    h = TEXTURE_HEIGHT
    nominal = round(FONT * h)
    two_line_top = min(nominal, int(body_px / (2.0 + LINE_GAP)))
    for candidate in dict.fromkeys((text, abbreviate(text))):  # the full text first
        for size in range(nominal, round(nominal * MIN_FONT_SCALE) - 1, -1):
            if _text_px(candidate, font_path, size) <= room_px:
                return (candidate,), size
        lines = _two_lines(candidate, font_path, nominal)
        for size in range(two_line_top, round(nominal * TWO_LINE_MIN_SCALE) - 1, -1):
            if max(_text_px(line, font_path, size) for line in lines) <= room_px:
                return lines, size
    for size in range(round(nominal * TWO_LINE_MIN_SCALE) - 1, 1, -1):
        if max(_text_px(line, font_path, size) for line in lines) <= room_px:
            return lines, size
    return lines, 1


def abbreviate(text: str) -> str:
    """`text` with the ABBREVIATIONS applied to whole words."""
    def short(m: re.Match) -> str:
        return ABBREVIATIONS.get(m.group(0).lower().replace("ß", "ss"), m.group(0))
    return re.sub(r"[^\W\d_]+", short, text)


def _two_lines(text: str, font_path: str, size: int) -> tuple[str, ...]:
    """The split into two lines whose longer line is shortest: between words, or between
    characters in CJK text without spaces. A single Latin word stays one line (it is set smaller
    rather than broken, which would read as two words)."""
    words = text.split()
    if len(words) > 1:
        splits = [(" ".join(words[:k]), " ".join(words[k:])) for k in range(1, len(words))]
    elif len(text) > 1 and _CJK.search(text):
        splits = [(text[:k], text[k:]) for k in range(1, len(text))]
    else:
        return (text,)
    return min(splits, key=lambda pair: (max(_text_px(part, font_path, size) for part in pair), pair))


@lru_cache(maxsize=256)
def _icon(pictogram: str, ink: RGB, board: RGB, size: int, font_path: str) -> Image.Image:
    """A pictogram on the board colour, drawn 4x larger and reduced so its edges are antialiased."""
    big = Image.new("RGB", (size * _SS, size * _SS), board)
    draw_pictogram(ImageDraw.Draw(big), pictogram, 0, 0, size * _SS, ink, board, font_path)
    return big.reduce(_SS)


class BoardCache:
    """Board textures by board number, made on first sight and evicted least-recently-used past a byte budget."""

    def __init__(self, font_path: str, max_bytes: int = 96 << 20) -> None:
        self.font_path = font_path
        self.max_bytes = max_bytes
        self._items: OrderedDict[int, tuple[MipTexture, float]] = OrderedDict()
        self._charged: dict[int, int] = {}
        self._bytes = 0

    def get(self, key: int, text: str, style: BoardStyle, pictogram: str, width_m: float) -> tuple[MipTexture, float]:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            return item
        rgba, em = draw_board(text, style, pictogram, width_m, self.font_path)
        item = (MipTexture(rgba), em)
        self._items[key] = item
        self._charged[key] = item[0].nbytes * 2  # room for the smaller levels made later
        self._bytes += self._charged[key]
        while self._bytes > self.max_bytes and len(self._items) > 1:
            old, _ = self._items.popitem(last=False)
            self._bytes -= self._charged.pop(old)
        return item
