"""Category pictograms drawn with Pillow primitives (no icon files to ship or license).

Each is drawn in `ink` inside a square box; cut-outs (a bus windscreen, an envelope's flap)
are drawn in the board colour. Callers draw them large and reduce the result, which
antialiases these otherwise hard-edged shapes.
"""
from __future__ import annotations

from collections.abc import Callable

from PIL import ImageDraw, ImageFont

from cityseeker_ros.core.render.palette import RGB

Painter = Callable[["_Box"], None]


class _Box:
    """Maps unit-square coordinates into the pictogram's box on the board."""

    def __init__(self, draw: ImageDraw.ImageDraw, x: float, y: float, size: float, ink: RGB, board: RGB,
                 font_path: str) -> None:
        self.draw, self.x, self.y, self.s = draw, x, y, size
        self.ink, self.board, self.font_path = ink, board, font_path

    def p(self, u: float, v: float) -> tuple[float, float]:
        return self.x + u * self.s, self.y + v * self.s

    def r(self, u0: float, v0: float, u1: float, v1: float) -> tuple[float, float, float, float]:
        return (*self.p(u0, v0), *self.p(u1, v1))

    def w(self, width: float) -> int:
        return max(1, round(width * self.s))

    def rect(self, u0: float, v0: float, u1: float, v1: float, cut: bool = False, radius: float = 0.0) -> None:
        fill = self.board if cut else self.ink
        if radius > 0:
            self.draw.rounded_rectangle(self.r(u0, v0, u1, v1), radius=radius * self.s, fill=fill)
        else:
            self.draw.rectangle(self.r(u0, v0, u1, v1), fill=fill)

    def ellipse(self, u0: float, v0: float, u1: float, v1: float, cut: bool = False, width: float = 0.0) -> None:
        if width > 0:
            self.draw.ellipse(self.r(u0, v0, u1, v1), outline=self.board if cut else self.ink, width=self.w(width))
        else:
            self.draw.ellipse(self.r(u0, v0, u1, v1), fill=self.board if cut else self.ink)

    def poly(self, *pts: tuple[float, float], cut: bool = False) -> None:
        self.draw.polygon([self.p(u, v) for u, v in pts], fill=self.board if cut else self.ink)

    def line(self, *pts: tuple[float, float], width: float, cut: bool = False) -> None:
        self.draw.line([self.p(u, v) for u, v in pts], fill=self.board if cut else self.ink, width=self.w(width),
                       joint="curve")

    def arc(self, u0: float, v0: float, u1: float, v1: float, start: float, end: float, width: float) -> None:
        self.draw.arc(self.r(u0, v0, u1, v1), start, end, fill=self.ink, width=self.w(width))

    def chord(self, u0: float, v0: float, u1: float, v1: float, start: float, end: float) -> None:
        self.draw.chord(self.r(u0, v0, u1, v1), start, end, fill=self.ink)

    def text(self, label: str, scale: float) -> None:
        font = ImageFont.truetype(self.font_path, max(4, round(scale * self.s)))
        self.draw.text(self.p(0.5, 0.52), label, font=font, fill=self.ink, anchor="mm",
                       stroke_width=max(1, round(0.03 * self.s)), stroke_fill=self.ink)


def _cafe(b: _Box) -> None:
    b.ellipse(0.56, 0.36, 0.88, 0.64, width=0.08)
    b.poly((0.10, 0.34), (0.70, 0.34), (0.64, 0.70), (0.16, 0.70))
    b.chord(0.10, 0.50, 0.70, 0.84, 0, 180)
    b.rect(0.04, 0.82, 0.80, 0.88, radius=0.03)
    for u in (0.28, 0.46):
        b.line((u, 0.10), (u - 0.04, 0.18), (u, 0.26), width=0.05)


def _restaurant(b: _Box) -> None:
    for u in (0.20, 0.30, 0.40):
        b.rect(u - 0.025, 0.08, u + 0.025, 0.40)
    b.rect(0.175, 0.36, 0.425, 0.46, radius=0.05)
    b.rect(0.27, 0.44, 0.33, 0.92, radius=0.03)
    b.poly((0.62, 0.08), (0.76, 0.14), (0.76, 0.56), (0.62, 0.56))
    b.rect(0.63, 0.54, 0.73, 0.92, radius=0.04)


def _burger(b: _Box) -> None:
    b.chord(0.10, 0.14, 0.90, 0.70, 180, 360)
    b.rect(0.08, 0.46, 0.92, 0.56, radius=0.04)
    b.rect(0.12, 0.60, 0.88, 0.68, radius=0.03)
    b.rect(0.12, 0.72, 0.88, 0.86, radius=0.06)


def _bar(b: _Box) -> None:
    b.poly((0.16, 0.14), (0.84, 0.14), (0.50, 0.54))
    b.rect(0.47, 0.50, 0.53, 0.82)
    b.rect(0.28, 0.80, 0.72, 0.87, radius=0.03)
    b.line((0.62, 0.06), (0.70, 0.26), width=0.04)


def _cart(b: _Box) -> None:
    b.line((0.04, 0.18), (0.18, 0.18), (0.32, 0.70), (0.84, 0.70), width=0.07)
    b.poly((0.22, 0.28), (0.92, 0.28), (0.82, 0.58), (0.30, 0.58))
    b.ellipse(0.30, 0.76, 0.44, 0.90)
    b.ellipse(0.70, 0.76, 0.84, 0.90)


def _bag(b: _Box) -> None:
    b.arc(0.32, 0.12, 0.68, 0.52, 180, 360, width=0.07)
    b.rect(0.16, 0.32, 0.84, 0.90, radius=0.06)


def _cross(b: _Box) -> None:
    b.rect(0.36, 0.10, 0.64, 0.90, radius=0.03)
    b.rect(0.10, 0.36, 0.90, 0.64, radius=0.03)


def _bus(b: _Box) -> None:
    b.rect(0.14, 0.08, 0.86, 0.82, radius=0.10)
    b.rect(0.22, 0.18, 0.78, 0.48, cut=True, radius=0.03)
    b.ellipse(0.22, 0.60, 0.32, 0.70, cut=True)
    b.ellipse(0.68, 0.60, 0.78, 0.70, cut=True)
    b.rect(0.20, 0.80, 0.34, 0.94, radius=0.03)
    b.rect(0.66, 0.80, 0.80, 0.94, radius=0.03)


def _train(b: _Box) -> None:
    b.rect(0.20, 0.06, 0.80, 0.74, radius=0.16)
    b.rect(0.28, 0.16, 0.72, 0.40, cut=True, radius=0.04)
    b.ellipse(0.28, 0.52, 0.38, 0.62, cut=True)
    b.ellipse(0.62, 0.52, 0.72, 0.62, cut=True)
    b.line((0.32, 0.78), (0.18, 0.96), width=0.06)
    b.line((0.68, 0.78), (0.82, 0.96), width=0.06)


def _bed(b: _Box) -> None:
    b.rect(0.06, 0.26, 0.14, 0.84)
    b.rect(0.06, 0.58, 0.94, 0.72)
    b.rect(0.86, 0.58, 0.94, 0.84)
    b.ellipse(0.18, 0.38, 0.38, 0.56)
    b.rect(0.40, 0.40, 0.94, 0.58, radius=0.06)


def _money(b: _Box) -> None:
    b.rect(0.04, 0.24, 0.96, 0.76, radius=0.04)
    b.rect(0.10, 0.30, 0.90, 0.70, cut=True, radius=0.03)
    b.rect(0.14, 0.34, 0.86, 0.66, radius=0.02)
    b.ellipse(0.38, 0.36, 0.62, 0.64, cut=True)
    b.ellipse(0.45, 0.43, 0.55, 0.57)
    for u in (0.22, 0.78):
        b.ellipse(u - 0.04, 0.46, u + 0.04, 0.54, cut=True)


def _fuel(b: _Box) -> None:
    b.rect(0.16, 0.10, 0.60, 0.90, radius=0.05)
    b.rect(0.24, 0.18, 0.52, 0.40, cut=True, radius=0.02)
    b.line((0.60, 0.30), (0.76, 0.40), (0.76, 0.72), (0.84, 0.76), (0.86, 0.30), width=0.05)
    b.rect(0.10, 0.86, 0.66, 0.93)


def _drop(b: _Box) -> None:
    b.ellipse(0.24, 0.40, 0.76, 0.92)
    b.poly((0.50, 0.04), (0.26, 0.60), (0.74, 0.60))


def _envelope(b: _Box) -> None:
    b.rect(0.08, 0.22, 0.92, 0.78, radius=0.03)
    b.line((0.10, 0.25), (0.50, 0.56), (0.90, 0.25), width=0.06, cut=True)


def _wc(b: _Box) -> None:
    b.text("WC", 0.56)


def _parking(b: _Box) -> None:
    b.rect(0.10, 0.10, 0.90, 0.90, radius=0.12)
    b.rect(0.16, 0.16, 0.84, 0.84, cut=True, radius=0.08)
    b.text("P", 0.66)


def _dot(b: _Box) -> None:
    b.ellipse(0.28, 0.28, 0.72, 0.72)


PICTOGRAMS: dict[str, Painter] = {
    "cafe": _cafe, "restaurant": _restaurant, "burger": _burger, "bar": _bar, "cart": _cart, "bag": _bag,
    "cross": _cross, "bus": _bus, "train": _train, "bed": _bed, "money": _money, "fuel": _fuel,
    "drop": _drop, "envelope": _envelope, "wc": _wc, "parking": _parking, "dot": _dot,
}


def draw_pictogram(draw: ImageDraw.ImageDraw, name: str, x: float, y: float, size: float, ink: RGB,
                   board: RGB, font_path: str) -> None:
    """Draw pictogram `name` (unknown names get the generic dot) in the square at (x, y)."""
    PICTOGRAMS.get(name, _dot)(_Box(draw, x, y, size, ink, board, font_path))
